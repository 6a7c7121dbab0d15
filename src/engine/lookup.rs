//! The look-ups a statement needs before it can be planned, run as steps of the engine over
//! [`ExecCtx`]: the router says what it needs ([`crate::route::Routed::Sequence`],
//! [`crate::route::Routed::Columns`], [`crate::route::Routed::Lookup`], and a metadata query's
//! reads), these functions get the answers from the dataNodes, and the router completes the plan
//! from them (it stays a pure function of the statement and those answers).
//!
//! - Mycat global sequences (SPEC §5.17): [`draw_sequences`] draws each sequence's values once
//!   ([`ExecCtx::draw`]) and writes them into the statement.
//! - An INSERT without a column list, a GROUP BY name over several dataNodes that may be a
//!   column: [`read_columns`] reads the table's column order on each of its dataNodes, which
//!   must agree.
//! - An ER child row (SPEC §5.12): [`find_parent`] asks the parent's dataNodes in order and
//!   places the INSERT on the first holding the parent row.
//! - `information_schema` answers across dataHosts: [`view_columns`] and [`literal_rows`].
//!
//! Every look-up runs on the connection [`ExecCtx::session_conn`] lends: the session's own for
//! the node when it has one (rows it wrote in its transaction are seen), else a fresh one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::StreamExt;

use super::EngineError;
use super::cursor::{ExecCtx, Purpose};
use crate::backend::{BackendError, Column, ColumnType, Response, Value};
use crate::route::{ColumnsLookup, ParentLookup, Plan, SequenceRewrite, Target};

/// Why a look-up failed. The front end turns each into the MySQL error named here.
#[derive(Debug)]
pub enum LookupError<E> {
    /// The implementor's error: no connection could be had (or the session's settings could
    /// not be replayed on it), or the sequence handler refused a draw (errno 1003, `mycat
    /// sequnce err.` ...).
    Ctx(E),
    /// The dataNode's own error while the look-up ran (1146 when the table is missing there).
    Node(EngineError),
    /// Errno 1003: a sequence edit got no value (the handler answered fewer than asked).
    NoValueDrawn,
    /// Errno 1105: the table's dataNodes define different columns, so a statement that needs
    /// them (an INSERT without a column list) cannot mean one thing on all of them.
    ColumnsDiffer {
        table: String,
        first_node: String,
        first: Vec<String>,
        node: String,
        columns: Vec<String>,
    },
    /// Errno 1064 (SQLSTATE 42000, Mycat's text): no dataNode holds the ER child row's parent.
    NoParent { child: String, parent: String },
    /// Errno 1105: a dataNode answered no result set for `information_schema.<view>`.
    NoColumns { node: String, view: String },
}

impl<E: std::fmt::Display> std::fmt::Display for LookupError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LookupError::Ctx(e) => write!(f, "{e}"),
            LookupError::Node(e) => write!(f, "{e}"),
            LookupError::NoValueDrawn => f.write_str("mycat sequnce err.no value drawn"),
            LookupError::ColumnsDiffer {
                table,
                first_node,
                first,
                node,
                columns,
            } => write!(
                f,
                "table {table} has different columns on dataNode {first_node} ({}) and on dataNode {node} ({}): an INSERT without a column list cannot be placed; name the columns",
                first.join(", "),
                columns.join(", ")
            ),
            LookupError::NoParent { child, parent } => write!(
                f,
                "can't find (root) parent sharding node for sql: the {parent} row that {child} refers to is on no dataNode"
            ),
            LookupError::NoColumns { node, view } => write!(
                f,
                "dataNode {node} answered no columns for information_schema.{view}"
            ),
        }
    }
}

/// A statement with its sequence values written in ([`draw_sequences`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawn {
    /// The statement to route again.
    pub sql: String,
    /// The first value written (the insert id of an `autoIncrement` INSERT), if any.
    pub first: Option<i64>,
}

