//! The diagnostics area: warnings read from the dataNodes for a later `SHOW WARNINGS`, the
//! statements that leave it as it is, and `FOUND_ROWS()` after a result set.

use std::io;

use futures::StreamExt;
use opensrv_mysql::{Column as WireColumn, ColumnFlags, ColumnType, QueryResultWriter};

use super::reply::Sent;
use super::{Session, Writer};
use crate::backend::{BackendConn, Response};
use crate::route::{Local, RouteError, Routed};

/// Whether a statement only reads the diagnostics area (`SHOW COUNT(*) WARNINGS`, `SHOW
/// ERRORS`, `SELECT @@warning_count`...), which MySQL leaves as it is.
pub(super) fn reads_diagnostics(query: &str) -> bool {
    const PATTERNS: [&str; 8] = [
        "showcount(*)warnings",
        "showcount(*)errors",
        "showerrors",
        "showwarnings",
        "select@@warning_count",
        "select@@session.warning_count",
        "select@@error_count",
        "select@@session.error_count",
    ];
    // The statement's first 40 characters without white space, in ASCII lower case (this runs
    // for every statement: no allocation, one pass).
    let mut squeezed = [0u8; 40];
    let mut n = 0;
    for c in query.trim_start().chars().take(40) {
        if c.is_whitespace() {
            continue;
        }
        if !c.is_ascii() {
            break;
        }
        squeezed[n] = c.to_ascii_lowercase() as u8;
        n += 1;
    }
    PATTERNS
        .iter()
        .any(|p| squeezed[..n].starts_with(p.as_bytes()))
}

/// Whether the statement `query`, routed as `routed`, leaves the diagnostics area as it is
/// unless it raises a condition itself (its warnings or error then replace the area). MariaDB
/// clears the area for a statement that uses a table, not for others: `SELECT 1`, `SET @a = 1`,
/// `BEGIN`, `COMMIT`, `USE db` keep the last failed statement's error for `SHOW
/// WARNINGS`, and so do the statements that read the area ([`reads_diagnostics`]). Statements
/// the gateway cannot tell use no table are taken to use one.
pub(super) fn keeps_diagnostics(routed: &Result<Routed, RouteError>, query: &str) -> bool {
    match routed {
        Ok(Routed::Local(l)) => matches!(
            l,
            Local::ShowWarnings { .. }
                | Local::WarningCount(_)
                | Local::ErrorCount(_)
                | Local::Counts(_)
                | Local::Use(_)
                | Local::SetAutocommit(_)
                | Local::SetAutocommitFrom(_)
                | Local::SetXa(_)
                | Local::Set { .. }
                | Local::Begin
                | Local::Commit(_)
                | Local::Rollback(_)
                | Local::Savepoint(_)
                | Local::RollbackToSavepoint(_)
                | Local::ReleaseSavepoint(_)
                | Local::VersionComment(_)
                | Local::Database(_)
                | Local::Version(_)
                | Local::Autocommit(_)
                | Local::LastInsertId(_)
                | Local::FoundRows(_)
                | Local::RowCount(_)
                | Local::Ok
                | Local::MaxAllowedPacket(_)
                | Local::ConnectionId(_)
        ),
        Ok(Routed::Plan(plan)) => {
            plan.tables.is_empty()
                && (reads_diagnostics(query) || crate::route::reads_no_table(query))
        }
        _ => reads_diagnostics(query),
    }
}

pub(super) use crate::backend::show_warnings as collect_warnings;

/// `SHOW WARNINGS` rows (Level, Code, Message, as read from the nodes) typed as MySQL types
/// them: Code is an `INT UNSIGNED` (clients reading it in the binary protocol, or by type, get a
/// number), the others text.
pub(super) async fn write_warnings(
    w: QueryResultWriter<'_, Writer>,
    rows: Vec<Vec<Option<String>>>,
) -> io::Result<()> {
    let column = |name: &str, coltype, colflags| WireColumn {
        table: String::new(),
        column: name.to_string(),
        coltype,
        colflags,
    };
    let text = ColumnType::MYSQL_TYPE_VAR_STRING;
    let cols = [
        column("Level", text, ColumnFlags::NOT_NULL_FLAG),
        column(
            "Code",
            ColumnType::MYSQL_TYPE_LONG,
            ColumnFlags::UNSIGNED_FLAG | ColumnFlags::NOT_NULL_FLAG,
        ),
        column("Message", text, ColumnFlags::NOT_NULL_FLAG),
    ];
    let mut rw = w.start(&cols).await?;
    for row in rows {
        let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        rw.write_col(text(0))?;
        rw.write_col(text(1).parse::<u32>().unwrap_or(0))?;
        rw.write_col(text(2))?;
        rw.end_row().await?;
    }
    rw.finish().await
}

