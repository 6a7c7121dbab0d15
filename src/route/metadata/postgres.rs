//! `information_schema` views answered from a PostgreSQL dataNode's catalog, with MySQL 5.7's
//! columns and values: what JDBC's `DatabaseMetaData`, ORMs' reflection and GUI tools read.
//!
//! A PostgreSQL connection sees one database, so each dataNode database answers for the tables
//! the logical schemas keep there (the same [`Scope`]s as on MySQL, restricted to that
//! database), in the schema PostgreSQL creates tables in (`current_schema()`). The derived
//! tables are MySQL statements (the PostgreSQL translation prints them), written with the
//! expressions of [`crate::pgcatalog`]; their column names are unquoted, so that PostgreSQL
//! folds them as it folds the client's unquoted references to them.
//!
//! Answered: `SCHEMATA`, `TABLES`, `COLUMNS`, `STATISTICS` (primary keys and indexes),
//! `TABLE_CONSTRAINTS` and `KEY_COLUMN_USAGE` (primary keys and unique constraints; no foreign
//! keys: a sharded table has none across its nodes). Any other view answers no rows.
//!
//! The translation writes MySQL's `TRUE`/`FALSE` as `1`/`0`: conditions here are comparisons
//! (`1 = 1`, `.. IS TRUE`), never boolean literals.

use super::{Mapped, Scope, literal_list, quote_literal};
use crate::pgcatalog;

/// MySQL 5.7's columns of each view answered here, in order (`information_schema` of MySQL
/// 5.7: `TABLES`, `COLUMNS`, ...).
pub(super) fn columns(view: &str) -> Option<&'static [&'static str]> {
    Some(match view {
        "SCHEMATA" => &[
            "CATALOG_NAME",
            "SCHEMA_NAME",
            "DEFAULT_CHARACTER_SET_NAME",
            "DEFAULT_COLLATION_NAME",
            "SQL_PATH",
        ],
        "TABLES" => &[
            "TABLE_CATALOG",
            "TABLE_SCHEMA",
            "TABLE_NAME",
            "TABLE_TYPE",
            "ENGINE",
            "VERSION",
            "ROW_FORMAT",
            "TABLE_ROWS",
            "AVG_ROW_LENGTH",
            "DATA_LENGTH",
            "MAX_DATA_LENGTH",
            "INDEX_LENGTH",
            "DATA_FREE",
            "AUTO_INCREMENT",
            "CREATE_TIME",
            "UPDATE_TIME",
            "CHECK_TIME",
            "TABLE_COLLATION",
            "CHECKSUM",
            "CREATE_OPTIONS",
            "TABLE_COMMENT",
        ],
        "COLUMNS" => &[
            "TABLE_CATALOG",
            "TABLE_SCHEMA",
            "TABLE_NAME",
            "COLUMN_NAME",
            "ORDINAL_POSITION",
            "COLUMN_DEFAULT",
            "IS_NULLABLE",
            "DATA_TYPE",
            "CHARACTER_MAXIMUM_LENGTH",
            "CHARACTER_OCTET_LENGTH",
            "NUMERIC_PRECISION",
            "NUMERIC_SCALE",
            "DATETIME_PRECISION",
            "CHARACTER_SET_NAME",
            "COLLATION_NAME",
            "COLUMN_TYPE",
            "COLUMN_KEY",
            "EXTRA",
            "PRIVILEGES",
            "COLUMN_COMMENT",
            "GENERATION_EXPRESSION",
        ],
        "STATISTICS" => &[
            "TABLE_CATALOG",
            "TABLE_SCHEMA",
            "TABLE_NAME",
            "NON_UNIQUE",
            "INDEX_SCHEMA",
            "INDEX_NAME",
            "SEQ_IN_INDEX",
            "COLUMN_NAME",
            "COLLATION",
            "CARDINALITY",
            "SUB_PART",
            "PACKED",
            "NULLABLE",
            "INDEX_TYPE",
            "COMMENT",
            "INDEX_COMMENT",
        ],
        "TABLE_CONSTRAINTS" => &[
            "CONSTRAINT_CATALOG",
            "CONSTRAINT_SCHEMA",
            "CONSTRAINT_NAME",
            "TABLE_SCHEMA",
            "TABLE_NAME",
            "CONSTRAINT_TYPE",
        ],
        "KEY_COLUMN_USAGE" => &[
            "CONSTRAINT_CATALOG",
            "CONSTRAINT_SCHEMA",
            "CONSTRAINT_NAME",
            "TABLE_CATALOG",
            "TABLE_SCHEMA",
            "TABLE_NAME",
            "COLUMN_NAME",
            "ORDINAL_POSITION",
            "POSITION_IN_UNIQUE_CONSTRAINT",
            "REFERENCED_TABLE_SCHEMA",
            "REFERENCED_TABLE_NAME",
            "REFERENCED_COLUMN_NAME",
        ],
        "REFERENTIAL_CONSTRAINTS" => &[
            "CONSTRAINT_CATALOG",
            "CONSTRAINT_SCHEMA",
            "CONSTRAINT_NAME",
            "UNIQUE_CONSTRAINT_CATALOG",
            "UNIQUE_CONSTRAINT_SCHEMA",
            "UNIQUE_CONSTRAINT_NAME",
            "MATCH_OPTION",
            "UPDATE_RULE",
            "DELETE_RULE",
            "TABLE_NAME",
            "REFERENCED_TABLE_NAME",
        ],
        "PARTITIONS" | "COLUMNS_EXTENSIONS" => &["TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME"],
        _ => return None,
    })
}

