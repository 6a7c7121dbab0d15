//! Unit tests of the allow-list and of the table references it reports.

use super::*;
use crate::route::Refusal;
use crate::route::access::TableAccess;
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;

fn parse(sql: &str) -> Statement {
    Parser::parse_sql(&MySqlDialect {}, sql).unwrap().remove(0)
}

fn refs(sql: &str) -> Vec<(Option<String>, String, TableAccess)> {
    let mut v: Vec<_> = table_refs(&parse(sql))
        .into_iter()
        .map(|r| (r.qualifier, r.table, r.access))
        .collect();
    v.sort();
    v
}

fn t(q: Option<&str>, n: &str, a: TableAccess) -> (Option<String>, String, TableAccess) {
    (q.map(String::from), n.to_string(), a)
}

#[test]
fn every_table_of_a_statement_is_named_with_its_access() {
    use TableAccess::*;
    assert_eq!(
        refs(
            "SELECT * FROM a JOIN b ON a.x = b.x WHERE a.y IN (SELECT y FROM c) UNION SELECT * FROM A2.d"
        ),
        [
            t(None, "a", Select),
            t(None, "b", Select),
            t(None, "c", Select),
            t(Some("A2"), "d", Select)
        ]
    );
    assert_eq!(
        refs("INSERT INTO t SELECT * FROM s"),
        [t(None, "s", Select), t(None, "t", Insert)]
    );
    assert_eq!(
        refs("UPDATE t JOIN u ON t.a = u.a SET t.b = 1 WHERE t.c = (SELECT MAX(c) FROM w)"),
        [
            t(None, "t", Update),
            t(None, "t", Select),
            t(None, "u", Update),
            t(None, "u", Select),
            t(None, "w", Select)
        ]
    );
    assert_eq!(
        refs("DELETE FROM A.secret WHERE id = 1"),
        [
            t(Some("A"), "secret", Select),
            t(Some("A"), "secret", Delete)
        ]
    );
    // What MariaDB asks of an account, besides the statement's own privilege.
    assert_eq!(refs("DELETE FROM t"), [t(None, "t", Delete)]);
    assert_eq!(refs("UPDATE t SET a = 1 LIMIT 1"), [t(None, "t", Update)]);
    assert_eq!(
        refs("UPDATE t SET a = b"),
        [t(None, "t", Update), t(None, "t", Select)]
    );
    assert_eq!(
        refs("REPLACE INTO t VALUES (1)"),
        [t(None, "t", Insert), t(None, "t", Delete)]
    );
    assert_eq!(
        refs("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 2"),
        [t(None, "t", Insert), t(None, "t", Update)]
    );
    assert_eq!(
        refs("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = a + 1"),
        [
            t(None, "t", Insert),
            t(None, "t", Update),
            t(None, "t", Select)
        ]
    );
    assert_eq!(
        refs("REPLACE INTO t SELECT * FROM t"),
        [
            t(None, "t", Insert),
            t(None, "t", Select),
            t(None, "t", Delete)
        ]
    );
    assert_eq!(
        refs("WITH x AS (SELECT * FROM real_t) SELECT * FROM x"),
        [t(None, "real_t", Select)]
    );
    assert_eq!(
        refs("DROP TABLE a, b"),
        [t(None, "a", Ddl), t(None, "b", Ddl)]
    );
    assert_eq!(
        refs("RENAME TABLE a TO other.b"),
        [t(None, "a", Ddl), t(Some("other"), "b", Ddl)]
    );
    assert_eq!(
        refs("ALTER TABLE a RENAME TO other.b"),
        [t(None, "a", Ddl), t(Some("other"), "b", Ddl)]
    );
    assert_eq!(
        refs("CREATE TABLE a LIKE mysql.user"),
        [t(None, "a", Ddl), t(Some("mysql"), "user", Select)]
    );
    assert_eq!(refs("SELECT 1 FROM DUAL"), []);
    assert_eq!(refs("SELECT 1 FROM `dual`"), [t(None, "dual", Select)]);
    // A CTE name hides a table only where MariaDB resolves it to the CTE.
    assert_eq!(
        refs("WITH secret AS (SELECT * FROM secret) SELECT * FROM secret"),
        [t(None, "secret", Select)]
    );
    assert_eq!(
        refs("SELECT * FROM secret WHERE 1 IN (WITH secret AS (SELECT 1) SELECT * FROM secret)"),
        [t(None, "secret", Select)]
    );
    assert_eq!(
        refs("INSERT INTO r SELECT * FROM (WITH r AS (SELECT 5) SELECT * FROM r) d"),
        [t(None, "r", Insert)]
    );
    assert_eq!(
        refs("WITH a AS (SELECT * FROM b), b AS (SELECT * FROM a) SELECT * FROM b"),
        [t(None, "b", Select)]
    );
    assert_eq!(
        refs("WITH RECURSIVE a AS (SELECT 1 UNION SELECT * FROM a) SELECT * FROM a"),
        []
    );
    assert_eq!(
        refs("WITH x AS (SELECT 1) SELECT * FROM (SELECT * FROM x) d JOIN y"),
        [t(None, "y", Select)]
    );
}

