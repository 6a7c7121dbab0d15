//! Answers as MariaDB gives them (issue 18, the "wrong answer or metadata" losses of
//! MariaDB's mysql-test `main/` through the gateway, README "Conformance"): each test runs one
//! statement sequence on a plain MariaDB database and, through the gateway, in a schema whose
//! default dataNode is another database of the same server, and compares every answer — the
//! error (errno and SQLSTATE), or the result's column labels and types, its rows, the affected
//! rows and the warning count. The sequences are the statements mysql-test files stopped at.

mod common;

use common::{Extra, Fixture, primary, server_error};
use mysql_async::prelude::Queryable;

/// Schema `MTA` whose default dataNode is `dn1` (the fixture's first database), for user `mta`.
fn schema() -> Extra {
    Extra {
        schema_xml: r#"<schema name="MTA" checkSQLschema="false" dataNode="dn1" />"#.to_string(),
        users_xml: r#"<user name="mta"><property name="password">mta</property><property name="schemas">MTA</property></user>"#
            .to_string(),
        ..Extra::default()
    }
}

/// What a statement answered: an error (errno, SQLSTATE), or a result.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Error(u16, String),
    Result {
        /// Each column's label, type, flags, length, decimals and character set.
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
        affected: u64,
        warnings: u16,
    },
}

async fn answer(c: &mut mysql_async::Conn, sql: &str) -> (Answer, String) {
    let mut result = match c.query_iter(sql).await {
        Ok(r) => r,
        Err(e) => {
            let (code, state, message) = server_error(e);
            return (Answer::Error(code, state), message);
        }
    };
    let columns = result
        .columns_ref()
        .iter()
        .map(|col| {
            format!(
                "{} {:?} {:?} len={} dec={} cs={}",
                col.name_str(),
                col.column_type(),
                col.flags(),
                col.column_length(),
                col.decimals(),
                col.character_set()
            )
        })
        .collect();
    let rows: Result<Vec<mysql_async::Row>, _> = result.collect().await;
    let rows = match rows {
        Ok(rows) => rows.into_iter().map(common::text_row).collect(),
        Err(e) => {
            let (code, state, message) = server_error(e);
            return (Answer::Error(code, state), message);
        }
    };
    drop(result);
    let answer = Answer::Result {
        columns,
        rows,
        affected: c.affected_rows(),
        warnings: c.get_warnings(),
    };
    (answer, String::new())
}

/// Runs `sequence` on a fresh plain database and through a fresh gateway (fixture `prefix`),
/// asserting the same answer to every statement.
async fn same_answers(prefix: &str, sequence: &[&str]) {
    same_answers_in(prefix, schema(), sequence).await;
}

/// [`same_answers`] with the gateway's configuration `extra` (holding at least [`schema`]).
async fn same_answers_in(prefix: &str, extra: Extra, sequence: &[&str]) {
    let f = Fixture::start(prefix, extra).await;
    let plain_db = format!("t_{prefix}_plain");
    common::sample_database(&plain_db).await;
    let mut plain = primary(Some(&plain_db)).await;
    let mut gw = mysql_async::Conn::new(common::opts(f.port, "mta", "mta", Some("MTA")))
        .await
        .unwrap();
    for sql in sequence {
        // `rows: SQL`: a statement the gateway answers itself, whose column definitions are
        // its own (lengths and collation ids: a known difference), compared without them.
        let (sql, rows_only) = match sql.strip_prefix("rows: ") {
            Some(sql) => (sql, true),
            None => (*sql, false),
        };
        // `labels: SQL`: as `rows:`, but the column labels are compared too.
        let (sql, labels_only) = match sql.strip_prefix("labels: ") {
            Some(sql) => (sql, true),
            None => (sql, false),
        };
        // `named: SQL`: a table maintenance statement, whose rows name each table
        // `database.table`: the plain database's name is the gateway's schema's `MTA`.
        let (sql, named) = match sql.strip_prefix("named: ") {
            Some(sql) => (sql, true),
            None => (sql, false),
        };
        let (mut a, ma) = answer(&mut plain, sql).await;
        let (mut b, mb) = answer(&mut gw, sql).await;
        if named && let Answer::Result { rows, .. } = &mut a {
            let plain_prefix = format!("{plain_db}.");
            for row in rows.iter_mut() {
                if let Some(Some(cell)) = row.first_mut()
                    && let Some(table) = cell.strip_prefix(&plain_prefix)
                {
                    *cell = format!("MTA.{table}");
                }
                // A message naming the table (`Table 'db.t' doesn't exist`).
                if let Some(Some(text)) = row.get_mut(3) {
                    *text = text.replace(&format!("'{plain_prefix}"), "'MTA.");
                }
            }
        }
        if rows_only {
            for x in [&mut a, &mut b] {
                if let Answer::Result { columns, .. } = x {
                    columns.clear();
                }
            }
        }
        if labels_only {
            for x in [&mut a, &mut b] {
                if let Answer::Result { columns, .. } = x {
                    for c in columns.iter_mut() {
                        // The label is what comes before the type (` MYSQL_TYPE_`).
                        let end = c.rfind(" MYSQL_TYPE_").unwrap_or(c.len());
                        c.truncate(end);
                    }
                }
            }
        }
        assert_eq!(a, b, "{sql}\nMariaDB: {ma}\ngateway: {mb}");
    }
}

/// A text of comments only is a statement MariaDB answers OK (mysql-test `comments`); an empty
/// one, or one of white space and `;`, is 1065.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_of_comments_only_is_answered_ok() {
    same_answers(
        "mtacomment",
        &[
            "/* line with only comment */",
            "/* c */ ;",
            "-- a line comment",
            "# a hash comment",
            "/* a */ /* b */",
            "/*!40000 */",
            "",
            "  ",
            ";",
            " ; ",
            "SELECT 1 /* long\nmulti line comment */",
        ],
    )
    .await;
}

/// `SET TRANSACTION ...` (the next transaction's characteristics) inside a transaction opened
/// by START TRANSACTION is 1568 even before the transaction ran anything; `SET SESSION
/// TRANSACTION` is allowed (mysql-test `commit`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_transaction_inside_a_transaction_is_refused() {
    same_answers(
        "mtatrx",
        &[
            "CREATE TABLE t_trx (s1 INT) ENGINE=InnoDB",
            "START TRANSACTION",
            "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
            "SET TRANSACTION READ ONLY",
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
            "SELECT @@tx_isolation",
            "COMMIT",
            "BEGIN",
            "INSERT INTO t_trx VALUES (1)",
            "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
            "ROLLBACK",
            "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
            "SELECT COUNT(*) FROM t_trx",
        ],
    )
    .await;
}

