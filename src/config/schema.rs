//! `schema.xml`: schemas and tables, dataNodes, dataHosts (SPEC §1).

use std::collections::BTreeMap;
use std::path::Path;

use super::xml::{self, Element};
use super::{
    ConfigError, ConfigWarning, DataHostConfig, DataNodeConfig, DbType, HostConfig, SchemaConfig,
    TableConfig, TableKind, WriteHostConfig, check_attrs, expand_names, java_int,
};

type Schema = (
    BTreeMap<String, SchemaConfig>,
    BTreeMap<String, DataNodeConfig>,
    BTreeMap<String, DataHostConfig>,
);

pub(super) fn load(
    path: &Path,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigWarning>,
) -> Option<Schema> {
    let root = match xml::parse_file(path) {
        Ok(r) => r,
        Err(e) => {
            errors.push(e);
            return None;
        }
    };
    if root.name != "schema" {
        errors.push(ConfigError::new(
            &root.origin,
            &root.name,
            "root element must be <mycat:schema>",
        ));
        return None;
    }
    let mut schemas = BTreeMap::new();
    for s in root.children_named("schema") {
        if let Some(schema) = load_schema(s, errors, warnings) {
            if schemas.contains_key(&schema.name) {
                errors.push(ConfigError::new(
                    &s.origin,
                    format!("schema name=\"{}\"", schema.name),
                    format!("schema {} duplicated", schema.name),
                ));
            } else {
                schemas.insert(schema.name.clone(), schema);
            }
        }
    }
    let mut data_nodes = BTreeMap::new();
    for d in root.children_named("dataNode") {
        for node in load_data_nodes(d, errors, warnings) {
            if data_nodes.contains_key(&node.name) {
                errors.push(ConfigError::new(
                    &d.origin,
                    format!("dataNode name=\"{}\"", node.name),
                    format!("dataNode {} duplicated", node.name),
                ));
            } else {
                data_nodes.insert(node.name.clone(), node);
            }
        }
    }
    let mut data_hosts = BTreeMap::new();
    for h in root.children_named("dataHost") {
        if let Some(host) = load_data_host(h, errors, warnings) {
            if data_hosts.contains_key(&host.name) {
                errors.push(ConfigError::new(
                    &h.origin,
                    format!("dataHost name=\"{}\"", host.name),
                    format!("dataHost {} duplicated", host.name),
                ));
            } else {
                data_hosts.insert(host.name.clone(), host);
            }
        }
    }
    Some((schemas, data_nodes, data_hosts))
}

fn load_schema(
    s: &Element,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigWarning>,
) -> Option<SchemaConfig> {
    check_attrs(
        s,
        &["name", "dataNode", "checkSQLschema", "sqlMaxLimit"],
        &["randomDataNode", "needSupportMultiDBType"],
        warnings,
    );
    let name = s.attr("name").unwrap_or("");
    let element = format!("schema name=\"{name}\"");
    if name.is_empty() {
        errors.push(ConfigError::new(
            &s.origin,
            element,
            "attribute name is required",
        ));
        return None;
    }
    let sql_max_limit = match s.attr("sqlMaxLimit").filter(|v| !v.is_empty()) {
        None => None,
        Some(v) => match java_int(v) {
            Some(n) => Some(n),
            None => {
                errors.push(ConfigError::new(
                    &s.origin,
                    element.clone(),
                    format!("sqlMaxLimit '{v}' is not an integer"),
                ));
                None
            }
        },
    };
    let data_node = s
        .attr("dataNode")
        .filter(|v| !v.is_empty())
        .map(String::from);
    let mut tables = BTreeMap::new();
    for t in s.children_named("table") {
        for table in load_tables(t, errors, warnings) {
            if tables.contains_key(&table.name) {
                errors.push(ConfigError::new(
                    &t.origin,
                    format!("table name=\"{}\"", table.name),
                    format!("table {} duplicated", table.name),
                ));
            } else {
                tables.insert(table.name.clone(), table);
            }
        }
    }
    if tables.is_empty() && data_node.is_none() {
        errors.push(ConfigError::new(
            &s.origin,
            element,
            format!("schema {name} has no tables, so it must set dataNode"),
        ));
    }
    Some(SchemaConfig {
        name: name.to_string(),
        check_sql_schema: s
            .attr("checkSQLschema")
            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        sql_max_limit,
        data_node,
        tables,
        origin: s.origin.clone(),
    })
}

