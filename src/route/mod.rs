//! Routing: one SQL statement and the session's schema in, a [`Routed`] out. Pure: no I/O.
//!
//! Statements are classified by a keyword scanner first (session commands and `SHOW`, answered
//! or forwarded without parsing), then parsed with `sqlparser`'s MySQL dialect. The tables a
//! statement names decide the dataNodes: a sharded table by its rule's function applied to the
//! conditions on its column, a global table by one node for reads and all for writes, a rule-less
//! table by all its nodes (SPEC §5). What manx cannot answer correctly is refused with an error
//! that names the construct; nothing is sent for a refused statement.

mod access;
mod admit;
mod affinity;
mod analyze;
mod boundaries;
mod builtins;
#[cfg(test)]
mod depth_tests;
pub mod dynamic;
pub mod explain;
mod forms;
pub mod function;
mod horizon;
pub mod lex;
mod lock;
mod maintenance;
mod metadata;
mod plan;
mod rewrite;
mod scan;
mod set;
mod shape;
mod statement;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::config::{Config, ConfigError, ConfigErrors, TableKind};
use function::{BuildContext, FunctionError, PartitionFunction};

pub use access::{Access, TableAccess};
pub use affinity::session_state;
pub use analyze::Partitions;
pub use lex::SqlMode;
pub use lex::split_statements;
pub use lock::{LockTables, LockedTable, dropped_tables};
pub use metadata::{MetadataQuery, Viewer};
pub use plan::{
    Aggregate, ColumnRef, ColumnsLookup, CompareOp, Completion, Condition, DistinctOp, Grouping,
    Having, HostHint, Local, Merge, OkMerge, ParentLookup, Plan, Routed, SequenceEdit,
    SequenceRewrite, SessionSet, SortKey, TableName, Target,
};
pub use rewrite::{limit_offset, placeholders, reads_no_table};
pub use scan::{unquote, without_comments};
pub use set::{check_client_charset, check_storage_engine, switch_value};
pub use shape::{CAPACITY as PLAN_CACHE_CAPACITY, PlanCache, statistics_key};
pub use statement::like;

/// A statement manx refuses: the kind of refusal and the message the client reads. The front
/// end gives each [`Refusal`] its MySQL errno and SQLSTATE, once (`frontend::error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct RouteError {
    pub refusal: Refusal,
    pub message: String,
}

