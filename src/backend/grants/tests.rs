//! Unit tests of the grants readers: which privileges of an account they name as more than manx
//! needs, with the reason.

use super::*;

fn names(lines: &[&str]) -> Vec<(String, String)> {
    mysql_excess(lines)
        .into_iter()
        .map(|e| (e.privilege, e.on))
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn all_privileges_with_grant_option_is_two_findings() {
    // MariaDB 10.11, the sandbox's all-privileged account.
    let lines = [
        "GRANT ALL PRIVILEGES ON *.* TO `manx`@`%` IDENTIFIED BY PASSWORD '*8474FE2D17743D94BC4F02A338ECC88D2CABB31E' WITH GRANT OPTION",
    ];
    assert_eq!(
        names(&lines),
        pairs(&[("ALL PRIVILEGES", "*.*"), ("GRANT OPTION", "*.*")])
    );
    // MySQL 5.x quoting, and ALL without PRIVILEGES.
    assert_eq!(
        names(&["GRANT ALL ON *.* TO 'root'@'localhost'"]),
        pairs(&[("ALL PRIVILEGES", "*.*")])
    );
}

#[test]
fn the_least_privileged_account_has_no_findings() {
    // MariaDB 10.11/11.x, the sandbox's gateway account.
    let lines = [
        "GRANT SLAVE MONITOR ON *.* TO `manx_gw`@`%` IDENTIFIED BY PASSWORD '*0C4F1B5E9B9D2E0E58C5C1A6F7B0F2C1A8C9C4B3'",
        "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, CREATE VIEW, SHOW VIEW ON `db1`.* TO `manx_gw`@`%`",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON `t\\_%`.* TO `manx_gw`@`%`",
        "GRANT USAGE ON *.* TO `plain`@`%`",
        "GRANT BINLOG MONITOR, SLAVE MONITOR ON *.* TO `exp2`@`%` IDENTIFIED BY PASSWORD '*1C7A12E31A517F8FBE6E0BF9D6AE78A0ACBF978F' WITH MAX_USER_CONNECTIONS 10",
        // MySQL 8 and older MariaDB: REPLICATION CLIENT for SHOW SLAVE STATUS.
        "GRANT REPLICATION CLIENT ON *.* TO `gw`@`%`",
        "SET DEFAULT ROLE `r_plain` FOR `exp`@`%`",
    ];
    assert_eq!(names(&lines), pairs(&[]));
}

#[test]
fn the_named_global_privileges_are_found_with_their_reasons() {
    let found = mysql_excess(&[
        "GRANT RELOAD, SHUTDOWN, PROCESS, FILE, SUPER, CREATE USER ON *.* TO `ops`@`10.0.0.%`",
    ]);
    let got: Vec<&str> = found.iter().map(|e| e.privilege.as_str()).collect();
    assert_eq!(got, ["RELOAD", "SHUTDOWN", "FILE", "SUPER", "CREATE USER"]);
    assert!(found[1].why.contains("stops"), "{}", found[1]);
    assert!(found[2].why.contains("files"), "{}", found[2]);
    assert_eq!(
        found[3].to_string(),
        "SUPER on *.*: SET GLOBAL, KILL of any connection, writes despite read_only, replication control"
    );
}

#[test]
fn global_data_privileges_reach_every_database() {
    let found = mysql_excess(&["GRANT SELECT, INSERT ON *.* TO `app`@`%`"]);
    assert_eq!(found.len(), 2);
    assert!(found[0].why.contains("mysql system schema"), "{}", found[0]);
}

#[test]
fn admin_privileges_split_out_of_super_are_found() {
    // MariaDB 10.5+ and MySQL 8 dynamic privileges (no space after MySQL's commas).
    let found = names(&[
        "GRANT READ_ONLY ADMIN, CONNECTION ADMIN, SET USER ON *.* TO `a`@`%`",
        "GRANT BACKUP_ADMIN,SYSTEM_VARIABLES_ADMIN,XA_RECOVER_ADMIN ON *.* TO `root`@`localhost` WITH GRANT OPTION",
    ]);
    assert_eq!(
        found,
        pairs(&[
            ("READ_ONLY ADMIN", "*.*"),
            ("CONNECTION ADMIN", "*.*"),
            ("SET USER", "*.*"),
            ("BACKUP_ADMIN", "*.*"),
            ("SYSTEM_VARIABLES_ADMIN", "*.*"),
            ("XA_RECOVER_ADMIN", "*.*"),
            ("GRANT OPTION", "*.*"),
        ])
    );
    assert_eq!(
        mysql_excess(&["GRANT CONNECTION ADMIN ON *.* TO a"])[0].why,
        ADMIN_WHY
    );
}

#[test]
fn grant_option_is_found_on_any_object() {
    assert_eq!(
        names(&["GRANT SELECT, INSERT, UPDATE ON `db1`.* TO `exp`@`%` WITH GRANT OPTION"]),
        pairs(&[("GRANT OPTION", "`db1`.*")])
    );
    // Among resource limits, and as a listed privilege on a table.
    assert_eq!(
        names(&[
            "GRANT USAGE ON *.* TO `u`@`%` WITH GRANT OPTION MAX_QUERIES_PER_HOUR 10",
            "GRANT SELECT, GRANT OPTION ON `db1`.`t` TO `u`@`%`",
        ]),
        pairs(&[("GRANT OPTION", "*.*"), ("GRANT OPTION", "`db1`.`t`")])
    );
}

#[test]
fn text_inside_strings_and_names_is_not_read_as_keywords() {
    // A password hash or host that spells WITH GRANT OPTION; a database named `with`.
    let lines = [
        "GRANT USAGE ON *.* TO `u`@`WITH GRANT OPTION` IDENTIFIED VIA ed25519 USING 'WITH GRANT OPTION'",
        "GRANT SELECT ON `with`.* TO 'u'@'%'",
        "GRANT SELECT ON `a``b`.`on` TO `u`@`%`",
    ];
    assert_eq!(names(&lines), pairs(&[]));
}

#[test]
fn column_and_routine_grants_are_read() {
    let lines = [
        "GRANT SELECT (`id`, `name`), INSERT (`name`) ON `db2`.`customer` TO `exp`@`%`",
        "GRANT EXECUTE ON FUNCTION `db1`.`mycat_seq_nextval` TO `manx_gw`@`%`",
        "GRANT EXECUTE, ALTER ROUTINE ON PROCEDURE `db1`.`p` TO `manx_gw`@`%`",
    ];
    assert_eq!(names(&lines), pairs(&[]));
    assert_eq!(
        names(&["GRANT EXECUTE ON PROCEDURE `mysql`.`nope` TO `u`@`%`"]),
        pairs(&[("EXECUTE", "`mysql`.`nope`")])
    );
}

#[test]
fn database_patterns_that_match_the_mysql_schema_are_found() {
    let found = names(&[
        "GRANT SELECT ON `%`.* TO `u`@`%`",
        "GRANT SELECT ON `my%`.* TO `u`@`%`",
        "GRANT SELECT ON `MySQL`.* TO `u`@`%`",
        "GRANT SELECT ON `mysq_`.* TO `u`@`%`",
        "GRANT SELECT ON `mysq\\_`.* TO `u`@`%`",
        "GRANT SELECT ON `t\\_%`.* TO `u`@`%`",
    ]);
    assert_eq!(
        found,
        pairs(&[
            ("SELECT", "`%`.*"),
            ("SELECT", "`my%`.*"),
            ("SELECT", "`MySQL`.*"),
            ("SELECT", "`mysq_`.*"),
        ])
    );
}

#[test]
fn role_grants_and_the_default_role_lines() {
    // MariaDB's plain SHOW GRANTS with default role r_super enabled at login: the role's
    // own line counts, the role grant line does not.
    let lines = [
        "GRANT `r_super` TO `exp2`@`%`",
        "GRANT `r_plain` TO `exp`@`%` WITH ADMIN OPTION",
        "GRANT BINLOG MONITOR, SLAVE MONITOR ON *.* TO `exp2`@`%` IDENTIFIED BY PASSWORD '*1C7A12E31A517F8FBE6E0BF9D6AE78A0ACBF978F' WITH MAX_USER_CONNECTIONS 10",
        "GRANT FILE, SUPER ON *.* TO `r_super`",
        "SET DEFAULT ROLE `r_super` FOR `exp2`@`%`",
        // MySQL 8 role grant.
        "GRANT `app_role`@`%` TO `u`@`%`",
    ];
    assert_eq!(names(&lines), pairs(&[("FILE", "*.*"), ("SUPER", "*.*")]));
}

#[test]
fn proxy_counts_only_its_grant_option() {
    // MariaDB's root@localhost.
    let lines = [
        "GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` IDENTIFIED VIA mysql_native_password USING 'invalid' OR unix_socket WITH GRANT OPTION",
        "GRANT PROXY ON ``@`%` TO `root`@`localhost` WITH GRANT OPTION",
        "GRANT PROXY ON 'a'@'%' TO 'b'@'%'",
    ];
    assert_eq!(
        names(&lines),
        pairs(&[
            ("ALL PRIVILEGES", "*.*"),
            ("GRANT OPTION", "*.*"),
            ("GRANT OPTION", "``@`%`"),
        ])
    );
}

#[test]
fn unreadable_grant_lines_are_reported_without_their_password() {
    let found = mysql_excess(&[
        "GRANT SELECT ON `db1`.`t`.`x` TO `u`@`%` IDENTIFIED BY PASSWORD '*SECRET'",
    ]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].privilege, "(unreadable)");
    assert_eq!(found[0].on, "GRANT SELECT ON `db1`.`t`.`x`");
    assert!(!found[0].to_string().contains("SECRET"));
    assert_eq!(names(&["GRANT SELECT ON"]).len(), 1);
    // REVOKE lines (MySQL partial revokes) only take privileges away.
    assert_eq!(
        names(&["REVOKE INSERT ON `mysql`.* FROM `u`@`%`"]),
        pairs(&[])
    );
}

