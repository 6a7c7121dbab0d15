//! Unit tests of the SET allow-list: scopes, variables, values, names and transactions.

use super::*;
use crate::route::Refusal;

/// [`set`] for a configuration of MariaDB dataHosts.
fn set_(sql: &str) -> Result<Local, RouteError> {
    set(sql, &|n| crate::route::builtins::is_builtin(n, false))
}

fn items(sql: &str) -> Vec<(String, String, bool)> {
    match set_(sql).unwrap() {
        Local::Set { items, .. } => items
            .into_iter()
            .map(|i| (i.key, i.assignment, i.evaluate))
            .collect(),
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn global_scope_is_refused_in_every_spelling_and_position() {
    for sql in [
        "SET GLOBAL max_connections = 1",
        "SET @@global.max_connections = 1",
        "SET @@Global . max_connections = 1",
        "SET @@GLOBAL.sql_mode = ''",
        "SET @a = 1, GLOBAL max_connections = 1",
        "SET @a = 1,GLOBAL max_connections = 1",
        "SET PERSIST max_connections = 1",
        "SET  GLOBAL  x = 1",
        "SET sql_log_bin = 0",
        "SET SESSION sql_log_bin = 0",
        "SET @@session.gtid_seq_no = 5",
        "SET PASSWORD FOR 'manx'@'127.0.0.1' = PASSWORD('x')",
        "SET PASSWORD = 'x'",
        "SET ROLE admin",
        "SET DEFAULT ROLE admin FOR u",
        "SET default_storage_engine = MRG_MyISAM",
        "SET SESSION storage_engine = 'CONNECT'",
        "SET default_tmp_storage_engine = FEDERATED",
    ] {
        assert_eq!(
            set_(sql).unwrap_err().refusal,
            Refusal::PrivilegeRequired,
            "{sql}"
        );
    }
    assert!(set_("SET default_storage_engine = InnoDB").is_ok());
    assert!(set_("SET default_storage_engine = 'Aria'").is_ok());
}

#[test]
fn unknown_variables_and_set_statement_are_refused() {
    for sql in [
        "SET STATEMENT max_statement_time=10 FOR DELETE FROM pub",
        "SET init_connect = 'x'",
        "SET default.key_buffer_size = 1",
        "SET sql_mode = (SELECT 'x' FROM t)",
        "SET @x = (SELECT user FROM mysql.user LIMIT 1)",
        "SET @x = LOAD_FILE('/etc/passwd')",
        "SET @x = 1 FOR DELETE FROM t",
    ] {
        let e = set_(sql).unwrap_err();
        assert!(
            matches!(
                e.refusal,
                Refusal::NotSupported | Refusal::PrivilegeRequired | Refusal::Routing
            ),
            "{sql}: {e:?}"
        );
    }
}

#[test]
fn known_state_is_rebuilt_from_its_parts() {
    assert_eq!(
        items("SET @@session.sql_mode = 'ANSI', @x = 5, SESSION time_zone = '+00:00'"),
        [
            ("sql_mode".into(), "sql_mode = 'ANSI'".into(), true),
            ("@x".into(), "@x = 5".into(), false),
            ("time_zone".into(), "time_zone = '+00:00'".into(), false),
        ]
    );
    assert_eq!(
        items("SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')"),
        [(
            "sql_mode".into(),
            "sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')".into(),
            true
        )]
    );
    assert_eq!(
        set_("SET @`a b` = 1").unwrap_err().refusal,
        Refusal::NotSupported
    );
}

#[test]
fn a_client_charset_is_judged_only_by_its_name() {
    // The bytes of `gbk`, `big5` and `sjis` as hex and bit values, and charset ids: not
    // names this check can judge (a hex value passed for a name before).
    for sql in [
        "SET character_set_client = 0x67626b",
        "SET character_set_client = 0X62696735",
        "SET character_set_client = 0b011001110110001001101011",
        "SET character_set_client = '0x736a6973'",
        "SET character_set_client = 28",
        "SET NAMES 0x67626b",
        "SET CHARACTER SET 0x67626b",
    ] {
        assert_eq!(
            set_(sql).unwrap_err().refusal,
            Refusal::NotSupported,
            "{sql}"
        );
    }
    // The session converts these itself (module `crate::charset`).
    assert!(set_("SET character_set_client = latin1").is_ok());
    assert!(set_("SET NAMES gbk").is_ok());
    assert!(set_("SET character_set_client = big5").is_ok());
    // Always read back: the session checks the value the server settled on too.
    let Ok(Local::Set { items, .. }) = set_("SET character_set_client = utf8mb4") else {
        panic!("a SET of state")
    };
    assert!(items[0].evaluate);
}

#[test]
fn names_and_transactions() {
    assert!(set_("SET NAMES utf8mb4 COLLATE utf8mb4_bin").is_ok());
    assert!(set_("SET CHARACTER SET 'latin1'").is_ok());
    // Plain comments read as white space (mysql-test's ctype_utf8_uca).
    assert!(set_("SET NAMES utf8mb3 COLLATE utf8mb3_unicode_ci /*Unicode-4.0 folding*/").is_ok());
    assert!(set_("SET /* c */ NAMES /* c */ latin1").is_ok());
    assert!(set_("SET /* c */ GLOBAL x = 1").is_err());
    assert!(set_("SET NAMES latin1 /* unterminated").is_err());
    assert!(set_("SET NAMES utf8, GLOBAL x = 1").is_err());
    // More assignments after NAMES, in the order written.
    let Ok(Local::Set { autocommit, items }) =
        set_("SET NAMES utf8, character_set_connection=ucs2, autocommit = 0")
    else {
        panic!("SET NAMES with more assignments");
    };
    assert_eq!(autocommit, Some(false));
    let keys: Vec<&str> = items.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys, ["names", "character_set_connection"]);
    assert!(set_("SET NAMES utf8, sql_log_bin = 0").is_err());
    assert!(set_("SET NAMES utf8, xa = 1").is_err());
    assert!(set_("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED").is_ok());
    assert!(set_("SET TRANSACTION READ ONLY").is_ok());
    assert!(set_("SET TRANSACTION ISOLATION LEVEL READ COMMITTED; DROP TABLE t").is_err());
    assert_eq!(
        set_("SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            .unwrap_err()
            .refusal,
        Refusal::PrivilegeRequired
    );
    assert_eq!(
        set_("SET autocommit = 0").unwrap(),
        Local::SetAutocommit(false)
    );
    // Mycat's XA switch (SPEC §7.4), on its own only.
    assert_eq!(set_("set xa=on").unwrap(), Local::SetXa(true));
    assert_eq!(set_("SET XA = OFF").unwrap(), Local::SetXa(false));
    assert_eq!(set_("SET @@session.xa = 1").unwrap(), Local::SetXa(true));
    assert_eq!(
        set_("SET xa = maybe").unwrap_err().refusal,
        Refusal::WrongValue
    );
    assert!(set_("SET xa = on, autocommit = 0").is_err());
}
