//! Unit tests of the token changes: each form parses as its equivalent, spans stay the client's.

use super::parse;
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;

/// `client` parses as `equivalent` does (compared as the parser prints them).
fn reads_as(client: &str, equivalent: &str) {
    let ours = parse(client).unwrap_or_else(|e| panic!("{client}: {e}"));
    let theirs = Parser::parse_sql(&MySqlDialect {}, equivalent).unwrap();
    assert_eq!(
        ours.iter().map(ToString::to_string).collect::<Vec<_>>(),
        theirs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "{client}"
    );
}

/// [`reads_as`], for a form sqlparser alone refuses.
fn same(client: &str, equivalent: &str) {
    reads_as(client, equivalent);
    assert!(
        Parser::parse_sql(&MySqlDialect {}, client).is_err(),
        "sqlparser reads {client} itself now: the change is no longer needed"
    );
}

/// A key part's prefix length (`b(2)`), which the parser reads as a call of a function
/// `b` (it reads the statement, so `same` does not apply), is dropped.
#[test]
fn key_prefix_lengths_are_dropped() {
    let reads_as = |client: &str, equivalent: &str| {
        let ours = parse(client).unwrap_or_else(|e| panic!("{client}: {e}"));
        let theirs = Parser::parse_sql(&MySqlDialect {}, equivalent).unwrap();
        assert_eq!(
            ours.iter().map(ToString::to_string).collect::<Vec<_>>(),
            theirs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "{client}"
        );
    };
    reads_as(
        "CREATE TABLE t (a CHAR(4), b CHAR(10), PRIMARY KEY (a, b(2)), UNIQUE KEY u (a(3)), KEY k USING BTREE (b (1), a))",
        "CREATE TABLE t (a CHAR(4), b CHAR(10), PRIMARY KEY (a, b), UNIQUE KEY u (a), KEY k USING BTREE (b, a))",
    );
    reads_as(
        "CREATE UNIQUE INDEX i ON d.t (a(10), b)",
        "CREATE UNIQUE INDEX i ON d.t (a, b)",
    );
    reads_as(
        "ALTER TABLE t ADD INDEX (a(10)), ADD COLUMN c VARCHAR(3)",
        "ALTER TABLE t ADD INDEX (a), ADD COLUMN c VARCHAR(3)",
    );
    // Elsewhere `name(number)` is a type or a call, left as written.
    reads_as(
        "CREATE TABLE t (a VARCHAR(10), b INT DEFAULT (abs(3)), KEY k (a)) SELECT LEFT(x, 2) AS a FROM u",
        "CREATE TABLE t (a VARCHAR(10), b INT DEFAULT (abs(3)), KEY k (a)) SELECT LEFT(x, 2) AS a FROM u",
    );
}

#[test]
fn a_qualified_name_is_never_changed() {
    // MariaDB reads a reserved word after a period as a name: `db.year_month` is the table
    // `year_month` (read as the table `YEAR`, a table privilege was checked on the wrong
    // table).
    for sql in [
        "SELECT * FROM d.year_month",
        "DELETE FROM d.day_hour",
        "SELECT t.day_second FROM t",
    ] {
        let parsed = parse(sql).map(|s| s[0].to_string().to_ascii_uppercase());
        if let Ok(text) = &parsed {
            assert!(
                text.contains("YEAR_MONTH")
                    || text.contains("DAY_HOUR")
                    || text.contains("DAY_SECOND"),
                "{sql} read as {text}"
            );
        }
    }
}