/// Why the router refuses a statement. Each kind is one MySQL error the client gets (named
/// here; the front end maps it): the routing errors Mycat answers and the refusals MySQL
/// itself would give for the same statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A statement the router cannot place or read: Mycat's routing error (1064, with MySQL's
    /// SQLSTATE for it, DECISIONS.md item 20).
    Routing,
    /// Read and understood, but not forwarded by the gateway (1235 ER_NOT_SUPPORTED_YET).
    NotSupported,
    /// A database (logical schema) the user may not use (1044 ER_DBACCESS_DENIED_ERROR).
    DatabaseAccessDenied,
    /// A statement that needs a privilege the gateway does not pass on (1227
    /// ER_SPECIFIC_ACCESS_DENIED_ERROR).
    PrivilegeRequired,
    /// Mycat's DML privilege check of server.xml's table privileges (Mycat's 3012).
    DmlPrivilege,
    /// A write by a `readOnly` user (Mycat's 1495 `User readonly`).
    ReadOnly,
    /// 1049 ER_BAD_DB_ERROR.
    UnknownDatabase,
    /// 1046 ER_NO_DB_ERROR.
    NoDatabase,
    /// 1146 ER_NO_SUCH_TABLE.
    NoSuchTable,
    /// 1054 ER_BAD_FIELD_ERROR.
    UnknownColumn,
    /// 1136 ER_WRONG_VALUE_COUNT_ON_ROW.
    ValueCount,
    /// 1231 ER_WRONG_VALUE_FOR_VAR.
    WrongValue,
    /// 1065 ER_EMPTY_QUERY.
    EmptyQuery,
    /// 1791 ER_UNKNOWN_EXPLAIN_FORMAT.
    UnknownExplainFormat,
    /// A dataHost's `information_schema` does not have the columns the gateway maps
    /// (1105 ER_UNKNOWN_ERROR).
    MetadataMismatch,
    /// A statement nested deeper than the parser goes ([`forms::RECURSION_LIMIT`]): MariaDB's
    /// answer to a statement too deep for its stack (1436 ER_STACK_OVERRUN_NEED_MORE).
    TooDeep,
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl RouteError {
    /// A refusal of kind `refusal` with `message`.
    pub fn new(refusal: Refusal, message: impl Into<String>) -> Self {
        RouteError {
            refusal,
            message: message.into(),
        }
    }

    /// [`Refusal::NotSupported`] with `message`: what the gateway does not forward (modules
    /// `admit`, `set`).
    pub fn not_supported(message: impl Into<String>) -> Self {
        RouteError::new(Refusal::NotSupported, message)
    }

    /// [`Refusal::Routing`] with `message`: Mycat's routing error.
    pub fn syntax(message: impl Into<String>) -> Self {
        RouteError::new(Refusal::Routing, message)
    }

    /// The parser's error: [`Refusal::TooDeep`] when the statement nests deeper than
    /// [`forms::RECURSION_LIMIT`], Mycat's routing error (1064) with the parser's message
    /// otherwise.
    pub fn parser(e: sqlparser::parser::ParserError) -> Self {
        match e {
            sqlparser::parser::ParserError::RecursionLimitExceeded => RouteError::new(
                Refusal::TooDeep,
                format!(
                    "Thread stack overrun: the statement nests deeper than the gateway's parser goes ({} levels); simplify it",
                    forms::RECURSION_LIMIT
                ),
            ),
            e => RouteError::syntax(e.to_string()),
        }
    }

    /// [`Refusal::UnknownDatabase`]: `Unknown database 'name'`.
    pub fn unknown_database(name: &str) -> Self {
        RouteError::new(
            Refusal::UnknownDatabase,
            format!("Unknown database '{name}'"),
        )
    }

    /// [`Refusal::NoDatabase`]: `No database selected`.
    pub fn no_database() -> Self {
        RouteError::new(Refusal::NoDatabase, "No database selected")
    }

    /// [`Refusal::EmptyQuery`]: `Query was empty`.
    pub fn empty() -> Self {
        RouteError::new(Refusal::EmptyQuery, "Query was empty")
    }
}

/// The column order of tables as their dataNodes define them, by (logical schema, table name
/// as the statement spells it — the physical table the statement reaches, which a backend with
/// `lower_case_table_names=0` tells apart from another spelling): what an INSERT without a
/// column list means (module `statement::insert`), and whether a GROUP BY name over several
/// dataNodes is a column or a select alias (module `horizon`). The session fills it when the
/// router asks ([`Routed::Columns`]); DDL through manx empties it before and after it runs, and
/// an order read while a DDL ran is not kept ([`ColumnOrders::epoch`]); each configuration
/// generation starts with an empty one.
#[derive(Debug, Default)]
pub struct ColumnOrders {
    tables: std::sync::RwLock<std::collections::HashMap<SchemaTable, Arc<[String]>>>,
    epoch: std::sync::atomic::AtomicU64,
}

/// A logical schema and a table name as spelled.
type SchemaTable = (String, String);

impl ColumnOrders {
    /// The columns of `table` (as spelled) of `schema`, in order, if known.
    pub fn get(&self, schema: &str, table: &str) -> Option<Arc<[String]>> {
        self.tables
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(schema.to_string(), table.to_string()))
            .cloned()
    }

    /// How many times the orders were forgotten: read it before reading a table's order, and
    /// hand it to [`ColumnOrders::insert`].
    pub fn epoch(&self) -> u64 {
        self.epoch.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Records the columns of `table` (as spelled) of `schema`, read since `epoch`; dropped
    /// when a DDL forgot the orders meanwhile (the columns may predate it).
    pub fn insert(&self, schema: &str, table: &str, columns: Arc<[String]>, epoch: u64) {
        let mut tables = self.tables.write().unwrap_or_else(|p| p.into_inner());
        if self.epoch() == epoch {
            tables.insert((schema.to_string(), table.to_string()), columns);
        }
    }

    /// Forgets every table (around DDL: any table may change).
    pub fn clear(&self) {
        let mut tables = self.tables.write().unwrap_or_else(|p| p.into_inner());
        self.epoch.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tables.clear();
    }
}