impl Session {
    /// After a result set went to the client: what the session keeps of it, read from the
    /// connections it ran on while they are still held. The warnings' rows for a later `SHOW
    /// WARNINGS` (as after an OK, see `execute`), then its found-rows count for `SELECT
    /// FOUND_ROWS()`: the rows sent, with those a LIMIT's offset skipped (on the node, or in
    /// the gateway's merge over several), or, after `SQL_CALC_FOUND_ROWS` or an offset past
    /// the last row on one dataNode, the node's `FOUND_ROWS()` (several dataNodes are refused
    /// at routing). After an `EXECUTE s`, the rules read the text prepared as `s`.
    pub(super) async fn rows_sent(
        &mut self,
        sent: io::Result<Sent>,
        transactional: bool,
        fresh: &mut [Box<dyn BackendConn>],
        targets: &[crate::route::Target],
    ) -> io::Result<()> {
        let sent = sent?;
        self.tally.rows = sent.rows;
        if !sent.complete {
            return Ok(());
        }
        // What the node ran: for an `EXECUTE s`, the text prepared as `s`.
        let ran = |t: &crate::route::Target| match &self.executing {
            Some(text) => text.clone(),
            None => t.sql.clone(),
        };
        // MariaDB counts the rows a LIMIT's offset skipped too (`LIMIT 2, 1` over 5 rows: 3):
        // those the node skipped (its statement's offset) and those the merge skipped. With
        // nothing sent past a node's offset, only the node knows how many there were.
        let offset = match targets {
            [one] => crate::route::limit_offset(&ran(one)),
            _ => 0,
        };
        if targets.first().is_some_and(|t| sets_found_rows(&ran(t))) {
            self.found_rows = sent.rows + offset + sent.skipped;
        }
        let calc = targets.len() == 1
            && (crate::sqltext::contains_ignore_ascii_case(
                &ran(&targets[0]),
                "SQL_CALC_FOUND_ROWS",
            ) || (offset > 0 && sent.rows == 0));
        if sent.warnings == 0 && !calc {
            return Ok(());
        }
        let (warnings, found) = {
            let mut ctx = self.ctx();
            let mut conns =
                crate::engine::cursor::statement_conns(&mut ctx, transactional, fresh, targets);
            // First: MariaDB's SHOW WARNINGS leaves FOUND_ROWS() as it is, and a SELECT
            // without warnings would clear them.
            let warnings = match sent.warnings > 0 {
                true => Some(collect_warnings(&mut conns).await),
                false => None,
            };
            let found = match conns.first_mut() {
                Some(conn) if calc => Some(found_rows_on(&mut **conn).await),
                _ => None,
            };
            (warnings, found)
        };
        if let Some(warnings) = warnings {
            self.warnings = warnings;
            self.warning_count = sent.warnings;
        }
        match found {
            Some(Some(n)) => self.found_rows = n,
            Some(None) => tracing::warn!(
                connection = self.id,
                node = %targets[0].node,
                "FOUND_ROWS() after SQL_CALC_FOUND_ROWS could not be read; counting the rows sent"
            ),
            None => {}
        }
        Ok(())
    }
}

/// Whether a statement's result set sets `FOUND_ROWS()` to its row count, as on MariaDB: a
/// SELECT's does, and so do the `SHOW`s and `DESCRIBE` that read information_schema; `EXPLAIN`
/// and `SHOW CREATE ...` leave it.
fn sets_found_rows(sql: &str) -> bool {
    let mut words = sql.split_ascii_whitespace();
    match words.next() {
        Some(w) if w.eq_ignore_ascii_case("EXPLAIN") => false,
        Some(w) if w.eq_ignore_ascii_case("SHOW") => !words
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("CREATE")),
        _ => true,
    }
}

/// `SELECT FOUND_ROWS()` on `conn`; `None` when it fails or answers no number.
async fn found_rows_on(conn: &mut (dyn BackendConn + 'static)) -> Option<u64> {
    let Ok(Response::Rows { mut rows, .. }) = conn.query("SELECT FOUND_ROWS()").await else {
        return None;
    };
    let mut value = None;
    while let Some(Ok(row)) = rows.next().await {
        value = value.or_else(|| row.first()?.to_text()?.parse().ok());
    }
    value
}

#[cfg(test)]
mod tests {
    #[test]
    fn diagnostics_statements_are_recognised_without_case_or_spaces() {
        for q in [
            "SHOW WARNINGS",
            "  show   count(*)   warnings",
            "show errors limit 1",
            "SELECT @@warning_count",
            "select @@SESSION.error_count, 1",
        ] {
            assert!(super::reads_diagnostics(q), "{q}");
        }
        for q in [
            "SELECT c FROM t",
            "SHOW TABLES",
            "select @@warning",
            "",
            "sel",
            "SELECT                                    @@warning_count",
        ] {
            assert!(!super::reads_diagnostics(q), "{q}");
        }
    }
}