/// MariaDB sequences are tables to the access checks, with MariaDB's privileges.
#[test]
fn sequences_are_table_references() {
    use TableAccess::*;
    let forms = |sql: &str| -> Vec<(Option<String>, String, TableAccess)> {
        let statement = crate::route::forms::parse(sql).unwrap().remove(0);
        let known = |n: &str| crate::route::builtins::is_builtin(n, false);
        admit(&statement, sql, &|q| q == "A", &known).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let mut v: Vec<_> = table_refs(&statement)
            .into_iter()
            .map(|r| (r.qualifier, r.table, r.access))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        forms("SELECT NEXTVAL(s)"),
        [t(None, "s", Insert), t(None, "s", Select)]
    );
    assert_eq!(
        forms("SELECT next value for A.s, PREVIOUS VALUE FOR `s2`"),
        [
            t(None, "s2", Select),
            t(Some("A"), "s", Insert),
            t(Some("A"), "s", Select)
        ]
    );
    assert_eq!(forms("SELECT SETVAL(s, 10, 1, 0)"), [t(None, "s", Insert)]);
    assert_eq!(
        forms("INSERT INTO t (a) VALUES (LASTVAL(s))"),
        [t(None, "s", Select), t(None, "t", Insert)]
    );
    assert_eq!(
        forms("CREATE TABLE t (a INT DEFAULT NEXT VALUE FOR s)"),
        [
            t(None, "s", Insert),
            t(None, "s", Select),
            t(None, "t", Ddl)
        ]
    );
}

#[test]
fn calls_are_spelled_as_builtins_are() {
    let known = |n: &str| crate::route::builtins::is_builtin(n, false);
    for sql in [
        "SELECT now()",
        "SELECT COUNT(*), MAX(a) FROM t",
        "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = VALUES(a)",
        "SELECT\n  concat('a', 'b'),\n  ifnull(x, 1) FROM t",
        "SELECT trim(v), substring(v, 1, 2), point(1, 2) FROM t",
        // SQL's niladic functions written as keywords (SQLAlchemy's server defaults).
        "SELECT CURRENT_DATE, current_timestamp, LOCALTIME, utc_timestamp FROM t",
        "CREATE TABLE t (a TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)",
        // Keywords and native functions are the built-in with a gap before `(` too.
        "SELECT length ('a'), concat\n('a', 'b'), IF (a, 1, 2), ceil (1.5), avg (a) FROM t",
        "SELECT ST_ASTEXT (ST_GEOMFROMTEXT ('POINT(1 1)')), point (1, 2)",
        "SELECT current_timestamp/**/(3), CURRENT_DATE ()",
    ] {
        assert!(admit(&parse(sql), sql, &|_| false, &known).is_ok(), "{sql}");
    }
    for sql in [
        "SELECT now ()",
        "SELECT now/**/()",
        "SELECT `now`()",
        "SELECT max (a) FROM t",
        "SELECT count (a), length(a) FROM t",
        "SELECT sum/**/(a) FROM t",
        "SELECT `length`('a')",
        "SELECT a FROM t WHERE b = curdate\n()",
        // Parsed as expressions of their own, not calls.
        "SELECT trim (1)",
        "SELECT substring/**/(v, 1) FROM t",
        "SELECT substr\n(v, 1) FROM t",
        // Geometry constructors at another argument count are stored functions.
        "SELECT point(1)",
        "SELECT linestring()",
    ] {
        let e = admit(&parse(sql), sql, &|_| false, &known).expect_err(sql);
        assert_eq!(e.refusal, Refusal::NotSupported, "{sql}: {}", e.message);
    }
}