/// What routing needs of the session besides the statement: its current schema, the lexing
/// part of its `sql_mode`, what its user may reach, and the column orders read so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionView<'a> {
    /// The current logical schema (`USE`), if any.
    pub schema: Option<&'a str>,
    /// How the backend lexes the session's statements (module `lex`).
    pub mode: SqlMode,
    /// The user's schemas, `readOnly` and `<privileges>`; `None` for no restriction (the
    /// gateway's own statements and tests of routing alone).
    pub access: Option<&'a Access>,
    /// Tables' column orders (INSERT without a column list, GROUP BY names that may be
    /// columns); `None`: such an INSERT into a table whose placement needs them gets Mycat's
    /// error, such a GROUP BY over several dataNodes a refusal naming the name (`manx route`,
    /// routing tests).
    pub columns: Option<&'a ColumnOrders>,
    /// The session's `character_set_client` and `character_set_results` (`None`: NULL) when
    /// they are not the backends' utf8mb4 (the gateway converts, the backends' connections
    /// say utf8mb4): `@@character_set_client` and `@@character_set_results` answer them.
    /// `None` for a session in utf8mb4.
    pub charsets: Option<(&'static str, Option<&'static str>)>,
    /// The session's `FOUND_ROWS()`, `LAST_INSERT_ID()` and `ROW_COUNT()`, which a statement
    /// reading them gets as literals (a pooled connection's own would be another statement's);
    /// `None` leaves them to the backend (routing tests, `manx route`, the text of an SQL
    /// `PREPARE`, which must route the same at each `EXECUTE`).
    pub counters: Option<Counters>,
}

/// The counters the gateway keeps for a session as MariaDB keeps them for a connection, as
/// the previous statement left them: MariaDB's `FOUND_ROWS()`, `LAST_INSERT_ID()` (also
/// `@@identity`, `@@last_insert_id`) and `ROW_COUNT()` answer that value for the whole of the
/// next statement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// `FOUND_ROWS()`.
    pub found_rows: u64,
    /// `LAST_INSERT_ID()`.
    pub last_insert_id: u64,
    /// `ROW_COUNT()` (-1 after a result set or an error).
    pub row_count: i64,
    /// `CONNECTION_ID()`: the gateway's connection id (the one `KILL` takes; a backend would
    /// answer its own pooled connection's thread id, another one each statement).
    pub connection_id: u32,
}

/// One of the [`Counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// [`Counters::found_rows`].
    FoundRows,
    /// [`Counters::last_insert_id`].
    LastInsertId,
    /// [`Counters::row_count`].
    RowCount,
    /// [`Counters::connection_id`].
    ConnectionId,
}

impl Counters {
    /// `counter`'s value as an SQL literal: the number, a negative one in parentheses (so
    /// that `5-ROW_COUNT()` does not become `5--1`).
    pub fn literal(&self, counter: Counter) -> String {
        match counter {
            Counter::FoundRows => self.found_rows.to_string(),
            Counter::LastInsertId => self.last_insert_id.to_string(),
            Counter::RowCount if self.row_count < 0 => format!("({})", self.row_count),
            Counter::RowCount => self.row_count.to_string(),
            Counter::ConnectionId => self.connection_id.to_string(),
        }
    }
}

impl<'a> SessionView<'a> {
    /// A view with only a current schema: default `sql_mode`, no access restriction.
    pub fn schema(schema: Option<&'a str>) -> Self {
        SessionView {
            schema,
            ..SessionView::default()
        }
    }
}

/// A sharding rule bound to a table: the column and the function.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Upper-cased column name.
    pub column: String,
    pub function: Arc<dyn PartitionFunction>,
}

/// A configured table as routing sees it.
#[derive(Debug, Clone)]
pub struct TableRoute {
    /// Upper-cased logical name.
    pub name: String,
    /// The name as schema.xml spells it.
    pub spelled: String,
    pub kind: TableKind,
    /// dataNode names; the position is the partition index.
    pub nodes: Vec<String>,
    pub rule: Option<Rule>,
    /// Upper-cased `primaryKey`, if configured.
    pub primary_key: Option<String>,
    /// `needAddLimit` (default true): whether `sqlMaxLimit` applies to this table.
    pub need_add_limit: bool,
    /// `autoIncrement="true"`: an INSERT without the primary key gets it from the global
    /// sequence named after the table (SPEC §5.17).
    pub auto_increment: bool,
}

