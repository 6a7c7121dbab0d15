//! The `manx` binary: serves MySQL clients on a Mycat configuration directory, checks one, or
//! tells where a value is routed.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use manx::config::Config;
use manx::datahost::Timeouts;
use manx::frontend::Server;
use manx::route::Router;

/// A MySQL-protocol sharding gateway that runs Mycat 1.6 configurations unchanged.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Directory holding server.xml, schema.xml and rule.xml (and the map files they name).
    #[arg(long, default_value = ".", global = true)]
    conf: PathBuf,
    /// Listen on this port instead of server.xml's serverPort (0 picks a free port).
    #[arg(long)]
    port: Option<u16>,
    /// Serve the manager port on this port instead of server.xml's managerPort (0 picks a free
    /// port).
    #[arg(long)]
    manager_port: Option<u16>,
    /// Serve Prometheus metrics on `ADDR:PORT` at /metrics (instead of server.xml's
    /// metricsAddr; off when neither is set).
    #[arg(long, value_name = "ADDR:PORT")]
    metrics_addr: Option<std::net::SocketAddr>,
    /// Log lines as text or JSON (instead of server.xml's logFormat; text by default).
    #[arg(long, value_enum)]
    log_format: Option<LogFormat>,
    /// Listen on this address instead of server.xml's bindIp.
    #[arg(long)]
    bind: Option<String>,
    /// PEM certificate chain offered to clients that switch to TLS (instead of server.xml's
    /// sslCertFile); needs --tls-key.
    #[arg(long, value_name = "FILE")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert (instead of server.xml's sslKeyFile).
    #[arg(long, value_name = "FILE")]
    tls_key: Option<PathBuf>,
    /// Refuse clients that do not switch to TLS (error 3159), as server.xml's
    /// requireSecureTransport=true.
    #[arg(long)]
    require_secure_transport: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Validate the configuration: print a summary and exit 0, or every error with file:line
    /// and exit 1. Connects nowhere unless --backends or --strict is given.
    Check {
        /// Also connect to every writeHost and readHost and report the privileges of its
        /// account beyond what manx needs (SUPER, FILE, GRANT OPTION, SHUTDOWN, global ALL,
        /// ...; README "Deployment: the backend account") as warnings.
        #[arg(long)]
        backends: bool,
        /// Treat every warning as an error (exit 1): the configuration's own warnings and,
        /// as with --backends, each excess privilege of a backend account and each server
        /// whose account could not be checked.
        #[arg(long)]
        strict: bool,
    },
    /// ZooKeeper cluster mode (myid.properties with loadZk=true in --conf).
    Zk {
        #[command(subcommand)]
        action: ZkAction,
    },
    /// Print the dataNode a sharding-column value of TABLE goes to (TABLE or SCHEMA.TABLE).
    Route {
        table: String,
        /// The value as it would appear in SQL (negative numbers allowed).
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
}

#[derive(Subcommand, Debug)]
enum ZkAction {
    /// Propose the configuration files of --conf to the cluster: every running instance
    /// validates them, and they are installed everywhere (files written, reload) only when
    /// every one accepted them. Exits 0 once committed, 1 when refused or undecided.
    Publish {
        /// Seconds to wait for the decision.
        #[arg(long, default_value_t = 90)]
        wait: u64,
    },
}

/// `manx zk publish`.
fn zk_publish(dir: &std::path::Path, wait: u64) -> anyhow::Result<()> {
    let myid = match manx::config::myid::load(dir) {
        Ok(Some(m)) => m,
        Ok(None) => anyhow::bail!(
            "{} has no myid.properties with loadZk=true: there is no cluster to publish to",
            dir.display()
        ),
        Err(e) => anyhow::bail!("{e}"),
    };
    // What is published must load here first.
    let _ = load(dir);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    match runtime.block_on(manx::frontend::cluster::publish(
        dir,
        &myid,
        std::time::Duration::from_secs(wait),
    )) {
        Ok(message) => {
            println!("{message}");
            Ok(())
        }
        Err(e) => {
            eprintln!("manx: {e}");
            std::process::exit(1);
        }
    }
}

