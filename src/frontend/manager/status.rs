//! The rows of the `show @@...` commands that describe the running gateway: server, datanode,
//! datasource, heartbeat, synstatus, connection, sysparam, cluster and xa sessions (the column
//! meanings are in the parent module's documentation).

use super::*;

pub(super) fn server_row(server: &Server) -> Answer {
    let up = server.started_at.elapsed().map_or(0, |d| d.as_secs());
    let uptime = format!(
        "{}d {}h {}m {}s",
        up / 86_400,
        up / 3_600 % 24,
        up / 60 % 60,
        up % 60
    );
    let rss = resident_bytes();
    let total = machine_bytes();
    let started = server
        .started_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let reloaded = match server.reloads.reload_time.load(Ordering::Relaxed) {
        -1 => started,
        t => t,
    };
    let status = if server.offline.load(Ordering::Relaxed) {
        "OFF"
    } else {
        "ON"
    };
    Answer::Rows {
        columns: vec![
            ("UPTIME", TEXT),
            ("USED_MEMORY", LONGLONG),
            ("TOTAL_MEMORY", LONGLONG),
            ("MAX_MEMORY", LONGLONG),
            ("RELOAD_TIME", LONGLONG),
            ("ROLLBACK_TIME", LONGLONG),
            ("CHARSET", TEXT),
            ("STATUS", TEXT),
        ],
        rows: vec![vec![
            text(uptime),
            text(rss),
            text(rss),
            text(total),
            text(reloaded),
            text(server.reloads.rollback_time.load(Ordering::Relaxed)),
            text(&server.current().config.system.charset),
            text(status),
        ]],
    }
}

/// The process's resident memory in bytes (Linux `/proc/self/statm`; 0 elsewhere).
pub(super) fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// The machine's memory in bytes (Linux `/proc/meminfo`; 0 elsewhere).
pub(super) fn machine_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

pub(super) fn datanodes(server: &Server, only: Option<&[String]>) -> Answer {
    let rows = server
        .current()
        .cluster
        .node_infos()
        .into_iter()
        .filter(|n| only.is_none_or(|o| o.contains(&n.name)))
        .map(|n| {
            vec![
                text(&n.name),
                text(format!("{}/{}", n.data_host, n.database)),
                text(n.index),
                text(n.db_type),
                text(n.active),
                text(n.size.saturating_sub(n.active)),
                text(n.max_con),
                text(n.executed),
                text("0"),
                text("0"),
                text(0),
                text(n.recovery_s),
            ]
        })
        .collect();
    Answer::Rows {
        columns: vec![
            ("NAME", TEXT),
            ("DATHOST", TEXT),
            ("INDEX", LONG),
            ("TYPE", TEXT),
            ("ACTIVE", LONG),
            ("IDLE", LONG),
            ("SIZE", LONG),
            ("EXECUTE", LONGLONG),
            ("TOTAL_TIME", DOUBLE),
            ("MAX_TIME", DOUBLE),
            ("MAX_SQL", LONGLONG),
            ("RECOVERY_TIME", LONGLONG),
        ],
        rows,
    }
}

pub(super) fn datasources(server: &Server, only: Option<&str>) -> Answer {
    let nodes: Vec<String> = match only {
        Some(dn) => vec![dn.to_string()],
        None => server
            .current()
            .cluster
            .node_names()
            .map(String::from)
            .collect(),
    };
    let mut rows = Vec::new();
    for node in &nodes {
        let Some(sources) = server.current().cluster.node_sources(node) else {
            continue;
        };
        for s in sources {
            rows.push(vec![
                text(node),
                text(&s.name),
                text(s.db_type),
                text(&s.host),
                text(s.port),
                text(if s.write { "W" } else { "R" }),
                text(s.active),
                text(s.size.saturating_sub(s.active)),
                text(s.max_con),
                text(s.reads + s.writes),
                text(s.reads),
                text(s.writes),
            ]);
        }
    }
    Answer::Rows {
        columns: vec![
            ("DATANODE", TEXT),
            ("NAME", TEXT),
            ("TYPE", TEXT),
            ("HOST", TEXT),
            ("PORT", LONG),
            ("W/R", TEXT),
            ("ACTIVE", LONG),
            ("IDLE", LONG),
            ("SIZE", LONG),
            ("EXECUTE", LONGLONG),
            ("READ_LOAD", LONG),
            ("WRITE_LOAD", LONG),
        ],
        rows,
    }
}