/// Draws the values `r` needs — each sequence once, as many values as it has edits, sequences
/// in name order — and writes them in, edits in statement order (SPEC §5.17).
///
/// Errors: the draw's ([`LookupError::Ctx`]); [`LookupError::NoValueDrawn`].
pub async fn draw_sequences<C: ExecCtx>(
    ctx: &mut C,
    r: &SequenceRewrite,
) -> Result<Drawn, LookupError<C::Error>> {
    let mut wanted: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &r.edits {
        if let Some(name) = &e.sequence {
            *wanted.entry(name).or_default() += 1;
        }
    }
    let mut drawn: HashMap<&str, std::vec::IntoIter<i64>> = HashMap::new();
    for (name, count) in wanted {
        let values = ctx.draw(name, count).await.map_err(LookupError::Ctx)?;
        drawn.insert(name, values.into_iter());
    }
    let mut sql = r.prefix.clone();
    let mut at = 0;
    let mut first = None;
    for e in &r.edits {
        sql.push_str(&r.sql[at..e.range.start]);
        sql.push_str(&e.before);
        if let Some(name) = &e.sequence {
            let v = drawn
                .get_mut(name.as_str())
                .and_then(|it| it.next())
                .ok_or(LookupError::NoValueDrawn)?;
            first.get_or_insert(v);
            sql.push_str(&v.to_string());
        }
        sql.push_str(&e.after);
        at = e.range.end;
    }
    sql.push_str(&r.sql[at..]);
    Ok(Drawn { sql, first })
}

/// The column order of a table (one an INSERT without a column list fills, or that a GROUP BY
/// name may be a column of), read on each of its dataNodes (`lookup.probes`, in order); `None`
/// when it has none.
///
/// Errors: a node's ([`LookupError::Ctx`], [`LookupError::Node`]);
/// [`LookupError::ColumnsDiffer`] when two nodes disagree (names compared without case).
pub async fn read_columns<C: ExecCtx>(
    ctx: &mut C,
    lookup: &ColumnsLookup,
) -> Result<Option<Vec<String>>, LookupError<C::Error>> {
    let mut agreed: Option<(&str, Vec<String>)> = None;
    for probe in &lookup.probes {
        let (columns, _) = self::probe(ctx, probe, &lookup.table).await?;
        let columns: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
        match &agreed {
            None => agreed = Some((&probe.node, columns)),
            Some((node, first))
                if first.len() != columns.len()
                    || first
                        .iter()
                        .zip(&columns)
                        .any(|(a, b)| !a.eq_ignore_ascii_case(b)) =>
            {
                return Err(LookupError::ColumnsDiffer {
                    table: lookup.table.clone(),
                    first_node: node.to_string(),
                    first: first.clone(),
                    node: probe.node.clone(),
                    columns,
                });
            }
            Some(_) => {}
        }
    }
    Ok(agreed.map(|(_, columns)| columns))
}

/// The plan of an ER child row's INSERT (SPEC §5.12): the parent's dataNodes are asked in
/// order, each on the session's connection for it where it has one (so a parent inserted in
/// the same transaction is found), and the INSERT goes to the first that answers a row.
///
/// Errors: a node that cannot be asked ([`LookupError::Ctx`], [`LookupError::Node`]);
/// [`LookupError::NoParent`].
pub async fn find_parent<C: ExecCtx>(
    ctx: &mut C,
    lookup: ParentLookup,
) -> Result<Plan, LookupError<C::Error>> {
    for (probe, insert) in lookup.probes.iter().zip(lookup.inserts) {
        let (_, rows) = self::probe(ctx, probe, &lookup.parent).await?;
        if rows > 0 {
            tracing::debug!(child = %lookup.child, parent = %lookup.parent, node = %insert.node, "parent row found");
            return Ok(Plan::write(vec![insert]));
        }
    }
    Err(LookupError::NoParent {
        child: lookup.child,
        parent: lookup.parent,
    })
}

/// Runs a small look-up (`target`: a node and a statement reading `table`) on the connection
/// [`ExecCtx::session_conn`] lends for it: the result's columns and how many rows it had (the
/// rows are read, not kept).
///
/// Errors: [`LookupError::Ctx`], [`LookupError::Node`].
pub async fn probe<C: ExecCtx>(
    ctx: &mut C,
    target: &Target,
    table: &str,
) -> Result<(Arc<[Column]>, usize), LookupError<C::Error>> {
    let mut lease = ctx
        .session_conn(&target.node, Purpose::Session(Some(table)))
        .await
        .map_err(LookupError::Ctx)?;
    let failed = node_failed(&target.node);
    match lease.conn().query(&target.sql).await.map_err(failed)? {
        Response::Rows { columns, mut rows } => {
            let mut count = 0;
            while let Some(row) = rows.next().await {
                row.map_err(failed)?;
                count += 1;
            }
            Ok((columns, count))
        }
        Response::Ok(_) => Ok((Arc::from(Vec::new()), 0)),
    }
}

