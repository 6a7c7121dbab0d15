//! PostgreSQL catalog expressions that describe a column the way MySQL does, shared by the
//! translation (`SHOW CREATE TABLE`, `DESCRIBE`) and the `information_schema` answers for
//! PostgreSQL dataNodes (a leaf module: it uses nothing of the crate).
//!
//! Every expression is written so that both parsers read it: MySQL's (the metadata answers
//! are MySQL statements that the PostgreSQL translation then prints) and PostgreSQL's. So:
//! built-in type oids instead of `'integer'::regtype`, `CONCAT()` instead of `||`, no
//! backslashes in string literals.

/// The comment prefix under which manx keeps a column's declared MySQL type (written by the
/// translation of `CREATE TABLE` / `ADD COLUMN` when the PostgreSQL type would map back to
/// another MySQL type: `manx:tinyint(1)`, `manx:int unsigned`, ..).
pub const DECLARED_PREFIX: &str = "manx:";

/// The name prefix of the CHECK constraint that holds an ENUM / SET column (kept as a
/// PostgreSQL VARCHAR) to its members; the column's name follows it. A violation of it is
/// MySQL's 1265 ("Data truncated for column").
pub const VALUE_LIST_CHECK: &str = "manx_values_";

/// The declared MySQL type of column `attnum` of relation `relation` (SQL expressions), or
/// NULL when it has none.
pub fn declared(relation: &str, attnum: &str) -> String {
    format!("substring(col_description({relation}, {attnum}) FROM '^{DECLARED_PREFIX}(.*)$')")
}

/// `(6)` / `` / `(p)`: the fractional-second suffix of a time type whose modifier is `typmod`.
fn fsp(typmod: &str) -> String {
    format!(
        "CASE WHEN {typmod} < 0 THEN '(6)' WHEN {typmod} = 0 THEN '' ELSE CONCAT('(', {typmod}, ')') END"
    )
}

/// MySQL's `COLUMN_TYPE` (lower case) of the pg_attribute row aliased `a`: the declared type
/// when there is one, else the MySQL type the result mapping shows for the PostgreSQL type
/// (integer → `int`, boolean → `tinyint(1)`, text → `longtext`, bytea → `longblob`,
/// numeric(p,s) → `decimal(p,s)`, timestamp(p) → `datetime(p)`, timestamptz(p) →
/// `timestamp(p)`, varchar(n), char(n), json/jsonb → `json`, uuid → `char(36)`; any other
/// type as PostgreSQL formats it).
pub fn column_type(a: &str) -> String {
    let t = format!("{a}.atttypid");
    let m = format!("{a}.atttypmod");
    let declared = declared(&format!("{a}.attrelid"), &format!("{a}.attnum"));
    format!(
        "COALESCE({declared}, CASE \
         WHEN {t} = 23 THEN 'int' WHEN {t} = 21 THEN 'smallint' WHEN {t} = 20 THEN 'bigint' \
         WHEN {t} = 16 THEN 'tinyint(1)' WHEN {t} = 701 THEN 'double' WHEN {t} = 700 THEN 'float' \
         WHEN {t} = 25 THEN 'longtext' WHEN {t} = 17 THEN 'longblob' WHEN {t} IN (114, 3802) THEN 'json' \
         WHEN {t} = 2950 THEN 'char(36)' WHEN {t} = 1082 THEN 'date' \
         WHEN {t} = 1700 THEN CASE WHEN {m} < 0 THEN 'decimal(65,30)' \
           ELSE CONCAT('decimal(', ({m} - 4) >> 16, ',', ({m} - 4) & 65535, ')') END \
         WHEN {t} = 1043 THEN CASE WHEN {m} < 0 THEN 'longtext' ELSE CONCAT('varchar(', {m} - 4, ')') END \
         WHEN {t} = 1042 THEN CONCAT('char(', {m} - 4, ')') \
         WHEN {t} = 1114 THEN CONCAT('datetime', {fsp}) \
         WHEN {t} = 1184 THEN CONCAT('timestamp', {fsp}) \
         WHEN {t} = 1083 THEN CONCAT('time', {fsp}) \
         ELSE format_type({t}, {m}) END)",
        fsp = fsp(&m)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expressions_parse_as_mysql_and_as_postgresql() {
        use sqlparser::dialect::{MySqlDialect, PostgreSqlDialect};
        let sql = format!("SELECT {} FROM pg_attribute a", column_type("a"));
        sqlparser::parser::Parser::parse_sql(&MySqlDialect {}, &sql).unwrap();
        sqlparser::parser::Parser::parse_sql(&PostgreSqlDialect {}, &sql).unwrap();
        assert!(!sql.contains('\\'), "{sql}");
    }
}