impl TableRoute {
    /// The partition index of one routing value, or Mycat's error for it, naming the table,
    /// column and value.
    pub fn partition_of(&self, value: &str) -> Result<usize, RouteError> {
        let rule = self
            .rule
            .as_ref()
            .expect("only sharded tables are partitioned");
        let v = analyze::routing_value(value);
        let index = rule.function.calculate(v).map_err(|e| {
            RouteError::syntax(format!(
                "table {} column {} value '{v}' cannot be routed: {e}",
                self.name, rule.column
            ))
        })?;
        match index {
            None => Err(RouteError::syntax(format!(
                "can't find datanode for sharding column:{} val:{v} (table {})",
                rule.column, self.name
            ))),
            Some(i) if i < 0 || i as usize >= self.nodes.len() => Err(RouteError::syntax(format!(
                "Can't find a valid data node for specified node index :{} -> {} -> {v} -> Index : {i}",
                self.name, rule.column
            ))),
            Some(i) => Ok(i as usize),
        }
    }

    /// The partitions a `BETWEEN lo AND hi` on the rule column may touch.
    pub fn partitions_between(&self, lo: &str, hi: &str) -> Result<Partitions, RouteError> {
        let rule = self
            .rule
            .as_ref()
            .expect("only sharded tables are partitioned");
        let r = rule.function.route_range(lo, hi).map_err(|e| {
            RouteError::syntax(format!(
                "table {} column {} range '{lo}'..'{hi}' cannot be routed: {e}",
                self.name, rule.column
            ))
        })?;
        Ok(analyze::range_partitions(r, self.nodes.len()))
    }
}