#[test]
fn mariadb_forms_read_as_their_equivalents() {
    same("SELECT a MOD 3 FROM t", "SELECT a % 3 FROM t");
    same(
        "SELECT id MOD 3, value mod 2 FROM t",
        "SELECT id % 3, value % 2 FROM t",
    );
    same(
        "SELECT (a+1) mod `b`, 7 MOD ?, t.k MOD 2 FROM t",
        "SELECT (a+1) % `b`, 7 % ?, t.k % 2 FROM t",
    );
    same(
        "UPDATE t1, t2 AS x SET t1.a = x.b WHERE t1.c = x.c",
        "UPDATE t1 CROSS JOIN t2 AS x SET t1.a = x.b WHERE t1.c = x.c",
    );
    same("DROP TABLES t1, t2", "DROP TABLE t1, t2");
    same(
        "SELECT DATE_ADD(a, INTERVAL '1 1' DAY_SECOND), EXTRACT(YEAR_MONTH FROM a) FROM t",
        "SELECT DATE_ADD(a, INTERVAL '1 1' DAY), EXTRACT(YEAR FROM a) FROM t",
    );
    same(
        "SELECT WEIGHT_STRING(a AS CHAR(4)), WEIGHT_STRING(b AS BINARY) FROM t",
        "SELECT WEIGHT_STRING(a), WEIGHT_STRING(b) FROM t",
    );
    same(
        "DROP TEMPORARY TABLES IF EXISTS t1",
        "DROP TEMPORARY TABLE IF EXISTS t1",
    );
    same(
        "CREATE TABLE t (a CHAR(10) BINARY NOT NULL, b VARCHAR(5) CHARACTER SET latin1 BINARY, c TEXT ASCII, d CHAR UNICODE)",
        "CREATE TABLE t (a CHAR(10) NOT NULL, b VARCHAR(5) CHARACTER SET latin1, c TEXT, d CHAR)",
    );
    same(
        "CREATE TABLE t (a NATIONAL CHAR(3), b INT(5) ZEROFILL UNSIGNED) ENGINE = 'MyISAM'",
        "CREATE TABLE t (a CHAR(3), b INT(5) UNSIGNED) ENGINE = MyISAM",
    );
    same(
        "CREATE TABLE t (col1 INT, col2 LONG BYTE, c3 LONG VARBINARY NOT NULL, c4 LONG VARCHAR BINARY, c5 LONG CHAR VARYING)",
        "CREATE TABLE t (col1 INT, col2 MEDIUMBLOB, c3 MEDIUMBLOB NOT NULL, c4 MEDIUMTEXT, c5 MEDIUMTEXT)",
    );
    same(
        "ALTER TABLE t ADD COLUMN b LONG BYTE, MODIFY c long",
        "ALTER TABLE t ADD COLUMN b MEDIUMBLOB, MODIFY c MEDIUMTEXT",
    );
    same(
        "CREATE TABLE t (a INT) ENGINE=MyISAM PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
        "CREATE TABLE t (a INT) ENGINE=MyISAM",
    );
    same(
        "ALTER TABLE t1 ENGINE = Aria, ADD COLUMN b INT, CONVERT TO CHARACTER SET utf8 COLLATE utf8_bin",
        "ALTER TABLE t1 ALGORITHM = DEFAULT, ADD COLUMN b INT, ALGORITHM = DEFAULT",
    );
    same(
        "ALTER TABLE db.t1 PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
        "ALTER TABLE db.t1 ALGORITHM = DEFAULT",
    );
    same(
        "ALTER TABLE t1 DEFAULT CHARSET = latin1 ROW_FORMAT = DYNAMIC",
        "ALTER TABLE t1 ALGORITHM = DEFAULT",
    );
    same(
        "SELECT NEXT VALUE FOR s, previous value for `db`.`s2`",
        "SELECT NEXTVAL(s), LASTVAL(`db`.`s2`)",
    );
    same(
        "CREATE TABLE t (id INT DEFAULT NEXT VALUE FOR db.s, v INT)",
        "CREATE TABLE t (id INT DEFAULT NEXTVAL(db.s), v INT)",
    );
    same(
        "ALTER ONLINE TABLE t1 MODIFY b INT DEFAULT 5, ALTER c SET DEFAULT 'X'",
        "ALTER TABLE t1 MODIFY b INT DEFAULT 5, ALTER COLUMN c SET DEFAULT 'X'",
    );
    same(
        "ALTER TABLE t1 RENAME TO t2, DISABLE KEYS",
        "ALTER TABLE t1 RENAME TO t2, ALGORITHM = DEFAULT",
    );
    same(
        "ALTER TABLE t1 DROP KEY s1, ADD KEY(s1(1))",
        "ALTER TABLE t1 DROP INDEX s1, ADD KEY(s1)",
    );
    same(
        "CREATE INDEX a_ignorable ON t1(a) WAIT 1 NOT IGNORED",
        "CREATE INDEX a_ignorable ON t1(a)",
    );
    same(
        "CREATE INDEX i ON t1(a) IGNORED NOWAIT",
        "CREATE INDEX i ON t1(a)",
    );
    same(
        "ALTER ONLINE TABLE t1",
        "ALTER TABLE t1 ALGORITHM = DEFAULT",
    );
    same(
        "CREATE OR REPLACE UNIQUE INDEX i1 ON t1(a)",
        "CREATE UNIQUE INDEX i1 ON t1(a)",
    );
    same(
        "ALTER TABLE t1 TRUNCATE PARTITION p0, `p 1`, ADD COLUMN x INT",
        "ALTER TABLE t1 ALGORITHM = DEFAULT, ADD COLUMN x INT",
    );
    same(
        "ALTER TABLE t1 REORGANIZE PARTITION p0, p1 INTO (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
        "ALTER TABLE t1 ALGORITHM = DEFAULT",
    );
    same(
        "CREATE TABLE t (d SET(\"Car\", 'MC'), e NCHAR VARCHAR(10), f ENUM(\"x\"), g NCHAR VARYING(3))",
        "CREATE TABLE t (d SET('Car', 'MC'), e VARCHAR(10), f ENUM('x'), g VARCHAR(3))",
    );
    same(
        "ALTER TABLE t DROP FOREIGN KEY IF EXISTS fk, DROP KEY IF EXISTS k, DROP INDEX IF EXISTS i",
        "ALTER TABLE t DROP FOREIGN KEY fk, DROP INDEX k, DROP INDEX i",
    );
    same(
        "ALTER TABLE t1 COALESCE PARTITION 2",
        "ALTER TABLE t1 ALGORITHM = DEFAULT",
    );
    same(
        "ALTER TABLE t1 ALTER INDEX a NOT IGNORED, ALTER KEY b IGNORED",
        "ALTER TABLE t1 ALGORITHM = DEFAULT, ALGORITHM = DEFAULT",
    );
    same(
        "ALTER TABLE t1 RENAME INDEX a TO a1, RENAME KEY `b` TO b1, ADD COLUMN x INT",
        "ALTER TABLE t1 ALGORITHM = DEFAULT, ALGORITHM = DEFAULT, ADD COLUMN x INT",
    );
    same(
        "SELECT 1 REGEXP NULL, a NOT RLIKE null, NULL REGEXP 'x' FROM t",
        "SELECT 1 REGEXP (NULL), a NOT RLIKE (NULL), NULL REGEXP 'x' FROM t",
    );
    same(
        "CREATE TABLE t3 (SELECT a, b FROM t1) EXCEPT ALL (SELECT c, d FROM t2)",
        "CREATE TABLE t3 AS (SELECT a, b FROM t1) EXCEPT ALL (SELECT c, d FROM t2)",
    );
    same(
        "CREATE TABLE IF NOT EXISTS d.t3 (SELECT a FROM t1)",
        "CREATE TABLE IF NOT EXISTS d.t3 AS (SELECT a FROM t1)",
    );
    same(
        "CREATE TABLE t2 (id INT, s DATE, e DATE, PERIOD FOR p(s, e), PRIMARY KEY (id, p WITHOUT OVERLAPS)) ENGINE = InnoDB",
        "CREATE TABLE t2 (id INT, s DATE, e DATE, PRIMARY KEY (id)) ENGINE = InnoDB",
    );
    same(
        "DELETE FROM t2 FOR PORTION OF p FROM '2000-01-01' TO '2000-01-02' WHERE id = 1",
        "DELETE FROM t2 WHERE id = 1",
    );
    same(
        "UPDATE t2 FOR PORTION OF p FROM '2000-01-01' TO 20000102 SET f = 1",
        "UPDATE t2 SET f = 1",
    );
    same(
        "ALTER TABLE t1 DROP PARTITION p0, p1",
        "ALTER TABLE t1 ALGORITHM = DEFAULT",
    );
    same(
        "ALTER TABLE t1 ADD PARTITION (PARTITION p2 VALUES LESS THAN (30))",
        "ALTER TABLE t1 ALGORITHM = DEFAULT",
    );
    same(
        "CREATE TABLE t (a INT COMMENT 'x', b ENUM('a', 0x62, X'63'), c SET(0x64)) ENGINE = Aria TRANSACTIONAL = 0 PAGE_CHECKSUM 1",
        "CREATE TABLE t (a INT COMMENT 'x', b ENUM('a', '62', '63'), c SET('64')) ENGINE = Aria",
    );
    same(
        "SELECT CHAR(77, 121 USING utf8), MATCH a, t.b AGAINST ('x'), MATCH c AGAINST ('y' IN BOOLEAN MODE) FROM t",
        "SELECT CHAR(77, 121), MATCH (a, t.b) AGAINST ('x'), MATCH (c) AGAINST ('y' IN BOOLEAN MODE) FROM t",
    );
    same(
        "SELECT a, SUM(b) FROM t GROUP BY a DESC, c ASC WITH ROLLUP",
        "SELECT a, SUM(b) FROM t GROUP BY a, c WITH ROLLUP",
    );
    same(
        "SELECT a FROM (SELECT a FROM t GROUP BY 1 desc) d GROUP BY a ASC HAVING a > 1 ORDER BY a DESC",
        "SELECT a FROM (SELECT a FROM t GROUP BY 1) d GROUP BY a HAVING a > 1 ORDER BY a DESC",
    );
    same(
        "SELECT CAST(a AS INTERVAL DAY_SECOND(6)), CAST(b AS INTERVAL HOUR) FROM t",
        "SELECT CAST(a AS TIME(6)), CAST(b AS TIME) FROM t",
    );
    same(
        "SELECT WEIGHT_STRING(a LEVEL 1), WEIGHT_STRING(b AS CHAR(4) LEVEL 1-3 DESC REVERSE), WEIGHT_STRING(c LEVEL 1, 2) FROM t",
        "SELECT WEIGHT_STRING(a), WEIGHT_STRING(b), WEIGHT_STRING(c) FROM t",
    );
    same(
        "CREATE OR REPLACE FULLTEXT INDEX i ON t (a) WAIT 1",
        "CREATE INDEX i ON t (a)",
    );
    same("CREATE SPATIAL INDEX i ON t (g)", "CREATE INDEX i ON t (g)");
    same(
        "CREATE TABLE t (a BLOB COMPRESSED=zlib NOT NULL, compressed INT, c VARCHAR(10) NOT NULL COMPRESSED, d CHAR(1) BYTE)",
        "CREATE TABLE t (a BLOB NOT NULL, compressed INT, c VARCHAR(10) NOT NULL, d CHAR(1))",
    );
    same(
        "ALTER TABLE t ADD c TINYTEXT COMPRESSED, ADD bin_f CHAR(1) BYTE NOT NULL DEFAULT ''",
        "ALTER TABLE t ADD c TINYTEXT, ADD bin_f CHAR(1) NOT NULL DEFAULT ''",
    );
    same(
        "CREATE TABLE t (a INT, b INT PRIMARY KEY NOT IGNORED, KEY (a) IGNORED, UNIQUE KEY u (a) NOT IGNORED)",
        "CREATE TABLE t (a INT, b INT PRIMARY KEY, KEY (a), UNIQUE KEY u (a))",
    );
    same(
        "ALTER TABLE t ADD PRIMARY KEY (a) IGNORED",
        "ALTER TABLE t ADD PRIMARY KEY (a)",
    );
    same(
        "CREATE TABLE t (a INT fkey=vvv CHECK (a > 0), KEY akey (a) dff=vvv) ENGINE=MyISAM tkey1='1v1' n=1",
        "CREATE TABLE t (a INT CHECK (a > 0), KEY akey (a)) ENGINE=MyISAM",
    );
    // `TOP` is a name (no equivalent the parser reads itself: it takes `top` for SQL Server's).
    assert_eq!(
        parse("SELECT top.a FROM (SELECT 1 AS a) top JOIN t1 ON t1.b = 1").unwrap()[0].to_string(),
        "SELECT top.a FROM (SELECT 1 AS a) top JOIN t1 ON t1.b = 1"
    );
    same(
        "ALTER TABLE t1 EXCHANGE PARTITION p0 WITH TABLE d.t2",
        "ALTER TABLE t1 RENAME TO d.t2",
    );
    same(
        "SELECT id FROM p WHERE id = 1 LOCK\n IN /* é */ SHARE MODE",
        "SELECT id FROM p WHERE id = 1 FOR SHARE",
    );
}

