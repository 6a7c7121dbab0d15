//! Unit tests of the MySQL-to-PostgreSQL translation, statement by statement.

use super::*;

fn pg(mysql: &str) -> String {
    translate(mysql, "db")
        .unwrap()
        .finish(None, &Default::default())
        .unwrap()
        .sql
}

fn refused(mysql: &str) -> String {
    match translate(mysql, "db").and_then(|t| t.finish(None, &Default::default())) {
        Err(DialectError::Unsupported(what)) => what,
        other => panic!("{mysql}: expected a refusal, got {other:?}"),
    }
}

#[test]
fn mysql_labels() {
    assert_eq!(
        pg("SELECT COUNT(*), Name, t.`Code`, a+1, x AS y, id, IFNULL(a,  0), 'it''s' FROM t"),
        "SELECT COUNT(*) AS \"COUNT(*)\", Name AS \"Name\", t.\"code\" AS \"Code\", a + 1 AS \"a+1\", x AS y, id, COALESCE(a, 0) AS \"IFNULL(a,  0)\", 'it''s' AS \"it's\" FROM t"
    );
    assert_eq!(
        pg("SELECT DISTINCT\n  id,\n  MAX(v) ,\n  (a, b) IN ((1, 2)) FROM t"),
        "SELECT DISTINCT id, MAX(v) AS \"MAX(v)\", (a, b) IN ((1, 2)) AS \"(a, b) IN ((1, 2))\" FROM t"
    );
}

#[test]
fn identifiers() {
    assert_eq!(
        pg("SELECT `Id`, name AS `Label` FROM `Orders` o WHERE o.`Code` = 1"),
        "SELECT \"id\" AS \"Id\", name AS \"Label\" FROM \"orders\" o WHERE o.\"code\" = 1"
    );
}

#[test]
fn null_order_is_mysqls() {
    assert_eq!(
        pg("SELECT a FROM t ORDER BY a, b DESC, c ASC"),
        "SELECT a FROM t ORDER BY a NULLS FIRST, b DESC NULLS LAST, c ASC NULLS FIRST"
    );
}

#[test]
fn the_nodes_database_qualifier_is_dropped() {
    assert_eq!(
        pg("SELECT a FROM db.t JOIN other.u ON 1 = 1 WHERE a IN (SELECT b FROM `db`.v)"),
        "SELECT a FROM t JOIN other.u ON 1 = 1 WHERE a IN (SELECT b FROM v)"
    );
    assert_eq!(
        pg("INSERT INTO db.t (a) VALUES (1)"),
        "INSERT INTO t (a) VALUES (1)"
    );
}

#[test]
fn limit_offset() {
    assert_eq!(
        pg("SELECT a FROM t LIMIT 5, 10"),
        "SELECT a FROM t LIMIT 10 OFFSET 5"
    );
    assert_eq!(pg("SELECT a FROM t LIMIT 10"), "SELECT a FROM t LIMIT 10");
}