/// In cluster mode (`loadZk=true`), writes the configuration published in ZooKeeper into
/// `dir` before it is loaded; returns its version. ZooKeeper out of reach or nothing
/// published: the local files are used (logged).
fn fetch_cluster_config(dir: &std::path::Path) -> u64 {
    let myid = match manx::config::myid::load(dir) {
        Ok(Some(m)) => m,
        _ => return 0,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(_) => return 0,
    };
    let fetched = runtime.block_on(manx::frontend::cluster::fetch_at_start(
        dir,
        &myid,
        std::time::Duration::from_secs(10),
    ));
    match fetched {
        Ok(Some(version)) => {
            tracing::info!(version, zk = %myid.zk_url, "cluster mode: configuration taken from ZooKeeper");
            version
        }
        Ok(None) => {
            tracing::info!(zk = %myid.zk_url, "cluster mode: no configuration published in ZooKeeper yet (manx zk publish); the local files are used");
            0
        }
        Err(e) => {
            tracing::warn!(zk = %myid.zk_url, error = %e, "cluster mode: cannot read the configuration from ZooKeeper; the local files are used");
            0
        }
    }
}

/// In cluster mode with `useZKSwitch`, writes the indexes agreed in ZooKeeper into
/// `dnindex.properties` before the dataHosts are built. ZooKeeper out of reach: the local file
/// is used (logged at ERROR: it may name a writeHost the other instances left).
fn fetch_cluster_dnindex(dir: &std::path::Path) {
    let Ok(Some(myid)) = manx::config::myid::load(dir) else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    match runtime.block_on(manx::frontend::cluster::fetch_dnindex_at_start(
        dir,
        &myid,
        std::time::Duration::from_secs(10),
    )) {
        Ok(Some(epoch)) => {
            tracing::info!(
                epoch,
                "cluster mode: active writeHosts taken from ZooKeeper"
            )
        }
        Ok(None) => {}
        Err(e) => {
            tracing::error!(zk = %myid.zk_url, error = %e, "cluster mode: cannot read the active writeHosts from ZooKeeper; starting on the local dnindex.properties, which may name a writeHost the other instances have left")
        }
    }
}

/// Loads and validates the configuration, or prints every error and exits 1.
fn load(dir: &std::path::Path) -> (Config, Router) {
    let fail = |errors: &dyn std::fmt::Display| -> ! {
        eprintln!(
            "manx: the configuration in {} has errors:\n{errors}",
            dir.display()
        );
        std::process::exit(1);
    };
    let config = Config::load(dir).unwrap_or_else(|e| fail(&e));
    let router = Router::new(&config).unwrap_or_else(|e| fail(&e));
    (config, router)
}

/// jemalloc instead of glibc's malloc: a row passing through costs several allocations in the
/// crates it crosses (mysql_async decodes it into owned values and two failed packet parses,
/// opensrv-mysql builds each packet in a fresh buffer), and glibc's free was a tenth of all
/// instructions of a sysbench read_only statement (callgrind: 105,290 -> 92,290 per statement
/// with jemalloc). Unlike mimalloc (tried in 14c235d, dropped in 4bb3f40) it keeps the RSS of
/// 5,000 idle clients near glibc's: 117 MB against 112 MB (`scripts/bench.sh`'s idle-client
/// measure).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Log line formats (`--log-format`, server.xml `logFormat`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per event (fields, the connection's span: id, peer, user).
    Json,
}

/// Starts the log on stderr: `format`, the level from `MANX_LOG` or `RUST_LOG` (tracing's
/// filter syntax), else `level` (server.xml `logLevel`), else `info`.
fn init_log(format: LogFormat, level: Option<&str>) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MANX_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| level.unwrap_or("info").into());
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder.json().with_current_span(true).init(),
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // Serving reads its log settings from server.xml (a configuration error is printed and
    // ends the process before anything else is logged); the other commands log as text.
    let configured = match &args.command {
        None => Config::load(&args.conf).ok().map(|c| {
            let get = |n: &str| c.system.properties.get(n).map(|(v, _)| v.clone());
            (get("logFormat"), get("logLevel"))
        }),
        Some(_) => None,
    };
    let (format_property, level) = configured.unwrap_or_default();
    let format = args.log_format.unwrap_or(match format_property.as_deref() {
        Some("json") => LogFormat::Json,
        _ => LogFormat::Text,
    });
    init_log(format, level.as_deref());
    match &args.command {
        Some(Command::Check { backends, strict }) => {
            check(&args.conf, *backends || *strict, *strict)
        }
        Some(Command::Zk {
            action: ZkAction::Publish { wait },
        }) => zk_publish(&args.conf, *wait),
        Some(Command::Route { table, value }) => {
            let (config, router) = load(&args.conf);
            match route_value(&config, &router, table, value) {
                Ok(line) => {
                    println!("{line}");
                    Ok(())
                }
                Err(e) => {
                    eprintln!("manx: {e}");
                    std::process::exit(1);
                }
            }
        }
        None => serve(args),
    }
}