#[test]
fn only_the_allow_list_is_admitted() {
    for sql in [
        "SELECT 1",
        "INSERT INTO t VALUES (1)",
        "REPLACE INTO t VALUES (1)",
        "UPDATE t SET a = 1",
        "DELETE FROM t",
        "CREATE TABLE t (id INT) ENGINE=InnoDB",
        "ALTER TABLE t ADD COLUMN c INT",
        "DROP TABLE t",
        "TRUNCATE TABLE t",
        "CREATE INDEX i ON t (a)",
        "RENAME TABLE a TO b",
    ] {
        assert!(
            admit(&parse(sql), sql, &|_| false, &|n| {
                crate::route::builtins::is_builtin(n, false)
            })
            .is_ok(),
            "{sql}"
        );
    }
    for (sql, refusal) in [
        ("GRANT ALL ON *.* TO evil", Refusal::PrivilegeRequired),
        ("CREATE USER 'evil'@'%'", Refusal::PrivilegeRequired),
        ("CREATE ROLE r", Refusal::PrivilegeRequired),
        ("DROP USER evil", Refusal::PrivilegeRequired),
        ("CREATE PROCEDURE p() SELECT 1", Refusal::PrivilegeRequired),
        ("LOCK TABLES t WRITE", Refusal::Routing),
        ("CALL p()", Refusal::Routing),
        ("DROP DATABASE mysql", Refusal::PrivilegeRequired),
        ("CREATE DATABASE x", Refusal::PrivilegeRequired),
        ("FLUSH PRIVILEGES", Refusal::PrivilegeRequired),
        ("CREATE VIEW v AS SELECT 1", Refusal::PrivilegeRequired),
        (
            "SELECT * FROM t INTO OUTFILE '/tmp/x'",
            Refusal::PrivilegeRequired,
        ),
        (
            "SELECT 1 UNION SELECT 2 INTO OUTFILE '/tmp/x'",
            Refusal::PrivilegeRequired,
        ),
        (
            "SELECT LOAD_FILE('/etc/passwd')",
            Refusal::PrivilegeRequired,
        ),
        ("SELECT sys.ps_thread_id(1)", Refusal::PrivilegeRequired),
        ("SELECT NEXTVAL(other.seq, 1)", Refusal::PrivilegeRequired),
        ("SELECT NEXTVAL('seq')", Refusal::PrivilegeRequired),
        ("SELECT SETVAL(seq)", Refusal::PrivilegeRequired),
        ("SELECT NEXTVAL(a.b.seq)", Refusal::PrivilegeRequired),
        ("SELECT NEXTVAL(DISTINCT seq)", Refusal::PrivilegeRequired),
        (
            "CREATE TABLE t (id INT) ENGINE=CONNECT TABLE_TYPE=CSV FILE_NAME='/etc/passwd'",
            Refusal::PrivilegeRequired,
        ),
        (
            "CREATE TABLE t (id INT) ENGINE = 'FEDERATED' CONNECTION='mysql://x'",
            Refusal::PrivilegeRequired,
        ),
        (
            "CREATE TABLE t (id INT) DATA DIRECTORY = '/tmp'",
            Refusal::PrivilegeRequired,
        ),
        ("ALTER TABLE t ENGINE = MERGE", Refusal::PrivilegeRequired),
        (
            "ALTER TABLE t EXCHANGE PARTITION p WITH TABLE victim.vt",
            Refusal::DatabaseAccessDenied,
        ),
        (
            "CREATE TABLE t (id INT, FOREIGN KEY (id) REFERENCES victim.vt (id))",
            Refusal::DatabaseAccessDenied,
        ),
        ("TABLE victim.vt", Refusal::PrivilegeRequired),
    ] {
        // What sqlparser cannot read is refused before this (1064 at routing).
        let Ok(mut parsed) = Parser::parse_sql(&MySqlDialect {}, sql) else {
            continue;
        };
        match admit(&parsed.remove(0), sql, &|q| q == "A", &|n| {
            crate::route::builtins::is_builtin(n, false)
        }) {
            Err(e) => assert_eq!(e.refusal, refusal, "{sql}: {}", e.message),
            Ok(k) => panic!("{sql} admitted as {k:?}"),
        }
    }
}