/// A table name holding a backquote, written doubled inside backquotes, is the same table in the
/// SHOW and DESCRIBE statements the gateway routes itself (mysql-test `mysqlshow`:
/// `mariadb-show test 't`1'` got 1146 for `t``1`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quoted_name_with_a_backquote_is_one_table() {
    same_answers(
        "mtaquote",
        &[
            "CREATE TABLE `t``q` (a INT PRIMARY KEY, b INT)",
            "INSERT INTO `t``q` VALUES (1, 2)",
            "SHOW COLUMNS FROM `t``q`",
            "SHOW FULL COLUMNS FROM `t``q`",
            "SHOW KEYS FROM `t``q`",
            "SHOW INDEX FROM `t``q`",
            "DESC `t``q`",
            "SHOW CREATE TABLE `t``q`",
            "SELECT COUNT(*) FROM `t``q`",
            "SHOW COLUMNS FROM `t``nope`",
        ],
    )
    .await;
}

/// `SHOW VARIABLES LIKE "pattern"` with the pattern in double quotes (a string outside
/// ANSI_QUOTES; mysql-test's `include/have_lowercase0.inc` asks so), and MariaDB's
/// `information_schema.SYSTEM_VARIABLES`, which describes the server's variables as
/// GLOBAL_VARIABLES and SESSION_VARIABLES do (mysql-test `opt_trace_default`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_variables_are_read_as_mariadb_answers_them() {
    same_answers(
        "mtavars",
        &[
            "SHOW VARIABLES LIKE \"lower_case_table_names\"",
            "SHOW SESSION VARIABLES LIKE \"sql_mode\"",
            "SELECT global_value_origin, default_value FROM INFORMATION_SCHEMA.SYSTEM_VARIABLES \
             WHERE variable_name = 'optimizer_trace'",
            "SELECT COUNT(*) > 100 FROM information_schema.system_variables",
        ],
    )
    .await;
}

/// `SET optimizer_switch = 'a=on'` changes the flags it lists and keeps the others: a later
/// statement sees every flag the session's SETs left, not only the last SET's (mysql-test
/// `subselect_mat_analyze_json` lost `in_to_exists=off` and got another plan).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimizer_switch_flags_accumulate_as_on_mariadb() {
    same_answers(
        "mtaoptsw",
        &[
            "SET @save_optimizer_switch = @@optimizer_switch",
            "SET @@optimizer_switch = \"materialization=on,in_to_exists=off,semijoin=off\"",
            "SET @@optimizer_switch = \"partial_match_rowid_merge=on,partial_match_table_scan=off\"",
            "SELECT @@optimizer_switch",
            "SET optimizer_switch = 'in_to_exists=on'",
            "SELECT @@optimizer_switch",
            "SET @@optimizer_switch = @save_optimizer_switch",
            "SELECT @@optimizer_switch = @save_optimizer_switch",
        ],
    )
    .await;
}

/// `SET NAMES cs, other = value, ...`: the assignments after NAMES apply after it, in the order
/// written (mysql-test `ctype_ucs2_uca` got 1064 for `SET NAMES utf8,
/// character_set_connection=ucs2`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_names_takes_more_assignments_after_it() {
    same_answers(
        "mtanames",
        &[
            // (Numbers only while the results are utf8mb3: the gateway's column definitions
            // then carry utf8mb4's collation and lengths, README "Client character sets"; and
            // not `@@character_set_client` inside an expression, which the gateway answers as
            // a literal that becomes the label.)
            "SET NAMES utf8, character_set_connection=ucs2",
            "SELECT @@character_set_connection = 'ucs2', @@collation_connection = 'ucs2_general_ci'",
            "SELECT LENGTH('a'), CHARSET('a') = 'ucs2'",
            "SET NAMES utf8, collation_connection=ucs2_unicode_520_nopad_ci",
            "SELECT @@collation_connection = 'ucs2_unicode_520_nopad_ci', \
             COLLATION('a') = 'ucs2_unicode_520_nopad_ci'",
            "SET NAMES utf8mb4, @v = 3",
            "SELECT @v, @@character_set_connection",
        ],
    )
    .await;
}

/// A `_utf8'...'` literal from a latin1 client holds UTF-8 bytes, as the introducer says
/// (mysql-test `ctype_mb`: `_utf8'тест'` became eight characters through the gateway, which
/// had read its bytes as latin1 first). The statements are sent as UTF-8 bytes on a latin1
/// connection, as mysqltest sends its files. (Numbers only: on a latin1 connection the
/// gateway's column lengths are utf8mb4's, README "Client character sets"; and aliases: a
/// label holding such a literal is the backend's, in UTF-8, which latin1 cannot spell, where
/// MariaDB sends the statement's own bytes.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_utf8_introducer_reads_its_bytes_as_utf8_on_a_latin1_connection() {
    same_answers(
        "mtaintro",
        &[
            "SET NAMES latin1",
            "SELECT CHAR_LENGTH(_utf8'тест') AS a, LENGTH(_utf8mb4 'тест') AS b, CHAR_LENGTH('тест')",
            "SELECT _utf8'тест' = CONVERT(0xD182D0B5D181D182 USING utf8mb3) AS same",
            "CREATE TABLE t_mb SELECT _utf8'test' AS c1, _utf8'тест' AS c2",
            "SELECT CHAR_LENGTH(c1), CHAR_LENGTH(c2), LENGTH(c2) FROM t_mb",
            "SELECT COUNT(*) FROM t_mb WHERE c2 = _utf8'тест'",
            "SET NAMES utf8mb4",
            "SELECT CHAR_LENGTH(c2) FROM t_mb",
        ],
    )
    .await;
}

/// ROLLBACK of a transaction that changed a non-transactional table warns (1196): the OK
/// carries the warning, SHOW WARNINGS lists it (mysql-test `rollback`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_warns_of_non_transactional_changes() {
    same_answers(
        "mtarollback",
        &[
            "CREATE TABLE t_rb (n INT) ENGINE=MyISAM",
            "CREATE TABLE t_rb_tx (n INT) ENGINE=InnoDB",
            "BEGIN",
            "INSERT INTO t_rb VALUES (1)",
            "INSERT INTO t_rb_tx VALUES (1)",
            "ROLLBACK",
            "rows: SELECT @@warning_count",
            "rows: SHOW WARNINGS",
            "SELECT COUNT(*) FROM t_rb",
            "SELECT COUNT(*) FROM t_rb_tx",
            "BEGIN",
            "INSERT INTO t_rb_tx VALUES (2)",
            "ROLLBACK",
            "rows: SHOW WARNINGS",
            "SET autocommit = 0",
            "INSERT INTO t_rb VALUES (3)",
            "ROLLBACK AND CHAIN",
            "rows: SHOW WARNINGS",
            "COMMIT",
            "SET autocommit = 1",
        ],
    )
    .await;
}

