//! CREATE TABLE: MySQL column types and table options as PostgreSQL's.

use super::*;

/// The PostgreSQL type for a MySQL column or CAST type.
pub(super) fn data_type(t: &DataType) -> Result<DataType, DialectError> {
    use DataType as D;
    Ok(match t {
        D::TinyInt(_) | D::TinyIntUnsigned(_) | D::Bool | D::Boolean => D::SmallInt(None),
        D::SmallInt(_) => D::SmallInt(None),
        D::SmallIntUnsigned(_) | D::MediumInt(_) | D::MediumIntUnsigned(_) => D::Integer(None),
        D::Int(_) | D::Integer(_) => D::Integer(None),
        D::IntUnsigned(_) | D::IntegerUnsigned(_) | D::BigInt(_) => D::BigInt(None),
        D::BigIntUnsigned(_) => D::Numeric(ExactNumberInfo::Precision(20)),
        D::Signed | D::SignedInteger | D::Unsigned | D::UnsignedInteger => D::BigInt(None),
        D::Double(_) | D::DoublePrecision | D::DoubleUnsigned(_) | D::DoublePrecisionUnsigned => {
            D::DoublePrecision
        }
        D::Float(_) | D::FloatUnsigned(_) | D::Real | D::RealUnsigned => D::Real,
        D::DecimalUnsigned(i) | D::DecUnsigned(i) | D::Dec(i) => D::Decimal(*i),
        // MySQL's default fractional-second precision is 0, PostgreSQL's 6.
        D::Datetime(p) => D::Timestamp(Some(p.unwrap_or(0)), TimezoneInfo::None),
        D::Timestamp(p, _) => D::Timestamp(Some(p.unwrap_or(0)), TimezoneInfo::Tz),
        D::Time(p, _) => D::Time(Some(p.unwrap_or(0)), TimezoneInfo::None),
        D::TinyText | D::MediumText | D::LongText | D::Text => D::Text,
        // CAST(x AS CHAR) is a string of any length in MySQL.
        D::Char(None) | D::Character(None) => D::Text,
        D::Blob(_) | D::TinyBlob | D::MediumBlob | D::LongBlob | D::Binary(_) | D::Varbinary(_) => {
            D::Bytea
        }
        D::Varchar(Some(CharacterLength::IntegerLength { .. })) | D::Varchar(None) => t.clone(),
        D::Enum(..) => return Err(DialectError::Unsupported("the ENUM type".into())),
        D::Set(_) => return Err(DialectError::Unsupported("the SET type".into())),
        D::Zerofill(_) => return Err(DialectError::Unsupported("ZEROFILL".into())),
        other => other.clone(),
    })
}

/// CREATE TABLE: types, AUTO_INCREMENT, and MySQL-only options (see the module doc).
pub(super) fn create_table(create: &mut sqlparser::ast::CreateTable) -> Result<(), DialectError> {
    create.table_options = sqlparser::ast::CreateTableOptions::None;
    create.comment = None;
    for column in &mut create.columns {
        let auto_increment = column.options.iter().any(|o| {
            matches!(&o.option, ColumnOption::DialectSpecific(tokens) if tokens.iter().any(|t| {
                matches!(t, Token::Word(w) if w.value.eq_ignore_ascii_case("AUTO_INCREMENT"))
            }))
        });
        column.data_type = match &column.data_type {
            // An identity must be an integer type: ids past 2^63 do not occur in practice.
            DataType::BigIntUnsigned(_) if auto_increment => DataType::BigInt(None),
            other => data_type(other)?,
        };
        let mut options = Vec::new();
        for o in std::mem::take(&mut column.options) {
            match &o.option {
                ColumnOption::DialectSpecific(tokens)
                    if tokens.iter().any(|t| {
                        matches!(t, Token::Word(w) if w.value.eq_ignore_ascii_case("AUTO_INCREMENT"))
                    }) =>
                {
                    let mut identity = o.clone();
                    identity.option = ColumnOption::Generated {
                        generated_as: GeneratedAs::ByDefault,
                        sequence_options: None,
                        generation_expr: None,
                        generation_expr_mode: None,
                        generated_keyword: true,
                    };
                    options.push(identity);
                }
                ColumnOption::Comment(_)
                | ColumnOption::CharacterSet(_)
                | ColumnOption::Collation(_) => {}
                ColumnOption::OnUpdate(_) => {
                    return Err(DialectError::Unsupported("column option ON UPDATE".into()));
                }
                ColumnOption::DialectSpecific(tokens) => {
                    return Err(DialectError::Unsupported(format!(
                        "column option {}",
                        tokens
                            .iter()
                            .map(|t| t.to_string())
                            .collect::<Vec<_>>()
                            .join(" ")
                    )));
                }
                _ => options.push(o),
            }
        }
        column.options = options;
    }
    let mut constraints = Vec::new();
    for c in std::mem::take(&mut create.constraints) {
        match c {
            TableConstraint::Index(_) => {}
            TableConstraint::FulltextOrSpatial(_) => {
                return Err(DialectError::Unsupported("FULLTEXT/SPATIAL index".into()));
            }
            TableConstraint::Unique(mut u) => {
                // PostgreSQL has no index name or type on a UNIQUE constraint.
                u.index_name = None;
                u.index_type = None;
                u.index_options.clear();
                u.index_type_display = sqlparser::ast::KeyOrIndexDisplay::None;
                constraints.push(TableConstraint::Unique(u));
            }
            TableConstraint::PrimaryKey(mut p) => {
                p.index_name = None;
                p.index_type = None;
                p.index_options.clear();
                constraints.push(TableConstraint::PrimaryKey(p));
            }
            other => constraints.push(other),
        }
    }
    create.constraints = constraints;
    Ok(())
}
