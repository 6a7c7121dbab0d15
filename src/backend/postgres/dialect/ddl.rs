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
        // A BIT(n) value is a number of n bits (n <= 64): BIGINT holds it, and the declared
        // type turns it back into MySQL's bytes (`declared_type`).
        D::Bit(n) if n.unwrap_or(1) <= 64 => D::BigInt(None),
        D::Custom(name, modifiers) if modifiers.is_empty() && is_year(name) => D::SmallInt(None),
        // Other PostgreSQL type names: none with modifiers (sqlparser prints a string modifier
        // with MySQL's quoting), and no `reg*` type (`CAST('pg_authid' AS regclass)` probes
        // the catalogs).
        // A schema-qualified type (`pg_catalog.regrole`) is refused whatever it names.
        D::Custom(name, modifiers)
            if !modifiers.is_empty()
                || name.0.len() != 1
                || name.0[0]
                    .as_ident()
                    .is_none_or(|i| i.value.to_ascii_lowercase().starts_with("reg")) =>
        {
            return Err(DialectError::Unsupported(format!("the type {t}")));
        }
        D::Regclass => return Err(DialectError::Unsupported("the type REGCLASS".into())),
        // A column's ENUM / SET is a VARCHAR with a CHECK (`column_def`); in a CAST, MySQL
        // has neither.
        D::Enum(..) => return Err(DialectError::Unsupported("the ENUM type".into())),
        D::Set(_) => return Err(DialectError::Unsupported("the SET type".into())),
        D::Zerofill(_) => return Err(DialectError::Unsupported("ZEROFILL".into())),
        other => other.clone(),
    })
}

/// Whether a custom type name is MySQL's `YEAR`.
fn is_year(name: &ObjectName) -> bool {
    name.0.len() == 1
        && name.0[0]
            .as_ident()
            .is_some_and(|i| i.quote_style.is_none() && i.value.eq_ignore_ascii_case("YEAR"))
}

use crate::pgcatalog::{DECLARED_PREFIX, VALUE_LIST_CHECK};

/// The MySQL type of a column whose PostgreSQL type would map back to another MySQL type, as
/// MySQL's `COLUMN_TYPE` spells it (`tinyint(1)`, `int unsigned`, `year`, `bit(8)`, ..), or
/// `None` when the PostgreSQL type maps back to it. manx keeps it in the column's comment
/// ([`DECLARED_PREFIX`]) and reads it back with the table's column flags, so clients see the
/// type they declared (Connector/J maps `tinyint(1)` to Boolean, `year` to a date, ..).
pub(super) fn declared_type(t: &DataType) -> Option<String> {
    use DataType as D;
    Some(match t {
        D::TinyInt(Some(1)) | D::Bool | D::Boolean => "tinyint(1)".into(),
        D::TinyInt(_) => "tinyint".into(),
        D::TinyIntUnsigned(_) => "tinyint unsigned".into(),
        D::SmallIntUnsigned(_) => "smallint unsigned".into(),
        D::MediumInt(_) => "mediumint".into(),
        D::MediumIntUnsigned(_) => "mediumint unsigned".into(),
        D::IntUnsigned(_) | D::IntegerUnsigned(_) => "int unsigned".into(),
        D::BigIntUnsigned(_) => "bigint unsigned".into(),
        D::Bit(n) => format!("bit({})", n.unwrap_or(1)),
        D::Custom(name, modifiers) if modifiers.is_empty() && is_year(name) => "year".into(),
        // PostgreSQL's text and bytea map back to LONGTEXT / LONGBLOB.
        D::TinyText => "tinytext".into(),
        D::Text => "text".into(),
        D::MediumText => "mediumtext".into(),
        D::TinyBlob => "tinyblob".into(),
        D::Blob(_) => "blob".into(),
        D::MediumBlob => "mediumblob".into(),
        D::Varbinary(Some(sqlparser::ast::BinaryLength::IntegerLength { length })) => {
            format!("varbinary({length})")
        }
        D::Binary(n) => format!("binary({})", n.unwrap_or(1)),
        _ => return None,
    })
}

