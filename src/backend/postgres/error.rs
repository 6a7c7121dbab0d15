//! PostgreSQL errors as a MySQL client expects them: each SQLSTATE that has a MySQL
//! counterpart becomes that MySQL errno and SQLSTATE; the server's message is kept verbatim.
//!
//! The table follows the MySQL 8.0 server error reference (errno and SQLSTATE of each
//! `ER_*` code) and PostgreSQL's Appendix A (error codes). An SQLSTATE without a MySQL
//! counterpart keeps its own SQLSTATE (both systems use the SQL-standard classes) with errno
//! 1105 (`ER_UNKNOWN_ERROR`).

use crate::backend::BackendError;

/// `ER_UNKNOWN_ERROR`: the errno for a PostgreSQL error MySQL has no code for.
pub const UNKNOWN_ERRNO: u16 = 1105;

/// PostgreSQL SQLSTATE → (MySQL errno, MySQL SQLSTATE).
const TABLE: &[(&str, u16, &str)] = &[
    // class 23: integrity constraint violation
    ("23505", 1062, "23000"), // unique_violation → ER_DUP_ENTRY
    ("23502", 1048, "23000"), // not_null_violation → ER_BAD_NULL_ERROR
    ("23503", 1452, "23000"), // foreign_key_violation → ER_NO_REFERENCED_ROW_2
    ("23514", 3819, "HY000"), // check_violation → ER_CHECK_CONSTRAINT_VIOLATED
    // class 42: syntax error or access rule violation
    ("42601", 1064, "42000"), // syntax_error → ER_PARSE_ERROR
    ("42P01", 1146, "42S02"), // undefined_table → ER_NO_SUCH_TABLE
    ("42703", 1054, "42S22"), // undefined_column → ER_BAD_FIELD_ERROR
    ("42P07", 1050, "42S01"), // duplicate_table → ER_TABLE_EXISTS_ERROR
    ("42701", 1060, "42S21"), // duplicate_column → ER_DUP_FIELDNAME
    ("42702", 1052, "23000"), // ambiguous_column → ER_NON_UNIQ_ERROR
    ("42803", 1055, "42000"), // grouping_error → ER_WRONG_FIELD_WITH_GROUP
    ("42883", 1305, "42000"), // undefined_function → ER_SP_DOES_NOT_EXIST
    ("42501", 1142, "42000"), // insufficient_privilege → ER_TABLEACCESS_DENIED_ERROR
    ("3D000", 1049, "42000"), // invalid_catalog_name → ER_BAD_DB_ERROR
    ("3F000", 1049, "42000"), // invalid_schema_name → ER_BAD_DB_ERROR
    // class 22: data exception
    ("22012", 1365, "22012"), // division_by_zero → ER_DIVISION_BY_ZERO
    ("22001", 1406, "22001"), // string_data_right_truncation → ER_DATA_TOO_LONG
    ("22003", 1264, "22003"), // numeric_value_out_of_range → ER_WARN_DATA_OUT_OF_RANGE
    ("22P02", 1366, "HY000"), // invalid_text_representation → ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
    ("22007", 1292, "22007"), // invalid_datetime_format → ER_TRUNCATED_WRONG_VALUE
    ("22008", 1292, "22007"), // datetime_field_overflow → ER_TRUNCATED_WRONG_VALUE
    ("21000", 1242, "21000"), // cardinality_violation → ER_SUBQUERY_NO_1_ROW
    // class 25: invalid transaction state
    ("25006", 1792, "25006"), // read_only_sql_transaction (a standby) → ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
    // class 40: transaction rollback
    ("40P01", 1213, "40001"), // deadlock_detected → ER_LOCK_DEADLOCK
    ("40001", 1213, "40001"), // serialization_failure → ER_LOCK_DEADLOCK (both mean: retry)
    // class 55/57: lock and cancel
    ("55P03", 1205, "HY000"), // lock_not_available (lock_timeout, NOWAIT) → ER_LOCK_WAIT_TIMEOUT
    ("57014", 1317, "70100"), // query_canceled (statement_timeout) → ER_QUERY_INTERRUPTED
    // class 28 / 53 / 0A
    ("28P01", 1045, "28000"), // invalid_password → ER_ACCESS_DENIED_ERROR
    ("28000", 1045, "28000"), // invalid_authorization_specification → ER_ACCESS_DENIED_ERROR
    ("53300", 1040, "08004"), // too_many_connections → ER_CON_COUNT_ERROR
    ("0A000", 1235, "42000"), // feature_not_supported → ER_NOT_SUPPORTED_YET
];

/// The MySQL (errno, SQLSTATE) for a PostgreSQL SQLSTATE: the table above, else
/// ([`UNKNOWN_ERRNO`], the PostgreSQL SQLSTATE itself).
pub fn mysql_code(sqlstate: &str) -> (u16, &str) {
    TABLE
        .iter()
        .find(|(pg, _, _)| *pg == sqlstate)
        .map_or((UNKNOWN_ERRNO, sqlstate), |(_, code, state)| {
            (*code, *state)
        })
}

/// A `tokio-postgres` error as a [`BackendError`]: the server's errors become `Server` with
/// the mapped code (message kept), a closed connection `Closed`, anything else `Other`.
pub fn convert(e: tokio_postgres::Error) -> BackendError {
    if let Some(db) = e.as_db_error() {
        // The server is shutting down or killed this backend: the connection is gone.
        if matches!(db.code().code(), "57P01" | "57P02" | "57P03") {
            return BackendError::Closed(db.message().to_string());
        }
        // An ENUM / SET column's CHECK: what MySQL's strict mode says of a non-member.
        if let Some(column) = db
            .constraint()
            .filter(|_| db.code().code() == "23514")
            .and_then(|c| c.strip_prefix(crate::pgcatalog::VALUE_LIST_CHECK))
        {
            return BackendError::Server {
                code: 1265,
                state: "01000".to_string(),
                message: format!(
                    "Data truncated for column '{column}': the value is not one of the column's \
                     ENUM/SET members as declared (letter case and, for a SET, order included)"
                ),
            };
        }
        let (code, state) = mysql_code(db.code().code());
        return BackendError::Server {
            code,
            state: state.to_string(),
            message: db.message().to_string(),
        };
    }
    if e.is_closed() {
        return BackendError::Closed(format!("connection to the server is closed: {e}"));
    }
    // I/O failures (reset, refused) come wrapped; their source is an io::Error.
    if std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>()) {
        return BackendError::Closed(e.to_string());
    }
    BackendError::Other(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_table() {
        for (pg, code, state) in [
            ("23505", 1062, "23000"),
            ("42P01", 1146, "42S02"),
            ("42703", 1054, "42S22"),
            ("42601", 1064, "42000"),
            ("23502", 1048, "23000"),
            ("23503", 1452, "23000"),
            ("22012", 1365, "22012"),
            ("40P01", 1213, "40001"),
            ("55P03", 1205, "HY000"),
            ("25006", 1792, "25006"),
        ] {
            assert_eq!(mysql_code(pg), (code, state), "SQLSTATE {pg}");
        }
    }

    #[test]
    fn unmapped_keeps_sqlstate() {
        assert_eq!(mysql_code("P0001"), (UNKNOWN_ERRNO, "P0001"));
    }

    #[test]
    fn table_has_no_duplicates() {
        let mut seen = std::collections::HashSet::new();
        for (pg, _, state) in TABLE {
            assert!(seen.insert(*pg), "{pg} twice");
            assert_eq!(pg.len(), 5);
            assert_eq!(state.len(), 5);
        }
    }
}