/// Breaker's hole 1: the parent of a FOREIGN KEY is a table the statement reads, in every form
/// of the definition.
#[test]
fn foreign_key_parents_are_read() {
    use TableAccess::*;
    for sql in [
        "CREATE TABLE c (a INT, FOREIGN KEY (a) REFERENCES p (id))",
        "CREATE TABLE c (a INT, CONSTRAINT k FOREIGN KEY (a) REFERENCES `p` (id) ON DELETE CASCADE)",
        "CREATE TABLE c (a INT REFERENCES p (id))",
    ] {
        assert_eq!(
            refs(sql),
            [t(None, "c", Ddl), t(None, "p", Select)],
            "{sql}"
        );
    }
    for sql in [
        "ALTER TABLE c ADD FOREIGN KEY (a) REFERENCES p (id)",
        "ALTER TABLE c ADD CONSTRAINT k FOREIGN KEY (a) REFERENCES p (id)",
        "ALTER TABLE c ADD COLUMN b INT REFERENCES p (id)",
    ] {
        assert_eq!(
            refs(sql),
            [t(None, "c", Ddl), t(None, "p", Select)],
            "{sql}"
        );
    }
    assert_eq!(
        foreign_key_targets("CREATE TABLE c (`references` INT, b INT REFERENCES A.p (id))")
            .unwrap()
            .iter()
            .map(split_name)
            .collect::<Vec<_>>(),
        [(Some("A".to_string()), "p".to_string())]
    );
}

/// A qualified parent, a qualified child with a FOREIGN KEY, and a column named by an unquoted
/// reserved word (`(LIKE t)`, `(TABLE t)`: breaker's hole 2) are refused; an unqualified parent
/// and a quoted column of such a name are admitted.
#[test]
fn foreign_keys_and_reserved_column_names_are_read_or_refused() {
    let verdict = |sql: &str| {
        admit(&parse(sql), sql, &|q| q == "A", &|n| {
            crate::route::builtins::is_builtin(n, false)
        })
        .map_err(|e| e.refusal)
    };
    for sql in [
        "CREATE TABLE c (a INT, FOREIGN KEY (a) REFERENCES A.p (id))",
        "CREATE TABLE c (a INT REFERENCES `A`.p (id))",
        "CREATE TABLE A.c (a INT REFERENCES p (id))",
        "ALTER TABLE c ADD FOREIGN KEY (a) REFERENCES A.p (id)",
    ] {
        assert_eq!(verdict(sql), Err(Refusal::NotSupported), "{sql}");
    }
    for sql in [
        "CREATE TABLE c (LIKE p)",
        "CREATE TABLE c ( like A.p )",
        "CREATE TABLE c (TABLE p)",
        "ALTER TABLE c ADD COLUMN select INT",
    ] {
        if let Ok(s) = Parser::parse_sql(&MySqlDialect {}, sql) {
            assert_eq!(
                admit(&s[0], sql, &|q| q == "A", &|_| true).map_err(|e| e.refusal),
                Err(Refusal::Routing),
                "{sql}"
            );
        }
    }
    for sql in [
        "CREATE TABLE c (a INT, FOREIGN KEY (a) REFERENCES p (id))",
        "CREATE TABLE c (`like` INT, `table` INT)",
        "ALTER TABLE c ADD FOREIGN KEY (a) REFERENCES p (id)",
    ] {
        assert_eq!(verdict(sql), Ok(Admitted::Ddl), "{sql}");
    }
}

