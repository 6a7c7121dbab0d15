//! MySQL's table descriptions (DESCRIBE, SHOW CREATE TABLE, column flags) read from PostgreSQL's catalog.

use super::*;

/// A regclass literal's text for a table name as PostgreSQL resolves it (printed form:
/// quoted parts keep their case, unquoted ones fold).
pub fn regclass_literal(table: &str) -> String {
    format!("'{}'", table.replace('\'', "''"))
}

/// Refuses a `pg_*` table name (the relation visitor does not see the names these catalog
/// queries take as strings; see `Rewriter::pre_visit_relation`).
fn refuse_catalog(table: &ObjectName) -> Result<(), DialectError> {
    let last = table
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.as_str());
    if last.is_some_and(|n| n.len() >= 3 && n[..3].eq_ignore_ascii_case("pg_")) {
        return Err(DialectError::Unsupported(format!(
            "the table name {table} (PostgreSQL's system catalogs are not reachable through the gateway)"
        )));
    }
    Ok(())
}

/// `SHOW COLUMNS FROM t` / `DESC t` as a catalog query with MySQL's column names. An unknown
/// table fails in the `regclass` cast with `42P01` (MySQL: 1146), as on MySQL.
pub(super) fn describe(table: &ObjectName) -> Result<Statement, DialectError> {
    refuse_catalog(table)?;
    let t = regclass_literal(&table.to_string());
    let sql = format!(
        "SELECT a.attname::text AS \"Field\", COALESCE({}, format_type(a.atttypid, a.atttypmod)) AS \"Type\", \
         CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END AS \"Null\", \
         CASE WHEN EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY (i.indkey)) THEN 'PRI' ELSE '' END AS \"Key\", \
         pg_get_expr(d.adbin, d.adrelid) AS \"Default\", \
         CASE WHEN a.attidentity <> '' OR pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%' THEN 'auto_increment' ELSE '' END AS \"Extra\" \
         FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
         WHERE a.attrelid = CAST({t} AS regclass) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        crate::pgcatalog::declared("a.attrelid", "a.attnum")
    );
    let mut parsed = Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &sql)
        .map_err(|e| DialectError::Parse(e.to_string()))?;
    Ok(parsed.remove(0))
}

/// `SHOW CREATE TABLE t` as a catalog query: one row (`Table`, `Create Table`) with a MySQL
/// `CREATE TABLE` built from the PostgreSQL columns (types mapped back as the result mapping
/// does: integer → int, numeric → decimal, timestamp(p) → datetime(p), text → longtext,
/// bytea → longblob, boolean → tinyint(1), ...), NOT NULL, AUTO_INCREMENT for identity and
/// serial columns, defaults without PostgreSQL casts, and the primary key. Indexes other than
/// the primary key are not shown.
pub(super) fn show_create_table(table: &ObjectName) -> Result<Statement, DialectError> {
    refuse_catalog(table)?;
    let t = regclass_literal(&table.to_string());
    let label = format!(
        "'{}'",
        table
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map_or_else(|| table.to_string(), |i| i.value.clone())
            .replace('\'', "''")
    );
    let sql = format!(
        "SELECT {label} AS \"Table\", \
         'CREATE TABLE `' || c.relname || E'` (\\n' || \
         string_agg('  `' || a.attname || '` ' || \
           {column_type} || \
           CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END || \
           CASE WHEN a.attidentity <> '' OR COALESCE(pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%', false) THEN ' AUTO_INCREMENT' \
             WHEN d.adbin IS NOT NULL THEN ' DEFAULT ' || regexp_replace(pg_get_expr(d.adbin, d.adrelid), '::[a-z ]+(\\([0-9, ]*\\))?$', '') \
             WHEN NOT a.attnotnull THEN ' DEFAULT NULL' ELSE '' END, \
         E',\\n' ORDER BY a.attnum) || \
         COALESCE((SELECT E',\\n  PRIMARY KEY (' || string_agg('`' || pa.attname || '`', ',' ORDER BY k.n) || ')' \
           FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) \
           JOIN pg_attribute pa ON pa.attrelid = i.indrelid AND pa.attnum = k.attnum \
           WHERE i.indrelid = c.oid AND i.indisprimary), '') || \
         E'\\n)' AS \"Create Table\" \
         FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
         LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
         WHERE c.oid = CAST({t} AS regclass) GROUP BY c.oid, c.relname",
        column_type = crate::pgcatalog::column_type("a")
    );
    let mut parsed = Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &sql)
        .map_err(|e| DialectError::Parse(e.to_string()))?;
    Ok(parsed.remove(0))
}

/// The catalog query for the column flags of `tables` (PostgreSQL names as printed): one row
/// per column: table oid, table name, column number, NOT NULL, in the primary key, identity or
/// serial (`t`/`f`), the declared MySQL type ([`DECLARED_PREFIX`] comment without the prefix,
/// or NULL). Unknown names yield no rows.
pub fn column_flags_query(tables: &[String]) -> String {
    let names: Vec<String> = tables.iter().map(|t| regclass_literal(t)).collect();
    format!(
        "SELECT c.oid, c.relname, a.attnum, a.attnotnull, \
         EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary AND a.attnum = ANY (i.indkey)), \
         (a.attidentity <> '' OR COALESCE(pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%', false)), \
         {} \
         FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
         LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
         WHERE c.oid IN (SELECT to_regclass(n) FROM unnest(ARRAY[{}]::text[]) AS n)",
        crate::pgcatalog::declared("c.oid", "a.attnum"),
        names.join(", ")
    )
}

/// The catalog query for [`TableInfo`] of `table` (PostgreSQL name as printed): one row per
/// column: name, in the primary key (`t`/`f`), identity or serial (`t`/`f`), boolean (`t`/`f`).
pub fn table_info_query(table: &str) -> String {
    format!(
        "SELECT a.attname, \
         EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY (i.indkey)), \
         (a.attidentity <> '' OR COALESCE(pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%', false)), \
         a.atttypid = 'boolean'::regtype \
         FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
         WHERE a.attrelid = to_regclass({}) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        regclass_literal(table)
    )
}