/// `yyyy-MM-dd HH:mm:ss` (UTC) of `t`.
pub(super) fn datetime(t: SystemTime) -> String {
    crate::stats::utc(t).0
}

pub(super) fn heartbeat(server: &Server) -> Answer {
    let timeout = server.current().cluster.heartbeat_timeout_ms();
    let rows = server
        .current()
        .cluster
        .source_infos()
        .into_iter()
        .filter(|s| s.heartbeat)
        .map(|s| {
            let (last, took) = match s.last_beat {
                Some((at, took)) => (Some(datetime(at)), took.as_millis()),
                None => (None, 0),
            };
            vec![
                text(&s.name),
                text(s.db_type),
                text(&s.host),
                text(s.port),
                text(s.rs_code),
                text(s.retry),
                text(if s.checking { "checking" } else { "idle" }),
                text(timeout),
                text(format!("{took},{took},{took}")),
                last,
                text(s.stopped),
            ]
        })
        .collect();
    Answer::Rows {
        columns: vec![
            ("NAME", TEXT),
            ("TYPE", TEXT),
            ("HOST", TEXT),
            ("PORT", LONG),
            ("RS_CODE", LONG),
            ("RETRY", LONG),
            ("STATUS", TEXT),
            ("TIMEOUT", LONGLONG),
            ("EXECUTE_TIME", TEXT),
            ("LAST_ACTIVE_TIME", TEXT),
            ("STOP", TEXT),
        ],
        rows,
    }
}

pub(super) fn synstatus(server: &Server) -> Answer {
    let rows = server
        .current()
        .cluster
        .source_infos()
        .into_iter()
        .filter(|s| s.replication_check)
        .map(|s| {
            let mut row = vec![text(&s.name), text(&s.host), text(s.port)];
            // Master_Host, Master_Port, Master_Use: not kept by manx's heartbeat.
            row.extend([None, None, None]);
            row.push(s.lag.map(|l| l.to_string()));
            // Slave_IO_Running .. Last_SQL_Errno: not kept.
            row.extend((0..7).map(|_| None));
            row
        })
        .collect();
    Answer::Rows {
        columns: vec![
            ("name", TEXT),
            ("host", TEXT),
            ("port", LONG),
            ("Master_Host", TEXT),
            ("Master_Port", LONG),
            ("Master_Use", TEXT),
            ("Seconds_Behind_Master", LONG),
            ("Slave_IO_Running", TEXT),
            ("Slave_SQL_Running", TEXT),
            ("Slave_IO_State", TEXT),
            ("Connect_Retry", LONG),
            ("Last_IO_Error", TEXT),
            ("Last_SQL_Error", TEXT),
            ("Last_SQL_Errno", LONG),
        ],
        rows,
    }
}

pub(super) fn connections(server: &Server) -> Answer {
    let charset = &server.current().config.system.charset;
    let rows = server
        .registry
        .sessions()
        .into_iter()
        .filter_map(|(id, h)| {
            let user = h.user()?.to_string();
            let p = h.published();
            Some(vec![
                text("Processor0"),
                text(id),
                text(h.peer.ip().to_canonical()),
                text(h.peer.port()),
                text(h.local_port),
                text(user),
                p.schema,
                text(charset),
                text(0),
                text(0),
                text(h.since.elapsed().as_secs()),
                text(0),
                text(0),
                text(""),
                text(p.autocommit),
            ])
        })
        .collect();
    Answer::Rows {
        columns: vec![
            ("PROCESSOR", TEXT),
            ("ID", LONG),
            ("HOST", TEXT),
            ("PORT", LONG),
            ("LOCAL_PORT", LONG),
            ("USER", TEXT),
            ("SCHEMA", TEXT),
            ("CHARSET", TEXT),
            ("NET_IN", LONGLONG),
            ("NET_OUT", LONGLONG),
            ("ALIVE_TIME(S)", LONGLONG),
            ("RECV_BUFFER", LONG),
            ("SEND_QUEUE", LONG),
            ("txlevel", TEXT),
            ("autocommit", TEXT),
        ],
        rows,
    }
}