/// Builds PartitionByCRC32PreSlot for one table: its slot table lives in
/// `ruledata/<tableRule>_<SCHEMA>_<TABLE>.properties` of the config directory (Mycat 1.6.7;
/// `<tableRule>_<TABLE>` for 1.6.5), written with the even split when missing, as Mycat does,
/// so placement stays put if dataNodes are added later.
fn crc32_for_table(
    config: &Config,
    schema: &str,
    table: &str,
    data_nodes: &[String],
    rule: &str,
    ctx: &BuildContext<'_>,
) -> Result<Arc<dyn PartitionFunction>, FunctionError> {
    let per_table = config.system.mycat_version >= crate::config::MycatVersion::V1_6_7_5;
    let name = if per_table {
        format!("{rule}_{schema}_{table}")
    } else {
        format!("{rule}_{table}")
    };
    let properties = config
        .table_rules
        .get(rule)
        .and_then(|r| config.functions.get(&r.function))
        .map(|f| f.properties.clone())
        .unwrap_or_default();
    let dir = config.dir.join("ruledata");
    let path = dir.join(format!("{name}.properties"));
    let content = match std::fs::read(&path) {
        // Mycat reads the file as ISO-8859-1.
        Ok(bytes) => bytes.into_iter().map(char::from).collect::<String>(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // 1.6.7 splits over the table's dataNodes, 1.6.5 over the `count` property.
            let count = properties
                .get("count")
                .and_then(|c| function::java::parse_int(c));
            let nodes = match (per_table, count) {
                (false, Some(n)) if n > 0 => n as usize,
                _ => data_nodes.len(),
            };
            let text = function::hash::crc32_default_rule_data(nodes);
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::write(&path, &text))
                .map_err(|e| {
                    FunctionError::File(format!("cannot write {}: {e}", path.display()))
                })?;
            text
        }
        Err(e) => {
            return Err(FunctionError::File(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    let table_ctx = BuildContext {
        version: ctx.version,
        read_map_file: ctx.read_map_file,
        time_zone: ctx.time_zone,
        now_ms: ctx.now_ms,
        table: Some(function::TableContext {
            data_node_count: data_nodes.len(),
            rule_data: Some(&content),
        }),
    };
    function::build(
        "io.mycat.route.function.PartitionByCRC32PreSlot",
        &properties,
        &table_ctx,
    )
}

/// A logical schema as routing sees it.
#[derive(Debug, Clone)]
pub struct SchemaRoute {
    pub name: String,
    pub default_node: Option<String>,
    pub tables: BTreeMap<String, TableRoute>,
    /// Every dataNode of the schema (tables' and default), sorted.
    pub nodes: Vec<String>,
    /// `sqlMaxLimit` when ≥ 0: the `LIMIT` Mycat adds to single-table SELECTs without one.
    pub sql_max_limit: Option<u64>,
    /// Tables of other schemas (upper-case name → that schema) with rows in the physical
    /// database of this schema's default dataNode (the same dataHost and database): an
    /// undeclared name here would reach them past their schema's rules and `<privileges>`.
    pub shadowed: BTreeMap<String, String>,
}

impl SchemaRoute {
    /// Checks that an undeclared table `name` (upper case) may be placed on the default
    /// dataNode: not a table of another schema there ([`SchemaRoute::shadowed`]).
    ///
    /// Errors: 1064 naming both schemas.
    pub fn check_undeclared(&self, name: &str) -> Result<(), RouteError> {
        match self.shadowed.get(name) {
            Some(other) => Err(RouteError::syntax(format!(
                "table {name} is not defined in schema {}, and its default dataNode's database holds schema {other}'s table {name}: use it as {other}.{name}",
                self.name
            ))),
            None => Ok(()),
        }
    }
}

/// Routes statements for every schema of one configuration.
#[derive(Debug, Clone)]
pub struct Router {
    schemas: BTreeMap<String, SchemaRoute>,
    /// dataNode → physical database, for qualifier rewriting.
    databases: BTreeMap<String, String>,
    /// dataNode → (its dataHost, whether the dataHost is MySQL), for metadata queries.
    hosts: BTreeMap<String, (String, bool)>,
    /// Some dataHost is PostgreSQL: its catalog functions may be called (module `builtins`).
    postgresql: bool,
    /// The most bytes one merged group may accumulate (a GROUP_CONCAT): server.xml
    /// `maxPacketSize`, the gateway's `max_allowed_packet`, which no row sent to a client may
    /// exceed anyway ([`Grouping::max_group_bytes`]).
    max_group_bytes: usize,
    /// server.xml `explainMode`: what a plain `EXPLAIN` answers (module `statement`).
    explain_mode: crate::config::ExplainMode,
}

impl Router {
    /// Builds every table's partition function (map files read relative to `config.dir`) and
    /// checks that each sharded table has as many dataNodes as its function has partitions
    /// (SPEC §2.6).
    ///
    /// Errors: functions that cannot be built (unknown class, bad property, unreadable or
    /// malformed map file), each naming the `<function>` in rule.xml, and tables with too few
    /// dataNodes.
    pub fn new(config: &Config) -> Result<Router, ConfigErrors> {
        let mut errors = Vec::new();
        let read = |name: &str| -> Result<String, String> {
            let path = config.dir.join(name);
            std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read map file {}: {e}", path.display()))
        };
        let ctx = BuildContext {
            version: config.system.mycat_version,
            read_map_file: &read,
            // manx-only system property (DECISIONS.md item 3); otherwise the process's zone.
            time_zone: config
                .system
                .properties
                .get("timezone")
                .map(|(v, _)| v.as_str()),
            now_ms: None,
            table: None,
        };
        let mut functions: BTreeMap<&str, Arc<dyn PartitionFunction>> = BTreeMap::new();
        for f in config.functions.values() {
            match function::build(&f.class, &f.properties, &ctx) {
                Ok(built) => {
                    functions.insert(&f.name, built);
                }
                Err(m) => errors.push(ConfigError::new(
                    &f.origin,
                    format!("function name=\"{}\"", f.name),
                    m.to_string(),
                )),
            }
        }
        let mut schemas = BTreeMap::new();
        for s in config.schemas.values() {
            let mut tables = BTreeMap::new();
            let mut nodes: BTreeSet<String> = s.data_node.iter().cloned().collect();
            for t in s.tables.values() {
                nodes.extend(t.data_nodes.iter().cloned());
                let rule = match &t.kind {
                    TableKind::Sharded { rule } => {
                        let Some(tr) = config.table_rules.get(rule) else {
                            continue;
                        };
                        let Some(shared) = functions.get(tr.function.as_str()) else {
                            continue;
                        };
                        let class = config
                            .functions
                            .get(&tr.function)
                            .map(|f| f.class.as_str())
                            .unwrap_or("");
                        let f = if class.ends_with("PartitionByCRC32PreSlot") {
                            // One instance per table, with its slot file (SPEC §2.5.10).
                            match crc32_for_table(
                                config,
                                &s.name,
                                &t.name,
                                &t.data_nodes,
                                rule,
                                &ctx,
                            ) {
                                Ok(f) => f,
                                Err(m) => {
                                    errors.push(ConfigError::new(
                                        &t.origin,
                                        format!("table name=\"{}\"", t.name),
                                        m.to_string(),
                                    ));
                                    continue;
                                }
                            }
                        } else {
                            shared.clone()
                        };
                        if let Some(n) = f.partition_num()
                            && t.data_nodes.len() < n
                        {
                            errors.push(ConfigError::new(
                                    &t.origin,
                                    format!("table name=\"{}\"", t.name),
                                    format!(
                                        "Illegal table conf : table [ {} ] rule function [ {} ] partition size : {n} > table datanode size : {}, please make sure table datanode size = function partition size",
                                        t.name,
                                        tr.function,
                                        t.data_nodes.len()
                                    ),
                                ));
                        }
                        Some(Rule {
                            column: tr.column.clone(),
                            function: f,
                        })
                    }
                    _ => None,
                };
                tables.insert(
                    t.name.clone(),
                    TableRoute {
                        name: t.name.clone(),
                        spelled: t.spelled.clone(),
                        kind: t.kind.clone(),
                        nodes: t.data_nodes.clone(),
                        rule,
                        primary_key: t.primary_key.as_ref().map(|k| k.to_ascii_uppercase()),
                        need_add_limit: t.need_add_limit,
                        auto_increment: t.auto_increment,
                    },
                );
            }
            // A second-level child whose parentKey is its parent's sharding column is placed
            // by the parent's function on its joinKey (SPEC §5.12); deeper children need the
            // parent row looked up.
            let derived: Vec<(String, Rule)> = tables
                .values()
                .filter_map(|t| {
                    let TableKind::Child {
                        parent,
                        join_key,
                        parent_key,
                    } = &t.kind
                    else {
                        return None;
                    };
                    let p = tables.get(parent)?;
                    let rule = p.rule.as_ref()?;
                    (matches!(p.kind, TableKind::Sharded { .. }) && rule.column == *parent_key)
                        .then(|| {
                            (
                                t.name.clone(),
                                Rule {
                                    column: join_key.clone(),
                                    function: rule.function.clone(),
                                },
                            )
                        })
                })
                .collect();
            for (name, rule) in derived {
                if let Some(t) = tables.get_mut(&name) {
                    t.rule = Some(rule);
                }
            }
            schemas.insert(
                s.name.clone(),
                SchemaRoute {
                    name: s.name.clone(),
                    default_node: s.data_node.clone(),
                    tables,
                    nodes: nodes.into_iter().collect(),
                    sql_max_limit: s.sql_max_limit.and_then(|n| u64::try_from(n).ok()),
                    shadowed: BTreeMap::new(),
                },
            );
        }
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        // Where a default dataNode's physical database also holds another schema's tables.
        let place = |node: &str| {
            config
                .data_nodes
                .get(node)
                .map(|n| (n.data_host.clone(), n.database.clone()))
        };
        let shadowed: Vec<(String, BTreeMap<String, String>)> = schemas
            .values()
            .filter_map(|s| {
                let here = place(s.default_node.as_deref()?)?;
                let names = schemas
                    .values()
                    .filter(|o| o.name != s.name)
                    .flat_map(|o| {
                        o.tables
                            .values()
                            .filter(|t| t.nodes.iter().any(|n| place(n).as_ref() == Some(&here)))
                            .map(|t| (t.name.to_ascii_uppercase(), o.name.clone()))
                    })
                    .filter(|(name, _)| !s.tables.contains_key(name))
                    .collect::<BTreeMap<_, _>>();
                (!names.is_empty()).then(|| (s.name.clone(), names))
            })
            .collect();
        for (schema, names) in shadowed {
            if let Some(s) = schemas.get_mut(&schema) {
                s.shadowed = names;
            }
        }
        let databases = config
            .data_nodes
            .values()
            .map(|n| (n.name.clone(), n.database.clone()))
            .collect();
        let hosts = config
            .data_nodes
            .values()
            .map(|n| {
                let mysql = config
                    .data_hosts
                    .get(&n.data_host)
                    .is_some_and(|h| h.db_type == crate::config::DbType::Mysql);
                (n.name.clone(), (n.data_host.clone(), mysql))
            })
            .collect::<BTreeMap<String, (String, bool)>>();
        Ok(Router {
            schemas,
            databases,
            postgresql: hosts.values().any(|(_, mysql)| !*mysql),
            hosts,
            max_group_bytes: config.system.max_packet_size,
            explain_mode: config.system.explain_mode,
        })
    }

    /// Whether a call of function `name` (unqualified, any case) may reach a backend: one of
    /// MariaDB's built-in functions, or with a PostgreSQL dataHost configured, of PostgreSQL's
    /// catalog (module `builtins`).
    pub fn knows_function(&self, name: &str) -> bool {
        builtins::is_builtin(name, self.postgresql)
    }

    /// The schema named `name` (case-sensitive), if configured.
    pub fn schema(&self, name: &str) -> Option<&SchemaRoute> {
        self.schemas.get(name)
    }

    /// Whether `node` is on a MySQL/MariaDB dataHost (else PostgreSQL).
    pub fn is_mysql_node(&self, node: &str) -> bool {
        self.hosts.get(node).is_some_and(|(_, mysql)| *mysql)
    }

    /// The physical database of a dataNode.
    pub fn database_of(&self, node: &str) -> Option<&str> {
        self.databases.get(node).map(String::as_str)
    }

    /// Routes one statement for a session whose current schema is `schema`.
    ///
    /// Errors: the statement is empty, does not parse (1064 with the parser's message), needs a
    /// schema and none is selected (1046), names an unknown table, has a shard value its
    /// function rejects, or needs a cross-node operation manx does not do yet (1064 naming it).
    pub fn route(&self, sql: &str, schema: Option<&str>) -> Result<Routed, RouteError> {
        statement::route(self, sql, &SessionView::schema(schema), None)
    }

    /// Routes one statement for a session: [`Router::route`] with the session's `sql_mode`
    /// and access (module `access`), through its [`PlanCache`] when given. Every statement a
    /// client sends goes through here: nothing reaches a backend without this verdict.
    ///
    /// Errors: those of [`Router::route`]; 1044 for a schema the user may not use; 1495 for a
    /// write by a `readOnly` user; 3012 for a table access its `<privileges>` deny; 1227 / 1235 /
    /// 1064 for a statement kind the gateway does not pass (naming it).
    pub fn route_for(
        &self,
        sql: &str,
        view: &SessionView<'_>,
        cache: Option<&mut PlanCache>,
    ) -> Result<Routed, RouteError> {
        statement::route(self, sql, view, cache)
    }

    /// [`Router::route`] with a session's [`PlanCache`]: a statement whose plan cannot depend on
    /// its literals is parsed once per shape (module `shape`); the answer is always the one
    /// `route` gives.
    pub fn route_cached(
        &self,
        sql: &str,
        schema: Option<&str>,
        cache: &mut PlanCache,
    ) -> Result<Routed, RouteError> {
        statement::route(self, sql, &SessionView::schema(schema), Some(cache))
    }
}

/// The router of the bundled configuration (the repository's schema.xml, rule.xml,
/// server.xml), for unit tests.
#[cfg(test)]
pub(crate) fn bundled_router() -> Router {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = crate::config::Config::load(dir).expect("bundled config");
    Router::new(&config).expect("router")
}

#[cfg(test)]
mod tests {
    use super::ColumnOrders;

    #[test]
    fn an_order_read_across_a_ddl_is_not_kept() {
        let orders = ColumnOrders::default();
        let before = orders.epoch();
        orders.insert("S", "t", vec!["a".to_string()].into(), before);
        assert_eq!(
            orders.get("S", "t").as_deref(),
            Some(&["a".to_string()][..])
        );
        // Another session reads while a DDL runs: the DDL's clear moves the epoch on.
        let read_at = orders.epoch();
        orders.clear();
        orders.insert("S", "t", vec!["stale".to_string()].into(), read_at);
        assert_eq!(orders.get("S", "t"), None);
        // Spellings are apart: `T` is another physical table on a case-sensitive backend.
        orders.insert("S", "t", vec!["a".to_string()].into(), orders.epoch());
        assert_eq!(orders.get("S", "T"), None);
    }
}