/// The condition on the relation name `name` (an SQL expression) selecting what `scope` owns in
/// `database`; `None` when it owns nothing there.
fn owned(scope: &Scope, database: &str, name: &str) -> Option<String> {
    let list = literal_list;
    let mut parts = Vec::new();
    if scope.default_db.as_deref() == Some(database) {
        parts.push(if scope.configured.is_empty() {
            "1 = 1".to_string()
        } else {
            format!("LOWER({name}) NOT IN ({})", list(&scope.configured))
        });
    }
    if let Some(tables) = scope.tables.get(database) {
        parts.push(format!("LOWER({name}) IN ({})", list(tables)));
    }
    (!parts.is_empty()).then(|| format!("({})", parts.join(" OR ")))
}

/// The relations of the current schema (`c`: pg_class, `n`: pg_namespace) a scope may list:
/// tables, partitioned tables and views.
const RELATIONS: &str =
    "pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace";
const IN_SCHEMA: &str = "n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v')";

/// The columns of `a` (pg_attribute of `c`) that are not dropped or system columns.
const ATTRIBUTES: &str =
    "JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped";

/// Whether column `a` of `c` is in an index of the given kind (`indisprimary` /
/// `indisunique`), and in which position (1-based), as SQL.
fn index_position(i: &str) -> String {
    format!(
        "array_position(string_to_array(CAST({i}.indkey AS CHAR), ' '), CAST(a.attnum AS CHAR))"
    )
}

