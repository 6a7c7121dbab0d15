//! The routing result: data, not behaviour. The engine executes it; `EXPLAIN` prints it (module `explain`).

use std::sync::Arc;

pub use crate::sqltext::SavepointName;

/// One statement to run on one dataNode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The dataNode name (`dn1`).
    pub node: String,
    /// The SQL exactly as it will be sent.
    pub sql: Arc<str>,
}

/// How the OK packets of several nodes combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OkMerge {
    /// Affected rows are summed (sharded and rule-less tables).
    Sum,
    /// Every node did the same work (global-table writes): report one node's counts, as one
    /// MySQL server holding the table would.
    First,
}

/// Which server of each dataNode's dataHost a hint asked for (SPEC §6.4, §6.5; DECISIONS.md
/// items 11-12). Inside a transaction every statement uses the transaction's writeHost
/// connection whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostHint {
    /// No hint: reads follow the dataHost's `balance`, writes go to the active writeHost.
    #[default]
    None,
    /// `/*balance*/`, `/*#mycat:db_type=master*/`: the active writeHost, even for a read.
    Master,
    /// `/*#mycat:db_type=slave*/`: a read goes to a readHost whatever `balance` says (ignored for
    /// writes, as in Mycat).
    Slave,
}

/// A routed statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Statements per dataNode, sorted by dataNode name.
    pub targets: Vec<Target>,
    /// `true` when the statement only reads (read/write splitting and retries may use it).
    pub read_only: bool,
    pub ok_merge: OkMerge,
    /// How the rows of several nodes combine into the client's result; `None` for one node
    /// or when the nodes' rows are simply concatenated in arrival order.
    pub merge: Option<Merge>,
    /// For a read any of several nodes can answer (no table, or only global tables): the
    /// statements for the other nodes, to use when the target's server cannot be reached.
    pub fallback: Vec<Target>,
    /// DDL: commits an open transaction first, as MySQL does, and never runs inside one.
    pub ddl: bool,
    /// The server a hint asked for; [`HostHint::None`] without one.
    pub host: HostHint,
    /// The result is `SHOW [SESSION|GLOBAL] VARIABLES`' rows (`Variable_name`, `Value`): the
    /// rows `version` and `version_comment` answer what the gateway announces
    /// ([`crate::version::function_version`], [`crate::version::VERSION_COMMENT`]), as `SELECT
    /// @@version` and the greeting do, not the dataNode server's own.
    pub server_variables: bool,
    /// A table maintenance statement (`CHECK TABLE`, ...; module `maintenance`), whose rows
    /// name each table `database.table` in their first column: per target (in the order of
    /// `targets`), the tables its statement names, to give those rows the name the client
    /// uses (`schema.table`). The nodes' rows then come in target order, each node's together.
    pub table_names: Option<Arc<[Vec<TableName>]>>,
    /// The logical tables the statement names (upper-cased, as routing resolved them; empty
    /// for statements routed without parsing), for the statement recorder (`show
    /// @@sql.sum.table`).
    pub tables: Arc<[String]>,
}

impl Plan {
    /// A read of `targets` with nothing to merge (their rows passed on as they come): no
    /// fallback node, no hint, no tables recorded.
    pub fn read(targets: Vec<Target>) -> Plan {
        Plan::simple(targets, true)
    }

    /// A write of `targets` (affected rows summed), otherwise as [`Plan::read`].
    pub fn write(targets: Vec<Target>) -> Plan {
        Plan::simple(targets, false)
    }

    /// `targets` run as they are: nothing to merge, no fallback node, no hint, no tables
    /// recorded; `read_only` as given.
    pub fn simple(targets: Vec<Target>, read_only: bool) -> Plan {
        Plan {
            tables: Default::default(),
            targets,
            read_only,
            ok_merge: OkMerge::Sum,
            merge: None,
            fallback: Vec::new(),
            ddl: false,
            host: HostHint::None,
            server_variables: false,
            table_names: None,
        }
    }
}

/// One table of a table maintenance statement as one dataNode names it in its rows
/// ([`Plan::table_names`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    /// The dataNode's physical database.
    pub database: String,
    /// The table name as the statement wrote it (unquoted).
    pub table: String,
    /// The logical schema the client named it in.
    pub schema: String,
}