/// CREATE TABLE: types, AUTO_INCREMENT, and MySQL-only options (see the module doc). Returns
/// the statements that record declared types ([`declared_type`]), to run after it.
pub(super) fn create_table(
    create: &mut sqlparser::ast::CreateTable,
) -> Result<Vec<String>, DialectError> {
    create.table_options = sqlparser::ast::CreateTableOptions::None;
    create.comment = None;
    let mut after = Vec::new();
    for column in &mut create.columns {
        after.extend(column_def(&create.name, column)?);
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
    Ok(after)
}

/// `COMMENT ON COLUMN table.column IS 'manx:<declared>'`.
fn comment_on(table: &ObjectName, column: &Ident, declared: &str) -> String {
    format!(
        "COMMENT ON COLUMN {table}.{column} IS '{DECLARED_PREFIX}{}'",
        declared.replace('\'', "''")
    )
}

/// `ALTER TABLE .. ADD [COLUMN] def`: the new columns' types as in CREATE TABLE. Returns the
/// statements that record declared types, to run after it.
pub(super) fn alter_table(
    alter: &mut sqlparser::ast::AlterTable,
) -> Result<Vec<String>, DialectError> {
    let mut after = Vec::new();
    for op in &mut alter.operations {
        if let sqlparser::ast::AlterTableOperation::AddColumn {
            column_def: def,
            column_position,
            ..
        } = op
        {
            if column_position.is_some() {
                return Err(DialectError::Unsupported(
                    "ADD COLUMN .. FIRST/AFTER (PostgreSQL appends columns)".into(),
                ));
            }
            after.extend(column_def(&alter.name, def)?);
        }
    }
    Ok(after)
}

/// One column definition of CREATE TABLE / ADD COLUMN of `table`: its PostgreSQL type and
/// options. Returns the statements to run after it: the comment recording its declared
/// MySQL type when the PostgreSQL one does not show it ([`declared_type`]), and for ENUM /
/// SET the CHECK that holds values to the members ([`ValueList`]).
fn column_def(
    table: &ObjectName,
    column: &mut sqlparser::ast::ColumnDef,
) -> Result<Vec<String>, DialectError> {
    let mut after = Vec::new();
    if let Some(list) = ValueList::of(&column.name.value, &column.data_type)? {
        list.define(column);
        after.push(comment_on(table, &column.name, &list.declared()));
        after.push(list.check(table, &column.name));
    }
    if let Some(declared) = declared_type(&column.data_type) {
        after.push(comment_on(table, &column.name, &declared));
    }
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
            ColumnOption::Comment(_) | ColumnOption::CharacterSet(_) | ColumnOption::Collation(_) => {}
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
    Ok(after)
}

/// A column's ENUM or SET type (MySQL 8.0 reference, "The ENUM Type", "The SET Type"), kept
/// on PostgreSQL as a `VARCHAR` as long as its longest value, its declaration in the column
/// comment (`manx:enum('a','b')`), and a CHECK constraint named [`VALUE_LIST_CHECK`] +
/// column that admits exactly the values MySQL stores:
/// - ENUM: one of the members, spelled as declared, or NULL; a NOT NULL ENUM without a
///   DEFAULT defaults to its first member, as in MySQL.
/// - SET: `''`, or members separated by commas, each once, in the declared order (the form
///   MySQL stores and returns).
///
/// What MySQL would accept and convert is refused (error 1265, as MySQL's strict mode
/// answers for a non-member): another letter case, trailing spaces, a SET's members out of
/// order or repeated, an ENUM's index number. Sorting and comparing with `<` follow the text
/// on PostgreSQL, where MySQL uses the member's position.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ValueList {
    set: bool,
    members: Vec<String>,
}

