//! Mycat configuration: `server.xml`, `schema.xml`, `rule.xml` and the files they name, read into
//! a validated model.
//!
//! Loading never stops at the first problem: every error is collected with the file, line and
//! element it concerns, and returned together ([`ConfigErrors`]). Attributes manx accepts but does
//! not act on yet, and unknown attributes, become [`ConfigWarning`]s that the binary logs once at
//! start-up. Meanings and defaults follow `shared/mycat-compat/SPEC.md` §1-§3 (Mycat's code
//! defaults, not its documentation's) and `DECISIONS.md`.

mod decrypt;
pub mod dnindex;
pub(crate) mod expand;
pub mod myid;
mod rule;
mod schema;
mod server;
mod summary;
pub mod xml;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use expand::expand_names;

mod error;
mod system;
pub use error::{ConfigError, ConfigErrors, ConfigWarning, Origin};
pub use system::{ExplainMode, SystemConfig, WhiteHost};

/// The whole validated configuration of one directory.
#[derive(Debug, Clone)]
pub struct Config {
    /// The configuration directory; map files are resolved relative to it (Mycat: the class path).
    pub dir: PathBuf,
    pub system: SystemConfig,
    /// Users by name (case-sensitive).
    pub users: BTreeMap<String, UserConfig>,
    /// Logical schemas by name (case-sensitive, SPEC §1.10).
    pub schemas: BTreeMap<String, SchemaConfig>,
    pub data_nodes: BTreeMap<String, DataNodeConfig>,
    pub data_hosts: BTreeMap<String, DataHostConfig>,
    pub table_rules: BTreeMap<String, TableRuleConfig>,
    pub functions: BTreeMap<String, FunctionConfig>,
    pub warnings: Vec<ConfigWarning>,
}

/// Mycat release whose data placement manx reproduces (DECISIONS.md items 1-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MycatVersion {
    /// 1.6.5 (`master` branch).
    V1_6_5,
    /// 1.6.7.5 (the `1.6` branch).
    V1_6_7_5,
    /// 1.6.7.6 (`main`), the default.
    V1_6_7_6,
}

/// A `server.xml` `<user>`.
#[derive(Debug, Clone)]
pub struct UserConfig {
    pub name: String,
    /// Plain-text password (an empty one accepts only an empty client password).
    pub password: String,
    /// Logical schemas the user may use, in the order written.
    pub schemas: Vec<String>,
    /// `readOnly`: writes are refused with errno 1495.
    pub read_only: bool,
    /// `defaultSchema` [1.6.7]: used when a statement arrives with no current schema.
    pub default_schema: Option<String>,
    /// `<privileges check="true">`: DML masks per logical schema (SPEC §3.4); `None` when
    /// absent or not checked.
    pub privileges: Option<BTreeMap<String, SchemaPrivileges>>,
    /// `benchmark`, default 0 (no limit), SPEC §3.3: the user's logins are refused (1045,
    /// `... because service be degraded`) while the gateway holds more than this many client
    /// connections, of all users, counting the one logging in. Mycat refuses at this many.
    pub benchmark: usize,
    pub origin: Origin,
}

/// A user's DML mask for one logical schema and its tables (SPEC §3.4): four flags in the
/// order INSERT, UPDATE, SELECT, DELETE (`dml="0110"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaPrivileges {
    pub dml: [bool; 4],
    /// Table name exactly as written in server.xml (Mycat compares without case folding).
    pub tables: BTreeMap<String, [bool; 4]>,
}

/// A `schema.xml` `<schema>`.
#[derive(Debug, Clone)]
pub struct SchemaConfig {
    pub name: String,
    /// `checkSQLschema="true"`: strip `schema.` qualifiers (SPEC §5.3).
    pub check_sql_schema: bool,
    /// `sqlMaxLimit`; `None` when absent (Mycat's -1).
    pub sql_max_limit: Option<i64>,
    /// Default dataNode for undeclared tables and table-less statements.
    pub data_node: Option<String>,
    /// Tables by upper-cased name.
    pub tables: BTreeMap<String, TableConfig>,
    pub origin: Origin,
}

