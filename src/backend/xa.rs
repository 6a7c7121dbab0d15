//! XA branch identifiers and the statements of two-phase commit on each kind of server
//! ([`super::BackendConn::xa_start`] and the methods after it; the coordinator that drives
//! them sits above the dataHosts).
//!
//! manx names a global transaction `manx.<instance>.<boot>.<n>` (the instance's name, the
//! process start time in milliseconds, a counter) and each of its branches by the dataNode it
//! runs on (DECISIONS.md item 27; Mycat names branches by physical database, which a failover
//! or two dataNodes on one database confuse, OPERATIONS.md §3). MySQL takes them as the XID's
//! `gtrid` and `bqual` (format id 1, MySQL's default); PostgreSQL, which has one identifier,
//! as `<gtrid>|<bqual>`.

use super::{BackendError, Response, Value};

/// One XA branch: the global transaction and the dataNode the branch runs on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Xid {
    /// The global transaction id (at most 64 bytes, MySQL's limit).
    pub gtrid: String,
    /// The branch qualifier: the dataNode's name (at most 64 bytes).
    pub bqual: String,
}

/// The separator of gtrid and bqual in a PostgreSQL transaction identifier.
const PG_SEPARATOR: char = '|';

impl Xid {
    /// The branch `bqual` of `gtrid`.
    pub fn new(gtrid: &str, bqual: &str) -> Xid {
        Xid {
            gtrid: gtrid.to_string(),
            bqual: bqual.to_string(),
        }
    }

    /// The XID in MySQL's statement syntax: `X'<gtrid hex>',X'<bqual hex>'` (hex literals, so
    /// no name needs quoting and every `sql_mode` reads them alike).
    pub fn mysql(&self) -> String {
        format!("X'{}',X'{}'", hex(&self.gtrid), hex(&self.bqual))
    }

    /// The PostgreSQL transaction identifier as a quoted literal: `'<gtrid>|<bqual>'`.
    pub fn postgres_literal(&self) -> String {
        let id = format!("{}{PG_SEPARATOR}{}", self.gtrid, self.bqual);
        format!("'{}'", id.replace('\'', "''"))
    }

    /// Reads a PostgreSQL transaction identifier manx made (`None` for any other).
    pub fn from_postgres(gid: &str) -> Option<Xid> {
        let (gtrid, bqual) = gid.split_once(PG_SEPARATOR)?;
        Some(Xid::new(gtrid, bqual))
    }
}

impl std::fmt::Display for Xid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "'{}','{}'", self.gtrid, self.bqual)
    }
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Runs a statement whose answer is an OK (or rows nobody needs).
pub(super) async fn run<C: super::BackendConn + ?Sized>(
    conn: &mut C,
    sql: &str,
) -> Result<(), BackendError> {
    match conn.query(sql).await? {
        Response::Ok(_) => Ok(()),
        Response::Rows { mut rows, .. } => {
            while let Some(r) = futures::StreamExt::next(&mut rows).await {
                r?;
            }
            Ok(())
        }
    }
}

/// MySQL's `XA RECOVER` rows (formatID, gtrid_length, bqual_length, data) as XIDs; rows of
/// another format id or that do not read as text are skipped (not manx's).
pub(super) async fn mysql_recover<C: super::BackendConn + ?Sized>(
    conn: &mut C,
) -> Result<Vec<Xid>, BackendError> {
    let mut out = Vec::new();
    let Response::Rows { mut rows, .. } = conn.query("XA RECOVER").await? else {
        return Ok(out);
    };
    while let Some(row) = futures::StreamExt::next(&mut rows).await {
        let row = row?;
        let number = |v: Option<&Value>| v.and_then(Value::to_text)?.parse::<usize>().ok();
        let (Some(format), Some(g), Some(b)) =
            (number(row.first()), number(row.get(1)), number(row.get(2)))
        else {
            continue;
        };
        let data = match row.get(3) {
            Some(Value::Bytes(d)) => d.clone(),
            _ => continue,
        };
        if format != 1 || data.len() != g + b {
            continue;
        }
        let (Ok(gtrid), Ok(bqual)) = (
            String::from_utf8(data[..g].to_vec()),
            String::from_utf8(data[g..].to_vec()),
        ) else {
            continue;
        };
        out.push(Xid { gtrid, bqual });
    }
    Ok(out)
}

/// Whether a MySQL error means the XID is not (or no longer) known to the server:
/// `XAER_NOTA` (1397). Resolving such a branch has nothing left to do.
pub fn unknown_xid(e: &BackendError) -> bool {
    e.server_error().is_some_and(|(code, _, _)| code == 1397)
        || e.server_error()
            .is_some_and(|(_, state, _)| state == "42704")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xids_print_as_each_server_reads_them() {
        let x = Xid::new("manx.a.1.2", "dn1");
        assert_eq!(x.mysql(), "X'6d616e782e612e312e32',X'646e31'");
        assert_eq!(x.postgres_literal(), "'manx.a.1.2|dn1'");
        assert_eq!(Xid::from_postgres("manx.a.1.2|dn1"), Some(x));
        assert_eq!(Xid::from_postgres("someone_else"), None);
        assert_eq!(
            Xid::new("g", "it's").postgres_literal(),
            "'g|it''s'",
            "quotes are doubled"
        );
    }
}