fn load_tables(
    t: &Element,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigWarning>,
) -> Vec<TableConfig> {
    check_attrs(
        t,
        &[
            "name",
            "dataNode",
            "rule",
            "type",
            "primaryKey",
            "ruleRequired",
            "autoIncrement",
            "needAddLimit",
            "splitTableNames",
            "subTables",
        ],
        &["nameSuffix", "fetchStoreNodeByJdbc"],
        warnings,
    );
    let names = t.attr("name").unwrap_or("");
    let element = format!("table name=\"{names}\"");
    // Sub-tables put rows in tables whose names routing would have to rewrite; read as a plain
    // table they would land in the wrong place, so they are refused rather than misread.
    if t.attr("subTables").is_some_and(|v| !v.is_empty()) {
        errors.push(ConfigError::new(
            &t.origin,
            element.clone(),
            "subTables (sub-table sharding inside one dataNode) is not supported",
        ));
    }
    if names.is_empty() {
        errors.push(ConfigError::new(
            &t.origin,
            element,
            "attribute name is required",
        ));
        return Vec::new();
    }
    let data_nodes = match expand_names(t.attr("dataNode").unwrap_or("")) {
        Ok(v) if !v.is_empty() => v,
        Ok(_) => {
            errors.push(ConfigError::new(
                &t.origin,
                element,
                "attribute dataNode is required",
            ));
            return Vec::new();
        }
        Err(m) => {
            errors.push(ConfigError::new(&t.origin, element, m.to_string()));
            return Vec::new();
        }
    };
    let global = t
        .attr("type")
        .is_some_and(|v| v.eq_ignore_ascii_case("global"));
    let rule = t.attr("rule").filter(|r| !r.is_empty());
    let kind = match (global, rule) {
        (true, Some(_)) => {
            errors.push(ConfigError::new(
                &t.origin,
                element.clone(),
                "a global table cannot have a rule",
            ));
            TableKind::Global
        }
        (true, None) => TableKind::Global,
        (false, Some(r)) => TableKind::Sharded {
            rule: r.to_string(),
        },
        (false, None) => TableKind::Unsharded,
    };
    let rule_required = t
        .attr("ruleRequired")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if rule_required && rule.is_none() {
        errors.push(ConfigError::new(
            &t.origin,
            element.clone(),
            "ruleRequired but rule is null",
        ));
    }
    // Mycat splits the name list on ',' without trimming (SPEC §1.3); a padded name can never
    // match, so manx refuses it rather than copy a silent misconfiguration.
    names
        .split(',')
        .filter_map(|n| {
            if n.trim() != n || n.is_empty() {
                errors.push(ConfigError::new(
                    &t.origin,
                    element.clone(),
                    format!("table name '{n}' has surrounding white space and could never match"),
                ));
                return None;
            }
            Some(TableConfig {
                name: n.replace('`', "").to_ascii_uppercase(),
                spelled: n.replace('`', ""),
                kind: kind.clone(),
                data_nodes: data_nodes.clone(),
                primary_key: t
                    .attr("primaryKey")
                    .filter(|v| !v.is_empty())
                    .map(str::to_ascii_uppercase),
                auto_increment: t
                    .attr("autoIncrement")
                    .is_some_and(|v| v.eq_ignore_ascii_case("true")),
                need_add_limit: !t
                    .attr("needAddLimit")
                    .is_some_and(|v| v.eq_ignore_ascii_case("false")),
                rule_required,
                origin: t.origin.clone(),
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|parent| {
            let mut out = Vec::new();
            load_children(t, &parent, errors, warnings, &mut out);
            std::iter::once(parent).chain(out)
        })
        .collect()
}

/// The `<childTable>` elements under `element` (nested at any depth), each on its parent's
/// dataNodes (SPEC §1.5).
fn load_children(
    element: &Element,
    parent: &TableConfig,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigWarning>,
    out: &mut Vec<TableConfig>,
) {
    for c in element.children_named("childTable") {
        check_attrs(
            c,
            &[
                "name",
                "joinKey",
                "parentKey",
                "primaryKey",
                "needAddLimit",
                "autoIncrement",
                "subTables",
            ],
            &[],
            warnings,
        );
        let name = c.attr("name").unwrap_or("");
        let element_name = format!("childTable name=\"{name}\"");
        if c.attr("subTables").is_some_and(|v| !v.is_empty()) {
            errors.push(ConfigError::new(
                &c.origin,
                element_name.clone(),
                "subTables (sub-table sharding inside one dataNode) is not supported",
            ));
        }
        let (join_key, parent_key) = match (
            c.attr("joinKey").filter(|v| !v.is_empty()),
            c.attr("parentKey").filter(|v| !v.is_empty()),
        ) {
            (Some(j), Some(p)) if !name.is_empty() => (j, p),
            _ => {
                errors.push(ConfigError::new(
                    &c.origin,
                    element_name,
                    "attributes name, joinKey and parentKey are required",
                ));
                continue;
            }
        };
        let child = TableConfig {
            name: name.replace('`', "").to_ascii_uppercase(),
            spelled: name.replace('`', ""),
            kind: TableKind::Child {
                parent: parent.name.clone(),
                join_key: join_key.to_ascii_uppercase(),
                parent_key: parent_key.to_ascii_uppercase(),
            },
            data_nodes: parent.data_nodes.clone(),
            primary_key: c
                .attr("primaryKey")
                .filter(|v| !v.is_empty())
                .map(str::to_ascii_uppercase),
            auto_increment: c
                .attr("autoIncrement")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            need_add_limit: !c
                .attr("needAddLimit")
                .is_some_and(|v| v.eq_ignore_ascii_case("false")),
            rule_required: false,
            origin: c.origin.clone(),
        };
        load_children(c, &child, errors, warnings, out);
        out.push(child);
    }
}

/// One `<dataNode>` element may define several nodes: names pair host-major with
/// dataHost × database (SPEC §1.4).
fn load_data_nodes(
    d: &Element,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigWarning>,
) -> Vec<DataNodeConfig> {
    check_attrs(d, &["name", "dataHost", "database"], &[], warnings);
    let raw = |k: &str| d.attr(k).unwrap_or("").to_string();
    let (name, host, db) = (raw("name"), raw("dataHost"), raw("database"));
    let element = format!("dataNode name=\"{name}\"");
    if name.is_empty() || host.is_empty() || db.is_empty() {
        errors.push(ConfigError::new(
            &d.origin,
            element,
            format!("dataNode {name} define error, attribute can't be empty"),
        ));
        return Vec::new();
    }
    let expanded = (expand_names(&name), expand_names(&host), expand_names(&db));
    let (names, hosts, dbs) = match expanded {
        (Ok(n), Ok(h), Ok(b)) => (n, h, b),
        (Err(m), _, _) | (_, Err(m), _) | (_, _, Err(m)) => {
            errors.push(ConfigError::new(&d.origin, element, m.to_string()));
            return Vec::new();
        }
    };
    if names.len() == 1 {
        // A single name uses the attribute strings unexpanded (SPEC §1.4).
        return vec![DataNodeConfig {
            name: names[0].clone(),
            data_host: host,
            database: db,
            origin: d.origin.clone(),
        }];
    }
    if names.len() != hosts.len() * dbs.len() {
        errors.push(ConfigError::new(
            &d.origin,
            element,
            format!(
                "dataNode {name} define error: {} names must equal {} dataHosts x {} databases",
                names.len(),
                hosts.len(),
                dbs.len()
            ),
        ));
        return Vec::new();
    }
    let pairs = hosts.iter().flat_map(|h| dbs.iter().map(move |b| (h, b)));
    names
        .iter()
        .zip(pairs)
        .map(|(n, (h, b))| DataNodeConfig {
            name: n.clone(),
            data_host: h.clone(),
            database: b.clone(),
            origin: d.origin.clone(),
        })
        .collect()
}

fn load_data_host(
    h: &Element,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigWarning>,
) -> Option<DataHostConfig> {
    check_attrs(
        h,
        &[
            "name",
            "maxCon",
            "minCon",
            "balance",
            "dbType",
            "dbDriver",
            "writeType",
            "switchType",
            "slaveThreshold",
            "tempReadHostAvailable",
            "maxRetryCount",
            "notSwitch",
            "balanceType",
        ],
        &["filters", "logTime", "slaveIDs"],
        warnings,
    );
    let name = h.attr("name").unwrap_or("").to_string();
    let element = format!("dataHost name=\"{name}\"");
    let before = errors.len();
    if name.is_empty() {
        errors.push(ConfigError::new(
            &h.origin,
            element.clone(),
            "attribute name is required",
        ));
    }
    let mut int_attr = |attr: &str, default: Option<i64>| -> i64 {
        match (h.attr(attr), default) {
            (Some(v), _) if !v.is_empty() => java_int(v).unwrap_or_else(|| {
                errors.push(ConfigError::new(
                    &h.origin,
                    element.clone(),
                    format!("{attr} '{v}' is not an integer"),
                ));
                0
            }),
            (_, Some(d)) => d,
            (_, None) => {
                errors.push(ConfigError::new(
                    &h.origin,
                    element.clone(),
                    format!("attribute {attr} is required"),
                ));
                0
            }
        }
    };
    let max_con = int_attr("maxCon", None);
    let min_con = int_attr("minCon", None);
    let balance = int_attr("balance", None);
    let write_type = int_attr("writeType", Some(0));
    let switch_type = int_attr("switchType", Some(-1));
    let slave_threshold = int_attr("slaveThreshold", Some(-1));
    // Mycat: `Integer.parseInt(value) > 0`; a non-integer fails start-up (SPEC §1.7).
    let temp_read_host_available = int_attr("tempReadHostAvailable", Some(0)) > 0;
    let max_retry_count = int_attr("maxRetryCount", Some(3));
    let balance_type = int_attr("balanceType", Some(0));
    if max_con < 1 || min_con < 0 || min_con > max_con {
        errors.push(ConfigError::new(
            &h.origin,
            element.clone(),
            format!(
                "maxCon {max_con} / minCon {min_con}: need 0 <= minCon <= maxCon and maxCon >= 1"
            ),
        ));
    }
    if !(1..=1_000).contains(&max_retry_count) {
        errors.push(ConfigError::new(
            &h.origin,
            element.clone(),
            format!("maxRetryCount {max_retry_count} is not between 1 and 1000"),
        ));
    }
    if !(0..=3).contains(&balance) {
        errors.push(ConfigError::new(
            &h.origin,
            element.clone(),
            format!("balance {balance} is not one of 0, 1, 2, 3"),
        ));
    }
    if !(0..=2).contains(&balance_type) {
        errors.push(ConfigError::new(
            &h.origin,
            element.clone(),
            format!("balanceType {balance_type} is not one of 0, 1, 2"),
        ));
    }
    if write_type == 2 {
        errors.push(ConfigError::new(
            &h.origin,
            element.clone(),
            "writeType=\"2\" fails every write in Mycat and is refused",
        ));
    }
    let db_type = match h.attr("dbType").unwrap_or("") {
        "mysql" => DbType::Mysql,
        "postgresql" => DbType::Postgresql,
        other => {
            errors.push(ConfigError::new(
                &h.origin,
                element.clone(),
                format!("dbType '{other}' is not supported (mysql, postgresql)"),
            ));
            DbType::Mysql
        }
    };
    let db_driver = h.attr("dbDriver").unwrap_or("").to_string();
    if db_driver != "native" && db_driver != "jdbc" {
        errors.push(ConfigError::new(
            &h.origin,
            element.clone(),
            format!("dbDriver '{db_driver}' is not one of native, jdbc"),
        ));
    }
    let heartbeat = h
        .children_named("heartbeat")
        .next()
        .map(|e| e.text.trim().to_string())
        .unwrap_or_default();
    let mut write_hosts = Vec::new();
    for w in h.children_named("writeHost") {
        let Some(host) = load_host(w, &name, errors, warnings) else {
            continue;
        };
        let read_hosts = w
            .children_named("readHost")
            .filter_map(|r| load_host(r, &name, errors, warnings))
            .collect();
        write_hosts.push(WriteHostConfig { host, read_hosts });
    }
    if write_hosts.is_empty() {
        errors.push(ConfigError::new(
            &h.origin,
            element,
            format!("dataHost {name} has no usable writeHost"),
        ));
    }
    (errors.len() == before).then(|| DataHostConfig {
        name,
        max_con: max_con as usize,
        min_con: min_con as usize,
        balance: balance as i32,
        balance_type: balance_type as u8,
        write_type: write_type as i32,
        switch_type: switch_type as i32,
        slave_threshold,
        temp_read_host_available,
        max_retry_count: max_retry_count.clamp(1, 1_000) as u32,
        not_switch: h.attr("notSwitch") == Some("1"),
        db_type,
        db_driver,
        heartbeat,
        write_hosts,
        origin: h.origin.clone(),
    })
}

fn load_host(
    e: &Element,
    data_host: &str,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigWarning>,
) -> Option<HostConfig> {
    check_attrs(
        e,
        &["host", "url", "user", "password", "weight", "usingDecrypt"],
        &["checkAlive"],
        warnings,
    );
    let host = e.attr("host").unwrap_or("");
    let element = format!("{} host=\"{host}\"", e.name);
    let user = e.attr("user").unwrap_or("");
    let url = e.attr("url").unwrap_or("");
    if host.is_empty() || user.is_empty() || url.is_empty() {
        errors.push(ConfigError::new(
            &e.origin,
            element,
            format!("dataHost {data_host} define error, some attributes of this element are empty: host, url and user are required"),
        ));
        return None;
    }
    let mut password = e.attr("password").unwrap_or("").to_string();
    if e.attr("usingDecrypt")
        .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
    {
        match super::decrypt::host_password(host, user, &password) {
            Ok(p) => password = p,
            Err(m) => {
                errors.push(ConfigError::new(&e.origin, element.clone(), m.to_string()));
                return None;
            }
        }
    }
    let Some((address, port)) = parse_url(url) else {
        errors.push(ConfigError::new(
            &e.origin,
            element,
            format!("url '{url}' is neither ip:port nor jdbc:mysql://host:port nor jdbc:postgresql://host:port"),
        ));
        return None;
    };
    let weight = e
        .attr("weight")
        .filter(|w| !w.is_empty())
        .map_or(Some(0), |w| w.parse().ok());
    let Some(weight) = weight else {
        errors.push(ConfigError::new(
            &e.origin,
            element,
            "weight is not a non-negative integer",
        ));
        return None;
    };
    Some(HostConfig {
        name: host.to_string(),
        address,
        port,
        user: user.to_string(),
        password,
        weight,
        origin: e.origin.clone(),
    })
}

/// `ip:port` (split at the first `:`, parts trimmed, SPEC §1.9),
/// `jdbc:mysql://host[:port][/db][?params]` (port 3306 when absent) or
/// `jdbc:postgresql://host[:port][/db][?params]` (port 5432 when absent). The `/db` part is
/// ignored: the dataNode's `database` names the database, as in Mycat.
fn parse_url(url: &str) -> Option<(String, u16)> {
    for (prefix, default_port) in [("jdbc:mysql://", 3306), ("jdbc:postgresql://", 5432)] {
        let Some(rest) = url.strip_prefix(prefix) else {
            continue;
        };
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        return match authority.split_once(':') {
            Some((h, p)) => Some((h.to_string(), p.parse().ok()?)),
            None if !authority.is_empty() => Some((authority.to_string(), default_port)),
            None => None,
        };
    }
    let (h, p) = url.split_once(':')?;
    let h = h.trim();
    (!h.is_empty()).then_some(())?;
    Some((h.to_string(), p.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::parse_url;

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("127.0.0.1:3306"),
            Some(("127.0.0.1".into(), 3306))
        );
        assert_eq!(
            parse_url(" localhost : 13306"),
            Some(("localhost".into(), 13306))
        );
        assert_eq!(
            parse_url("jdbc:mysql://db.example:3307/x?useSSL=false"),
            Some(("db.example".into(), 3307))
        );
        assert_eq!(
            parse_url("jdbc:mysql://db.example"),
            Some(("db.example".into(), 3306))
        );
        assert_eq!(
            parse_url("jdbc:postgresql://pg.example:15432/db1"),
            Some(("pg.example".into(), 15432))
        );
        assert_eq!(
            parse_url("jdbc:postgresql://pg.example/db1"),
            Some(("pg.example".into(), 5432))
        );
        assert_eq!(parse_url("nope"), None);
        assert_eq!(parse_url("h:notaport"), None);
    }
}