/// ROLLBACK TO SAVEPOINT over a change to a non-transactional table warns (1196) as ROLLBACK
/// does: the OK carries the warning, `@@warning_count` and SHOW WARNINGS have it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_to_savepoint_warns_of_non_transactional_changes() {
    same_answers(
        "mtarbsp",
        &[
            "CREATE TABLE t_rbs (n INT) ENGINE=MyISAM",
            "CREATE TABLE t_rbs_tx (n INT) ENGINE=InnoDB",
            "BEGIN",
            "INSERT INTO t_rbs_tx VALUES (1)",
            "SAVEPOINT s1",
            "INSERT INTO t_rbs VALUES (1)",
            "ROLLBACK TO SAVEPOINT s1",
            "rows: SELECT @@warning_count",
            "rows: SHOW WARNINGS",
            "ROLLBACK WORK TO s1",
            "rows: SHOW WARNINGS",
            "ROLLBACK",
            "SELECT COUNT(*) FROM t_rbs",
            "SELECT COUNT(*) FROM t_rbs_tx",
            "BEGIN",
            "SAVEPOINT s2",
            "INSERT INTO t_rbs_tx VALUES (2)",
            "ROLLBACK TO SAVEPOINT s2",
            "rows: SHOW WARNINGS",
            "COMMIT",
        ],
    )
    .await;
}

/// After a failed statement, MySQL's diagnostics area holds its error: SHOW WARNINGS and SHOW
/// ERRORS list it, `SHOW COUNT(*) WARNINGS|ERRORS`, `@@warning_count` and `@@error_count`
/// count it (mysql-test files check errors this way after `--error`); a statement that
/// succeeds clears it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_statement_s_error_is_in_show_warnings_and_show_errors() {
    same_answers(
        "mtadiag",
        &[
            "CREATE TABLE t_diag (n INT)",
            "SELECT nosuchcol FROM t_diag",
            "rows: SHOW WARNINGS",
            "rows: SHOW ERRORS",
            "rows: SHOW COUNT(*) WARNINGS",
            "rows: SHOW COUNT(*) ERRORS",
            "rows: SELECT @@warning_count",
            "rows: SELECT @@error_count",
            "rows: SHOW ERRORS LIMIT 0",
            "SELECT 1/0",
            "rows: SHOW WARNINGS",
            "rows: SHOW ERRORS",
            "rows: SELECT @@session.error_count",
            "INSERT INTO t_diag VALUES (1)",
            "rows: SHOW WARNINGS",
            "rows: SHOW COUNT(*) ERRORS",
        ],
    )
    .await;
}

/// `@@warning_count` and `@@error_count` several in one SELECT, with aliases and the
/// `@@session.` prefix, count the session's last statement's conditions as the one-variable
/// form does (a node asked would count its own: 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_diagnostics_counts_in_one_select_count_the_kept_conditions() {
    same_answers(
        "mtadiagmulti",
        &[
            "CREATE TABLE t_dm (n INT)",
            "SELECT nosuchcol FROM t_dm",
            "labels: SELECT @@warning_count, @@error_count",
            "labels: SELECT @@warning_count AS w, @@session.error_count e",
            "labels: SELECT @@session.warning_count, @@Error_Count AS `E c`",
            "labels: SELECT @@SESSION.Warning_Count, @@error_count AS 'q w'",
            "SELECT 1/0, 2/0",
            "labels: SELECT @@error_count, @@warning_count, @@session.warning_count AS w",
            "rows: SHOW WARNINGS",
        ],
    )
    .await;
}

/// MariaDB clears the diagnostics area only for a statement that uses a table or raises a
/// condition: `SELECT 1`, `SET @a = 1`, `BEGIN`, `COMMIT` keep the last
/// failed statement's error (and a tableless statement's warnings) for SHOW WARNINGS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_using_no_table_keeps_the_diagnostics() {
    same_answers(
        "mtadiagkeep",
        &[
            "CREATE TABLE t_dk (n INT)",
            "SELECT nosuchcol FROM t_dk",
            "SELECT 1",
            "rows: SHOW WARNINGS",
            "SELECT 1 FROM DUAL",
            "SET @a = 1",
            "BEGIN",
            "COMMIT",
            "BEGIN",
            "ROLLBACK",
            "rows: SELECT @@warning_count",
            "rows: SHOW ERRORS",
            "SELECT 1/0",
            "SELECT @a",
            "rows: SHOW WARNINGS",
            "SELECT n FROM t_dk",
            "rows: SHOW WARNINGS",
            "SELECT nosuchcol FROM t_dk",
            "SELECT nosuchcol2",
            "rows: SHOW WARNINGS",
            "SELECT nosuchcol FROM t_dk",
            "SELECT (SELECT COUNT(*) FROM t_dk)",
            "rows: SHOW WARNINGS",
            "SELECT nosuchcol FROM t_dk",
            "SET @c = 1 + 1, @d = 'from'",
            "rows: SHOW WARNINGS",
            "SELECT 'from', `from`.n FROM t_dk AS `from`",
            "rows: SHOW WARNINGS",
        ],
    )
    .await;
}

/// A comment between the words of SHOW WARNINGS|ERRORS (and their COUNT(*) and LIMIT forms)
/// is white space, as MariaDB reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_inside_show_warnings_is_white_space() {
    same_answers(
        "mtashowcomment",
        &[
            "CREATE TABLE t_sc (n INT)",
            "SELECT nosuchcol FROM t_sc",
            "rows: show /* c */ warnings",
            "rows: SHOW/**/ERRORS",
            "rows: SHOW /* a */ COUNT(*) /* b */ ERRORS",
            "rows: show warnings /* c */ limit /* d */ 1",
            "SELECT 1/0",
            "rows: SHOW /* c */ WARNINGS",
        ],
    )
    .await;
}