#[test]
fn string_literals() {
    assert_eq!(pg(r"SELECT 'it\'s' AS a"), "SELECT 'it''s' AS a");
    assert_eq!(pg(r"SELECT 'a\\b'"), r#"SELECT 'a\b' AS "a\b""#);
    assert_eq!(pg(r#"SELECT "x""#), "SELECT 'x' AS \"x\"");
    assert_eq!(pg("SELECT 'a\\nb'"), "SELECT 'a\nb' AS \"a\nb\"");
}

#[test]
fn literals() {
    assert_eq!(
        pg("SELECT TRUE, FALSE"),
        "SELECT 1 AS \"TRUE\", 0 AS \"FALSE\""
    );
    assert_eq!(
        pg("SELECT 0x4142"),
        "SELECT decode('4142', 'hex') AS \"0x4142\""
    );
    assert_eq!(
        pg("SELECT X'4142'"),
        "SELECT decode('4142', 'hex') AS \"X'4142'\""
    );
}

#[test]
fn functions() {
    assert_eq!(
        pg("SELECT IFNULL(a, 0) FROM t"),
        "SELECT COALESCE(a, 0) AS \"IFNULL(a, 0)\" FROM t"
    );
    assert_eq!(
        pg("SELECT NOW()"),
        "SELECT CAST(now() AS TIMESTAMP(0)) AS \"NOW()\""
    );
    assert_eq!(
        pg("SELECT CONCAT(a, '-', 1) FROM t"),
        "SELECT (CAST(a AS TEXT) || CAST('-' AS TEXT) || CAST(1 AS TEXT)) AS \"CONCAT(a, '-', 1)\" FROM t"
    );
    assert_eq!(
        pg("SELECT IF(a > 1, 'x', 'y') FROM t"),
        "SELECT CASE WHEN a > 1 THEN 'x' ELSE 'y' END AS \"IF(a > 1, 'x', 'y')\" FROM t"
    );
    assert_eq!(
        pg("SELECT LAST_INSERT_ID()"),
        "SELECT lastval() AS \"LAST_INSERT_ID()\""
    );
    assert_eq!(
        pg("SELECT a <=> b FROM t"),
        "SELECT a IS NOT DISTINCT FROM b AS \"a <=> b\" FROM t"
    );
    assert_eq!(
        pg("SELECT CAST(a AS SIGNED), CAST(b AS CHAR) FROM t"),
        "SELECT CAST(a AS BIGINT) AS \"CAST(a AS SIGNED)\", CAST(b AS TEXT) AS \"CAST(b AS CHAR)\" FROM t"
    );
}

#[test]
fn date_functions() {
    assert_eq!(
        pg("SELECT DATE_FORMAT(d, '%Y-%m-%d %H:%i:%s') FROM t"),
        "SELECT to_char(d, 'YYYY\"-\"MM\"-\"DD\" \"HH24\":\"MI\":\"SS') AS \"DATE_FORMAT(d, '%Y-%m-%d %H:%i:%s')\" FROM t"
    );
    assert_eq!(
        pg("SELECT STR_TO_DATE('05/01/2024', '%d/%m/%Y')"),
        "SELECT to_date('05/01/2024', 'DD\"/\"MM\"/\"YYYY') AS \"STR_TO_DATE('05/01/2024', '%d/%m/%Y')\""
    );
    assert_eq!(
        pg("SELECT STR_TO_DATE(s, '%Y%m%d %T') FROM t"),
        "SELECT CAST(to_timestamp(s, 'YYYYMMDD\" \"HH24:MI:SS') AS TIMESTAMP(0)) AS \"STR_TO_DATE(s, '%Y%m%d %T')\" FROM t"
    );
    assert_eq!(
        refused("SELECT DATE_FORMAT(d, '%U') FROM t"),
        "the date format specifier %U"
    );
    assert_eq!(
        refused("SELECT DATE_FORMAT(d, f) FROM t"),
        "DATE_FORMAT() with a format that is not a string literal"
    );
    assert_eq!(
        pg("SELECT DATABASE()"),
        "SELECT current_database() AS \"DATABASE()\""
    );
    assert_eq!(
        pg("SELECT HEX(b) FROM t"),
        "SELECT upper(encode(CAST(b AS BYTEA), 'hex')) AS \"HEX(b)\" FROM t"
    );
}

#[test]
fn mysql_execution_hints_are_dropped() {
    assert_eq!(
        pg("SELECT SQL_BUFFER_RESULT SQL_NO_CACHE a, COUNT(DISTINCT b) FROM t GROUP BY a"),
        "SELECT a, COUNT(DISTINCT b) AS \"COUNT(DISTINCT b)\" FROM t GROUP BY a"
    );
}

#[test]
fn merge_weight() {
    assert_eq!(
        pg(
            "SELECT name, WEIGHT_STRING(RTRIM(name)) AS `__manx_0` FROM t ORDER BY name NULLS FIRST"
        ),
        "SELECT name, convert_to(CAST(rtrim(CAST(name AS TEXT)) AS TEXT), 'UTF8') AS \"__manx_0\" FROM t ORDER BY name NULLS FIRST"
    );
}

#[test]
fn insert_forms() {
    let info = TableInfo {
        primary_key: vec!["id".into()],
        auto_column: Some("id".into()),
        ..TableInfo::default()
    };
    let t = translate(
        "INSERT INTO `T` (id, v) VALUES (1, 'a') ON DUPLICATE KEY UPDATE v = VALUES(v)",
        "db",
    )
    .unwrap();
    assert_eq!(t.insert_table.as_deref(), Some("\"t\""));
    let f = t.finish(Some(&info), &Default::default()).unwrap();
    assert_eq!(
        f.sql,
        "INSERT INTO \"t\" (id, v) VALUES (1, 'a') ON CONFLICT(\"id\") DO UPDATE SET v = EXCLUDED.v RETURNING \"id\", (xmax = 0)"
    );
    assert!(f.returning_id && f.returning_inserted && !f.returns_rows);
    let f = translate("INSERT IGNORE INTO t (v) VALUES ('a')", "db")
        .unwrap()
        .finish(None, &Default::default())
        .unwrap();
    assert_eq!(
        f.sql,
        "INSERT INTO t (v) VALUES ('a') ON CONFLICT DO NOTHING"
    );
    let f = translate("REPLACE INTO t (id, v) VALUES (1, 'b')", "db")
        .unwrap()
        .finish(Some(&info), &Default::default())
        .unwrap();
    assert_eq!(
        f.sql,
        "INSERT INTO t (id, v) VALUES (1, 'b') ON CONFLICT(\"id\") DO UPDATE SET id = EXCLUDED.id, v = EXCLUDED.v RETURNING \"id\", (xmax = 0)"
    );
    let f = translate("INSERT INTO t SET v = 'a', w = 2", "db")
        .unwrap()
        .finish(None, &Default::default())
        .unwrap();
    assert_eq!(f.sql, "INSERT INTO t (v, w) VALUES ('a', 2)");
    assert_eq!(
        translate(
            "INSERT INTO t (v) VALUES (1) ON DUPLICATE KEY UPDATE v = 2",
            "db"
        )
        .unwrap()
        .finish(Some(&TableInfo::default()), &Default::default())
        .unwrap_err(),
        DialectError::Unsupported(
            "ON DUPLICATE KEY UPDATE / REPLACE on a table without a primary key".into()
        )
    );
}

#[test]
fn create_table_types() {
    assert_eq!(
        pg(
            "CREATE TABLE `t` (`id` INT(11) NOT NULL AUTO_INCREMENT, flag TINYINT(1), at DATETIME, \
            d DOUBLE, body LONGTEXT, raw BLOB, n BIGINT UNSIGNED, PRIMARY KEY (`id`), KEY idx_at (at)) \
            ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
        ),
        "CREATE TABLE \"t\" (\"id\" INTEGER NOT NULL GENERATED BY DEFAULT AS IDENTITY, flag SMALLINT, \
         at TIMESTAMP(0), d DOUBLE PRECISION, body TEXT, raw BYTEA, n NUMERIC(20), PRIMARY KEY (\"id\")); \
         COMMENT ON COLUMN \"t\".flag IS 'manx:tinyint(1)'; COMMENT ON COLUMN \"t\".raw IS 'manx:blob'; \
         COMMENT ON COLUMN \"t\".n IS 'manx:bigint unsigned'"
    );
}

#[test]
fn enum_and_set_are_varchars_held_to_their_members() {
    assert_eq!(
        pg("CREATE TABLE v (e ENUM('a','it''s ') NOT NULL, s SET('x.y','z') DEFAULT 'z')"),
        "CREATE TABLE v (e VARCHAR(4) NOT NULL DEFAULT 'a', s VARCHAR(5) DEFAULT 'z'); \
         COMMENT ON COLUMN v.e IS 'manx:enum(''a'',''it''''s'')'; \
         ALTER TABLE v ADD CONSTRAINT \"manx_values_e\" CHECK (e IN ('a', 'it''s')); \
         COMMENT ON COLUMN v.s IS 'manx:set(''x.y'',''z'')'; \
         ALTER TABLE v ADD CONSTRAINT \"manx_values_s\" CHECK (s = '' OR (s || ',') ~ '^(x\\.y,)?(z,)?$')"
    );
    // MySQL's own error for a duplicated member (letter case and trailing spaces aside).
    let e = translate("CREATE TABLE v (e ENUM('a','A '))", "db")
        .and_then(|t| t.finish(None, &Default::default()))
        .unwrap_err();
    assert!(
        matches!(&e, DialectError::Server { code: 1291, message, .. }
            if message == "Column 'e' has duplicated value 'A' in ENUM"),
        "{e:?}"
    );
    assert!(refused("CREATE TABLE v (s SET('a,b'))").contains("comma"));
}

#[test]
fn the_default_of_a_not_null_enum_is_quoted() {
    assert_eq!(
        pg("CREATE TABLE v (e ENUM('it''s','b') NOT NULL)"),
        "CREATE TABLE v (e VARCHAR(4) NOT NULL DEFAULT 'it''s'); \
         COMMENT ON COLUMN v.e IS 'manx:enum(''it''''s'',''b'')'; \
         ALTER TABLE v ADD CONSTRAINT \"manx_values_e\" CHECK (e IN ('it''s', 'b'))"
    );
}
#[test]
fn declared_types_are_kept_in_column_comments() {
    assert_eq!(
        pg(
            "CREATE TABLE d (y YEAR, b BIT(8), m MEDIUMINT UNSIGNED, t TINYINT, bo BOOL, vb VARBINARY(16), fx BINARY(4))"
        ),
        "CREATE TABLE d (y SMALLINT, b BIGINT, m INTEGER, t SMALLINT, bo SMALLINT, vb BYTEA, fx BYTEA); \
         COMMENT ON COLUMN d.y IS 'manx:year'; COMMENT ON COLUMN d.b IS 'manx:bit(8)'; \
         COMMENT ON COLUMN d.m IS 'manx:mediumint unsigned'; COMMENT ON COLUMN d.t IS 'manx:tinyint'; \
         COMMENT ON COLUMN d.bo IS 'manx:tinyint(1)'; COMMENT ON COLUMN d.vb IS 'manx:varbinary(16)'; \
         COMMENT ON COLUMN d.fx IS 'manx:binary(4)'"
    );
    assert_eq!(
        pg("ALTER TABLE `d` ADD COLUMN `f2` TINYINT(1) NOT NULL DEFAULT 0"),
        "ALTER TABLE \"d\" ADD COLUMN \"f2\" SMALLINT NOT NULL DEFAULT 0; \
         COMMENT ON COLUMN \"d\".\"f2\" IS 'manx:tinyint(1)'"
    );
    assert_eq!(
        refused("ALTER TABLE d ADD COLUMN x INT AFTER y"),
        "ADD COLUMN .. FIRST/AFTER (PostgreSQL appends columns)"
    );
    // Integers with their own PostgreSQL type need no comment.
    assert_eq!(
        pg("CREATE TABLE e (a INT, b BIGINT)"),
        "CREATE TABLE e (a INTEGER, b BIGINT)"
    );
}

#[test]
fn bit_literals_are_numbers_and_nul_in_text_is_refused() {
    assert_eq!(
        pg("INSERT INTO t (b) VALUES (b'0100011'), (B'1')"),
        "INSERT INTO t (b) VALUES (35), (1)"
    );
    assert_eq!(
        refused(&format!("SELECT b'{}'", "1".repeat(65))),
        "b'..' bit literals longer than 64 bits"
    );
    assert_eq!(
        refused("SELECT 'a\\0b'"),
        "a string holding the NUL character (PostgreSQL text cannot hold it; bind bytes as binary)"
    );
}

#[test]
fn zero_and_one_meet_boolean_columns_as_booleans() {
    let booleans: std::collections::HashSet<String> = ["flag".to_string()].into();
    let finish = |sql: &str, table: Option<&TableInfo>| {
        let t = translate(sql, "db").unwrap();
        t.finish(table, &booleans).unwrap().sql
    };
    let t = translate(
        "SELECT * FROM n WHERE flag = TRUE AND n.flag IN (0, 1) AND k = 1",
        "db",
    )
    .unwrap();
    assert_eq!(t.boolean_tables, ["n"]);
    assert_eq!(
        finish(
            "SELECT * FROM n WHERE flag = TRUE AND n.flag IN (0, 1) AND k = 1",
            None
        ),
        "SELECT * FROM n WHERE flag = true AND n.flag IN (false, true) AND k = 1"
    );
    let info = TableInfo {
        columns: vec!["id".into(), "flag".into()],
        booleans: vec!["flag".into()],
        ..TableInfo::default()
    };
    assert_eq!(
        finish("INSERT INTO n VALUES (1, 1), (0, 0)", Some(&info)),
        "INSERT INTO n VALUES (1, true), (0, false)"
    );
    assert_eq!(
        finish("INSERT INTO n (flag, id) VALUES (1, 1)", Some(&info)),
        "INSERT INTO n (flag, id) VALUES (true, 1)"
    );
    // SET of a boolean column (the breaker's round: PostgreSQL refused integer values).
    assert_eq!(
        finish("UPDATE n SET flag = 1, k = 0 WHERE id = 2", None),
        "UPDATE n SET flag = true, k = 0 WHERE id = 2"
    );
    // Nothing to look up without a 0/1 literal.
    assert!(
        translate("SELECT * FROM n WHERE flag", "db")
            .unwrap()
            .boolean_tables
            .is_empty()
    );
}

#[test]
fn show_variables_reads_the_same_table_as_select() {
    let f = translate("SHOW VARIABLES LIKE 'max_allowed%'", "db")
        .unwrap()
        .finish(None, &Default::default())
        .unwrap();
    assert!(f.returns_rows);
    assert!(
        f.sql
            .contains("('max_allowed_packet', CAST(16777216 AS TEXT))"),
        "{}",
        f.sql
    );
    assert!(
        f.sql
            .contains("WHERE lower(variable_name) LIKE lower('max_allowed%')"),
        "{}",
        f.sql
    );
    let f = translate(
        "SHOW GLOBAL VARIABLES WHERE Variable_name in ('Max_Allowed_Packet','time_zone')",
        "db",
    )
    .unwrap()
    .finish(None, &Default::default())
    .unwrap();
    assert!(
        f.sql
            .contains("WHERE lower(variable_name) IN ('max_allowed_packet', 'time_zone')"),
        "{}",
        f.sql
    );
    assert_eq!(
        pg("SELECT VERSION(), @@version"),
        format!(
            "SELECT '{v}' AS \"VERSION()\", '{v}' AS \"@@version\"",
            v = crate::version::SERVER_VERSION
        )
    );
}

#[test]
fn strings_and_names_print_as_postgresql_reads_them() {
    // A value ending in a backslash and a quote stays one literal (sqlparser would print
    // `'x\' || 1 --'`, which PostgreSQL ends after `x\`).
    assert_eq!(
        pg("SELECT 'x\\\\\\' || 1 --' AS v"),
        "SELECT 'x\\'' || 1 --' AS v"
    );
    assert_eq!(pg("SELECT 'it''s' AS v"), "SELECT 'it''s' AS v");
    assert_eq!(pg("SELECT 'plain' AS v"), "SELECT 'plain' AS v");
    // A label taken from the client's text keeps its quotes doubled.
    assert_eq!(
        pg("SELECT 'a\\\" , 1 --'"),
        "SELECT 'a\" , 1 --' AS \"a\"\" , 1 --\""
    );
    assert_eq!(
        refused("SELECT * FROM t AS `q\\\" , 1 --`"),
        "a quoted name holding \" or \\"
    );
}

#[test]
fn length_counts_bytes_and_autocommit_is_a_number() {
    // octet_length of the value itself: a cast of bytea to text would count its hex form.
    assert_eq!(
        pg("SELECT LENGTH(b) AS n FROM t"),
        "SELECT octet_length(b) AS n FROM t"
    );
    assert_eq!(pg("SELECT @@autocommit AS a"), "SELECT 1 AS a");
}

#[test]
fn catalog_types_and_type_modifiers_are_refused() {
    assert_eq!(
        refused("SELECT CAST('pg_authid' AS regclass)"),
        "the type REGCLASS"
    );
    assert!(refused("SELECT CAST('x' AS regrole)").starts_with("the type"));
    assert!(refused("SELECT CAST('x' AS bpchar('3'))").starts_with("the type"));
    // Third breaker round: a qualified reg* type, a typed string, SHOW CREATE TABLE.
    assert!(refused("SELECT CAST(10 AS pg_catalog.regrole)").starts_with("the type"));
    assert!(refused("SELECT regclass 'pg_authid'").starts_with("the type"));
    assert!(refused("SHOW CREATE TABLE pg_authid").contains("system catalogs are not reachable"));
}

#[test]
fn the_system_catalogs_are_not_reachable() {
    for sql in [
        "SELECT * FROM pg_authid",
        "SELECT name FROM PG_SETTINGS",
        "SELECT * FROM t JOIN pg_stat_activity a ON 1 = 1",
        // The connection's database as qualifier is dropped: the name is then checked.
        "SELECT rolname FROM db.pg_authid",
        "UPDATE `db`.`pg_class` SET relname = relname",
    ] {
        assert!(
            refused(sql).contains("system catalogs are not reachable"),
            "{sql}"
        );
    }
}

#[test]
fn update_targets_lose_their_table() {
    assert_eq!(
        pg("UPDATE `users` u SET u.`name` = 'x', n = u.n + 1 WHERE u.id = 3"),
        "UPDATE \"users\" u SET \"name\" = 'x', n = u.n + 1 WHERE u.id = 3"
    );
}

#[test]
fn refusals() {
    assert_eq!(
        refused("CREATE TABLE t (a TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)"),
        "column option ON UPDATE"
    );
    assert_eq!(
        refused("UPDATE t SET a = 1 LIMIT 1"),
        "UPDATE .. ORDER BY/LIMIT"
    );
    assert_eq!(
        refused("UPDATE t JOIN u ON u.id = t.id SET t.a = 1"),
        "UPDATE of several tables"
    );
    assert_eq!(refused("DELETE FROM t LIMIT 1"), "DELETE .. ORDER BY/LIMIT");
    assert_eq!(
        refused("SELECT GROUP_CONCAT(a) FROM t"),
        "the function GROUP_CONCAT()"
    );
    assert_eq!(refused("USE db1"), "USE");
    assert_eq!(refused("SHOW STATUS"), "SHOW STATUS");
    assert_eq!(refused("LOCK TABLES t READ"), "LOCK/UNLOCK TABLES");
}

#[test]
fn system_variables() {
    assert_eq!(
        pg("SELECT @@max_allowed_packet, @@session.sql_mode AS m"),
        "SELECT 16777216 AS \"@@max_allowed_packet\", 'STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO' AS m"
    );
    assert_eq!(
        refused("SELECT @@innodb_buffer_pool_size"),
        "the system variable @@innodb_buffer_pool_size"
    );
    assert_eq!(refused("SELECT @v"), "user variable @v");
}

#[test]
fn show_create_table() {
    let f = translate("SHOW CREATE TABLE `T`", "db")
        .unwrap()
        .finish(None, &Default::default())
        .unwrap();
    assert!(f.returns_rows);
    assert!(f.sql.contains("CAST('\"t\"' AS REGCLASS)"), "{}", f.sql);
    assert!(f.sql.contains("AS \"Create Table\""), "{}", f.sql);
}

#[test]
fn tables_read() {
    let f = translate(
        "SELECT * FROM `Users` u JOIN s.t ON 1 = 1 WHERE x IN (SELECT y FROM w)",
        "db",
    )
    .unwrap()
    .finish(None, &Default::default())
    .unwrap();
    assert_eq!(f.tables, ["\"users\"", "s.t", "w"]);
}

#[test]
fn show_columns_and_set_names() {
    let f = translate("SHOW COLUMNS FROM `T`", "db")
        .unwrap()
        .finish(None, &Default::default())
        .unwrap();
    assert!(f.returns_rows);
    assert!(f.sql.contains("CAST('\"t\"' AS REGCLASS)"), "{}", f.sql);
    let f = translate("DESC t", "db")
        .unwrap()
        .finish(None, &Default::default())
        .unwrap();
    assert!(f.sql.contains("CAST('t' AS REGCLASS)"), "{}", f.sql);
    assert_eq!(
        translate("SET NAMES utf8mb4", "db")
            .unwrap()
            .finish(None, &Default::default())
            .unwrap()
            .sql,
        ""
    );
}

#[test]
fn session_sets() {
    assert_eq!(
        pg("SET time_zone = '+08:00'"),
        "SET TIME ZONE INTERVAL '+08:00' HOUR TO MINUTE"
    );
    assert_eq!(
        pg("SET @@session.time_zone = '-03:30'"),
        "SET TIME ZONE INTERVAL '-03:30' HOUR TO MINUTE"
    );
    assert_eq!(
        pg("SET time_zone = 'Europe/Paris'"),
        "SET TIME ZONE 'Europe/Paris'"
    );
    assert_eq!(pg("SET time_zone = 'SYSTEM'"), "SET TIME ZONE LOCAL");
    assert_eq!(
        pg("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"),
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED"
    );
    assert_eq!(
        pg("SET transaction_isolation = 'REPEATABLE-READ'"),
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ"
    );
    assert_eq!(
        pg(
            "SET sql_mode = 'STRICT_TRANS_TABLES', character_set_results = NULL, time_zone = '+00:00', max_execution_time = 1500, innodb_lock_wait_timeout = 2"
        ),
        "SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE; SET statement_timeout = 1500; SET lock_timeout = 2000"
    );
    assert_eq!(pg("SET autocommit = 1"), "");
    assert_eq!(pg("SET NAMES utf8mb4 COLLATE utf8mb4_general_ci"), "");
    assert!(refused("SET @x = 5").contains("user variable @x"));
    assert!(refused("SET optimizer_switch = 'index_merge=off'").contains("optimizer_switch"));
    assert!(refused("SET tx_isolation = 'SOMETIMES'").contains("not an isolation level"));
}
