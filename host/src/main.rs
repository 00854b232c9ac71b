//! The `wink` binary: `wink run`, `wink dev`, `wink sim`.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use wink::daemon::{self, ClusterOptions, Daemon};
use wink::informer::factory::FactoryOptions;
use wink::runtime::manager::ManagerOptions;

#[derive(Parser)]
#[command(
    name = "wink",
    version,
    about = "Kubernetes shared informers feeding WebAssembly plugins"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the plugins of a directory against a cluster.
    Run {
        /// Directory of plugin components (`*.wasm`, optional `<name>.json` config).
        #[arg(long)]
        plugins: PathBuf,
        /// Kubeconfig file (default: in-cluster, then ~/.kube/config).
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
        /// Kubeconfig context.
        #[arg(long)]
        context: Option<String>,
        /// Narrow watches that name no namespace to this namespace.
        #[arg(long)]
        namespace: Option<String>,
        /// Initial list through a streaming watch (sendInitialEvents).
        #[arg(long)]
        streaming_lists: bool,
    },
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .init();
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_tracing();
    match Cli::parse().command {
        Command::Run {
            plugins,
            kubeconfig,
            context,
            namespace,
            streaming_lists,
        } => {
            let client = daemon::client(&ClusterOptions {
                kubeconfig,
                context,
            })
            .await?;
            let factory = FactoryOptions {
                streaming_lists,
                ..Default::default()
            };
            let manager = ManagerOptions {
                namespace,
                ..Default::default()
            };
            let d = Daemon::start(client, &plugins, factory, manager).await?;
            daemon::shutdown_signal().await;
            d.shutdown();
        }
    }
    Ok(())
}