/// A locking read's `WAIT n` / `NOWAIT` after `FOR UPDATE` and `LOCK IN SHARE MODE`
/// (MariaDB's lock wait clause) reaches the node with the statement, as MariaDB takes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locking_read_s_wait_clause_is_forwarded() {
    same_answers(
        "mtalockwait",
        &[
            "CREATE TABLE t_lw (n INT)",
            "INSERT INTO t_lw VALUES (1), (2)",
            "BEGIN",
            "SELECT n FROM t_lw ORDER BY n FOR UPDATE WAIT 5",
            "SELECT n FROM t_lw ORDER BY n FOR UPDATE NOWAIT",
            "SELECT n FROM t_lw WHERE n = 1 LOCK IN SHARE MODE WAIT 5",
            "SELECT n FROM t_lw LIMIT 1 LOCK IN SHARE MODE NOWAIT",
            "SELECT n FROM t_lw ORDER BY n FOR UPDATE SKIP LOCKED",
            "SELECT n FROM t_lw FOR UPDATE WAIT",
            "COMMIT",
        ],
    )
    .await;
}

/// An ODBC escape of MOD (`{fn mod(a, b)}`) is the function, not the operator after an
/// operand `fn`; the escape is an operand of the operator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_odbc_escape_of_mod_is_the_function() {
    same_answers(
        "mtaodbcmod",
        &[
            "SELECT {fn mod(7, 3)}",
            "SELECT {fn MOD(7, 3)} AS m, {fn mod(7, 3)} MOD 2, 7 MOD {fn mod(5, 3)}",
            "CREATE TABLE t_om (n INT)",
            "INSERT INTO t_om VALUES (7), (8)",
            "SELECT n, {fn mod(n, 3)} FROM t_om ORDER BY n",
        ],
    )
    .await;
}

/// Comments in `SET NAMES` / `SET CHARACTER SET` and the character set variables are white
/// space: the character sets set are those named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_in_set_names_are_white_space() {
    let check =
        "rows: SELECT @@character_set_client, @@character_set_results, @@collation_connection";
    same_answers(
        "mtanamescomment",
        &[
            "SET NAMES utf8mb4 /* c */",
            check,
            "SET NAMES latin1 COLLATE latin1_bin /* c */",
            check,
            "SET NAMES /* a */ utf8mb4 /* b */ COLLATE /* c */ utf8mb4_bin",
            check,
            "SET CHARACTER SET latin1 /* c */",
            check,
            "SET character_set_results = utf8mb4 /* c */",
            check,
            "SET NAMES utf8mb4",
            check,
        ],
    )
    .await;
}

/// A plain comment inside a version comment is read as MariaDB reads it — to its first `*/`,
/// the version comment going on to its own (mysql-test `partition_mgm`: `/*!50100 PARTITION BY
/// HASH (a) /* Test of comment */ PARTITIONS 2 */`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_inside_a_version_comment_is_read_as_mariadb_reads_it() {
    same_answers(
        "mtavcomment",
        &[
            "SELECT 1 /*!40101 , 2 /* x */ , 3 */",
            "SELECT 1 /*!40101 + /* x /* y */ 2 */ AS s",
            "SELECT 1 /*!40101 , 2 /*/ , 3 */ , 4 */",
            "CREATE TABLE tvc (a INT) /*!50100 PARTITION BY HASH (a) /* Test of comment */ PARTITIONS 2 */",
            "INSERT INTO tvc VALUES (1), (2), (3)",
            "SELECT a FROM tvc PARTITION (p1) ORDER BY a",
            "DROP TABLE tvc",
        ],
    )
    .await;
}

/// `_koi8r'...'` (any introducer of another character set) from a latin1 client holds the
/// bytes the client sent, read as koi8r, whatever the connection's character set (mysql-test
/// `ctype_recoding`: through the gateway the literal reached the utf8mb4 backend as UTF-8
/// bytes, and a cp1251 column refused them with 1366). The statements are UTF-8 bytes on a
/// latin1 connection, as mysqltest sends its files. (Numbers only, as for `_utf8` above.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_charset_introducer_reads_the_bytes_sent() {
    same_answers(
        "mtarecode",
        &[
            "SET NAMES latin1",
            "SELECT CRC32(HEX(_koi8r'тест')) AS h, CHAR_LENGTH(_koi8r 'тест') AS n, \
             CRC32(HEX(CONVERT(_koi8r'тест' USING utf8mb4))) AS u, CRC32(HEX(_latin2\"é\\\\\")) AS l",
            "CREATE TABLE t_recode (a CHAR(10) CHARACTER SET cp1251) SELECT _koi8r'рус' AS a",
            "SELECT CRC32(HEX(a)) FROM t_recode",
            "SELECT COUNT(*) FROM t_recode WHERE a = _koi8r'рус'",
        ],
    )
    .await;
}

/// MariaDB forms the parser reads only through `route::forms::clauses` (mysql-test
/// `func_sapdb`, `odbc`, `timeout`, `insert_update`, `stack`, `table_options`, `type_num`,
/// `fulltext`, `mdev-35721-ubsan`): answered as MariaDB answers them, errors included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clause_forms_are_answered_as_mariadb_answers_them() {
    same_answers(
        "mtaclause",
        &[
            "CREATE TABLE cf (a INT PRIMARY KEY, b INT)",
            "INSERT INTO cf VALUES (1, 1)",
            "SELECT 1 AS 1Eq, {fn length(\"hello\")}, { date \"1997-10-20\" }, {d '2001-01-02'}",
            "INSERT IGNORE INTO cf SELECT 1, 2 ON DUPLICATE KEY UPDATE b = 3",
            "SELECT * FROM cf",
            "ALTER TABLE cf WAIT 1 COMMENT = 'x'",
            "ALTER TABLE cf NOWAIT",
            "ALTER TABLE cf tkey4=4v1",
            "SELECT * FROM {oj cf LEFT OUTER JOIN cf AS c2 ON cf.a = c2.a}",
            "CREATE TABLE cf2 WITH RECURSIVE f(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM f WHERE n < 3) SELECT n FROM f",
            "SELECT * FROM cf2",
            "CREATE TABLE cf3 (a INT SIGNED UNSIGNED)",
            "CREATE TABLE cf3 (a INT) `opt`=`two words`, opt1='x'",
            "RENAME TABLE cf2 WAIT 1 TO cf4",
            "TRUNCATE TABLE cf4 NOWAIT",
            "DROP TABLE cf4, cf WAIT 1",
            "CREATE TABLE cf5 (a TEXT, FULLTEXT (a)) ENGINE = MyISAM",
            "SELECT * FROM cf5 WHERE MATCH a AGAINST (cf5.a)",
            "CREATE TABLE cf6 (a INT, s TIMESTAMP(6) AS ROW START, e TIMESTAMP(6) AS ROW END, PERIOD FOR SYSTEM_TIME(s, e)) WITH SYSTEM VERSIONING",
            "INSERT INTO cf6 (a) VALUES (1)",
            "SELECT a FROM cf6",
            "DROP TABLE cf3, cf5, cf6",
        ],
    )
    .await;
}