/// `manx check`: the summary, the configuration's warnings and, when `backends`, the backend
/// accounts' excess privileges (one line each, `warning:` or under `strict` `error:`). Exits 1
/// under `strict` when there is any of them.
fn check(dir: &std::path::Path, backends: bool, strict: bool) -> anyhow::Result<()> {
    let (config, _) = load(dir);
    print!("{}", config.summary());
    match manx::config::myid::load(dir) {
        Ok(Some(m)) => println!(
            "cluster mode: myid {} in cluster {} at ZooKeeper {} (useZKSwitch={}, zkWriteLease={} ms)",
            m.myid,
            m.cluster_id,
            m.zk_url,
            config.system.use_zk_switch,
            config.system.zk_write_lease_ms
        ),
        Ok(None) => {}
        Err(e) => {
            eprintln!(
                "manx: the configuration in {} has errors:\n{e}",
                dir.display()
            );
            std::process::exit(1);
        }
    }
    let mut problems: Vec<String> = config.warnings.iter().map(|w| w.to_string()).collect();
    if backends {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the tokio runtime")?;
        let reports = runtime.block_on(manx::datahost::accounts::audit(
            &config,
            Timeouts::default(),
        ));
        for r in &reports {
            let found = r.problems();
            if found.is_empty() {
                println!("{r}");
            }
            problems.extend(found);
        }
    }
    let label = if strict { "error" } else { "warning" };
    for p in &problems {
        println!("{label}: {p}");
    }
    if strict && !problems.is_empty() {
        eprintln!(
            "manx: {} problem(s) in {} under --strict",
            problems.len(),
            dir.display()
        );
        std::process::exit(1);
    }
    println!("configuration OK: {}", dir.display());
    Ok(())
}

/// `manx route`: the dataNode (and its physical database) of `value` in `table`.
fn route_value(
    config: &Config,
    router: &Router,
    table: &str,
    value: &str,
) -> Result<String, String> {
    let (schema, name) = match table.split_once('.') {
        Some((s, t)) => (Some(s), t),
        None => (None, table),
    };
    let upper = name.to_ascii_uppercase();
    let candidates: Vec<_> = config
        .schemas
        .keys()
        .filter(|s| schema.is_none_or(|want| want == s.as_str()))
        .filter_map(|s| router.schema(s)?.tables.get(&upper).map(|t| (s, t)))
        .collect();
    let (s, t) = match candidates.as_slice() {
        [] => return Err(format!("table {name} is not configured in any schema")),
        [one] => *one,
        _ => {
            return Err(format!(
                "table {name} is in several schemas; write SCHEMA.{name}"
            ));
        }
    };
    let node = match &t.rule {
        Some(rule) => {
            let i = t.partition_of(value).map_err(|e| e.message)?;
            let node = &t.nodes[i];
            return Ok(format!(
                "{s}.{} {}={value} -> {node} (database {})",
                t.name,
                rule.column,
                router.database_of(node).unwrap_or("?")
            ));
        }
        None => t.nodes.join(","),
    };
    let kind = match t.kind {
        manx::config::TableKind::Global => "is a global table",
        _ => "has no sharding rule",
    };
    Ok(format!("{s}.{} {kind}: every row is on {node}", t.name))
}

