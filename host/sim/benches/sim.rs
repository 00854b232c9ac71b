//! Throughput of the simulated API server (run: `cargo bench -p wink-sim --bench sim`).
//!
//! - list: 100,000 small ConfigMaps in pages of 500 over HTTP, objects/s
//!   (a lean client that only skims items, and the typed `kube::Api`);
//! - watch: events/s delivered to 1 and to 10 concurrent watchers while an
//!   in-process writer creates objects as fast as it can.
//!
//! Environment: `SIM_BENCH_OBJECTS` (default 100000), `SIM_BENCH_EVENTS`
//! (default 100000).

use axum::http::Request;
use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn small(i: usize) -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i:07}"), "namespace": "default", "labels": {"app": "bench"}},
        "data": {"k": "v"}})
}

#[derive(Deserialize)]
struct Page {
    metadata: PageMeta,
    items: Vec<IgnoredAny>,
}

#[derive(Deserialize)]
struct PageMeta {
    #[serde(rename = "continue", default)]
    cont: Option<String>,
}

async fn list_raw(client: &kube::Client) -> usize {
    let mut n = 0;
    let mut cont: Option<String> = None;
    loop {
        let mut url = "/api/v1/namespaces/default/configmaps?limit=500".to_string();
        if let Some(c) = &cont {
            url.push_str(&format!("&continue={c}"));
        }
        let page: Page = client
            .request(Request::get(url).body(vec![]).unwrap())
            .await
            .unwrap();
        n += page.items.len();
        cont = page.metadata.cont.filter(|c| !c.is_empty());
        if cont.is_none() {
            return n;
        }
    }
}

async fn list_typed(api: &Api<ConfigMap>) -> usize {
    let mut n = 0;
    let mut lp = ListParams::default().limit(500);
    loop {
        let l = api.list(&lp).await.unwrap();
        n += l.items.len();
        match l.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp.continue_token = Some(c),
            None => return n,
        }
    }
}

/// Count newline-terminated events until `want` arrived.
async fn count_raw_events(client: kube::Client, rv: String, want: usize) {
    let url =
        format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=600");
    let mut r = client
        .request_stream(Request::get(url).body(vec![]).unwrap())
        .await
        .unwrap();
    let mut n = 0;
    while n < want {
        let buf = r.fill_buf().await.unwrap();
        assert!(!buf.is_empty(), "watch ended after {n} events");
        n += buf.iter().filter(|b| **b == b'\n').count();
        let len = buf.len();
        r.consume_unpin(len);
    }
}

async fn count_typed_events(api: Api<ConfigMap>, rv: String, want: usize) {
    let mut s = api
        .watch(&WatchParams::default().timeout(600), &rv)
        .await
        .unwrap()
        .boxed();
    let mut n = 0;
    while n < want {
        match s.next().await {
            Some(Ok(WatchEvent::Added(_))) => n += 1,
            Some(Ok(_)) => {}
            e => panic!("watch ended: {e:?}"),
        }
    }
}

/// Events/s per watcher with `watchers` raw (or one typed) watchers, the
/// writer's own rate, and the rate of one lean watcher replaying the whole
/// history afterwards (pure delivery, no writer).
async fn watch_rate(watchers: usize, events: usize, typed: bool) -> (f64, f64, f64) {
    let sim = Sim::start(SimConfig {
        history: events + 10,
        bookmark_interval: Duration::from_secs(3600),
        ..Default::default()
    })
    .await
    .unwrap();
    let client = sim.client();
    let rv = sim.current_resource_version().to_string();
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let (c, rv) = (client.clone(), rv.clone());
        tasks.push(if typed {
            tokio::spawn(count_typed_events(Api::default_namespaced(c), rv, events))
        } else {
            tokio::spawn(count_raw_events(c, rv, events))
        });
    }
    while sim.open_watches("configmaps") < watchers {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let t = Instant::now();
    let sim = std::sync::Arc::new(sim);
    let writer = {
        let sim = sim.clone();
        tokio::task::spawn_blocking(move || {
            let t = Instant::now();
            for i in 0..events {
                sim.insert(small(i)).unwrap();
            }
            t.elapsed()
        })
    };
    let write_time = writer.await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    let secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    count_raw_events(client, rv, events).await;
    let replay = events as f64 / t.elapsed().as_secs_f64();
    (
        events as f64 / secs,
        events as f64 / write_time.as_secs_f64(),
        replay,
    )
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let objects = env("SIM_BENCH_OBJECTS", 100_000);
        let events = env("SIM_BENCH_EVENTS", 100_000);
        println!("wink sim benchmark ({} cores)", std::thread::available_parallelism().map_or(1, |n| n.get()));
        println!("| measurement | result |");
        println!("|---|---|");

        let sim = Sim::start(SimConfig::default()).await.unwrap();
        let t = Instant::now();
        for i in 0..objects {
            sim.insert(small(i)).unwrap();
        }
        let fill = t.elapsed().as_secs_f64();
        println!("| in-process create of {objects} objects | {:.0} objects/s |", objects as f64 / fill);
        let client = sim.client();
        list_raw(&client).await; // warm-up
        let t = Instant::now();
        let n = list_raw(&client).await;
        assert_eq!(n, objects);
        let s = t.elapsed().as_secs_f64();
        println!("| list {objects} objects, pages of 500, lean client | {:.0} objects/s ({:.0} ms) |", n as f64 / s, s * 1000.0);
        let api: Api<ConfigMap> = Api::default_namespaced(client);
        let t = Instant::now();
        let n = list_typed(&api).await;
        let s = t.elapsed().as_secs_f64();
        println!("| list {objects} objects, pages of 500, typed kube::Api | {:.0} objects/s ({:.0} ms) |", n as f64 / s, s * 1000.0);
        drop(api);
        sim.shutdown().await;

        for (watchers, typed) in [(1, false), (10, false), (1, true)] {
            let (rate, write, replay) = watch_rate(watchers, events, typed).await;
            let kind = if typed { "typed kube::Api::watch" } else { "lean client" };
            println!(
                "| watch, {events} events to {watchers} watcher(s), {kind} | {rate:.0} events/s per watcher ({:.0} total; writer alone {write:.0}/s) |",
                rate * watchers as f64
            );
            if watchers == 1 && !typed {
                println!("| watch replay of {events} events from history, 1 watcher, lean client | {replay:.0} events/s |");
            }
        }
    });
}