/// Statements nested as deep as MariaDB's mysql-test nests them answer as MariaDB answers
/// (`parser_stack`: 225 parentheses; `execution_constants`: some 600 nested `IF` calls), and
/// one nested deeper than the gateway's parser goes gets 1436 (MariaDB's answer to a statement
/// too deep for its stack), not a crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_statements_answer_as_on_mariadb() {
    let parens = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
    let ifs = |n: usize| {
        let mut s = String::new();
        for i in 0..n {
            s.push_str(&format!("IF(a <= {i}, {i}, "));
        }
        s + "0" + &")".repeat(n)
    };
    let select = format!("SELECT {} AS x", parens(225));
    let create = "CREATE TABLE t_deep (a INT)";
    let update = format!("UPDATE t_deep SET a = {} WHERE a > 1", ifs(500));
    let subqueries = format!("SELECT {}1{} AS x", "(SELECT ".repeat(60), ")".repeat(60));
    same_answers(
        "mtadeep",
        &[
            create,
            "INSERT INTO t_deep VALUES (1), (7)",
            &select,
            &update,
            &subqueries,
        ],
    )
    .await;
    // Deeper than the gateway's parser goes: 1436, and the session goes on.
    let f = Fixture::start("mtadeep2", schema()).await;
    let mut gw = mysql_async::Conn::new(common::opts(f.port, "mta", "mta", Some("MTA")))
        .await
        .unwrap();
    let e = gw
        .query_drop(format!("SELECT {}", parens(5000)))
        .await
        .unwrap_err();
    let (code, state, message) = server_error(e);
    assert_eq!((code, state.as_str()), (1436, "HY000"), "{message}");
    let one: Option<u8> = gw.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
}

/// `SHOW DATABASES LIKE 'p'` labels its column `Database (p)`, as MariaDB does (mysql-test
/// `default_innodb`); without a pattern, `Database`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_databases_like_labels_the_column_with_the_pattern() {
    let f = Fixture::start("mtashowdb", schema()).await;
    let mut plain = primary(None).await;
    let mut gw = mysql_async::Conn::new(common::opts(f.port, "mta", "mta", Some("MTA")))
        .await
        .unwrap();
    for sql in [
        "SHOW DATABASES LIKE 'x'",
        "SHOW DATABASES LIKE 'M%'",
        "SHOW DATABASES",
    ] {
        let mut labels = Vec::new();
        for c in [&mut plain, &mut gw] {
            let result = c.query_iter(sql).await.unwrap();
            let names: Vec<String> = result
                .columns_ref()
                .iter()
                .map(|col| col.name_str().into_owned())
                .collect();
            result.drop_result().await.unwrap();
            labels.push(names);
        }
        assert_eq!(labels[0], labels[1], "{sql}");
    }
}

/// A login (or `USE`) naming a database with a character outside the BMP is 1300, as MariaDB
/// answers it (mysql-test `mysql_not_windows`: the gateway answered 1049 Unknown database).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_name_outside_the_bmp_is_an_invalid_string() {
    let f = Fixture::start("mtanonbmp", schema()).await;
    let name = "test\u{1f601} ";
    let direct = mysql_async::Conn::new(common::opts(
        common::PRIMARY_PORT,
        "manx",
        "manx",
        Some(name),
    ))
    .await
    .map(|_| ())
    .unwrap_err();
    let through = mysql_async::Conn::new(common::opts(f.port, "mta", "mta", Some(name)))
        .await
        .map(|_| ())
        .unwrap_err();
    let (direct, through) = (server_error(direct), server_error(through));
    assert_eq!(direct.0, 1300, "{direct:?}");
    assert_eq!(through, direct);
    // USE: the same answer, and the session goes on.
    let mut plain = primary(None).await;
    let mut gw = mysql_async::Conn::new(common::opts(f.port, "mta", "mta", Some("MTA")))
        .await
        .unwrap();
    let sql = format!("USE `{name}`");
    let a = server_error(plain.query_drop(&sql).await.unwrap_err());
    let b = server_error(gw.query_drop(&sql).await.unwrap_err());
    assert_eq!(a, b);
    let one: Option<u8> = gw.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
}

/// `DESC` / `DESCRIBE` of a statement is MariaDB's EXPLAIN of it (mysql-test `key_primary`:
/// `describe select * from t1 where t1="ABC"`): the gateway answers it as its EXPLAIN.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_of_a_statement_is_its_explain() {
    let f = Fixture::start("mtadesc", schema()).await;
    let mut gw = mysql_async::Conn::new(common::opts(f.port, "mta", "mta", Some("MTA")))
        .await
        .unwrap();
    gw.query_drop("CREATE TABLE tdesc (t1 CHAR(3) PRIMARY KEY)")
        .await
        .unwrap();
    for (desc, explain) in [
        (
            "describe select * from tdesc where t1=\"ABC\"",
            "EXPLAIN select * from tdesc where t1=\"ABC\"",
        ),
        (
            "DESC SELECT t1 FROM tdesc WHERE t1 LIKE 'A%'",
            "EXPLAIN SELECT t1 FROM tdesc WHERE t1 LIKE 'A%'",
        ),
        (
            "DESC DELETE FROM tdesc WHERE t1 = 'x'",
            "EXPLAIN DELETE FROM tdesc WHERE t1 = 'x'",
        ),
        (
            "DESCRIBE EXTENDED SELECT * FROM tdesc",
            "EXPLAIN EXTENDED SELECT * FROM tdesc",
        ),
    ] {
        let (a, ma) = answer(&mut gw, desc).await;
        let (b, mb) = answer(&mut gw, explain).await;
        assert_eq!(a, b, "{desc}\n{ma}\n{mb}");
        assert!(matches!(a, Answer::Result { .. }), "{desc}: {a:?} {ma}");
    }
    // A table's columns are still DESC's first meaning.
    let (a, m) = answer(&mut gw, "DESC tdesc").await;
    let (b, _) = answer(&mut gw, "SHOW COLUMNS FROM tdesc").await;
    assert!(matches!(a, Answer::Result { .. }), "{m}");
    assert_eq!(
        matches!(a, Answer::Result { ref rows, .. } if rows.len() == 1),
        matches!(b, Answer::Result { ref rows, .. } if rows.len() == 1)
    );
    gw.query_drop("DROP TABLE tdesc").await.unwrap();
}

