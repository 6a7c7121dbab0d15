//! `server.xml`: `<system>` properties and `<user>`s (SPEC §3).

use std::collections::BTreeMap;
use std::path::Path;

use super::xml::{self, Element};
use super::{
    ConfigError, ConfigWarning, ExplainMode, MycatVersion, SystemConfig, UserConfig, check_attrs,
};

pub(super) fn load(
    path: &Path,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigWarning>,
) -> Option<(SystemConfig, BTreeMap<String, UserConfig>)> {
    let root = match xml::parse_file(path) {
        Ok(r) => r,
        Err(e) => {
            errors.push(e);
            return None;
        }
    };
    if root.name != "server" {
        errors.push(ConfigError::new(
            &root.origin,
            &root.name,
            "root element must be <mycat:server>",
        ));
        return None;
    }
    let mut system = SystemConfig::default();
    let dir = path.parent().unwrap_or(Path::new("."));
    for sys in root.children_named("system") {
        for (name, value, origin) in sys.properties() {
            let element = format!("property name=\"{name}\"");
            match name.as_str() {
                "serverPort" => match value.parse::<u16>() {
                    Ok(p) => system.server_port = p,
                    Err(_) => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("serverPort '{value}' is not a port number"),
                    )),
                },
                "managerPort" => match value.parse::<u16>() {
                    Ok(p) => system.manager_port = p,
                    Err(_) => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("managerPort '{value}' is not a port number"),
                    )),
                },
                "managerUsers" => {
                    system.manager_users = Some(
                        value
                            .split(',')
                            .map(str::trim)
                            .filter(|u| !u.is_empty())
                            .map(String::from)
                            .collect(),
                    )
                }
                "shutdownTimeout" => match value.parse::<u64>() {
                    Ok(s) if s <= 86_400 => system.shutdown_timeout_s = s,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("shutdownTimeout '{value}' is not a number of seconds from 0 to 86400"),
                    )),
                },
                "useSqlStat" => match value.as_str() {
                    "0" | "false" => system.use_sql_stat = false,
                    "1" | "true" => system.use_sql_stat = true,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("useSqlStat '{value}' is not 0 or 1"),
                    )),
                },
                "sqlRecordCount" => match value.parse::<usize>() {
                    Ok(n) if (1..=100_000).contains(&n) => system.sql_record_count = n,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("sqlRecordCount '{value}' is not a number from 1 to 100000"),
                    )),
                },
                "sqlSlowTime" => match value.parse::<u64>() {
                    Ok(ms) => system.sql_slow_time_ms = ms,
                    Err(_) => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("sqlSlowTime '{value}' is not a number of milliseconds"),
                    )),
                },
                "enableSlowLog" => match value.as_str() {
                    "0" | "false" => system.enable_slow_log = false,
                    "1" | "true" => system.enable_slow_log = true,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("enableSlowLog '{value}' is not 0 or 1"),
                    )),
                },
                "slowLogFile" => system.slow_log_file = dir.join(&value),
                "slowLogMaxBytes" => match value.parse::<u64>() {
                    Ok(n) if n >= 4096 => system.slow_log_max_bytes = n,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("slowLogMaxBytes '{value}' is not a number of bytes from 4096"),
                    )),
                },
                "twoPhaseCommit" => match value.as_str() {
                    "0" | "false" => system.two_phase_commit = false,
                    "1" | "true" => system.two_phase_commit = true,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("twoPhaseCommit '{value}' is not true or false"),
                    )),
                },
                "instanceId" => {
                    if value.is_empty()
                        || value.len() > 32
                        || !value
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
                    {
                        errors.push(ConfigError::new(
                            &origin,
                            element,
                            format!("instanceId '{value}' must be 1 to 32 letters, digits, '_' or '-'"),
                        ));
                    } else {
                        system.instance_id = Some(value.clone());
                    }
                }
                "useZKSwitch" => match value.as_str() {
                    "0" | "false" => system.use_zk_switch = false,
                    "1" | "true" => system.use_zk_switch = true,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("useZKSwitch '{value}' is not true or false"),
                    )),
                },
                "zkWriteLease" => match value.parse::<u64>() {
                    Ok(ms) => system.zk_write_lease_ms = ms,
                    Err(_) => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("zkWriteLease '{value}' is not a number of milliseconds"),
                    )),
                },
                "zkSessionTimeout" | "failoverCatchUpTimeout" => match value.parse::<u64>() {
                    Ok(ms) if (100..=3_600_000).contains(&ms) => {
                        if name == "zkSessionTimeout" {
                            system.zk_session_timeout_ms = ms;
                        } else {
                            system.failover_catch_up_timeout_ms = ms;
                        }
                    }
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("{name} '{value}' is not a number of milliseconds from 100 to 3600000"),
                    )),
                },
                "xaLogDir" => system.xa_log_dir = dir.join(&value),
                "xaLogSegmentBytes" => match value.parse::<u64>() {
                    Ok(n) if n >= 1 => system.xa_log_segment_bytes = n,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("xaLogSegmentBytes '{value}' is not a number of bytes"),
                    )),
                },
                "xaRecoveryPeriod" => match value.parse::<u64>() {
                    Ok(ms) if ms >= 100 => system.xa_recovery_period_ms = ms,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("xaRecoveryPeriod '{value}' is not a number of milliseconds from 100"),
                    )),
                },
                "metricsAddr" => match value.parse::<std::net::SocketAddr>() {
                    Ok(a) => system.metrics_addr = Some(a),
                    Err(_) => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("metricsAddr '{value}' is not an address:port (e.g. 127.0.0.1:9066)"),
                    )),
                },
                "logFormat" => {
                    if !matches!(value.as_str(), "text" | "json") {
                        errors.push(ConfigError::new(
                            &origin,
                            element,
                            format!("logFormat '{value}' is not text or json"),
                        ))
                    }
                }
                "logLevel" => {
                    if tracing_filter_ok(&value).is_err() {
                        errors.push(ConfigError::new(
                            &origin,
                            element,
                            format!("logLevel '{value}' is not a level (error, warn, info, debug, trace) or a tracing filter"),
                        ))
                    }
                }
                "bindIp" => system.bind_ip = value.clone(),
                "explainMode" => match value.as_str() {
                    "route" => system.explain_mode = ExplainMode::Route,
                    "backend" => system.explain_mode = ExplainMode::Backend,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("explainMode '{value}' is not route (Mycat's EXPLAIN: each dataNode's statement) or backend (the backend's plan for a statement on one dataNode)"),
                    )),
                },
                "dataNodeHeartbeatPeriod" | "heartbeatTimeout" => match value.parse::<u64>() {
                    Ok(ms) if ms > 0 => {
                        if name == "heartbeatTimeout" {
                            system.heartbeat_timeout_ms = ms;
                        } else {
                            system.heartbeat_period_ms = ms;
                        }
                    }
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("{name} '{value}' is not a positive number of milliseconds"),
                    )),
                },
                "charset" => system.charset = value.clone(),
                // Java int in Mycat; MySQL's max_allowed_packet ranges from 1 KiB to 1 GiB.
                "maxPacketSize" => match value.parse::<usize>() {
                    Ok(n) if (1024..=1 << 30).contains(&n) => system.max_packet_size = n,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!(
                            "maxPacketSize '{value}' is not a number of bytes from 1024 to 1073741824"
                        ),
                    )),
                },
                "authTimeout" => match value.parse::<u64>() {
                    Ok(ms) if ms > 0 => system.auth_timeout_ms = ms,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("authTimeout '{value}' is not a positive number of milliseconds"),
                    )),
                },
                "sqlExecuteTimeout" => match value.parse::<u64>() {
                    // Seconds, as in Mycat; a year at most (tokio's timers go no further).
                    Ok(s) if (1..=366 * 86_400).contains(&s) => system.sql_execute_timeout_s = s,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!(
                            "sqlExecuteTimeout '{value}' is not a number of seconds from 1 to 31622400"
                        ),
                    )),
                },
                "maxConnections" => match value.parse::<usize>() {
                    Ok(n) if n > 0 => system.max_connections = n,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("maxConnections '{value}' is not a positive number"),
                    )),
                },
                "sslCertFile" => system.ssl_cert_file = Some(dir.join(&value)),
                "sslKeyFile" => system.ssl_key_file = Some(dir.join(&value)),
                "requireSecureTransport" => match value.as_str() {
                    "true" => system.require_secure_transport = true,
                    "false" => system.require_secure_transport = false,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("requireSecureTransport '{value}' is not true or false"),
                    )),
                },
                "fakeMySQLVersion" => {
                    if fake_version_is_valid(&value) {
                        system.fake_mysql_version = Some(value.clone());
                    } else {
                        errors.push(ConfigError::new(
                            &origin,
                            element,
                            format!(
                                "fakeMySQLVersion '{value}' is not a MySQL version number (such as 5.6.29 or 8.0.33, optionally followed by a suffix of letters, digits and . _ + ~ - such as 5.5.5-10.11.6-MariaDB-log), at most {FAKE_VERSION_MAX} characters"
                            ),
                        ));
                    }
                }
                "mycatVersion" => match value.as_str() {
                    "1.6.5" => system.mycat_version = MycatVersion::V1_6_5,
                    "1.6.7.5" => system.mycat_version = MycatVersion::V1_6_7_5,
                    "1.6.7.6" => system.mycat_version = MycatVersion::V1_6_7_6,
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("mycatVersion '{value}' is not one of 1.6.5, 1.6.7.5, 1.6.7.6"),
                    )),
                },
                "sequenceHandlerType" | "sequnceHandlerType" => match value.parse::<u8>() {
                    Ok(t) if t <= 5 => {
                        let other = if name == "sequenceHandlerType" {
                            "sequnceHandlerType"
                        } else {
                            "sequenceHandlerType"
                        };
                        match system.properties.get(other) {
                            Some((v, _)) if v.parse::<u8>().ok() != Some(t) => {
                                errors.push(ConfigError::new(
                                    &origin,
                                    element,
                                    format!(
                                        "{name} {t} contradicts {other} {v}: set one of the two spellings"
                                    ),
                                ))
                            }
                            _ => system.sequence_handler_type = t,
                        }
                    }
                    _ => errors.push(ConfigError::new(
                        &origin,
                        element,
                        format!("{name} '{value}' is not a sequence handler type (0-5)"),
                    )),
                },
                _ => warnings.push(ConfigWarning {
                    origin: origin.clone(),
                    message: format!("system property {name} is accepted but not acted on yet"),
                }),
            }
            system.properties.insert(name, (value, origin));
        }
    }
    // The lease must run out before ZooKeeper expires the session (the client notices a lost
    // connection after about 2/5 of it): then no instance is still writing when the others
    // may decide without it.
    if system.zk_write_lease_ms > 0
        && system.zk_write_lease_ms * 2 >= system.zk_session_timeout_ms
        && let Some((_, origin)) = system.properties.get("zkWriteLease")
    {
        errors.push(ConfigError::new(
            origin,
            "property name=\"zkWriteLease\"",
            format!(
                "zkWriteLease {} ms must be under half of zkSessionTimeout ({} ms)",
                system.zk_write_lease_ms, system.zk_session_timeout_ms
            ),
        ));
    }
    let mut users = BTreeMap::new();
    for u in root.children_named("user") {
        if let Some(user) = load_user(u, errors, warnings) {
            if users.contains_key(&user.name) {
                errors.push(ConfigError::new(
                    &u.origin,
                    format!("user name=\"{}\"", user.name),
                    format!("user {} duplicated", user.name),
                ));
            } else {
                users.insert(user.name.clone(), user);
            }
        }
    }
    if users.is_empty() {
        errors.push(ConfigError::new(
            &root.origin,
            "server",
            "no <user> is defined",
        ));
    }
    if let (Some(list), Some((_, origin))) =
        (&system.manager_users, system.properties.get("managerUsers"))
    {
        for u in list.iter().filter(|u| !users.contains_key(*u)) {
            errors.push(ConfigError::new(
                origin,
                "property name=\"managerUsers\"",
                format!("managerUsers names user {u}, which server.xml does not define"),
            ));
        }
    }
    for fw in root.children_named("firewall") {
        for w in fw.children_named("whitehost") {
            for h in w.children_named("host") {
                check_attrs(h, &["host", "user"], &[], warnings);
                let hosts = h.attr("host").unwrap_or("");
                let element = format!("host host=\"{hosts}\"");
                let list: Vec<String> = h
                    .attr("user")
                    .unwrap_or("")
                    .split(',')
                    .map(str::trim)
                    .filter(|u| !u.is_empty())
                    .map(String::from)
                    .collect();
                if list.is_empty() {
                    warnings.push(ConfigWarning {
                        origin: h.origin.clone(),
                        message: format!("<host host=\"{hosts}\"> lists no user: it admits nobody"),
                    });
                }
                for u in &list {
                    if !users.contains_key(u) {
                        errors.push(ConfigError::new(
                            &h.origin,
                            element.clone(),
                            format!("[user: {u}] doesn't exist in [host: {hosts}]"),
                        ));
                    }
                }
                for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
                    if system.white_hosts.iter().any(|w| w.host == host) {
                        errors.push(ConfigError::new(
                            &h.origin,
                            element.clone(),
                            format!("host duplicated : {host}"),
                        ));
                        continue;
                    }
                    system.white_hosts.push(super::WhiteHost {
                        host: host.to_string(),
                        users: list.clone(),
                    });
                }
            }
        }
        for b in fw.children_named("blacklist") {
            if b.attr("check")
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
            {
                warnings.push(ConfigWarning {
                    origin: b.origin.clone(),
                    message: "<blacklist check=\"true\"> (Druid's SQL wall filter) is accepted but not acted on yet".to_string(),
                });
            }
        }
    }
    for other in root.children.iter() {
        if !matches!(other.name.as_str(), "system" | "user" | "firewall") {
            warnings.push(ConfigWarning {
                origin: other.origin.clone(),
                message: format!("<{}> is accepted but not acted on yet", other.name),
            });
        }
    }
    Some((system, users))
}

