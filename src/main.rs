//! The `manx` binary: loads a Mycat configuration directory and serves MySQL clients.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use manx::config::Config;
use manx::datahost::Timeouts;
use manx::frontend::Server;

/// A MySQL-protocol sharding gateway that runs Mycat 1.6 configurations unchanged.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Directory holding server.xml, schema.xml and rule.xml (and the map files they name).
    #[arg(long, default_value = ".")]
    conf: PathBuf,
    /// Listen on this port instead of server.xml's serverPort (0 picks a free port).
    #[arg(long)]
    port: Option<u16>,
    /// Listen on this address instead of server.xml's bindIp.
    #[arg(long)]
    bind: Option<String>,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MANX_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let config = match Config::load(&args.conf) {
        Ok(c) => c,
        Err(errors) => {
            eprintln!(
                "manx: the configuration in {} has errors:\n{errors}",
                args.conf.display()
            );
            std::process::exit(1);
        }
    };
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    let bind = args
        .bind
        .clone()
        .unwrap_or_else(|| config.system.bind_ip.clone());
    let port = args.port.unwrap_or(config.system.server_port);
    let server = match Server::new(config, Timeouts::default()) {
        Ok(s) => Arc::new(s),
        Err(errors) => {
            eprintln!(
                "manx: the configuration in {} has errors:\n{errors}",
                args.conf.display()
            );
            std::process::exit(1);
        }
    };
    let runtime = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind((bind.as_str(), port))
            .await
            .with_context(|| format!("cannot listen on {bind}:{port}"))?;
        tracing::info!(address = %listener.local_addr()?, "manx is serving MySQL clients");
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("shutting down");
        };
        server.serve(listener, shutdown).await.context("serving")?;
        anyhow::Ok(())
    })
}