/// MariaDB's `SET STATEMENT var = literal FOR <statement>` (mysql-test `bigint`, `type_enum`,
/// ...: `SET STATEMENT sql_mode = 'NO_ENGINE_SUBSTITUTION' FOR CREATE TABLE ..`): the statement
/// runs with the variables, and the session's own stay as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_statement_for_runs_one_statement_with_the_variables() {
    same_answers(
        "mtasetst",
        &[
            "SET sql_mode = 'STRICT_ALL_TABLES'",
            "CREATE TABLE tss (a INT, b VARCHAR(3))",
            "INSERT INTO tss VALUES (1, 'abcdef')",
            "SET STATEMENT sql_mode = 'NO_ENGINE_SUBSTITUTION' FOR INSERT INTO tss VALUES (2, 'abcdef')",
            "set statement max_statement_time = 100, sql_mode = '' for\nSELECT a, b FROM tss ORDER BY a",
            "INSERT INTO tss VALUES (3, 'abcdef')",
            "SELECT @@sql_mode",
            "SELECT a, b FROM tss ORDER BY a",
        ],
    )
    .await;
}

/// `DATABASE()`, `VERSION()`, `@@version` and `@@version_comment` answer the gateway's values
/// (written into the statement as literals) under the labels MariaDB gives them: the text as
/// written, also beside other select items (`SELECT database(), 1` was labelled by its value).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inlined_session_functions_keep_their_labels() {
    let f = Fixture::start("mtalabel", schema()).await;
    let plain_db = "t_mtalabel_plain";
    common::sample_database(plain_db).await;
    let mut plain = primary(Some(plain_db)).await;
    let mut gw = mysql_async::Conn::new(common::opts(f.port, "mta", "mta", Some("MTA")))
        .await
        .unwrap();
    for c in [&mut gw, &mut plain] {
        c.query_drop("CREATE TABLE lt (id INT)").await.unwrap();
    }
    async fn labels(c: &mut mysql_async::Conn, sql: &str) -> Vec<String> {
        let r = c.query_iter(sql).await.unwrap();
        let labels = r
            .columns_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect();
        r.drop_result().await.unwrap();
        labels
    }
    for sql in [
        "SELECT database(), 1",
        "SELECT 1, DataBase ( ), version() FROM dual",
        "SELECT schema(), @@version, @@version_comment, 2",
        "SELECT database() AS d, version() v, 3",
        "SELECT concat(database(), 'x'), 4",
        "SELECT DISTINCT database(), 5",
        "SELECT 1 + length(database()), length(version()) + 1",
        "SELECT concat(database(), version()), database() = 'x' AS eq, @@version_comment",
        "SELECT (SELECT database()), (SELECT version() FROM dual) AS v",
        "SELECT CAST(database() AS CHAR(10)), 8 FROM (SELECT database()) AS d",
        "SELECT id, concat(database(), '-', id) FROM lt ORDER BY id LIMIT 2",
        "SELECT id, length(version()) + id, version() = 'x' FROM lt",
        "SELECT version() is null, database() like 'M%', @@version_comment IS NOT NULL",
        "SELECT @@vErsion_comment",
        "select @@VERSION_COMMENT limit 1",
        "SELECT CASE WHEN database() = 'x' THEN 1 ELSE 2 END, 3",
    ] {
        assert_eq!(
            labels(&mut gw, sql).await,
            labels(&mut plain, sql).await,
            "{sql}"
        );
    }
    let v: (String, u8) = gw
        .query_first("SELECT database(), 1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(v, ("MTA".to_string(), 1));
    // An alias after a space is still an alias, not a string the literal would join (the
    // breaker got `MTAx`).
    for sql in ["SELECT database() 'x'", "SELECT database()  \"x\", 1"] {
        assert_eq!(
            labels(&mut gw, sql).await,
            labels(&mut plain, sql).await,
            "{sql}"
        );
    }
    let v: Option<String> = gw.query_first("SELECT database() 'x'").await.unwrap();
    assert_eq!(v.as_deref(), Some("MTA"));
    // Past the bound on calls, the values are still the gateway's (the labels are not
    // worked out: a cost bound).
    let many = vec!["database()"; 100].join(", ");
    let row: mysql_async::Row = gw
        .query_first(format!("SELECT {many}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.len(), 100);
    assert_eq!(row.get::<String, _>(99).as_deref(), Some("MTA"));
}

/// server.xml `explainMode=backend`: a plain `EXPLAIN` / `DESCRIBE` of a query or row write
/// that runs on one dataNode as written answers MariaDB's plan (mysql-test's `EXPLAIN SELECT`
/// lines), including MariaDB's errors for a statement it would refuse; a statement over several
/// dataNodes still gets Mycat's route rows, and without the property every plain EXPLAIN does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_explain_is_the_backend_plan_under_explain_mode_backend() {
    let backend = || {
        let mut extra = schema();
        extra.users_xml += &common::system_xml(&[("explainMode", "backend")]);
        extra
    };
    same_answers_in(
        "mtaxplain",
        backend(),
        &[
            "CREATE TABLE tx (a INT PRIMARY KEY, b INT, KEY (b))",
            "INSERT INTO tx VALUES (1, 1), (2, 2), (3, 3)",
            "EXPLAIN SELECT * FROM tx WHERE a = 2",
            "explain select b, count(*) from tx where b > 1 group by b",
            "DESCRIBE SELECT * FROM tx t1 JOIN tx t2 ON t2.a = 1 WHERE t1.b < 3",
            "EXPLAIN UPDATE tx SET b = 5 WHERE a = 1",
            "EXPLAIN DELETE FROM tx WHERE b = 2",
            "EXPLAIN INSERT INTO tx VALUES (4, 4)",
            "EXPLAIN SELECT 1",
            "EXPLAIN (SELECT a FROM tx) UNION (SELECT b FROM tx)",
            // MariaDB refuses these: so must the EXPLAIN.
            "EXPLAIN SELECT nosuch FROM tx",
            "EXPLAIN SELECT * FROM tx GROUP BY a WITH ROLLUP ORDER BY a",
            // Nothing ran.
            "SELECT * FROM tx ORDER BY a",
        ],
    )
    .await;

    // Over several dataNodes (the fixture's sharded `travelrecord`): the route, as Mycat's.
    let f = Fixture::start("mtaxplain2", backend()).await;
    let mut c = f.client().await;
    let route: Vec<(String, String)> = c
        .query("EXPLAIN SELECT * FROM travelrecord WHERE id IN (1, 10000001)")
        .await
        .unwrap();
    assert_eq!(route.len(), 2, "{route:?}");
    let one: Vec<mysql_async::Row> = c
        .query("EXPLAIN SELECT * FROM travelrecord WHERE id = 1")
        .await
        .unwrap();
    let labels: Vec<String> = one[0]
        .columns_ref()
        .iter()
        .map(|c| c.name_str().into_owned())
        .collect();
    assert_eq!(labels[..3], ["id", "select_type", "table"], "{one:?}");

    // The default, Mycat's EXPLAIN: the route of the same single-node statement.
    let f = Fixture::start("mtaxplain3", schema()).await;
    let mut c = f.client().await;
    let route: Vec<(String, String)> = c
        .query("EXPLAIN SELECT * FROM travelrecord WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(route.len(), 1, "{route:?}");
    assert_eq!(route[0].0, "dn1", "{route:?}");
}

/// Table maintenance (`CHECK`, `CHECKSUM`, `ANALYZE`, `OPTIMIZE`, `REPAIR TABLE`, mysql-test
/// `check`, `analyze`, `repair`, ...) answers as MariaDB answers, each table named by the
/// schema the client uses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_maintenance_is_answered_as_mariadb_answers_it() {
    same_answers(
        "mtamaint",
        &[
            "CREATE TABLE tm (a INT PRIMARY KEY, b VARCHAR(10)) ENGINE = MyISAM",
            "CREATE TABLE tm2 (a INT, KEY (a)) ENGINE = InnoDB",
            "INSERT INTO tm VALUES (1, 'x'), (2, 'y'), (3, 'z')",
            "INSERT INTO tm2 VALUES (1), (2)",
            "DELETE FROM tm WHERE a = 2",
            "named: CHECK TABLE tm",
            "named: check tables tm, `tm2` extended",
            "named: CHECK TABLE tm FOR UPGRADE QUICK",
            "named: CHECK TABLE TM CHANGED",
            "named: CHECK TABLE tm, nosuch MEDIUM",
            "named: CHECKSUM TABLE tm, tm2",
            "named: CHECKSUM TABLE tm QUICK",
            "named: CHECKSUM TABLE tm2 EXTENDED",
            "named: ANALYZE TABLE tm",
            "named: ANALYZE NO_WRITE_TO_BINLOG TABLE tm2 PERSISTENT FOR ALL",
            "named: ANALYZE TABLE tm PERSISTENT FOR COLUMNS (a, b) INDEXES (`PRIMARY`)",
            "named: ANALYZE LOCAL TABLE tm PERSISTENT FOR COLUMNS () INDEXES ()",
            "named: OPTIMIZE TABLE tm",
            "named: OPTIMIZE LOCAL TABLE tm2",
            "named: REPAIR TABLE tm QUICK",
            "named: REPAIR NO_WRITE_TO_BINLOG TABLE tm EXTENDED USE_FRM",
            "named: REPAIR TABLE tm2",
            "SELECT * FROM tm",
            // Under LOCK TABLES, and inside a transaction (which CHECK commits first).
            "LOCK TABLES tm WRITE, tm2 READ",
            "named: CHECK TABLE tm, tm2",
            "named: REPAIR TABLE tm",
            "INSERT INTO tm VALUES (4, 'w')",
            "INSERT INTO tm2 VALUES (9)",
            "UNLOCK TABLES",
            "BEGIN",
            "INSERT INTO tm2 VALUES (3)",
            "named: CHECK TABLE tm2",
            "named: CHECKSUM TABLE tm2",
            "ROLLBACK",
            "SELECT * FROM tm2",
            "SELECT * FROM tm",
            "DROP TABLE tm, tm2",
        ],
    )
    .await;
}

/// SQL prepared statements of a string literal (mysql-test `ps`, `ps_1general`, ...):
/// PREPARE / EXECUTE [USING] / DEALLOCATE, re-PREPARE of a name, and the errors MariaDB gives
/// for an unknown name (1243) and a wrong argument count (1210); `EXECUTE IMMEDIATE '...'`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_prepared_statements_answer_as_mariadb() {
    same_answers(
        "mtaprep",
        &[
            "CREATE TABLE t_ps (a INT PRIMARY KEY, b VARCHAR(20))",
            "INSERT INTO t_ps VALUES (1, 'one'), (2, 'two'), (3, 'three')",
            "PREPARE s FROM 'SELECT b FROM t_ps WHERE a = ?'",
            "SET @a = 2",
            "EXECUTE s USING @a",
            "EXECUTE s",
            "EXECUTE s USING @a, @a",
            "PREPARE s FROM \"SELECT a, b FROM t_ps ORDER BY a\"",
            "EXECUTE s",
            "PREPARE w FROM 'UPDATE t_ps SET b = ? WHERE a = ?'",
            "SET @b = 'deux'",
            "EXECUTE w USING @b, @a",
            "EXECUTE s",
            "DEALLOCATE PREPARE w",
            "EXECUTE w USING @b, @a",
            "DROP PREPARE s",
            "EXECUTE s",
            "DEALLOCATE PREPARE s",
            "EXECUTE nope",
            "PREPARE q FROM 'SELECT ''a'' AS x, ''b\\\\c'' AS y, \\'d\\' AS z'",
            "EXECUTE q",
            "PREPARE bad FROM 'SELECT * FROM no_such_table'",
            "EXECUTE bad",
            "PREPARE q FROM 'SELEKT 1'",
            "EXECUTE q",
            "EXECUTE IMMEDIATE 'SELECT b FROM t_ps WHERE a = 3'",
            "EXECUTE IMMEDIATE 'SELECT ?'",
            "DROP TABLE t_ps",
        ],
    )
    .await;
}

