//! Time to synced: one informer of N ConfigMaps (~1 KiB each) from the
//! simulated API server, by paged LIST (500 a page) and by streaming list
//! (`sendInitialEvents`), wink's informer (on the daemon's client) against a bare kube-runtime
//! reflector in the same run, alternating, each run started once the one
//! before it has been torn down. Run: `cargo bench -p wink-e2e --bench synced`.
//! Environment: `SYNCED_SIZES` (default `10000,100000`).

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use std::time::{Duration, Instant};
use wink::informer::SharedInformerFactory;
use wink::informer::factory::{FactoryOptions, WatchSpec};
use wink_sim::{Sim, SimConfig};

fn sizes() -> Vec<usize> {
    std::env::var("SYNCED_SIZES")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

async fn wink_synced(sim: &Sim, streaming: bool) -> Duration {
    let started = Instant::now();
    // The daemon's client: its watches (a streaming list is one) read in
    // windows of `--watch-window-us`'s default under a steady stream.
    let client = wink::client::client(sim.kube_config(), Some(Duration::from_millis(2))).unwrap();
    let factory = SharedInformerFactory::new(
        client,
        FactoryOptions {
            streaming_lists: streaming,
            page_size: Some(500),
            ..FactoryOptions::default()
        },
    );
    let informer = factory
        .informer_for(&WatchSpec::all("v1", "ConfigMap"))
        .await
        .unwrap();
    informer.wait_for_sync().await;
    let took = started.elapsed();
    factory.shutdown();
    took
}

async fn kube_synced(sim: &Sim, streaming: bool) -> Duration {
    let started = Instant::now();
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "ConfigMap"), "configmaps");
    let api: Api<DynamicObject> = Api::all_with(sim.client(), &ar);
    let config = if streaming {
        watcher::Config::default().streaming_lists()
    } else {
        watcher::Config::default().page_size(500)
    };
    let writer = reflector::store::Writer::<DynamicObject>::new(ar);
    let reader = writer.as_reader();
    let stream = watcher(api, config).reflect(writer);
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while stream.next().await.is_some() {}
    });
    reader.wait_until_ready().await.unwrap();
    let took = started.elapsed();
    // Its store is dropped with the task: wait for that, as the next run
    // must not share the process with this one's teardown.
    task.abort();
    let _ = task.await;
    drop(reader);
    took
}

/// Let what a run left running finish before the next starts (a store's
/// teardown, wink's heap trim after a list): 100,000 cached objects take
/// kube-runtime ~0.3 s to free, which would otherwise be charged to the
/// run after it.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(500)).await;
}

#[tokio::main]
async fn main() {
    println!("| objects | list | kube-runtime reflector | wink informer | wink / kube |");
    println!("|---|---|---|---|---|");
    for n in sizes() {
        let sim = Sim::start(SimConfig {
            history: 1000,
            ..SimConfig::default()
        })
        .await
        .unwrap();
        for i in 0..n {
            sim.insert(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i:06}"), "namespace": "default", "labels": {"app": "bench"}},
                "data": {"k": "v".repeat(900)}}))
                .unwrap();
        }
        for streaming in [false, true] {
            // Alternate, best of 5 each, in the same run.
            let mut kube = Duration::MAX;
            let mut wink = Duration::MAX;
            for _ in 0..5 {
                kube = kube.min(kube_synced(&sim, streaming).await);
                settle().await;
                wink = wink.min(wink_synced(&sim, streaming).await);
                settle().await;
            }
            println!(
                "| {n} | {} | {:.0} ms | {:.0} ms | {:.2} |",
                if streaming { "streaming" } else { "paged (500)" },
                kube.as_secs_f64() * 1e3,
                wink.as_secs_f64() * 1e3,
                wink.as_secs_f64() / kube.as_secs_f64()
            );
        }
        sim.shutdown().await;
    }
}