/// One SELECT of view `m` for one scope's relations in `database` (`logical`: the schema name
/// the rows answer), or `None` for a view answered with no rows.
fn select(m: &Mapped, logical: &str, cond: &str) -> Option<String> {
    let l = quote_literal(logical);
    let column_type = pgcatalog::column_type("a");
    Some(match m.name {
        "SCHEMATA" => format!(
            "SELECT 'def' AS CATALOG_NAME, {l} AS SCHEMA_NAME, 'utf8mb4' AS DEFAULT_CHARACTER_SET_NAME, \
             'utf8mb4_bin' AS DEFAULT_COLLATION_NAME, CAST(NULL AS CHAR) AS SQL_PATH"
        ),
        "TABLES" => format!(
            "SELECT 'def' AS TABLE_CATALOG, {l} AS TABLE_SCHEMA, CAST(c.relname AS CHAR) AS TABLE_NAME, \
             CASE WHEN c.relkind = 'v' THEN 'VIEW' ELSE 'BASE TABLE' END AS TABLE_TYPE, \
             CASE WHEN c.relkind = 'v' THEN NULL ELSE 'InnoDB' END AS ENGINE, 10 AS VERSION, \
             'Dynamic' AS ROW_FORMAT, CAST(GREATEST(c.reltuples, 0) AS SIGNED) AS TABLE_ROWS, \
             0 AS AVG_ROW_LENGTH, 0 AS DATA_LENGTH, 0 AS MAX_DATA_LENGTH, 0 AS INDEX_LENGTH, \
             0 AS DATA_FREE, CAST(NULL AS SIGNED) AS AUTO_INCREMENT, CAST(NULL AS DATETIME) AS CREATE_TIME, \
             CAST(NULL AS DATETIME) AS UPDATE_TIME, CAST(NULL AS DATETIME) AS CHECK_TIME, \
             'utf8mb4_bin' AS TABLE_COLLATION, CAST(NULL AS SIGNED) AS CHECKSUM, '' AS CREATE_OPTIONS, \
             COALESCE(obj_description(c.oid, 'pg_class'), '') AS TABLE_COMMENT \
             FROM {RELATIONS} WHERE {IN_SCHEMA} AND {cond}"
        ),
        "COLUMNS" => {
            let data_type = format!("split_part(split_part({column_type}, '(', 1), ' ', 1)");
            let length = format!(
                "CASE WHEN a.atttypid IN (1043, 1042) AND a.atttypmod >= 4 THEN a.atttypmod - 4 \
                 WHEN {data_type} IN ('tinytext', 'tinyblob') THEN 255 \
                 WHEN {data_type} IN ('text', 'blob') THEN 65535 \
                 WHEN {data_type} IN ('mediumtext', 'mediumblob') THEN 16777215 \
                 WHEN {data_type} IN ('longtext', 'longblob', 'json') THEN 4294967295 \
                 WHEN {data_type} IN ('varbinary', 'binary', 'char') \
                   THEN CAST(split_part(split_part({column_type}, '(', 2), ')', 1) AS SIGNED) \
                 ELSE NULL END"
            );
            let texty = format!(
                "{data_type} IN ('varchar', 'char', 'tinytext', 'text', 'mediumtext', 'longtext', 'enum', 'set')"
            );
            let precision = format!(
                "CASE {data_type} WHEN 'tinyint' THEN 3 WHEN 'smallint' THEN 5 WHEN 'mediumint' THEN 7 \
                 WHEN 'int' THEN 10 WHEN 'bigint' THEN CASE WHEN {column_type} LIKE '%unsigned' THEN 20 ELSE 19 END \
                 WHEN 'float' THEN 12 WHEN 'double' THEN 22 \
                 WHEN 'decimal' THEN CAST(split_part(split_part({column_type}, '(', 2), ',', 1) AS SIGNED) \
                 WHEN 'bit' THEN CAST(split_part(split_part({column_type}, '(', 2), ')', 1) AS SIGNED) \
                 ELSE NULL END"
            );
            let scale = format!(
                "CASE WHEN {data_type} IN ('tinyint', 'smallint', 'mediumint', 'int', 'bigint') THEN 0 \
                 WHEN {data_type} = 'decimal' THEN CAST(split_part(split_part({column_type}, ',', 2), ')', 1) AS SIGNED) \
                 ELSE NULL END"
            );
            let datetime_precision = format!(
                "CASE WHEN {data_type} IN ('datetime', 'timestamp', 'time') \
                 THEN COALESCE(CAST(NULLIF(split_part(split_part({column_type}, '(', 2), ')', 1), '') AS SIGNED), 0) \
                 ELSE NULL END"
            );
            let primary = format!(
                "EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisprimary \
                 AND {} IS NOT NULL)",
                index_position("i")
            );
            let unique = format!(
                "EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisunique \
                 AND i.indnatts = 1 AND {} IS NOT NULL)",
                index_position("i")
            );
            let auto = "(a.attidentity <> '' OR (pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%') IS TRUE)";
            let comment = format!(
                "COALESCE(CASE WHEN col_description(c.oid, a.attnum) LIKE '{}%' THEN '' \
                 ELSE col_description(c.oid, a.attnum) END, '')",
                pgcatalog::DECLARED_PREFIX
            );
            format!(
                "SELECT 'def' AS TABLE_CATALOG, {l} AS TABLE_SCHEMA, CAST(c.relname AS CHAR) AS TABLE_NAME, \
                 CAST(a.attname AS CHAR) AS COLUMN_NAME, CAST(a.attnum AS SIGNED) AS ORDINAL_POSITION, \
                 CASE WHEN {auto} THEN NULL \
                   ELSE regexp_replace(pg_get_expr(d.adbin, d.adrelid), '::[a-z ]+([(][0-9, ]*[)])?$', '') END AS COLUMN_DEFAULT, \
                 CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END AS IS_NULLABLE, \
                 {data_type} AS DATA_TYPE, CAST({length} AS SIGNED) AS CHARACTER_MAXIMUM_LENGTH, \
                 CAST(CASE WHEN {texty} THEN {length} * 4 ELSE {length} END AS SIGNED) AS CHARACTER_OCTET_LENGTH, \
                 CAST({precision} AS SIGNED) AS NUMERIC_PRECISION, CAST({scale} AS SIGNED) AS NUMERIC_SCALE, \
                 CAST({datetime_precision} AS SIGNED) AS DATETIME_PRECISION, \
                 CASE WHEN {texty} THEN 'utf8mb4' ELSE NULL END AS CHARACTER_SET_NAME, \
                 CASE WHEN {texty} THEN 'utf8mb4_bin' ELSE NULL END AS COLLATION_NAME, \
                 {column_type} AS COLUMN_TYPE, \
                 CASE WHEN {primary} THEN 'PRI' WHEN {unique} THEN 'UNI' ELSE '' END AS COLUMN_KEY, \
                 CASE WHEN {auto} THEN 'auto_increment' ELSE '' END AS EXTRA, \
                 'select,insert,update,references' AS PRIVILEGES, {comment} AS COLUMN_COMMENT, \
                 '' AS GENERATION_EXPRESSION \
                 FROM {RELATIONS} {ATTRIBUTES} \
                 LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
                 WHERE {IN_SCHEMA} AND {cond}"
            )
        }
        "STATISTICS" => format!(
            "SELECT 'def' AS TABLE_CATALOG, {l} AS TABLE_SCHEMA, CAST(c.relname AS CHAR) AS TABLE_NAME, \
             CASE WHEN i.indisunique THEN 0 ELSE 1 END AS NON_UNIQUE, {l} AS INDEX_SCHEMA, \
             CASE WHEN i.indisprimary THEN 'PRIMARY' ELSE CAST(ic.relname AS CHAR) END AS INDEX_NAME, \
             CAST({pos} AS SIGNED) AS SEQ_IN_INDEX, CAST(a.attname AS CHAR) AS COLUMN_NAME, 'A' AS COLLATION, \
             CAST(0 AS SIGNED) AS CARDINALITY, CAST(NULL AS SIGNED) AS SUB_PART, CAST(NULL AS CHAR) AS PACKED, \
             CASE WHEN a.attnotnull THEN '' ELSE 'YES' END AS NULLABLE, 'BTREE' AS INDEX_TYPE, \
             '' AS COMMENT, '' AS INDEX_COMMENT \
             FROM {RELATIONS} JOIN pg_catalog.pg_index i ON i.indrelid = c.oid \
             JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid {ATTRIBUTES} \
             WHERE {IN_SCHEMA} AND {pos} IS NOT NULL AND {cond}",
            pos = index_position("i")
        ),
        "TABLE_CONSTRAINTS" => format!(
            "SELECT 'def' AS CONSTRAINT_CATALOG, {l} AS CONSTRAINT_SCHEMA, \
             CASE WHEN i.indisprimary THEN 'PRIMARY' ELSE CAST(ic.relname AS CHAR) END AS CONSTRAINT_NAME, \
             {l} AS TABLE_SCHEMA, CAST(c.relname AS CHAR) AS TABLE_NAME, \
             CASE WHEN i.indisprimary THEN 'PRIMARY KEY' ELSE 'UNIQUE' END AS CONSTRAINT_TYPE \
             FROM {RELATIONS} JOIN pg_catalog.pg_index i ON i.indrelid = c.oid \
             JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid \
             WHERE {IN_SCHEMA} AND i.indisunique AND {cond}"
        ),
        "KEY_COLUMN_USAGE" => format!(
            "SELECT 'def' AS CONSTRAINT_CATALOG, {l} AS CONSTRAINT_SCHEMA, \
             CASE WHEN i.indisprimary THEN 'PRIMARY' ELSE CAST(ic.relname AS CHAR) END AS CONSTRAINT_NAME, \
             'def' AS TABLE_CATALOG, {l} AS TABLE_SCHEMA, CAST(c.relname AS CHAR) AS TABLE_NAME, \
             CAST(a.attname AS CHAR) AS COLUMN_NAME, CAST({pos} AS SIGNED) AS ORDINAL_POSITION, \
             CAST(NULL AS SIGNED) AS POSITION_IN_UNIQUE_CONSTRAINT, CAST(NULL AS CHAR) AS REFERENCED_TABLE_SCHEMA, \
             CAST(NULL AS CHAR) AS REFERENCED_TABLE_NAME, CAST(NULL AS CHAR) AS REFERENCED_COLUMN_NAME \
             FROM {RELATIONS} JOIN pg_catalog.pg_index i ON i.indrelid = c.oid \
             JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid {ATTRIBUTES} \
             WHERE {IN_SCHEMA} AND i.indisunique AND {pos} IS NOT NULL AND {cond}",
            pos = index_position("i")
        ),
        _ => return None,
    })
}

/// The derived table of view `m` on the PostgreSQL database `database`: the rows every scope
/// owns there, or none (with the view's columns) when no scope does.
pub(super) fn derived(m: &Mapped, scopes: &[Scope], database: &str) -> Option<String> {
    let columns = columns(m.name)?;
    let parts: Vec<String> = scopes
        .iter()
        .filter_map(|s| {
            let cond = if m.name == "SCHEMATA" {
                // One row per schema, from the database that represents it.
                (s.representative() == Some(database)).then(|| "1 = 1".to_string())?
            } else {
                owned(s, database, "c.relname")?
            };
            select(m, &s.logical, &cond)
        })
        .collect();
    if parts.is_empty() {
        let nulls: Vec<String> = columns
            .iter()
            .map(|c| format!("CAST(NULL AS CHAR) AS {c}"))
            .collect();
        return Some(format!("SELECT {} WHERE 1 = 0", nulls.join(", ")));
    }
    Some(parts.join(" UNION ALL "))
}