/// `MOD` where MariaDB reads the function, and the words of the other forms where they
/// mean something else, are left as written.
#[test]
fn other_readings_are_left_alone() {
    for sql in [
        "SELECT DISTINCT MOD(b, 3) FROM t",
        "SELECT a FROM t WHERE a = MOD(5, 2)",
        "SELECT CAST(a AS BINARY) FROM t",
        "CREATE TABLE t (a BINARY(4), b INT)",
        "UPDATE t SET a = 1, b = 2",
        "UPDATE t SET a = (SELECT 1 FROM u, v)",
        "SELECT a FROM t WHERE a IN (1) AND MOD(a, 2) = 1 OR NOT MOD(a, 3)",
        "SELECT CASE WHEN 1 THEN MOD(a, 2) ELSE MOD(a, 3) END FROM t",
        // ALTER TABLE items that could name another table are not read as options.
        "ALTER TABLE t1 UNION = (t2, t3)",
        "ALTER TABLE t1 ENGINE = MRG_MyISAM UNION = (t2)",
        // Partition maintenance stays unread (refused; ANALYZE TABLE is read elsewhere).
        "ALTER TABLE t1 ANALYZE PARTITION p0",
        "ALTER TABLE t1 CHECK PARTITION ALL",
    ] {
        let mine = parse(sql).map(|s| s[0].to_string());
        let plain = Parser::parse_sql(&MySqlDialect {}, sql).map(|s| s[0].to_string());
        assert_eq!(mine.ok(), plain.ok(), "{sql}");
    }
    // A period's bounds that are not literals (a subquery could name a table) stay unread.
    assert!(
        parse("DELETE FROM t FOR PORTION OF p FROM (SELECT MIN(d) FROM u) TO '2001-01-01'")
            .is_err()
    );
    // A query in CREATE TABLE keeps the partitioning clause (and so stays unread).
    assert!(parse("CREATE TABLE t (a INT) PARTITION BY HASH (a) SELECT a FROM u").is_err());
    // `CHARSET = ascii`: the character set's name is not the attribute `ASCII`.
    assert_eq!(
        parse("CREATE TABLE t (a INT) DEFAULT CHARSET=ascii PAGE_CHECKSUM=1")
            .map(|s| s[0].to_string())
            .ok(),
        Parser::parse_sql(
            &MySqlDialect {},
            "CREATE TABLE t (a INT) DEFAULT CHARSET=ascii"
        )
        .map(|s| s[0].to_string())
        .ok(),
    );
    // Option keywords are never read as engine-defined options; a CHECK's `a = b` stays.
    for sql in [
        "CREATE TABLE t (a INT CHECK (a = b))",
        "CREATE TABLE t (a INT) UNION = (t1, t2)",
        "CREATE TABLE t (a INT) DATA DIRECTORY = '/tmp'",
        "CREATE TABLE t (a INT) CONNECTION = 'mysql://x'",
        "CREATE TABLE IGNORED (a INT)",
        "CREATE TABLE t1 (c9 GEOMETRY) CHARACTER SET = binary",
    ] {
        let mine = parse(sql).map(|s| s[0].to_string());
        let plain = Parser::parse_sql(&MySqlDialect {}, sql).map(|s| s[0].to_string());
        assert_eq!(mine.ok(), plain.ok(), "{sql}");
    }
    // An exchange among other items, or with MariaDB 11's `WITHOUT VALIDATION`, stays unread.
    assert!(
        parse("ALTER TABLE t1 EXCHANGE PARTITION p1 WITH TABLE t2 WITHOUT VALIDATION").is_err()
    );
    assert!(
        parse("ALTER TABLE t1 DROP PARTITION p0, EXCHANGE PARTITION p1 WITH TABLE t2").is_err()
    );
    // A `MOD` after a keyword that is no operand is not turned into the operator.
    assert!(parse("SELECT DISTINCT MOD 2 FROM t").is_err());
}

