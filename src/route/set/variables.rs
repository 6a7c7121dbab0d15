//! The variables and values of `SET`: the session variables a client may set, the privileged
//! ones it never may, user variables, and the checks on the values the server settled on
//! (client character set, storage engine, on/off switches).

use crate::route::Refusal;
use crate::route::RouteError;

/// Session variables a client may set through the gateway (lower case, MariaDB's names and the
/// MySQL names drivers send). Each only changes how this session's statements behave.
pub const SESSION_VARIABLES: &[&str] = &[
    "sql_mode",
    "time_zone",
    "character_set_client",
    "character_set_connection",
    "character_set_results",
    "collation_connection",
    "sql_select_limit",
    "max_execution_time",
    "max_statement_time",
    "net_read_timeout",
    "net_write_timeout",
    "wait_timeout",
    "interactive_timeout",
    "group_concat_max_len",
    "foreign_key_checks",
    "unique_checks",
    "sql_safe_updates",
    "sql_auto_is_null",
    "sql_notes",
    "sql_warnings",
    "sql_big_selects",
    "max_join_size",
    "sql_quote_show_create",
    "lc_time_names",
    "lc_messages",
    "div_precision_increment",
    "transaction_isolation",
    "tx_isolation",
    "transaction_read_only",
    "tx_read_only",
    "innodb_lock_wait_timeout",
    "lock_wait_timeout",
    "innodb_strict_mode",
    "optimizer_switch",
    "long_query_time",
    "big_tables",
    "max_sort_length",
    "sort_buffer_size",
    "join_buffer_size",
    "tmp_table_size",
    "max_heap_table_size",
    "default_storage_engine",
    "storage_engine",
    "default_tmp_storage_engine",
    "explicit_defaults_for_timestamp",
    "auto_increment_increment",
    "auto_increment_offset",
    "profiling",
    "sql_buffer_result",
    "default_week_format",
    "max_error_count",
    "check_constraint_checks",
    "sql_if_exists",
    "character_set_server",
    "collation_server",
];

/// Variables that control replication, logging or other sessions: never through the gateway.
pub(super) const PRIVILEGED_VARIABLES: &[&str] = &[
    "sql_log_bin",
    "sql_log_off",
    "pseudo_thread_id",
    "pseudo_slave_mode",
    "skip_replication",
    "server_id",
    "gtid_domain_id",
    "gtid_seq_no",
    "gtid_next",
    "gtid_strict_mode",
    "binlog_format",
    "timestamp",
    "insert_id",
    "last_insert_id",
    "identity",
    "rand_seed1",
    "rand_seed2",
    "debug",
    "debug_sync",
    "wsrep_on",
    "character_set_filesystem",
    "completion_type",
];

/// The name of the user variable `value` is (`@name` → `name`), `None` for anything else.
pub(super) fn user_variable(value: &str) -> Option<&str> {
    value.strip_prefix('@').filter(|name| {
        !name.is_empty()
            && name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.'))
    })
}

/// Checks a client character set a session asks for: `value` is its name, quoted or not. The
/// session looks the name up in its fixed table (`crate::charset`) and converts the client's
/// statements and results itself, so any character set it knows is safe, including those in
/// which a backslash byte can end a character (big5, cp932, gbk, sjis): the parser and the
/// backends only ever see UTF-8.
///
/// Errors: 1235 for a value that is not a charset name (an expression, a hex or bit value
/// holding a name's bytes, or a number, which would name one by id).
pub fn check_client_charset(value: &str) -> Result<(), RouteError> {
    let name = crate::route::scan::unquote(value.trim()).to_ascii_lowercase();
    // Every charset name starts with a letter: `0x67626b` and `0b0110...` are the bytes of a
    // name (`gbk`), `28` an id, not names.
    let named = name.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    if !named {
        return Err(RouteError::not_supported(format!(
            "the client character set {value} is not supported by the gateway: a charset is set by name"
        )));
    }
    Ok(())
}

/// Checks a storage engine a session variable (`default_storage_engine`,
/// `default_tmp_storage_engine`, `storage_engine`) was set to, as the server settled on it
/// (`'MyISAM'`, quoted or not): the engines a CREATE TABLE may name ([`crate::route::admit`]'s
/// `LOCAL_ENGINES`).
///
/// Errors: 1227 naming the engine.
pub fn check_storage_engine(value: &str) -> Result<(), RouteError> {
    let engine = crate::route::scan::unquote(value.trim()).to_ascii_uppercase();
    if crate::route::admit::LOCAL_ENGINES.contains(&engine.as_str()) {
        Ok(())
    } else {
        Err(denied(&format!("the storage engine {value}")))
    }
}

pub(super) fn denied(what: &str) -> RouteError {
    RouteError::new(
        Refusal::PrivilegeRequired,
        format!("Access denied; {what} is not allowed through the gateway"),
    )
}

/// The value of an on/off variable (`autocommit`, Mycat's `xa`): `1`/`ON`/`TRUE` or
/// `0`/`OFF`/`FALSE`, quoted or not, in any case.
///
/// Errors: MySQL's 1231 naming the variable and the value.
pub fn switch_value(key: &str, value: &str) -> Result<bool, RouteError> {
    let v = crate::route::scan::unquote(value).to_ascii_lowercase();
    match v.as_str() {
        "1" | "on" | "true" => Ok(true),
        "0" | "off" | "false" => Ok(false),
        _ => Err(RouteError::new(
            Refusal::WrongValue,
            format!("Variable '{key}' can't be set to the value of '{v}'"),
        )),
    }
}