/// `OPTIMIZE TABLE t WAIT n` / `NOWAIT` (mysql-test `timeout`): the lock wait clause after
/// OPTIMIZE's table list reaches the node; the other maintenance verbs take none (1064).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimize_table_takes_a_lock_wait_clause() {
    same_answers(
        "mtaoptwait",
        &[
            "CREATE TABLE t_ow (a INT)",
            "named: OPTIMIZE TABLE t_ow WAIT 1",
            "named: OPTIMIZE TABLE t_ow NOWAIT",
            "named: OPTIMIZE NO_WRITE_TO_BINLOG TABLE t_ow WAIT 0",
            "ANALYZE TABLE t_ow WAIT 1",
            "CHECK TABLE t_ow NOWAIT",
            "DROP TABLE t_ow",
        ],
    )
    .await;
}

/// ALTER TABLE's `RENAME INDEX | KEY i TO j` (mysql-test `ignored_index`) reaches the node as
/// MariaDB takes it, alone or among other items.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_table_renames_an_index() {
    same_answers(
        "mtarenidx",
        &[
            "CREATE TABLE t_ri (a INT, INDEX (a), b INT, INDEX (b) IGNORED)",
            "ALTER TABLE t_ri RENAME INDEX a TO a1",
            "ALTER TABLE t_ri RENAME KEY b TO b1, ADD COLUMN c INT",
            "ALTER TABLE t_ri RENAME INDEX nosuch TO x",
            "ALTER TABLE t_ri ALTER INDEX a1 IGNORED",
            "rows: SHOW INDEXES FROM t_ri",
            "DROP TABLE t_ri",
        ],
    )
    .await;
}