/// The spans of the tokens after a change still point at the client's text.
#[test]
fn spans_point_at_the_clients_text() {
    use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement};
    let sql = "SELECT a MOD 2, TESTDB.t.b FROM TESTDB.t LOCK IN SHARE MODE";
    let Statement::Query(q) = parse(sql).unwrap().remove(0) else {
        panic!()
    };
    let SetExpr::Select(s) = *q.body else {
        panic!()
    };
    let SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) = &s.projection[1] else {
        panic!("{:?}", s.projection[1])
    };
    assert_eq!(parts[0].span.start.column, 17);
    assert_eq!(&sql[16..22], "TESTDB");
}

/// The forms of module `clauses` (and the digit-led names, ALTER TABLE's `WAIT n`, MOD in an
/// ODBC escape).
#[test]
fn clause_forms_read_as_their_equivalents() {
    let mut wrong = Vec::new();
    let mut check = |client: &str, equivalent: &str| {
        if let Err(e) = std::panic::catch_unwind(|| same(client, equivalent)) {
            wrong.push(format!("{client}: {e:?}"));
        }
    };
    // A name that starts with digits and `e`.
    for (sql, printed) in [
        ("SELECT 1 AS 1Eq", "SELECT 1 AS 1Eq"),
        ("SELECT 1Ea FROM t", "SELECT 1Ea FROM t"),
        ("SELECT 1 Ea FROM t", "SELECT 1 AS Ea FROM t"),
    ] {
        assert_eq!(parse(sql).unwrap()[0].to_string(), printed);
    }
    // `WAIT n` / `NOWAIT`: how long to wait for a table's lock.
    check(
        "ALTER TABLE t1 WAIT 1 COMMENT='test'",
        "ALTER TABLE t1 ALGORITHM = DEFAULT",
    );
    check(
        "ALTER TABLE d.t1 NOWAIT ADD COLUMN b INT",
        "ALTER TABLE d.t1 ADD COLUMN b INT",
    );
    check(
        "ALTER TABLE t1 WAIT 1",
        "ALTER TABLE t1 ALGORITHM = DEFAULT",
    );
    check("DROP TABLE t1, t2 WAIT 0", "DROP TABLE t1, t2");
    check("DROP TABLE IF EXISTS t1 NOWAIT", "DROP TABLE IF EXISTS t1");
    check("TRUNCATE TABLE t1 WAIT 1", "TRUNCATE TABLE t1");
    check("TRUNCATE TABLE t1 NOWAIT", "TRUNCATE TABLE t1");
    check("RENAME TABLE t1 WAIT 1 TO t2", "RENAME TABLE t1 TO t2");
    check(
        "RENAME TABLE t2 NOWAIT TO t1, a NOWAIT TO b",
        "RENAME TABLE t2 TO t1, a TO b",
    );
    check("DROP INDEX i1 ON t1 WAIT 0", "DROP INDEX i1 ON t1");
    // ODBC's `{fn mod(a, b)}`: the function, and an operand of the operator.
    assert_eq!(
        parse("SELECT {fn mod(7, 3)}").unwrap()[0].to_string(),
        "SELECT (mod(7, 3))"
    );
    check(
        "SELECT {fn mod(a, 3)} MOD 2, 7 MOD {fn MOD(5, 3)} FROM t",
        "SELECT (mod(a, 3)) % 2, 7 % (MOD(5, 3)) FROM t",
    );
    // A locking read's `WAIT n` (`NOWAIT` the parser reads).
    check(
        "SELECT a FROM t FOR UPDATE WAIT 5",
        "SELECT a FROM t FOR UPDATE",
    );
    check(
        "SELECT a FROM t FOR UPDATE WAIT 1.5;",
        "SELECT a FROM t FOR UPDATE",
    );
    check(
        "SELECT a FROM t WHERE a = 1 LOCK IN SHARE MODE WAIT 0",
        "SELECT a FROM t WHERE a = 1 FOR SHARE",
    );
    check(
        "SELECT a FROM t WHERE a IN (SELECT b FROM u FOR UPDATE WAIT 2)",
        "SELECT a FROM t WHERE a IN (SELECT b FROM u FOR UPDATE)",
    );
    // An engine-defined option as ALTER TABLE's only item.
    check(
        "ALTER TABLE t1 tkey4=4v1",
        "ALTER TABLE t1 ALGORITHM = DEFAULT",
    );
    check(
        "ALTER TABLE t1 tkey3=DEFAULT tkey4=DEFAULT",
        "ALTER TABLE t1 ALGORITHM = DEFAULT",
    );
    check(
        "ALTER TABLE t1 CHANGE a a INT `FKEY1`='v1'",
        "ALTER TABLE t1 CHANGE a a INT",
    );
    check(
        "CREATE TABLE t1 (a INT `ckey`=1) `tkey`='x' ENGINE=InnoDB",
        "CREATE TABLE t1 (a INT) ENGINE=InnoDB",
    );
    check(
        "CREATE TABLE t1 (a INT) `opt`=`two words`, opt1='*/ oops1 ', ENGINE=Aria",
        "CREATE TABLE t1 (a INT) ENGINE=Aria",
    );
    // CREATE TABLE .. WITH [RECURSIVE]: the query after the table.
    check(
        "CREATE TABLE t1 WITH RECURSIVE f(a) AS (SELECT 1 UNION ALL SELECT a + 1 FROM f WHERE a < 3) SELECT a FROM f",
        "CREATE TABLE t1 AS WITH RECURSIVE f(a) AS (SELECT 1 UNION ALL SELECT a + 1 FROM f WHERE a < 3) SELECT a FROM f",
    );
    check(
        "CREATE TABLE t1 (a INT) WITH c AS (SELECT 1 AS a) SELECT a FROM c",
        "CREATE TABLE t1 (a INT) AS WITH c AS (SELECT 1 AS a) SELECT a FROM c",
    );
    // PROCEDURE ANALYSE with numbers only.
    check(
        "SELECT count(*) FROM t1 PROCEDURE ANALYSE()",
        "SELECT count(*) FROM t1",
    );
    check(
        "SELECT * FROM t1 PROCEDURE analyse (1, 1)",
        "SELECT * FROM t1",
    );
    check(
        "SELECT (SELECT 1 FROM t1 PROCEDURE ANALYSE()) FROM t2",
        "SELECT (SELECT 1 FROM t1) FROM t2",
    );
    // ODBC escapes.
    check(
        "SELECT {fn length(\"hello\")}, { date \"1997-10-20\" }",
        "SELECT (length(\"hello\")), (\"1997-10-20\")",
    );
    // (`{d '..'}`, `{ts '..'}` and `{fn f()}` the parser reads itself; read as MariaDB does.)
    assert_eq!(
        parse("SELECT {d '1997-10-20'}, {ts '1997-10-20 10:00:00'}, {fn now()} FROM t").unwrap()[0]
            .to_string(),
        "SELECT ('1997-10-20'), ('1997-10-20 10:00:00'), (now()) FROM t"
    );
    check(
        "SELECT * FROM {oj t1 LEFT OUTER JOIN t2 ON t1.a = t2.a}",
        "SELECT * FROM (t1 LEFT OUTER JOIN t2 ON t1.a = t2.a)",
    );
    // SIGNED UNSIGNED.
    check(
        "CREATE TABLE t1 (a INT SIGNED UNSIGNED)",
        "CREATE TABLE t1 (a INT SIGNED)",
    );
    // A column in AGAINST.
    check(
        "SELECT * FROM t2 WHERE MATCH inhalt AGAINST (t2.inhalt)",
        "SELECT * FROM t2 WHERE MATCH (inhalt) AGAINST ('')",
    );
    // INSERT .. SELECT without FROM .. ON DUPLICATE KEY UPDATE.
    check(
        "INSERT IGNORE INTO t1 SELECT 1 ON DUPLICATE KEY UPDATE a=2",
        "INSERT IGNORE INTO t1 SELECT 1 FROM DUAL ON DUPLICATE KEY UPDATE a=2",
    );
    // System versioning.
    check(
        "CREATE TABLE t (a INT, s TIMESTAMP(6) AS ROW START, e TIMESTAMP(6) GENERATED ALWAYS AS ROW END, PERIOD FOR SYSTEM_TIME(s, e), INDEX (s)) WITH SYSTEM VERSIONING ENGINE=InnoDB",
        "CREATE TABLE t (a INT, s TIMESTAMP(6), e TIMESTAMP(6), INDEX (s)) ENGINE=InnoDB",
    );
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Where the clause forms do not fit, the statement stays unread (or is read as before).
#[test]
fn clause_forms_leave_names_alone() {
    // A table named `nowait` / `wait` is a table.
    let dropped = parse("DROP TABLE nowait").unwrap()[0].to_string();
    assert!(dropped.to_ascii_lowercase().contains("nowait"), "{dropped}");
    let dropped = parse("DROP TABLE t1, nowait").unwrap()[0].to_string();
    assert!(dropped.to_ascii_lowercase().contains("nowait"), "{dropped}");
    // PROCEDURE ANALYSE with anything but numbers stays unread.
    assert!(parse("SELECT * FROM t1 PROCEDURE ANALYSE((SELECT 1 FROM t2))").is_err());
    assert!(parse("SELECT * FROM t1 PROCEDURE ANALYSE(a)").is_err());
    // A quoted name and `=` in a clause is no engine-defined option.
    let default = parse("CREATE TABLE t1 (a INT DEFAULT `x`=1)").unwrap()[0].to_string();
    assert!(default.contains("DEFAULT `x` = 1"), "{default}");
    // An ODBC escape with a list in it stays unread.
    assert!(parse("SELECT {fn a, b}").is_err());
    // A subquery in AGAINST is not dropped.
    assert!(parse("SELECT * FROM t WHERE MATCH (a) AGAINST ((SELECT b FROM t2))").is_err());
    // INSERT .. SELECT .. FROM keeps its FROM.
    assert_eq!(
        parse("INSERT INTO t1 SELECT a FROM t2 ON DUPLICATE KEY UPDATE a=2").unwrap()[0]
            .to_string(),
        "INSERT INTO t1 SELECT a FROM t2 ON DUPLICATE KEY UPDATE a = 2"
    );
}

/// `CAST(x AS CHAR CHARACTER SET cs)` (which the parser does not read in CAST) reads as the
/// `CONVERT(x, CHAR CHARACTER SET cs)` it means; `CHARSET` after a character type is
/// `CHARACTER SET` (mysqldump of a CHECK constraint, mysql-test `ctype_utf32_not_embedded`).
#[test]
fn a_cast_to_a_character_set_reads_as_convert() {
    same(
        "SELECT CAST('a' AS CHAR CHARACTER SET binary)",
        "SELECT CONVERT('a', CHAR CHARACTER SET binary)",
    );
    same(
        "SELECT CAST(reverse('a') AS char charset binary), CAST(1 AS CHAR(3) CHARSET latin1)",
        "SELECT CONVERT(reverse('a'), char CHARACTER SET binary), CONVERT(1, CHAR(3) CHARACTER SET latin1)",
    );
    same(
        "SELECT CONVERT('a', CHAR CHARSET binary)",
        "SELECT CONVERT('a', CHAR CHARACTER SET binary)",
    );
    same(
        "CREATE TABLE t (a CHAR(8), b CHAR(8) CHECK (b = CAST(a AS CHAR CHARSET binary)))",
        "CREATE TABLE t (a CHAR(8), b CHAR(8) CHECK (b = CONVERT(a, CHAR CHARACTER SET binary)))",
    );
}

/// A double-quoted COMMENT of a column or table is its string (mysql-test `ctype_recoding`).
#[test]
fn a_double_quoted_comment_is_a_string() {
    same(
        r#"CREATE TABLE t (a CHAR(32) NOT NULL COMMENT "c 'x'") COMMENT "t""#,
        "CREATE TABLE t (a CHAR(32) NOT NULL COMMENT 'c ''x''') COMMENT 't'",
    );
    same(
        r#"ALTER TABLE t MODIFY a INT COMMENT "c""#,
        "ALTER TABLE t MODIFY a INT COMMENT 'c'",
    );
}

/// A locking read's `WAIT n` is read only where MariaDB takes it; elsewhere the parse fails.
#[test]
fn a_lock_wait_clause_is_read_only_after_a_locking_read() {
    for sql in [
        "SELECT a FROM t FOR UPDATE WAIT",
        "SELECT a FROM t FOR UPDATE WAIT x",
        "SELECT a FROM t FOR UPDATE WAIT 5 UNION SELECT b FROM u",
        "SELECT a FROM t WAIT 5",
    ] {
        assert!(parse(sql).is_err(), "{sql}");
    }
}

/// The text a sharded table's nodes receive keeps the client's lock wait clause, after the
/// LIMIT the gateway adds.
#[test]
fn a_lock_wait_clause_reaches_each_node_as_written() {
    let router = crate::route::bundled_router();
    for clause in [
        "FOR UPDATE WAIT 5",
        "LOCK IN SHARE MODE WAIT 5",
        "FOR UPDATE NOWAIT",
    ] {
        let sql = format!("SELECT id FROM travelrecord {clause}");
        let Ok(crate::route::Routed::Plan(plan)) = router.route(&sql, Some("TESTDB")) else {
            panic!("{sql}")
        };
        assert!(plan.targets.len() > 1, "{sql}");
        for t in &plan.targets {
            assert!(t.sql.ends_with(clause), "{sql}: {}", t.sql);
        }
    }
}

/// `UPDATE IGNORE t` / `UPDATE LOW_PRIORITY t`, which sqlparser reads as a table `ignore` /
/// `low_priority` with an alias `t` (a hunt found it running on the default dataNode), and
/// DELETE's options in any combination, read as the statement without them.
#[test]
fn update_and_delete_options_are_not_tables() {
    for (client, equivalent) in [
        (
            "UPDATE IGNORE t SET a = 1 WHERE id = 2",
            "UPDATE t SET a = 1 WHERE id = 2",
        ),
        ("update low_priority t set a = 1", "UPDATE t SET a = 1"),
        (
            "UPDATE LOW_PRIORITY IGNORE t AS x SET x.a = 1",
            "UPDATE t AS x SET x.a = 1",
        ),
        (
            "UPDATE IGNORE t1, t2 SET t1.a = t2.a",
            "UPDATE t1 CROSS JOIN t2 SET t1.a = t2.a",
        ),
        (
            "DELETE LOW_PRIORITY QUICK IGNORE FROM t WHERE id = 1",
            "DELETE QUICK FROM t WHERE id = 1",
        ),
        (
            "DELETE IGNORE FROM t WHERE id = 1",
            "DELETE FROM t WHERE id = 1",
        ),
    ] {
        reads_as(client, equivalent);
    }
    // Quoted, they are names.
    let quoted = parse("UPDATE `ignore` t SET a = 1").unwrap();
    assert!(
        quoted[0].to_string().starts_with("UPDATE `ignore` "),
        "{}",
        quoted[0]
    );
}