impl TableName {
    /// The entry of `names` that `value` (a row's `Table`, `database.table`) names: the same
    /// database and, without regard to ASCII case, table; else the first entry of that
    /// database. Returns it with `value`'s table part.
    pub fn named<'n, 'v>(
        names: &'n [TableName],
        value: &'v str,
    ) -> Option<(&'n TableName, &'v str)> {
        let rest = |n: &TableName| {
            value
                .strip_prefix(n.database.as_str())
                .and_then(|r| r.strip_prefix('.'))
        };
        let entry = names
            .iter()
            .find(|n| rest(n).is_some_and(|t| t.eq_ignore_ascii_case(&n.table)))
            .or_else(|| names.iter().find(|n| rest(n).is_some()))?;
        Some((entry, rest(entry)?))
    }
}

/// A column of the nodes' results, by position. The statement sent to each node may carry extra
/// columns after the client's (sort keys and collation weights the merge needs): they are
/// addressed from the end, because a `*` in the select list makes the client's column count
/// known only when the result arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnRef {
    /// The `i`-th column the client sees (0-based, after `*` expansion).
    Visible(usize),
    /// The `i`-th extra column (0-based among [`Merge::hidden`]).
    Hidden(usize),
}

/// One key rows are ordered or grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    /// The key's value.
    pub column: ColumnRef,
    /// `WEIGHT_STRING(RTRIM(key))` computed by the node: string keys compare by these bytes, so
    /// the node's collation decides (case- and accent-insensitive `_ci` collations, trailing
    /// spaces ignored as PAD SPACE collations do). `None` when the key cannot be a string.
    pub weight: Option<ColumnRef>,
    /// Descending order (MySQL: NULL is the smallest value, first ascending, last descending).
    pub desc: bool,
}

/// How an aggregate column's per-node values combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// `COUNT(...)`: per-node counts summed.
    Count,
    /// `SUM(x)`: summed exactly (DECIMAL as decimal, integers as integers, DOUBLE as double);
    /// NULL when every node's sum is NULL.
    Sum,
    /// `MIN(x)` / `MAX(x)`: compared like sort keys (`weight` for strings).
    Min {
        weight: Option<ColumnRef>,
    },
    Max {
        weight: Option<ColumnRef>,
    },
    /// `AVG(x)`: each node also returns `SUM(x)` and `COUNT(x)` in extra columns; the result is
    /// sum / count rounded to the AVG column's decimals, as MySQL computes it.
    Avg {
        sum: ColumnRef,
        count: ColumnRef,
    },
    /// `COUNT(DISTINCT ...)`, `SUM(DISTINCT x)`, `AVG(DISTINCT x)`: the nodes group by the
    /// group keys and the DISTINCT arguments ([`Grouping::sub_keys`]), so each node row holds
    /// the aggregate over one distinct value (COUNT 1 or 0 for NULL, SUM and AVG the value
    /// itself, typed as MySQL types the aggregate); rows whose sub-keys equal the previous
    /// row's (the same value from another node) are skipped, the others counted, summed or
    /// averaged. MySQL ignores NULL values (and COUNT a tuple with a NULL member).
    Distinct(DistinctOp),
    /// `GROUP_CONCAT([DISTINCT] e, ... [ORDER BY ...] [SEPARATOR 's'])`: each node row holds
    /// the concatenation of one sub-group (ordered by [`Grouping::sub_keys`]); the pieces are
    /// joined with the separator (`separator`: the literal, returned by the nodes) in the
    /// merged order and cut at `group_concat_max_len` bytes (`max_len`: the session value, as
    /// the nodes report it), at a character boundary, as MySQL cuts. `distinct` skips a piece
    /// whose sub-keys equal the previous piece's.
    GroupConcat {
        distinct: bool,
        separator: Option<ColumnRef>,
        max_len: ColumnRef,
    },
}

/// Which aggregate an [`Aggregate::Distinct`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistinctOp {
    Count,
    Sum,
    Avg,
}