/// Statements the parser cannot read whose kind the allow-list refuses get the gateway's own
/// refusal (1227 or 1064 naming the kind), never the parser's error; the others keep it.
#[test]
fn unread_statements_of_refused_kinds_get_the_gateway_refusal() {
    for (sql, refusal, words) in [
        ("BACKUP STAGE START", Refusal::PrivilegeRequired, "BACKUP"),
        ("flush table t1", Refusal::PrivilegeRequired, "FLUSH"),
        (
            "FLUSH TABLES t1 FOR EXPORT",
            Refusal::PrivilegeRequired,
            "FLUSH",
        ),
        (
            "CHANGE MASTER TO MASTER_HOST='h'",
            Refusal::PrivilegeRequired,
            "CHANGE MASTER",
        ),
        (
            "rename database a to b",
            Refusal::Routing,
            "RENAME DATABASE",
        ),
        (
            "ALTER DATABASE d UPGRADE DATA DIRECTORY NAME",
            Refusal::PrivilegeRequired,
            "ALTER DATABASE",
        ),
        ("check table t1 extended", Refusal::Routing, "CHECK TABLE"),
        (
            "OPTIMIZE NO_WRITE_TO_BINLOG TABLE t1",
            Refusal::Routing,
            "OPTIMIZE TABLE",
        ),
        (
            "ALTER TABLE t1 ANALYZE PARTITION p1",
            Refusal::Routing,
            "ANALYZE PARTITION",
        ),
        ("XA START 'x', 'y'", Refusal::Routing, "XA"),
        (
            "XA RECOVER FORMAT='SQL'",
            Refusal::PrivilegeRequired,
            "XA RECOVER",
        ),
        (
            "SELECT a INTO OUTFILE '/tmp/x' FIELDS TERMINATED BY ',' FROM t1",
            Refusal::PrivilegeRequired,
            "SELECT ... INTO",
        ),
        (
            "(SELECT a FROM t1) INTO DUMPFILE '/tmp/x'",
            Refusal::PrivilegeRequired,
            "SELECT ... INTO",
        ),
        (
            "CREATE DEFINER=root@localhost PROCEDURE p() BEGIN SELECT 1; END",
            Refusal::PrivilegeRequired,
            "CREATE PROCEDURE",
        ),
        (
            "CREATE OR REPLACE VIEW v AS SELECT 1 x",
            Refusal::PrivilegeRequired,
            "CREATE VIEW",
        ),
        (
            "LOAD XML INFILE 'f' INTO TABLE t",
            Refusal::PrivilegeRequired,
            "LOAD XML",
        ),
        (
            "BEGIN NOT ATOMIC SELECT 1; END",
            Refusal::Routing,
            "compound",
        ),
    ] {
        let e = unread_refusal(sql).unwrap_or_else(|| panic!("{sql}: no refusal"));
        assert_eq!(e.refusal, refusal, "{sql}: {}", e.message);
        assert!(e.message.contains(words), "{sql}: {}", e.message);
        assert!(e.message.contains("gateway"), "{sql}: {}", e.message);
    }
    for sql in [
        "SELECT 1 FROM t WHERE",
        "CREATE TABLE user (a INT) FOO",
        "CREATE TABLE t (event INT, view INT) BAR",
        "SELECT 'INTO OUTFILE' FROM t WHERE",
        "ALTER TABLE t1 ADD PARTITION p1 BOGUS",
    ] {
        assert!(unread_refusal(sql).is_none(), "{sql}");
    }
}