fn load_user(
    u: &Element,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigWarning>,
) -> Option<UserConfig> {
    check_attrs(u, &["name"], &["defaultAccount"], warnings);
    let Some(name) = u.attr("name").filter(|n| !n.is_empty()) else {
        errors.push(ConfigError::new(
            &u.origin,
            "user",
            "attribute name is required",
        ));
        return None;
    };
    let element = format!("user name=\"{name}\"");
    let mut user = UserConfig {
        name: name.to_string(),
        password: String::new(),
        schemas: Vec::new(),
        read_only: false,
        default_schema: None,
        privileges: None,
        benchmark: 0,
        origin: u.origin.clone(),
    };
    let mut has_schemas = false;
    let mut decrypt = None;
    for (pname, value, origin) in u.properties() {
        match pname.as_str() {
            "password" => user.password = value,
            "schemas" => {
                has_schemas = true;
                user.schemas = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
            // Java Boolean.valueOf: only "true" (any case) is true (SPEC §0.4).
            "readOnly" => user.read_only = value.eq_ignore_ascii_case("true"),
            "defaultSchema" => user.default_schema = Some(value),
            // A Java int in Mycat; 0 (and, there, anything below) means no limit.
            "benchmark" => match value.parse::<i64>() {
                Ok(n) => user.benchmark = usize::try_from(n.max(0)).unwrap_or(usize::MAX),
                Err(_) => errors.push(ConfigError::new(
                    &origin,
                    element.clone(),
                    format!("benchmark '{value}' is not a number of connections"),
                )),
            },
            "usingDecrypt" => {
                decrypt = Some((value == "1" || value.eq_ignore_ascii_case("true"), origin))
            }
            other => warnings.push(ConfigWarning {
                origin,
                message: format!("user {name}: property {other} is accepted but not acted on yet"),
            }),
        }
    }
    if let Some((true, origin)) = decrypt {
        match super::decrypt::user_password(name, &user.password) {
            Ok(p) => user.password = p,
            Err(m) => errors.push(ConfigError::new(&origin, element.clone(), m.to_string())),
        }
    }
    if !has_schemas {
        errors.push(ConfigError::new(
            &u.origin,
            element.clone(),
            format!("user {name} has no schemas property"),
        ));
    }
    for p in u.children_named("privileges") {
        check_attrs(p, &["check"], &[], warnings);
        if !p
            .attr("check")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            continue;
        }
        let mut schemas = BTreeMap::new();
        for s in p.children_named("schema") {
            check_attrs(s, &["name", "dml"], &[], warnings);
            let Some(mask) = dml_mask(s, &element, errors) else {
                continue;
            };
            let mut tables = BTreeMap::new();
            for t in s.children_named("table") {
                check_attrs(t, &["name", "dml"], &[], warnings);
                if let Some(m) = dml_mask(t, &element, errors) {
                    tables.insert(t.attr("name").unwrap_or("").to_string(), m);
                }
            }
            schemas.insert(
                s.attr("name").unwrap_or("").to_string(),
                super::SchemaPrivileges { dml: mask, tables },
            );
        }
        for d in p.children_named("dataNode") {
            warnings.push(ConfigWarning {
                origin: d.origin.clone(),
                message: "<privileges><dataNode> only filters manager output in Mycat; ignored"
                    .to_string(),
            });
        }
        user.privileges = Some(schemas);
    }
    Some(user)
}