/// The column names of `information_schema.<view>` on `node` (`SELECT * ... WHERE 1 = 0`).
///
/// Errors: [`LookupError::Ctx`], [`LookupError::Node`], [`LookupError::NoColumns`].
pub async fn view_columns<C: ExecCtx>(
    ctx: &mut C,
    node: &str,
    view: &str,
) -> Result<Arc<[String]>, LookupError<C::Error>> {
    let sql = format!("SELECT * FROM information_schema.`{view}` WHERE 1 = 0");
    let mut lease = ctx
        .session_conn(node, Purpose::Metadata)
        .await
        .map_err(LookupError::Ctx)?;
    let failed = node_failed(node);
    match lease.conn().query(&sql).await.map_err(failed)? {
        Response::Rows { columns, mut rows } => {
            while let Some(r) = rows.next().await {
                r.map_err(failed)?;
            }
            Ok(columns.iter().map(|c| c.name.clone()).collect())
        }
        Response::Ok(_) => Err(LookupError::NoColumns {
            node: node.to_string(),
            view: view.to_string(),
        }),
    }
}

/// Runs `sql` on `node` for a metadata query and returns its rows with each value as an SQL
/// literal: numbers of numeric columns as written, NULL, other text quoted, other bytes in hex.
/// No rows when it answers an OK.
///
/// Errors: [`LookupError::Ctx`], [`LookupError::Node`].
pub async fn literal_rows<C: ExecCtx>(
    ctx: &mut C,
    node: &str,
    sql: &str,
) -> Result<Vec<Vec<String>>, LookupError<C::Error>> {
    use ColumnType as T;
    let mut lease = ctx
        .session_conn(node, Purpose::Metadata)
        .await
        .map_err(LookupError::Ctx)?;
    let failed = node_failed(node);
    let Response::Rows { columns, mut rows } = lease.conn().query(sql).await.map_err(failed)?
    else {
        return Ok(Vec::new());
    };
    let numeric: Vec<bool> = columns
        .iter()
        .map(|c| {
            matches!(
                c.column_type,
                T::MYSQL_TYPE_TINY
                    | T::MYSQL_TYPE_SHORT
                    | T::MYSQL_TYPE_LONG
                    | T::MYSQL_TYPE_INT24
                    | T::MYSQL_TYPE_LONGLONG
                    | T::MYSQL_TYPE_DECIMAL
                    | T::MYSQL_TYPE_NEWDECIMAL
                    | T::MYSQL_TYPE_FLOAT
                    | T::MYSQL_TYPE_DOUBLE
                    | T::MYSQL_TYPE_YEAR
            )
        })
        .collect();
    let mut out = Vec::new();
    while let Some(row) = rows.next().await {
        let row = row.map_err(failed)?;
        let literals = row
            .iter()
            .zip(&numeric)
            .map(|(v, numeric)| match v {
                Value::Null => "NULL".to_string(),
                Value::Int(i) => i.to_string(),
                Value::UInt(u) => u.to_string(),
                Value::Double(d) => d.to_string(),
                Value::Bytes(b) => match std::str::from_utf8(b) {
                    Ok(t) if *numeric && t.parse::<f64>().is_ok() => t.to_string(),
                    Ok(t) => format!("'{}'", t.replace('\\', "\\\\").replace('\'', "''")),
                    Err(_) => format!(
                        "X'{}'",
                        b.iter().map(|x| format!("{x:02X}")).collect::<String>()
                    ),
                },
            })
            .collect();
        out.push(literals);
    }
    Ok(out)
}