pub(super) fn sysparam(server: &Server) -> Answer {
    let s = &server.current().config.system;
    let managers = match &s.manager_users {
        Some(list) => list.join(","),
        None => "(users not readOnly)".to_string(),
    };
    let params: Vec<(&str, String, &str)> = vec![
        (
            "serverPort",
            s.server_port.to_string(),
            "port of the SQL service",
        ),
        (
            "managerPort",
            s.manager_port.to_string(),
            "port of the manager service",
        ),
        ("bindIp", s.bind_ip.clone(), "address both ports listen on"),
        ("charset", s.charset.clone(), "default character set"),
        (
            "dataNodeHeartbeatPeriod",
            s.heartbeat_period_ms.to_string(),
            "ms between heartbeats",
        ),
        (
            "heartbeatTimeout",
            s.heartbeat_timeout_ms.to_string(),
            "ms a heartbeat may take",
        ),
        (
            "sqlExecuteTimeout",
            s.sql_execute_timeout_s.to_string(),
            "seconds a backend may stay silent",
        ),
        (
            "maxPacketSize",
            s.max_packet_size.to_string(),
            "max_allowed_packet of clients",
        ),
        (
            "authTimeout",
            s.auth_timeout_ms.to_string(),
            "ms a client has to log in",
        ),
        (
            "maxConnections",
            s.max_connections.to_string(),
            "client connections at once",
        ),
        (
            "sequenceHandlerType",
            s.sequence_handler_type.to_string(),
            "where global sequences come from",
        ),
        (
            "managerUsers",
            managers,
            "users that may change state on the manager port",
        ),
        (
            "shutdownTimeout",
            s.shutdown_timeout_s.to_string(),
            "seconds statements get to finish on SIGTERM",
        ),
        (
            "useSqlStat",
            u8::from(server.stats.enabled()).to_string(),
            "keep the show @@sql* statistics",
        ),
        (
            "sqlRecordCount",
            s.sql_record_count.to_string(),
            "statements kept for show @@sql and @@sql.slow",
        ),
        (
            "sqlSlowTime",
            server.stats.slow_ms().to_string(),
            "ms from which a statement is slow (reload @@sqlslow=N)",
        ),
        (
            "enableSlowLog",
            u8::from(s.enable_slow_log).to_string(),
            "write slow statements to slowLogFile",
        ),
        (
            "slowLogFile",
            s.slow_log_file.display().to_string(),
            "the slow log (MySQL's format)",
        ),
        (
            "metricsAddr",
            s.metrics_addr
                .map_or_else(|| "(off)".to_string(), |a| a.to_string()),
            "where Prometheus scrapes /metrics",
        ),
        (
            "twoPhaseCommit",
            s.two_phase_commit.to_string(),
            "every transaction and multi-node write commits in two phases (XA)",
        ),
        (
            "instanceId",
            server.xa.instance().to_string(),
            "this gateway's name in its XA transaction ids",
        ),
        (
            "xaLogDir",
            server.xa.settings.log_dir.display().to_string(),
            "the XA coordinator log",
        ),
        (
            "xaRecoveryPeriod",
            s.xa_recovery_period_ms.to_string(),
            "ms between two XA recovery passes",
        ),
        (
            "useZKSwitch",
            s.use_zk_switch.to_string(),
            "failovers decided through ZooKeeper (cluster mode, myid.properties)",
        ),
        (
            "zkSessionTimeout",
            s.zk_session_timeout_ms.to_string(),
            "ms without ZooKeeper before this instance's session expires",
        ),
        (
            "zkWriteLease",
            s.zk_write_lease_ms.to_string(),
            "ms without ZooKeeper before this instance refuses writes (0: never)",
        ),
        (
            "failoverCatchUpTimeout",
            s.failover_catch_up_timeout_ms.to_string(),
            "ms a failover waits for the standby to apply the acknowledged writes",
        ),
    ];
    Answer::Rows {
        columns: vec![
            ("PARAM_NAME", TEXT),
            ("PARAM_VALUE", TEXT),
            ("PARAM_DESCR", TEXT),
        ],
        rows: params
            .into_iter()
            .map(|(n, v, d)| vec![text(n), text(v), text(d)])
            .collect(),
    }
}