#[test]
fn like_patterns() {
    assert!(like_matches("%", "mysql"));
    assert!(like_matches("m_sql", "mysql"));
    assert!(!like_matches("m\\_sql", "mysql"));
    assert!(like_matches("t\\_%", "t_x_db1"));
    assert!(!like_matches("t\\_%", "tx"));
    assert!(!like_matches("db1", "mysql"));
}

#[test]
fn postgres_roles() {
    let superuser = PgRole {
        superuser: true,
        create_role: true,
        create_db: true,
        replication: true,
        bypass_rls: true,
        member_of: vec!["pg_read_server_files".into()],
    };
    let got: Vec<String> = postgres_excess(&superuser)
        .into_iter()
        .map(|e| e.privilege)
        .collect();
    assert_eq!(
        got,
        [
            "SUPERUSER",
            "CREATEROLE",
            "CREATEDB",
            "REPLICATION",
            "BYPASSRLS"
        ]
    );
    let member = PgRole {
        member_of: vec!["pg_execute_server_program".into(), "pg_monitor".into()],
        ..PgRole::default()
    };
    let found = postgres_excess(&member);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].to_string(),
        "pg_execute_server_program on role membership: runs programs on the database host as the server's OS user (COPY ... PROGRAM)"
    );
    assert_eq!(postgres_excess(&PgRole::default()), []);
}