/// A failure of `node`'s server while a look-up ran there.
fn node_failed<E>(node: &str) -> impl Fn(BackendError) -> LookupError<E> + Copy + '_ {
    move |source| {
        LookupError::Node(EngineError {
            node: node.to_string(),
            source,
            applied: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cursor::fake::{Answer, Reach, Recorder, target};
    use crate::route::SequenceEdit;

    /// `INSERT INTO t (id, k, n) VALUES (?, ?, 1), (?, ?, 2)`: `id` from sequence A, `k`
    /// from B, per row.
    fn two_rows() -> SequenceRewrite {
        let sql = "INSERT INTO t (id, k, n) VALUES (next value for MYCATSEQ_A, next value for MYCATSEQ_B, 1), (next value for MYCATSEQ_A, next value for MYCATSEQ_B, 2)".to_string();
        let mut edits = Vec::new();
        let mut from = 0;
        while let Some(at) = sql[from..].find("next value for MYCATSEQ_") {
            let start = from + at;
            let end = start + "next value for MYCATSEQ_".len() + 1;
            edits.push(SequenceEdit {
                range: start..end,
                before: String::new(),
                sequence: Some(sql[end - 1..end].to_string()),
                after: String::new(),
            });
            from = end;
        }
        SequenceRewrite {
            sql,
            prefix: "/*balance*/".to_string(),
            edits,
            reports_id: true,
        }
    }

    #[tokio::test]
    async fn each_sequence_is_drawn_once_and_its_values_written_in_statement_order() {
        let mut ctx = Recorder::default().sequence("A", 10).sequence("B", 500);
        let drawn = draw_sequences(&mut ctx, &two_rows()).await.unwrap();
        assert_eq!(
            drawn.sql,
            "/*balance*/INSERT INTO t (id, k, n) VALUES (10, 500, 1), (11, 501, 2)"
        );
        assert_eq!(drawn.first, Some(10));
        assert_eq!(ctx.log(), ["draw A 2", "draw B 2"]);

        // The next statement's draw continues after them.
        let drawn = draw_sequences(&mut ctx, &two_rows()).await.unwrap();
        assert!(
            drawn.sql.contains("(12, 502, 1), (13, 503, 2)"),
            "{}",
            drawn.sql
        );
    }

    #[tokio::test]
    async fn a_sequence_that_cannot_be_drawn_fails_with_mycats_error_and_draws_no_further() {
        // B is unknown: A (first by name) was drawn, B refused; nothing is written.
        let mut ctx = Recorder::default().sequence("A", 10);
        let e = draw_sequences(&mut ctx, &two_rows()).await.unwrap_err();
        assert!(matches!(e, LookupError::Ctx(_)), "{e}");
        assert_eq!(
            e.to_string(),
            "mycat sequnce err.can't find definition for sequence :B"
        );
        assert_eq!(ctx.log(), ["draw A 2", "draw B 2"]);

        // A sequence used twice in a row: all its values in one draw, in statement order.
        let mut r = two_rows();
        r.edits[2].sequence = Some("A".to_string());
        r.edits[3].sequence = Some("A".to_string());
        let mut ctx = Recorder::default().sequence("A", 1).sequence("B", 1);
        let drawn = draw_sequences(&mut ctx, &r).await.unwrap();
        assert_eq!(ctx.log(), ["draw A 3", "draw B 1"]);
        assert!(drawn.sql.contains("(1, 1, 1), (2, 3, 2)"), "{}", drawn.sql);
    }

    fn parent_lookup() -> ParentLookup {
        ParentLookup {
            child: "ORDER_ITEM".to_string(),
            parent: "ORDERS".to_string(),
            probes: ["dn1", "dn2", "dn3"]
                .iter()
                .map(|n| target(n, "SELECT 1 FROM orders WHERE id = 7 LIMIT 1"))
                .collect(),
            inserts: ["dn1", "dn2", "dn3"]
                .iter()
                .map(|n| target(n, "INSERT INTO order_item VALUES (1, 7)"))
                .collect(),
        }
    }

    fn found(rows: usize) -> Answer {
        Answer::Rows(vec!["1"], vec![vec!["1"]; rows])
    }

    #[tokio::test]
    async fn a_parent_is_looked_for_node_by_node_on_the_sessions_connection_first() {
        // dn1 is held by the session (its transaction's connection): asked there, no row;
        // dn2 fresh, the row; dn3 never asked.
        let mut ctx = Recorder::default()
            .node("dn1", vec![Reach::Server("h1:3306")], found(0))
            .node("dn2", vec![Reach::Server("h2:3306")], found(1))
            .node("dn3", vec![Reach::Server("h3:3306")], found(1))
            .holding("dn1", "pinned1:3306");
        let plan = find_parent(&mut ctx, parent_lookup()).await.unwrap();
        assert_eq!(plan.targets.len(), 1);
        assert_eq!(plan.targets[0].node, "dn2");
        assert_eq!(
            &*plan.targets[0].sql,
            "INSERT INTO order_item VALUES (1, 7)"
        );
        assert!(!plan.read_only);
        assert_eq!(
            ctx.log(),
            [
                "held dn1",
                "dn1@pinned1:3306: SELECT 1 FROM orders WHERE id = 7 LIMIT 1",
                "connect dn2",
                "dn2@h2:3306: SELECT 1 FROM orders WHERE id = 7 LIMIT 1",
            ]
        );
    }

    #[tokio::test]
    async fn no_node_holding_the_parent_is_mycats_error() {
        let mut ctx = Recorder::default()
            .node("dn1", vec![Reach::Server("h1:3306")], found(0))
            .node("dn2", vec![Reach::Server("h2:3306")], found(0))
            .node("dn3", vec![Reach::Server("h3:3306")], Answer::Ok(0));
        let e = find_parent(&mut ctx, parent_lookup()).await.unwrap_err();
        assert!(matches!(e, LookupError::NoParent { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "can't find (root) parent sharding node for sql: the ORDERS row that ORDER_ITEM refers to is on no dataNode"
        );
        assert_eq!(ctx.log().len(), 6, "every node asked: {:?}", ctx.log());
    }

    #[tokio::test]
    async fn a_lookup_on_an_unreachable_node_fails_naming_it_and_asks_no_further() {
        let mut ctx = Recorder::default()
            .node("dn1", vec![Reach::Fails(true)], found(1))
            .node("dn2", vec![Reach::Server("h2:3306")], found(1))
            .node("dn3", vec![Reach::Server("h3:3306")], found(1));
        let e = find_parent(&mut ctx, parent_lookup()).await.unwrap_err();
        assert!(matches!(e, LookupError::Ctx(_)), "{e}");
        assert_eq!(e.to_string(), "dataNode dn1: no connection");
        assert_eq!(
            ctx.log(),
            ["connect dn1"],
            "a parent row may be on dn1: no other node is taken for it"
        );

        // A node that answers an error: the node's error, named.
        let mut ctx = Recorder::default()
            .node(
                "dn1",
                vec![Reach::Server("h1:3306")],
                Answer::Fails(BackendError::Server {
                    code: 1146,
                    state: "42S02".to_string(),
                    message: "Table 'db1.orders' doesn't exist".to_string(),
                }),
            )
            .node("dn2", vec![Reach::Server("h2:3306")], found(1))
            .node("dn3", vec![Reach::Server("h3:3306")], found(1));
        match find_parent(&mut ctx, parent_lookup()).await {
            Err(LookupError::Node(e)) => {
                assert_eq!(e.node, "dn1");
                assert_eq!(e.source.server_error().map(|(c, _, _)| c), Some(1146));
            }
            other => panic!("the node's error, not {:?}", other.map(|p| p.targets)),
        }
    }

    fn columns_lookup() -> ColumnsLookup {
        ColumnsLookup {
            schema: "TESTDB".to_string(),
            table: "t".to_string(),
            probes: vec![
                target("dn1", "SELECT * FROM t LIMIT 0"),
                target("dn2", "SELECT * FROM t LIMIT 0"),
            ],
        }
    }

    #[tokio::test]
    async fn a_tables_column_order_is_read_on_every_node_and_must_agree() {
        let mut ctx = Recorder::default()
            .node(
                "dn1",
                vec![Reach::Server("h1:3306")],
                Answer::Rows(vec!["id", "Name"], vec![]),
            )
            .node(
                "dn2",
                vec![Reach::Server("h2:3306")],
                Answer::Rows(vec!["ID", "name"], vec![]),
            );
        let columns = read_columns(&mut ctx, &columns_lookup()).await.unwrap();
        assert_eq!(
            columns.as_deref(),
            Some(&["id".to_string(), "Name".to_string()][..])
        );
        assert_eq!(ctx.log().len(), 4, "{:?}", ctx.log());

        let mut ctx = Recorder::default()
            .node(
                "dn1",
                vec![Reach::Server("h1:3306")],
                Answer::Rows(vec!["id", "name"], vec![]),
            )
            .node(
                "dn2",
                vec![Reach::Server("h2:3306")],
                Answer::Rows(vec!["name", "id"], vec![]),
            );
        let e = read_columns(&mut ctx, &columns_lookup()).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "table t has different columns on dataNode dn1 (id, name) and on dataNode dn2 (name, id): an INSERT without a column list cannot be placed; name the columns"
        );
    }

    #[tokio::test]
    async fn metadata_reads_come_back_as_literals_and_a_view_without_columns_is_named() {
        let mut ctx = Recorder::default()
            .node(
                "dn1",
                vec![Reach::Server("h1:3306")],
                Answer::Rows(vec!["TABLE_NAME"], vec![vec!["it's"], vec!["b\\c"]]),
            )
            .node("dn2", vec![Reach::Server("h2:3306")], Answer::Ok(0));
        let rows = literal_rows(
            &mut ctx,
            "dn1",
            "SELECT TABLE_NAME FROM information_schema.TABLES",
        )
        .await
        .unwrap();
        assert_eq!(rows, [["'it''s'"], ["'b\\\\c'"]]);
        let columns = view_columns(&mut ctx, "dn1", "TABLES").await.unwrap();
        assert_eq!(&*columns, ["TABLE_NAME"]);
        let e = view_columns(&mut ctx, "dn2", "TABLES").await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "dataNode dn2 answered no columns for information_schema.TABLES"
        );
        assert_eq!(
            ctx.log()[3],
            "dn1@h1:3306: SELECT * FROM information_schema.`TABLES` WHERE 1 = 0"
        );
    }
}