/// Whether a table is sharded by a rule, copied to all its nodes (global) or neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableKind {
    /// `rule` set: rows are placed by the tableRule's function on its column.
    Sharded { rule: String },
    /// `type="global"`: every node holds every row; reads from one node, writes to all.
    Global,
    /// No rule, not global: reads and writes go to all its nodes (SPEC §5.6).
    Unsharded,
    /// A `<childTable>` (ER table, SPEC §1.5): each row lives on the node of the `parent` row
    /// whose `parent_key` equals its `join_key` (names upper-cased). Its dataNodes are the
    /// parent's.
    Child {
        parent: String,
        join_key: String,
        parent_key: String,
    },
}

/// A `schema.xml` `<table>` (names upper-cased, SPEC §1.3).
#[derive(Debug, Clone)]
pub struct TableConfig {
    /// Upper-cased (names match without letter case, as in Mycat).
    pub name: String,
    /// As schema.xml spells it (`SHOW TABLES` lists it so).
    pub spelled: String,
    pub kind: TableKind,
    /// Expanded dataNode list; the position is the partition index.
    pub data_nodes: Vec<String>,
    pub primary_key: Option<String>,
    pub auto_increment: bool,
    pub need_add_limit: bool,
    pub rule_required: bool,
    pub origin: Origin,
}

/// A `schema.xml` `<dataNode>` after `$` expansion: one physical database on one dataHost.
#[derive(Debug, Clone)]
pub struct DataNodeConfig {
    pub name: String,
    pub data_host: String,
    pub database: String,
    pub origin: Origin,
}

/// Backend kind of a dataHost (`dbType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbType {
    Mysql,
    Postgresql,
}

/// A `schema.xml` `<dataHost>` with its writeHosts (each with its readHosts).
#[derive(Debug, Clone)]
pub struct DataHostConfig {
    pub name: String,
    /// Connections per physical host, at most (`maxCon`).
    pub max_con: usize,
    /// Connections per physical host opened up front (`minCon`).
    pub min_con: usize,
    /// Read balancing mode 0-3 (SPEC §4.3).
    pub balance: i32,
    /// `balanceType` [1.6.7], default 0: how a read picks among its candidates (SPEC §4.4):
    /// 0 weighted random, 1 smooth weighted round robin, 2 least active connections.
    pub balance_type: u8,
    /// `writeType`, default 0.
    pub write_type: i32,
    /// `switchType`, default -1 (Mycat's code default, DECISIONS.md item 6).
    pub switch_type: i32,
    /// `slaveThreshold`, default -1: with `switchType="2"`, replicas whose `Seconds_Behind_Master`
    /// is not below it get no reads (SPEC §4.8); -1 turns the filter off.
    pub slave_threshold: i64,
    /// `tempReadHostAvailable` > 0: readHosts stay readable while their writeHost is down
    /// (SPEC §4.9). Default false.
    pub temp_read_host_available: bool,
    /// `maxRetryCount` [1.6.7], default 3: consecutive heartbeat failures before a host is
    /// declared down (SPEC §4.6). At least 1.
    pub max_retry_count: u32,
    /// `notSwitch="1"` [1.6.7]: never fail over, whatever `switchType` says (SPEC §1.7).
    pub not_switch: bool,
    pub db_type: DbType,
    pub db_driver: String,
    /// The heartbeat statement (may be empty).
    pub heartbeat: String,
    pub write_hosts: Vec<WriteHostConfig>,
    pub origin: Origin,
}

/// A physical database server: a `<writeHost>` or `<readHost>`.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The `host` attribute: the source's name.
    pub name: String,
    /// Network address, from `url` (`ip:port` or `jdbc:mysql://ip:port/...`).
    pub address: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    /// Load-balancing weight (`weight`), default 0.
    pub weight: u32,
    pub origin: Origin,
}