/// `show @@cluster` (manx): ZooKeeper cluster mode as this instance sees it, one row per
/// dataHost: this instance's MYID, ZK (`connected`, `disconnected`, or `off` outside cluster
/// mode), the LEADER's myid, the EPOCH of the index document last followed, the DATAHOST, its
/// active INDEX, POSITION (the GTIDs of the writes acknowledged on it by this instance) and
/// NOTE (the last failover decision about it, or why a switch was refused and which writes
/// were at risk) and CONFIG_VERSION (the cluster-wide configuration version in force here, 0
/// before any was published; module [`super::super::cluster`]).
pub(super) fn cluster(server: &Server) -> Answer {
    let current = server.current();
    let config_version = server
        .config_version
        .load(std::sync::atomic::Ordering::Acquire);
    let (myid, zk, leader, epoch, notes) = match server.coordination.get() {
        Some(c) => {
            let (connected, leader, epoch, hosts) = c.snapshot();
            (
                c.settings.myid.myid.clone(),
                if connected {
                    "connected"
                } else {
                    "disconnected"
                },
                leader,
                epoch,
                hosts,
            )
        }
        None => (String::new(), "off", String::new(), 0, Default::default()),
    };
    Answer::Rows {
        columns: vec![
            ("MYID", TEXT),
            ("ZK", TEXT),
            ("LEADER", TEXT),
            ("EPOCH", LONGLONG),
            ("DATAHOST", TEXT),
            ("INDEX", LONG),
            ("POSITION", TEXT),
            ("NOTE", TEXT),
            ("CONFIG_VERSION", LONGLONG),
        ],
        rows: current
            .cluster
            .host_positions()
            .into_iter()
            .map(|(name, index, position)| {
                let note = notes.get(&name).map(|h| h.note.clone()).unwrap_or_default();
                vec![
                    text(&myid),
                    text(zk),
                    text(&leader),
                    text(epoch),
                    text(&name),
                    text(index),
                    text(position),
                    text(note),
                    text(config_version),
                ]
            })
            .collect(),
    }
}

/// `show @@xa_session` (DBLE's columns): the XA transactions of this instance: those its
/// sessions run (FRONT_ID, state ACTIVE...COMMITTING), those left to recovery (FRONT_ID 0,
/// COMMIT_PENDING / ROLLBACK_PENDING), and the branches the last recovery pass found prepared
/// with no record in the coordinator log (IN_DOUBT). SHARDING_NODES lists the dataNodes,
/// separated by spaces as DBLE does.
pub(super) fn xa_sessions(server: &Server) -> Answer {
    Answer::Rows {
        columns: vec![
            ("FRONT_ID", TEXT),
            ("XA_ID", TEXT),
            ("XA_STATE", TEXT),
            ("SHARDING_NODES", TEXT),
        ],
        rows: server
            .xa
            .rows()
            .into_iter()
            .map(|r| {
                vec![
                    text(r.front),
                    text(r.gtrid),
                    text(r.state),
                    text(r.nodes.join(" ")),
                ]
            })
            .collect(),
    }
}
