//! A lister read on every event, with a resync period: client-go's
//! `AddEventHandlerWithResyncPeriod` plus `podLister.Pods(ns).Get(name)` in
//! the handler. Every resync period the handler gets every cached object
//! again as an update whose old and new are the same version; the lister
//! (the informer's read-only [`Store`]) is already up to date when any
//! notification arrives.
//!
//! `cargo run -p wink-informer --example lister_resync [NAMESPACE]` resyncs
//! the Pods of the namespace every 5 s until each was re-delivered twice
//! (at most 45 s), against the cluster of the default kubeconfig (or `wink sim`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use wink_informer::factory::FactoryOptions;
use wink_informer::{EventHandler, ObjRef, SharedInformerFactory, Store, WatchSpec};

/// One notification, with what the lister said about its object meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// `ADD`, `UPDATE`, `RESYNC` (an update from one version to itself) or `DELETE`.
    pub what: &'static str,
    pub key: String,
    pub resource_version: String,
    /// The lister's version of the object when the handler ran (none: not cached).
    pub lister_version: Option<String>,
}

/// A handler that reads the lister on every notification.
struct ReadsLister {
    lister: Store,
    seen: UnboundedSender<Delivery>,
}

impl ReadsLister {
    fn note(&self, what: &'static str, obj: &ObjRef) {
        let key = obj.key();
        let lister_version = self.lister.get(&key).map(|o| o.resource_version().to_string());
        let rv = obj.resource_version().to_string();
        let listed = lister_version.as_deref().unwrap_or("none");
        println!(
            "{what} {key} rv {rv} (lister: rv {listed}, {} Pods)",
            self.lister.len()
        );
        let delivery = Delivery {
            what,
            key,
            resource_version: rv,
            lister_version,
        };
        let _ = self.seen.send(delivery);
    }
}

impl EventHandler for ReadsLister {
    fn on_add(&self, obj: &ObjRef, _in_initial_list: bool) {
        self.note("ADD", obj);
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        let resync = old.resource_version() == new.resource_version();
        self.note(if resync { "RESYNC" } else { "UPDATE" }, new);
    }
    fn on_delete(&self, obj: &ObjRef, _final_state_unknown: bool) {
        self.note("DELETE", obj);
    }
}

/// Watch the Pods of `namespace` with one handler resynced every `resync`
/// until every cached Pod was re-delivered `rounds` times (or at most
/// `rounds + 2` periods and 30 s more); returns every delivery, in order.
pub async fn run(
    client: kube::Client,
    namespace: &str,
    resync: Duration,
    rounds: usize,
) -> anyhow::Result<Vec<Delivery>> {
    let factory = SharedInformerFactory::new(client, FactoryOptions::default());
    let spec = WatchSpec {
        namespace: Some(namespace.to_string()),
        ..WatchSpec::all("v1", "Pod")
    };
    let informer = factory.informer_for(&spec).await?;
    let lister = informer.store().clone();
    let (tx, mut rx) = unbounded_channel();
    let handler = Arc::new(ReadsLister {
        lister: lister.clone(),
        seen: tx,
    });
    informer.add_listener("reads-lister", handler, Some(resync));

    let limit = resync * (rounds as u32 + 2) + Duration::from_secs(30);
    let deadline = tokio::time::Instant::now() + limit;
    let (mut seen, mut resyncs) = (Vec::new(), BTreeMap::<String, usize>::new());
    while let Ok(Some(delivery)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        if delivery.what == "RESYNC" {
            *resyncs.entry(delivery.key.clone()).or_default() += 1;
        }
        seen.push(delivery);
        let keys = lister.list_keys();
        if !keys.is_empty() && keys.iter().all(|k| resyncs.get(k).is_some_and(|n| *n >= rounds)) {
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
    run(client, &namespace, Duration::from_secs(5), 2).await?;
    Ok(())
}