fn serve(args: Args) -> anyhow::Result<()> {
    let config_version = fetch_cluster_config(&args.conf);
    let (mut config, _) = load(&args.conf);
    if config.system.use_zk_switch {
        fetch_cluster_dnindex(&args.conf);
    }
    if let Some(cert) = &args.tls_cert {
        config.system.ssl_cert_file = Some(cert.clone());
    }
    if let Some(key) = &args.tls_key {
        config.system.ssl_key_file = Some(key.clone());
    }
    if args.require_secure_transport {
        config.system.require_secure_transport = true;
    }
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    let bind = args
        .bind
        .clone()
        .unwrap_or_else(|| config.system.bind_ip.clone());
    let port = args.port.unwrap_or(config.system.server_port);
    let manager_port = args.manager_port.unwrap_or(config.system.manager_port);
    // What is in force, for `show @@sysparam` (the command line wins over server.xml).
    config.system.server_port = port;
    config.system.manager_port = manager_port;
    config.system.bind_ip.clone_from(&bind);
    let drain_deadline = std::time::Duration::from_secs(config.system.shutdown_timeout_s);
    let metrics_addr = args.metrics_addr.or(config.system.metrics_addr);
    config.system.metrics_addr = metrics_addr;
    let server = match Server::new(config, Timeouts::default()) {
        Ok(s) => {
            s.config_version
                .store(config_version, std::sync::atomic::Ordering::Release);
            Arc::new(s)
        }
        Err(errors) => {
            eprintln!(
                "manx: the configuration in {} has errors:\n{errors}",
                args.conf.display()
            );
            std::process::exit(1);
        }
    };
    // Generous worker stacks: the SQL parser and its visitors recurse over expression trees.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(16 * 1024 * 1024)
        .build()
        .context("starting the tokio runtime")?;
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind((bind.as_str(), port))
            .await
            .with_context(|| format!("cannot listen on {bind}:{port}"))?;
        let manager = tokio::net::TcpListener::bind((bind.as_str(), manager_port))
            .await
            .with_context(|| {
                format!("cannot listen on {bind}:{manager_port} (managerPort, --manager-port)")
            })?;
        tracing::info!(address = %listener.local_addr()?, "manx is serving MySQL clients");
        tracing::info!(address = %manager.local_addr()?, "manager port");
        if let Some(addr) = metrics_addr {
            let metrics = tokio::net::TcpListener::bind(addr).await.with_context(|| {
                format!("cannot listen on {addr} (metricsAddr, --metrics-addr)")
            })?;
            tracing::info!(address = %metrics.local_addr()?, "Prometheus metrics at /metrics");
            tokio::spawn(server.clone().serve_metrics(metrics, std::future::pending()));
        }
        // The backend accounts' privileges, checked once beside the start-up (warnings only:
        // the gateway serves whatever the accounts hold).
        let audited = server.current().config.clone();
        tokio::spawn(async move {
            let reports = manx::datahost::accounts::audit(&audited, Timeouts::default()).await;
            manx::datahost::accounts::log(&reports);
        });
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        // SIGHUP reloads the configuration as `reload @@config_all` does (module
        // manx::frontend::reload); the outcome is logged.
        let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .context("installing the SIGHUP handler")?;
        let reloading = server.clone();
        tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                match reloading.reload(manx::frontend::reload::Scope::All).await {
                    Ok(message) => tracing::info!("SIGHUP: {message}"),
                    Err(e) => tracing::error!("SIGHUP: {e}"),
                }
            }
        });
        let (stop_manager, manager_stopped) = tokio::sync::oneshot::channel::<()>();
        let managed = tokio::spawn(server.clone().serve_manager(manager, async move {
            let _ = manager_stopped.await;
        }));
        let shutdown = async {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        };
        server.clone().serve(listener, shutdown).await.context("serving")?;
        // Graceful shutdown: no new clients; a second signal ends the process at once.
        tracing::info!(deadline = ?drain_deadline, "shutting down: no new connections, waiting for statements and transactions in progress");
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            tracing::warn!("second signal: exiting at once");
            std::process::exit(1);
        });
        let interrupted = server.drain(drain_deadline).await;
        let _ = stop_manager.send(());
        let _ = managed.await;
        tracing::info!(interrupted, "shut down");
        anyhow::Ok(())
    });
    // Tasks left (sessions of the manager port, heartbeats) are dropped with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served
}