impl ValueList {
    /// The value list of a column of type `t` named `column`, `None` if it is neither ENUM
    /// nor SET. Errors as MySQL's (1291 for a duplicated value, compared without letter case
    /// and trailing spaces) or for what manx does not take (ClickHouse's numbered members,
    /// `ENUM8`, a SET member with a comma, more than 64 SET members).
    pub(super) fn of(column: &str, t: &DataType) -> Result<Option<ValueList>, DialectError> {
        let (set, members) = match t {
            DataType::Enum(members, None) => {
                let names = members
                    .iter()
                    .map(|m| match m {
                        sqlparser::ast::EnumMember::Name(n) => Ok(n.clone()),
                        _ => Err(DialectError::Unsupported(format!(
                            "a numbered ENUM member (column {column})"
                        ))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                (false, names)
            }
            DataType::Set(members) => (true, members.clone()),
            DataType::Enum(..) => {
                return Err(DialectError::Unsupported(format!("the type {t}")));
            }
            _ => return Ok(None),
        };
        // MySQL removes trailing spaces from the members when it creates the table.
        let members: Vec<String> = members
            .iter()
            .map(|m| m.trim_end_matches(' ').to_string())
            .collect();
        let kind = if set { "SET" } else { "ENUM" };
        if members.is_empty() || (set && members.len() > 64) || members.len() > 65_535 {
            return Err(DialectError::Unsupported(format!(
                "{} values in the {kind} of column {column}",
                members.len()
            )));
        }
        for (i, m) in members.iter().enumerate() {
            if set && m.contains(',') {
                return Err(DialectError::Unsupported(format!(
                    "the SET member '{m}' of column {column}: it holds a comma"
                )));
            }
            if m.chars().count() > 255 || m.contains('\0') {
                return Err(DialectError::Unsupported(format!(
                    "the {kind} member '{m}' of column {column}"
                )));
            }
            let lower = m.to_lowercase();
            if members[..i].iter().any(|n| n.to_lowercase() == lower) {
                return Err(DialectError::Server {
                    code: 1291,
                    state: "HY000",
                    message: format!("Column '{column}' has duplicated value '{m}' in {kind}"),
                });
            }
        }
        Ok(Some(ValueList { set, members }))
    }

    /// The longest value in characters: a member, or for a SET all of them with commas.
    fn width(&self) -> u64 {
        let lengths = self.members.iter().map(|m| m.chars().count() as u64);
        if self.set {
            lengths.sum::<u64>() + self.members.len() as u64 - 1
        } else {
            lengths.max().unwrap_or(0)
        }
        .max(1)
    }

    /// MySQL's spelling of the type, as `COLUMN_TYPE` shows it: `enum('a','b')`.
    pub(super) fn declared(&self) -> String {
        let members: Vec<String> = self.members.iter().map(|m| sql_string(m)).collect();
        format!(
            "{}({})",
            if self.set { "set" } else { "enum" },
            members.join(",")
        )
    }

    /// Gives `column` its PostgreSQL type, and a NOT NULL ENUM without a DEFAULT its first
    /// member as the default.
    fn define(&self, column: &mut sqlparser::ast::ColumnDef) {
        column.data_type = DataType::Varchar(Some(CharacterLength::IntegerLength {
            length: self.width(),
            unit: None,
        }));
        let not_null = column
            .options
            .iter()
            .any(|o| matches!(o.option, ColumnOption::NotNull));
        let has_default = column
            .options
            .iter()
            .any(|o| matches!(o.option, ColumnOption::Default(_)));
        if !self.set && not_null && !has_default {
            column.options.push(sqlparser::ast::ColumnOptionDef {
                name: None,
                option: ColumnOption::Default(Expr::Value(
                    Value::SingleQuotedString(self.members[0].clone()).into(),
                )),
            });
        }
    }

    /// `ALTER TABLE table ADD CONSTRAINT "manx_values_<column>" CHECK (..)`: the values the
    /// column admits (see the type's doc).
    fn check(&self, table: &ObjectName, column: &Ident) -> String {
        let condition = if self.set {
            // Members in order, each followed by a comma, on the value with a comma added:
            // '' and 'a,' match `^(a,)?(b,)?$` only as the value '' or 'a'.
            let pattern: String = self
                .members
                .iter()
                .map(|m| format!("({},)?", regex_literal(m)))
                .collect();
            format!(
                "{column} = '' OR ({column} || ',') ~ {}",
                sql_string(&format!("^{pattern}$"))
            )
        } else {
            let members: Vec<String> = self.members.iter().map(|m| sql_string(m)).collect();
            format!("{column} IN ({})", members.join(", "))
        };
        let name = format!("{VALUE_LIST_CHECK}{}", column.value).replace('"', "\"\"");
        format!("ALTER TABLE {table} ADD CONSTRAINT \"{name}\" CHECK ({condition})")
    }
}

/// A standard SQL string literal (`standard_conforming_strings` is on: only `'` is doubled).
fn sql_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `s` as a PostgreSQL regular expression (ARE) matching exactly `s`: every ASCII character
/// other than a letter or digit is escaped (a backslash before a non-alphanumeric character
/// is that character).
fn regex_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() && !c.is_ascii_alphanumeric() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
