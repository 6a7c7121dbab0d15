//! The routing result: data, not behaviour. The engine executes it; `EXPLAIN` will print it.

use std::sync::Arc;

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
    /// Rows to skip and to return after concatenating the nodes' rows (`LIMIT` without
    /// `ORDER BY` over several nodes; each node was sent `LIMIT offset + count`).
    pub limit: Option<(u64, u64)>,
    /// For a read any of several nodes can answer (no table, or only global tables): the
    /// statements for the other nodes, to use when the target's server cannot be reached.
    pub fallback: Vec<Target>,
    /// DDL: commits an open transaction first, as MySQL does, and never runs inside one.
    pub ddl: bool,
    /// The server a hint asked for; [`HostHint::None`] without one.
    pub host: HostHint,
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
    /// `SHOW [FULL] TABLES [LIKE 'p']` of a schema without a default dataNode: the configured
    /// tables, lower-cased (SPEC §5.16).
    ShowTables {
        schema: String,
        full: bool,
        tables: Vec<String>,
    },
    /// `SET autocommit = 0|1` (with other harmless assignments).
    SetAutocommit(bool),
    /// `SET NAMES cs [COLLATE c]`.
    SetNames(String),
    /// A `SET` of session variables manx acknowledges (the text is kept for the session).
    SetOther(String),
    Begin,
    Commit,
    Rollback,
    /// `SELECT @@version_comment [LIMIT 1]`.
    VersionComment,
    /// `SELECT DATABASE()` / `SELECT SCHEMA()`.
    Database,
    /// A `/*!NNNNN ... */` version comment alone, answered OK as Mycat does.
    Ok,
    /// `EXPLAIN <statement>` (Mycat's meaning): the statements manx would send, one row per
    /// dataNode with columns `DATA_NODE` and `SQL`.
    Explain(Plan),
}

/// The router's answer for one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    Plan(Plan),
    Local(Local),
}