/// A `<writeHost>` and the `<readHost>`s that replicate from it.
#[derive(Debug, Clone)]
pub struct WriteHostConfig {
    pub host: HostConfig,
    pub read_hosts: Vec<HostConfig>,
}

impl HostConfig {
    /// Whether `self` and `other` describe the same server the same way (every attribute but
    /// where in the file it was written).
    pub fn same_as(&self, other: &HostConfig) -> bool {
        let HostConfig {
            name,
            address,
            port,
            user,
            password,
            weight,
            origin: _,
        } = self;
        *name == other.name
            && *address == other.address
            && *port == other.port
            && *user == other.user
            && *password == other.password
            && *weight == other.weight
    }
}

impl DataHostConfig {
    /// Whether `self` and `other` describe the same dataHost the same way: every attribute,
    /// heartbeat and server alike, ignoring only where in the file they were written. A reload
    /// keeps the pools, health and active writeHost of a dataHost for which this holds
    /// (the datahost module's `Cluster::reload`).
    pub fn same_as(&self, other: &DataHostConfig) -> bool {
        let DataHostConfig {
            name,
            max_con,
            min_con,
            balance,
            balance_type,
            write_type,
            switch_type,
            slave_threshold,
            temp_read_host_available,
            max_retry_count,
            not_switch,
            db_type,
            db_driver,
            heartbeat,
            write_hosts,
            origin: _,
        } = self;
        *name == other.name
            && *max_con == other.max_con
            && *min_con == other.min_con
            && *balance == other.balance
            && *balance_type == other.balance_type
            && *write_type == other.write_type
            && *switch_type == other.switch_type
            && *slave_threshold == other.slave_threshold
            && *temp_read_host_available == other.temp_read_host_available
            && *max_retry_count == other.max_retry_count
            && *not_switch == other.not_switch
            && *db_type == other.db_type
            && *db_driver == other.db_driver
            && *heartbeat == other.heartbeat
            && write_hosts.len() == other.write_hosts.len()
            && write_hosts.iter().zip(&other.write_hosts).all(|(a, b)| {
                a.host.same_as(&b.host)
                    && a.read_hosts.len() == b.read_hosts.len()
                    && a.read_hosts
                        .iter()
                        .zip(&b.read_hosts)
                        .all(|(x, y)| x.same_as(y))
            })
    }
}

/// A `rule.xml` `<tableRule>`: one column and one function.
#[derive(Debug, Clone)]
pub struct TableRuleConfig {
    pub name: String,
    /// The sharding column, upper-cased.
    pub column: String,
    /// Name of the `<function>`.
    pub function: String,
    pub origin: Origin,
}

/// A `rule.xml` `<function>`: a Mycat class name and its properties as written (trimmed).
#[derive(Debug, Clone)]
pub struct FunctionConfig {
    pub name: String,
    pub class: String,
    pub properties: BTreeMap<String, String>,
    pub origin: Origin,
}

