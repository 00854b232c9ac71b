//! An informer with a named index by a label, queried by index value: client-go's
//! `Indexers{"app": LabelsIndexFunc}` and `indexer.ByIndex("app", "web")`.
//!
//! `cargo run -p wink-informer --example index_by_label [LABEL]` lists every
//! Pod of the cluster of the default kubeconfig (or `wink sim`) once, then
//! prints the Pods under each value of the label (`app` by default).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use wink_informer::factory::FactoryOptions;
use wink_informer::store::IndexFunc;
use wink_informer::{CachedObject, SharedInformerFactory, WatchSpec};

/// The name of the index this example adds.
pub const INDEX: &str = "by-label";

/// Index every Pod by the value of its label `label`, wait for the informer's
/// cache to fill (at most 30 s), then query the index for each value it
/// holds; returns value -> keys (`namespace/name`) of the Pods under it.
pub async fn run(client: kube::Client, label: &str) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let factory = SharedInformerFactory::new(client, FactoryOptions::default());
    let informer = factory.informer_for(&WatchSpec::all("v1", "Pod")).await?;
    // An index function gives the values an object is indexed under: here
    // its label's value, or none (an unlabelled Pod is in no entry).
    let key = label.to_string();
    let by_label: IndexFunc =
        Arc::new(move |pod: &CachedObject| Ok(pod.label(&key).map(str::to_string).into_iter().collect()));
    informer.add_index(INDEX, by_label)?;
    tokio::time::timeout(Duration::from_secs(30), informer.wait_for_sync()).await?;

    let store = informer.store();
    let mut found = BTreeMap::new();
    for value in store.list_index_values(INDEX)? {
        let pods = store.by_index(INDEX, &value)?;
        let keys: Vec<String> = pods.iter().map(|pod| pod.key()).collect();
        println!("{label}={value}: {}", keys.join(", "));
        found.insert(value, keys);
    }
    factory.shutdown();
    Ok(found)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // kube's TLS needs a rustls crypto provider (already set: not an error).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let label = std::env::args().nth(1).unwrap_or_else(|| "app".to_string());
    let client = kube::Client::try_default().await?;
    run(client, &label).await?;
    Ok(())
}