/// Groups that span nodes: rows with equal keys are combined into one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grouping {
    /// The group keys (`GROUP BY` items, or every column for `SELECT DISTINCT`). Empty for
    /// aggregates without `GROUP BY`: all rows form one group.
    pub keys: Vec<SortKey>,
    /// Aggregate columns and how each combines; other columns keep the first row's value (as
    /// MySQL returns any value of the group for them).
    pub aggregates: Vec<(ColumnRef, Aggregate)>,
    /// `HAVING`, evaluated on the merged groups (the nodes' statements carry none).
    pub having: Option<Having>,
    /// Keys the nodes also group by, after `keys` (the arguments of DISTINCT aggregates and
    /// the ORDER BY of GROUP_CONCAT): the nodes return one row per group and sub-key value,
    /// sorted by the group keys and then these, so equal values from several nodes arrive
    /// one after the other. Empty when the nodes return one row per group.
    pub sub_keys: Vec<SortKey>,
    /// (With sub-keys and no group keys the nodes' statements carry a `GROUP BY` the
    /// client's has not: when no node returns a row, the merge still returns the one row of
    /// the implicit group, COUNT 0 and every other value NULL, as MySQL does.)
    /// The most bytes a group's GROUP_CONCAT may hold while merging (server.xml
    /// `maxPacketSize`: no row longer than the gateway's `max_allowed_packet` can reach a
    /// client); past it the statement fails with 1235 rather than grow.
    pub max_group_bytes: usize,
}

/// A `HAVING` condition on merged groups: comparisons of an aggregate (or group column) with a
/// number, combined with AND / OR / NOT, in SQL's three-valued logic (a comparison with NULL is
/// unknown, and an unknown condition drops the group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Having {
    And(Box<Having>, Box<Having>),
    Or(Box<Having>, Box<Having>),
    Not(Box<Having>),
    /// `column <op> number` (the number as written, e.g. `-2.5`).
    Compare {
        column: ColumnRef,
        op: CompareOp,
        number: String,
    },
    /// `column IS [NOT] NULL`.
    IsNull {
        column: ColumnRef,
        negated: bool,
    },
}

/// A comparison operator of [`Having::Compare`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

/// How the rows of several dataNodes combine (the merge primitives, in order): a k-way merge of
/// the nodes' sorted streams by `node_order`, grouping of equal keys, a full sort by `order`
/// when the node order could not already be the final one, `LIMIT`, and finally the extra
/// columns cut off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    /// Extra columns at the end of each node's result, not sent to the client.
    pub hidden: usize,
    /// The order every node returns its rows in (each node's statement carries this
    /// `ORDER BY`); empty when the nodes' rows are unordered and are interleaved as they come.
    pub node_order: Vec<SortKey>,
    pub grouping: Option<Grouping>,
    /// The client's order, when the rows must be collected and sorted after grouping (groups
    /// ordered by an aggregate, for instance); empty when `node_order` already gives it.
    pub order: Vec<SortKey>,
    /// Rows to skip and then to return: `LIMIT offset, count` applied after the merge.
    pub limit: Option<(u64, u64)>,
}

/// One piece of session state a client set, replayed on each backend connection the session
/// uses (connections come back from the pool reset to the server's defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSet {
    /// What it sets (`names`, `isolation`, a lower-cased system variable, or `@name`): a later
    /// SET of the same key replaces it.
    pub key: String,
    /// The assignment as the client wrote it, without `SET` (`NAMES utf8mb4`, `sql_mode =
    /// 'ANSI'`, `@x = 5`).
    pub assignment: String,
    /// Sent as its own `SET` statement (NAMES, CHARACTER SET, TRANSACTION), not joined with
    /// other assignments.
    pub standalone: bool,
    /// A user variable whose value is an expression: evaluated once when set, and replayed as
    /// the value it had then.
    pub evaluate: bool,
}

/// What a column of [`Local::Counts`] counts among the session's last statement's conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// All of them (`@@warning_count`).
    Warnings,
    /// Those of level `Error` (`@@error_count`).
    Errors,
}