/// A `dml="IUSD"` mask: four digits, each above 0 allowing INSERT, UPDATE, SELECT, DELETE.
fn dml_mask(e: &Element, user: &str, errors: &mut Vec<ConfigError>) -> Option<[bool; 4]> {
    let dml = e.attr("dml").unwrap_or("");
    let digits: Vec<u8> = dml.bytes().collect();
    if digits.len() != 4
        || !digits.iter().all(u8::is_ascii_digit)
        || e.attr("name").is_none_or(str::is_empty)
    {
        errors.push(ConfigError::new(
            &e.origin,
            format!("{user} privileges {}", e.name),
            format!("dml '{dml}' must be four digits (INSERT, UPDATE, SELECT, DELETE) and name is required"),
        ));
        return None;
    }
    Some([
        digits[0] > b'0',
        digits[1] > b'0',
        digits[2] > b'0',
        digits[3] > b'0',
    ])
}

/// Whether `value` reads as a log filter: a level, or `target=level` directives separated by
/// commas (what `logLevel` and `MANX_LOG` take).
fn tracing_filter_ok(value: &str) -> Result<(), ()> {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    let ok = !value.trim().is_empty()
        && value.split(',').all(|d| {
            let level = d.rsplit('=').next().unwrap_or("").trim();
            LEVELS.contains(&level.to_ascii_lowercase().as_str())
        });
    if ok { Ok(()) } else { Err(()) }
}