impl Config {
    /// Loads `server.xml`, `rule.xml` and `schema.xml` from `dir` and cross-checks them.
    ///
    /// Errors: every problem found, each with file, line and element.
    pub fn load(dir: &Path) -> Result<Config, ConfigErrors> {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let server = server::load(&dir.join("server.xml"), &mut errors, &mut warnings);
        let rules = rule::load(&dir.join("rule.xml"), &mut errors, &mut warnings);
        let schema = schema::load(&dir.join("schema.xml"), &mut errors, &mut warnings);

        let (system, users) = server.unwrap_or_else(|| (SystemConfig::default(), BTreeMap::new()));
        let (table_rules, functions) = rules.unwrap_or_default();
        let (schemas, data_nodes, data_hosts) = schema.unwrap_or_default();

        let config = Config {
            dir: dir.to_path_buf(),
            system,
            users,
            schemas,
            data_nodes,
            data_hosts,
            table_rules,
            functions,
            warnings,
        };
        config.cross_check(&mut errors);
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(ConfigErrors(errors))
        }
    }

    /// [`Config::cross_check`] as a result, for a configuration put together from the files of
    /// two loads (a partial reload keeps some parts of the running configuration).
    ///
    /// Errors: every dangling reference, with file and line.
    pub fn check_references(&self) -> Result<(), ConfigErrors> {
        let mut errors = Vec::new();
        self.cross_check(&mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ConfigErrors(errors))
        }
    }

    /// Checks references between the files (SPEC §1.11): users' schemas, tables' rules and
    /// dataNodes, dataNodes' dataHosts.
    fn cross_check(&self, errors: &mut Vec<ConfigError>) {
        for user in self.users.values() {
            for s in &user.schemas {
                if !self.schemas.contains_key(s) {
                    errors.push(ConfigError::new(
                        &user.origin,
                        format!("user name=\"{}\"", user.name),
                        format!("schema {s} referred by user {} does not exist", user.name),
                    ));
                }
            }
            // A mask for a schema or table that does not exist would guard nothing (issue 17:
            // a typo must not leave a table unguarded). Tables of a schema with a default
            // dataNode may exist only there, so those names cannot be checked here.
            for (name, p) in user.privileges.iter().flatten() {
                let Some(schema) = self.schemas.get(name) else {
                    errors.push(ConfigError::new(
                        &user.origin,
                        format!("user name=\"{}\"", user.name),
                        format!("<privileges> names schema {name}, which does not exist"),
                    ));
                    continue;
                };
                if schema.data_node.is_some() {
                    continue;
                }
                for table in p.tables.keys() {
                    if !schema.tables.contains_key(&table.to_ascii_uppercase()) {
                        errors.push(ConfigError::new(
                            &user.origin,
                            format!("user name=\"{}\"", user.name),
                            format!(
                                "<privileges> names table {table} of schema {name}, which does not exist"
                            ),
                        ));
                    }
                }
            }
            if let Some(d) = &user.default_schema
                && !self.schemas.contains_key(d)
            {
                errors.push(ConfigError::new(
                    &user.origin,
                    format!("user name=\"{}\"", user.name),
                    format!("defaultSchema {d} does not exist"),
                ));
            }
        }
        for schema in self.schemas.values() {
            let element = format!("schema name=\"{}\"", schema.name);
            if let Some(dn) = &schema.data_node
                && !self.data_nodes.contains_key(dn)
            {
                errors.push(ConfigError::new(
                    &schema.origin,
                    element.clone(),
                    format!("dataNode '{dn}' is not found"),
                ));
            }
            for table in schema.tables.values() {
                let element = format!("table name=\"{}\"", table.name);
                for dn in &table.data_nodes {
                    if !self.data_nodes.contains_key(dn) {
                        errors.push(ConfigError::new(
                            &table.origin,
                            element.clone(),
                            format!("dataNode '{dn}' is not found"),
                        ));
                    }
                }
                if let TableKind::Sharded { rule } = &table.kind
                    && !self.table_rules.contains_key(rule)
                {
                    errors.push(ConfigError::new(
                        &table.origin,
                        element.clone(),
                        format!("rule {rule} is not found in rule.xml"),
                    ));
                }
            }
        }
        for node in self.data_nodes.values() {
            if !self.data_hosts.contains_key(&node.data_host) {
                errors.push(ConfigError::new(
                    &node.origin,
                    format!("dataNode name=\"{}\"", node.name),
                    format!(
                        "dataNode {} references dataHost {} which does not exist",
                        node.name, node.data_host
                    ),
                ));
            }
        }
    }

    /// The user's visible schema names, sorted (SHOW DATABASES).
    pub fn user_schemas(&self, user: &UserConfig) -> Vec<String> {
        let mut v: Vec<String> = if user.schemas.is_empty() {
            self.schemas.keys().cloned().collect()
        } else {
            user.schemas.clone()
        };
        v.sort();
        v.dedup();
        v
    }
}