/// What the session does itself, without a dataNode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Local {
    /// `USE db` (the name unquoted).
    Use(String),
    /// `SHOW DATABASES` / `SHOW SCHEMAS` [`LIKE 'pattern'`].
    ShowDatabases(Option<String>),
    /// `SHOW CREATE DATABASE name` of a logical schema.
    ShowCreateDatabase(String),
    /// `SHOW GRANTS [FOR CURRENT_USER | own user]`: what server.xml lets the user do, as MySQL
    /// GRANT statements (the column label, the statements).
    ShowGrants { label: String, grants: Vec<String> },
    /// `SHOW WARNINGS` [`LIMIT [offset,] n`]: the warnings of the session's last statement, kept
    /// from the backend connections that ran it (which return to their pools right after), or
    /// its error when it failed; `SHOW ERRORS` (`errors`): only the rows of level `Error`.
    ShowWarnings {
        offset: usize,
        limit: Option<usize>,
        errors: bool,
    },
    /// `SHOW [FULL] TABLES [LIKE 'p']` of a schema without a default dataNode: the configured
    /// tables, lower-cased (SPEC §5.16).
    ShowTables {
        schema: String,
        full: bool,
        tables: Vec<String>,
    },
    /// `SET autocommit = 0|1` alone.
    SetAutocommit(bool),
    /// `SET autocommit = @var` alone (mysqldump `--no-autocommit`'s restore of
    /// `@OLD_AUTOCOMMIT`): the value of the session's user variable `@var` (as written).
    SetAutocommitFrom(String),
    /// `SET XA = ON|OFF` (Mycat's, SPEC §7.4), alone: the session's next transaction commits
    /// in two phases.
    SetXa(bool),
    /// A `SET` of session state: `autocommit` (kept by the session itself) and the items every
    /// backend connection the session uses must carry.
    Set {
        autocommit: Option<bool>,
        items: Vec<SessionSet>,
    },
    /// `BEGIN` / `START TRANSACTION`.
    Begin,
    /// `COMMIT [WORK] [AND [NO] CHAIN] [[NO] RELEASE]`.
    Commit(Completion),
    /// `ROLLBACK [WORK] [AND [NO] CHAIN] [[NO] RELEASE]`.
    Rollback(Completion),
    /// `SAVEPOINT name`: set on every backend connection of the open transaction (and on
    /// those that join it later); outside a transaction, accepted and nothing done (MySQL's).
    Savepoint(SavepointName),
    /// `ROLLBACK [WORK] TO [SAVEPOINT] name`: every connection of the transaction back to it;
    /// the savepoint stays, later ones go.
    RollbackToSavepoint(SavepointName),
    /// `RELEASE SAVEPOINT name`: removes it and every later savepoint.
    ReleaseSavepoint(SavepointName),
    /// `SELECT @@version_comment [LIMIT 1]` (the label as written).
    VersionComment(String),
    /// `SELECT DATABASE()` / `SELECT SCHEMA()` (the label as written).
    Database(String),
    /// `SELECT VERSION()` / `SELECT @@version` (the label as written): the version the greeting
    /// announced ([`crate::version::server_version`]).
    Version(String),
    /// `SELECT @@autocommit` / `SELECT @@session.autocommit` (the label as written): the
    /// session's own setting, which its backend connections do not carry.
    Autocommit(String),
    /// `SELECT @@warning_count` / `SELECT @@session.warning_count` (the label as written) and
    /// `SHOW COUNT(*) WARNINGS` (labelled `@@session.warning_count`, as MySQL does): how many
    /// warnings the session's last statement had on its dataNodes, kept by the gateway as
    /// [`Local::ShowWarnings`]'s rows are (any node asked now would count its own).
    WarningCount(String),
    /// `SELECT @@error_count` / `SELECT @@session.error_count` (the label as written) and `SHOW
    /// COUNT(*) ERRORS` (labelled `@@session.error_count`): how many of the session's last
    /// statement's conditions are errors (1 after a failed statement, else 0), as
    /// [`Local::WarningCount`].
    ErrorCount(String),
    /// A SELECT of several of `@@[session.]warning_count` and `@@[session.]error_count`, or of
    /// one with an alias (`SELECT @@warning_count AS w, @@error_count`): per column, its label
    /// (the alias, or the variable as written) and what it counts, as [`Local::WarningCount`]
    /// and [`Local::ErrorCount`] do.
    Counts(Vec<(String, Condition)>),
    /// `SELECT LAST_INSERT_ID()` / `SELECT @@identity` (with the column label to use): the
    /// session's last insert id (SPEC §5.15).
    LastInsertId(String),
    /// `SELECT FOUND_ROWS()` (with the column label to use): the session's found-rows count of
    /// its last result set, kept by the gateway (a pooled connection asked now would answer its
    /// own last statement's). MySQL's rule: after `SELECT SQL_CALC_FOUND_ROWS ... LIMIT`, the
    /// rows without the LIMIT; after any other result set, the rows it returned.
    FoundRows(String),
    /// `SELECT ROW_COUNT()` (with the column label to use): the session's `ROW_COUNT()`, kept
    /// by the gateway as MariaDB keeps it (a pooled connection asked now would answer its own
    /// last statement's, perhaps another client's): the affected rows of the last statement
    /// that ended with an OK packet (0 for DDL, SET, USE, ...), -1 after a result set or an
    /// error.
    RowCount(String),
    /// A `/*!NNNNN ... */` version comment alone, answered OK as Mycat does.
    Ok,
    /// `SELECT @@[session.|global.]max_allowed_packet` (the label as written): the gateway's own
    /// limit (`maxPacketSize`), which is what the client may send through it.
    MaxAllowedPacket(String),
    /// `SELECT CONNECTION_ID()` (the label as written): the gateway's connection id, the one
    /// `KILL` takes (a backend would answer its own thread id).
    ConnectionId(String),
    /// `KILL [HARD|SOFT] [CONNECTION|QUERY] id` (MySQL/MariaDB syntax): `id` is a gateway
    /// connection id (`CONNECTION_ID()`, the handshake's); `query` when only the running
    /// statement is to be interrupted.
    Kill { query: bool, id: u64 },
    /// `LOCK TABLES ...` (SPEC §7.6): run on every dataNode of the tables, each node's
    /// statement naming its tables only; the connections then stay with the session until
    /// `UNLOCK TABLES`.
    LockTables(super::LockTables),
    /// `UNLOCK TABLES`: the session's table locks go (OK when it holds none).
    UnlockTables,
    /// `EXPLAIN <statement>` (Mycat's meaning): the statements manx would send, one row per
    /// dataNode with columns `DATA_NODE` and `SQL`.
    Explain(Box<Plan>),
    /// `EXPLAIN FORMAT=TREE <statement>`: the whole plan, merge steps included, as one text
    /// cell in a column `EXPLAIN` (MySQL 8's tree form; module `explain`).
    ExplainTree(Box<Plan>),
}