/// `x REGEXP NULL` / `x NOT RLIKE NULL` (mysql-test `func_regexp`): NULL, as MariaDB answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_null_pattern_of_regexp_is_null() {
    same_answers(
        "mtaregexpnull",
        &[
            "SELECT 1 REGEXP NULL",
            "SELECT 'a' NOT RLIKE NULL, NULL REGEXP 'a'",
            "SELECT '' REGEXP BINARY NULL",
            "SELECT 'A' REGEXP BINARY NULL",
        ],
    )
    .await;
}

/// A DROP TABLE of every locked table ends LOCK TABLES mode, as on MariaDB (mysql-test
/// `tablelock`): the next LOCK TABLES is taken, not refused as a second one; a DROP that leaves
/// a locked table keeps the mode (1100 for a table outside it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_locked_table_ends_lock_tables() {
    same_answers(
        "mtadroplocked",
        &[
            "CREATE TABLE t_tl1 (a INT)",
            "CREATE TABLE t_tl2 (a INT)",
            "CREATE TABLE t_tl3 (a INT)",
            "LOCK TABLES t_tl1 WRITE, t_tl1 AS b WRITE, t_tl2 WRITE, t_tl2 AS c READ",
            "DROP TABLE t_tl1, t_tl2",
            "SELECT a FROM t_tl3",
            "CREATE TABLE t_tl1 (a INT)",
            "CREATE TABLE t_tl2 (a INT)",
            "LOCK TABLES t_tl1 WRITE, t_tl1 AS b WRITE, t_tl2 WRITE, t_tl2 AS c READ",
            "DROP TABLE t_tl2",
            "SELECT a FROM t_tl3",
            "INSERT INTO t_tl1 VALUES (1)",
            "DROP TABLE t_tl1",
            "UNLOCK TABLES",
            "DROP TABLE t_tl3",
            // A temporary table's: the locks go with UNLOCK TABLES after it.
            "CREATE TEMPORARY TABLE t_tl1 (f1 INT)",
            "LOCK TABLES t_tl1 WRITE",
            "INSERT INTO t_tl1 VALUES (1)",
            "DROP TABLE t_tl1",
            "UNLOCK TABLES",
            "CREATE TABLE t_tl1 (a INT)",
            "DROP TABLE t_tl1",
        ],
    )
    .await;
}

/// A literal of another character set whose body is plain ASCII (`_cp866''`, mysql-test
/// `ctype_cp866`) keeps its column label: the statement reaches the backend as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ascii_introduced_literal_keeps_its_label() {
    same_answers(
        "mtaasciilit",
        &[
            "SET NAMES latin1",
            "SELECT _cp866'' LIKE _cp866'' ESCAPE _cp866 0xFF",
            "SELECT _koi8r'abc', _latin2 'a b' = 'a b', HEX(_ucs2'ab')",
        ],
    )
    .await;
}

/// `CREATE TABLE t (SELECT ..) EXCEPT ALL (SELECT ..)` (mysql-test `except_all`): the
/// parenthesized query after the table's name is the table's, as MariaDB reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_table_of_a_parenthesized_query() {
    same_answers(
        "mtacreateparen",
        &[
            "CREATE TABLE t_cp1 (a INT, b INT)",
            "INSERT INTO t_cp1 VALUES (1, 1), (1, 1), (2, 2)",
            "CREATE TABLE t_cp2 (SELECT a, b FROM t_cp1) EXCEPT ALL (SELECT 1, 1)",
            "SELECT a, b FROM t_cp2 ORDER BY a",
            "CREATE TABLE t_cp3 (SELECT a FROM t_cp1 WHERE a = 2)",
            "SELECT a FROM t_cp3",
            "DROP TABLE t_cp1, t_cp2, t_cp3",
        ],
    )
    .await;
}

/// LOCK TABLES with a `WAIT n` beyond the maximum (mysql-test `timeout`): MariaDB's warning
/// 1292 reaches the client, in the OK and in SHOW WARNINGS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_tables_passes_on_its_warnings() {
    same_answers(
        "mtalockwarn",
        &[
            "CREATE TABLE t_lkw (a INT)",
            "LOCK TABLE t_lkw WRITE WAIT 31536001",
            "rows: SHOW WARNINGS",
            "UNLOCK TABLES",
            "LOCK TABLE t_lkw WRITE WAIT 1",
            "UNLOCK TABLES",
            "DROP TABLE t_lkw",
        ],
    )
    .await;
}

/// An application-time period and a key `WITHOUT OVERLAPS` (mysql-test `delete_innodb`):
/// the table MariaDB makes of them, its errors included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_time_periods_are_read() {
    same_answers(
        "mtaperiod",
        &[
            "CREATE TABLE t_ap (id INT, s DATE, e DATE, PERIOD FOR p(s, e), PRIMARY KEY (id, p WITHOUT OVERLAPS)) ENGINE = InnoDB",
            "INSERT INTO t_ap VALUES (1, '2000-01-01', '2000-02-01')",
            "INSERT INTO t_ap VALUES (1, '2000-01-15', '2000-03-01')",
            "DELETE FROM t_ap FOR PORTION OF p FROM '2000-01-10' TO '2000-01-20'",
            "SELECT id, s, e FROM t_ap ORDER BY s",
            "DROP TABLE t_ap",
        ],
    )
    .await;
}
