//! One shared informer on v1 Pods with two event handlers, each printing
//! what it gets: client-go's `podInformer.Informer().AddEventHandler(...)`
//! called twice. Both handlers share one list+watch and one cache, each has
//! its own queue, and each sees every add, update and delete in order.
//!
//! `cargo run -p wink-informer --example two_handlers [NAMESPACE]` watches
//! for 30 s, against the cluster of the default kubeconfig (or `wink sim`).

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use wink_informer::factory::FactoryOptions;
use wink_informer::{EventHandler, ObjRef, SharedInformerFactory, WatchSpec};

/// What each handler saw, in order: `seen[0]` is handler 1's, `seen[1]` handler 2's.
pub type Seen = [Vec<String>; 2];

/// A handler printing every notification (and passing it on to [`run`]).
struct Printer {
    handler: usize,
    seen: UnboundedSender<(usize, String)>,
}

impl Printer {
    fn note(&self, line: String) {
        println!("handler {}: {line}", self.handler + 1);
        let _ = self.seen.send((self.handler, line));
    }
}

impl EventHandler for Printer {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        let initial = if in_initial_list { " (initial list)" } else { "" };
        self.note(format!("ADD {}{initial}", obj.key()));
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        let (from, to) = (old.resource_version(), new.resource_version());
        self.note(format!("UPDATE {} rv {from} -> {to}", new.key()));
    }
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        let tombstone = if final_state_unknown {
            " (final state unknown)"
        } else {
            ""
        };
        self.note(format!("DELETE {}{tombstone}", obj.key()));
    }
    fn on_synced(&self) {
        self.note("SYNCED".to_string());
    }
}

/// Watch the Pods of `namespace` with two handlers on one shared informer
/// until `until` (asked after every notification) says so, or `limit` has
/// passed; returns what each handler saw.
pub async fn run(
    client: kube::Client,
    namespace: &str,
    mut until: impl FnMut(&Seen) -> bool,
    limit: Duration,
) -> anyhow::Result<Seen> {
    let factory = SharedInformerFactory::new(client, FactoryOptions::default());
    let spec = WatchSpec {
        namespace: Some(namespace.to_string()),
        ..WatchSpec::all("v1", "Pod")
    };
    let informer = factory.informer_for(&spec).await?;
    let (tx, mut rx) = unbounded_channel();
    for handler in 0..2 {
        let printer = Arc::new(Printer {
            handler,
            seen: tx.clone(),
        });
        informer.add_listener(&format!("handler-{}", handler + 1), printer, None);
    }
    let deadline = tokio::time::Instant::now() + limit;
    let mut seen: Seen = Default::default();
    while let Ok(Some((handler, line))) = tokio::time::timeout_at(deadline, rx.recv()).await {
        seen[handler].push(line);
        if until(&seen) {
            break;
        }
    }
    factory.shutdown();
    Ok(seen)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // kube's TLS needs a rustls crypto provider (already set: not an error).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let namespace = std::env::args().nth(1).unwrap_or_else(|| "default".to_string());
    let client = kube::Client::try_default().await?;
    run(client, &namespace, |_| false, Duration::from_secs(30)).await?;
    Ok(())
}