/// Parses an integer attribute the way Java's `Integer.parseInt` does (no trimming, SPEC §0.3).
pub(crate) fn java_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

/// Checks an element's attributes against what manx knows: unknown ones and ones not acted on
/// yet become warnings (DECISIONS.md item 8).
pub(crate) fn check_attrs(
    e: &xml::Element,
    acted_on: &[&str],
    accepted: &[&str],
    warnings: &mut Vec<ConfigWarning>,
) {
    for (k, _) in &e.attrs {
        if acted_on.contains(&k.as_str()) {
            continue;
        }
        let message = if accepted.contains(&k.as_str()) {
            format!(
                "<{}> attribute {k} is accepted but not acted on yet",
                e.name
            )
        } else {
            format!("<{}> attribute {k} is unknown and ignored", e.name)
        };
        warnings.push(ConfigWarning {
            origin: e.origin.clone(),
            message,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitehost_patterns_match_whole_addresses_and_entries_check_their_users() {
        let system = SystemConfig {
            white_hosts: vec![
                WhiteHost {
                    host: "192.168.1.5".to_string(),
                    users: vec!["root".to_string()],
                },
                WhiteHost {
                    host: "10.%.0.*".to_string(),
                    users: vec!["app".to_string()],
                },
                WhiteHost {
                    host: "1*7.0.0.*".to_string(),
                    users: vec!["root".to_string(), "app".to_string()],
                },
            ],
            ..SystemConfig::default()
        };
        assert!(system.admits("root", "192.168.1.5"));
        assert!(
            !system.admits("app", "192.168.1.5"),
            "exact entries check users"
        );
        assert!(system.admits("app", "10.20.0.7"));
        assert!(
            !system.admits("root", "10.20.0.7"),
            "wildcard entries check users too"
        );
        assert!(!system.admits("app", "110.3.0.99"), "anchored at the start");
        assert!(
            !system.admits("root", "192.168.1.55"),
            "exact entries match whole addresses"
        );
        assert!(!system.admits("app", "10.20.1.7"));
        assert!(
            !system.admits("app", "10.20.30.0.7"),
            "inner wildcards stay in their octet"
        );
        assert!(
            !system.admits("app", "10.2x.0.7"),
            "wildcards match digits only"
        );
        assert!(system.admits("app", "127.0.0.1"));
        assert!(system.admits("root", "17.0.0.255"));
        assert!(!system.admits("root", "227.0.0.1"), "anchored at the start");
        assert!(
            !system.admits("nobody", "127.0.0.1"),
            "unknown users match nothing"
        );
        let prefixes = SystemConfig {
            white_hosts: ["127.*", "10.1*", "192.168.*.1"]
                .iter()
                .map(|h| WhiteHost {
                    host: h.to_string(),
                    users: vec!["app".to_string()],
                })
                .collect(),
            ..SystemConfig::default()
        };
        assert!(
            prefixes.admits("app", "127.0.0.1"),
            "a final wildcard takes the rest"
        );
        assert!(prefixes.admits("app", "127.255.3.4"));
        assert!(prefixes.admits("app", "10.1.2.3"));
        assert!(prefixes.admits("app", "10.100.2.3"));
        assert!(!prefixes.admits("app", "10.2.1.3"));
        assert!(!prefixes.admits("app", "110.1.2.3"));
        assert!(prefixes.admits("app", "192.168.7.1"));
        assert!(!prefixes.admits("app", "192.168.7.1.1"));
        assert!(!prefixes.admits("app", "192.168.7.8.1"));
        assert!(SystemConfig::default().admits("anyone", "1.2.3.4"));
    }
}