/// The longest `fakeMySQLVersion`: MySQL's `SERVER_VERSION_LENGTH` (60) less the
/// `-manx-<version>` the gateway appends, with room for a longer crate version.
const FAKE_VERSION_MAX: usize = 48;

/// Whether `value` may be announced as the server's version (`fakeMySQLVersion`, SPEC §3.2): a
/// MySQL version number (two or three dot-separated numbers of at most three digits: `5.6.29`,
/// `8.0.33`), optionally followed by `-` and a suffix of ASCII letters, digits and `. _ + ~ -`,
/// as a server's whole version string reads (MariaDB's greeting `5.5.5-10.11.6-MariaDB-log`,
/// whose first number Mycat checks the same way); at most [`FAKE_VERSION_MAX`] bytes. Nothing
/// that could end an SQL string literal or a packet field (quotes, white space, NUL) passes:
/// the version is written into statements as a literal (`VERSION()` answers it).
fn fake_version_is_valid(value: &str) -> bool {
    let (number, suffix) = match value.split_once('-') {
        Some((n, s)) => (n, Some(s)),
        None => (value, None),
    };
    let parts: Vec<&str> = number.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
        && suffix.is_none_or(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._+~-".contains(&b))
        })
        && value.len() <= FAKE_VERSION_MAX
}

#[cfg(test)]
mod fake_version_tests {
    use super::fake_version_is_valid;

    #[test]
    fn fake_versions_are_numbers_with_an_optional_server_suffix() {
        for ok in [
            "5.6.29",
            "8.0.33",
            "5.7",
            "5.5.5-10.11.6-MariaDB-log",
            "5.5.5-10.11.14-MariaDB-0+deb12u2-log",
        ] {
            assert!(fake_version_is_valid(ok), "{ok}");
        }
        for bad in [
            "8",
            "8.0.33'; x",
            "8.0.33-",
            "8.0.33-a b",
            "x.0.33",
            "5.5.5-10'",
            "8.0.33-\0",
            &format!("8.0.33-{}", "a".repeat(42)),
        ] {
            assert!(!fake_version_is_valid(bad), "{bad}");
        }
    }
}