/// What follows the end of a transaction (`COMMIT` / `ROLLBACK`'s optional clauses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Nothing (also `AND NO CHAIN`, `NO RELEASE`).
    Plain,
    /// `AND CHAIN`: a new transaction begins at once, with the same characteristics.
    Chain,
    /// `RELEASE`: the client connection is closed once the answer is sent.
    Release,
}

/// An INSERT into an ER child table placed where its parent row is (SPEC §5.12: a child below
/// the second level, or whose parent is not sharded on `parentKey`). The session asks the
/// parent's nodes in order and runs the INSERT on the first that holds the parent row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentLookup {
    /// Upper-cased child and parent table names (for messages).
    pub child: String,
    pub parent: String,
    /// `SELECT 1 FROM parent WHERE parentKey = value LIMIT 1`, one per node of the parent, in
    /// dataNode order.
    pub probes: Vec<Target>,
    /// The INSERT for each of those nodes, in the same order.
    pub inserts: Vec<Target>,
}

/// A statement that needs global sequence values before it can be routed (SPEC §5.17): the
/// session draws a value for each edit that names a sequence, writes the statement, and
/// routes the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceRewrite {
    /// The statement the edits refer to.
    pub sql: String,
    /// Text put in front of the rewritten statement before it is routed (a `/*balance*/` hint).
    pub prefix: String,
    /// Byte ranges of `sql` to replace, in order, each by `before`, a value of `sequence` (when
    /// set) and `after`.
    pub edits: Vec<SequenceEdit>,
    /// The values are the keys of an `autoIncrement` table: the first one is reported as the
    /// insert id (OK packet and `LAST_INSERT_ID()`).
    pub reports_id: bool,
}

/// One replacement of a [`SequenceRewrite`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceEdit {
    pub range: std::ops::Range<usize>,
    pub before: String,
    /// Upper-cased sequence name, or `None` for a fixed text.
    pub sequence: Option<String>,
    pub after: String,
}

/// The router's answer for one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    Plan(Plan),
    Local(Local),
    /// The node depends on data: found by the session before the statement runs.
    Lookup(ParentLookup),
    /// The statement needs sequence values first.
    Sequence(SequenceRewrite),
    /// A query of `information_schema`, answered for the user's logical schemas once the
    /// session knows them (module `metadata`).
    Metadata(super::metadata::MetadataQuery),
    /// An INSERT without a column list whose placement needs the table's column order, or a
    /// SELECT over several dataNodes whose GROUP BY names a select alias that may be a column
    /// of the table: the session reads the columns ([`super::ColumnOrders`]) and routes the
    /// statement again (one table at a time).
    Columns(ColumnsLookup),
}

/// The table whose column order a statement needs ([`Routed::Columns`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnsLookup {
    /// The logical schema and the table name as the statement spells it: the key of
    /// [`super::ColumnOrders`].
    pub schema: String,
    pub table: String,
    /// `SELECT * FROM <table as the statement spells it> LIMIT 0` for each dataNode of the
    /// table: their result columns are its column order, which must agree.
    pub probes: Vec<Target>,
}
