//! One test per injected fault of the simulated API server, from Rust and
//! over the admin HTTP path.

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wink_sim::{Sim, SimConfig};

fn cm(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c
}

/// A raw HTTP/1.1 exchange: (status line + headers lowercased, body).
async fn raw(sim: &Sim, method: &str, path: &str) -> (String, String) {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", sim.port()))
        .await
        .unwrap();
    let req =
        format!("{method} {path} HTTP/1.1\r\nHost: sim\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.to_ascii_lowercase(), body.to_string())
}

fn api_status(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason),
        e => panic!("expected an API Status error, got {e:?}"),
    }
}

async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn close_watches_ends_open_streams() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(290), &rv)
        .await
        .unwrap()
        .boxed();
    until("the watch to open", || sim.open_watches("configmaps") == 1).await;
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Added(_)))));
    sim.faults().close_watches();
    let end = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap();
    assert!(end.is_none(), "the stream ended cleanly, got {end:?}");
    until("the watch to be gone", || sim.open_watches("configmaps") == 0).await;
    // Over the admin path too.
    let mut again = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    until("the second watch", || sim.open_watches("configmaps") == 1).await;
    let (head, _) = raw(&sim, "POST", "/_sim/faults/close-watches").await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(10), again.next())
        .await
        .unwrap()
    {
        assert!(matches!(ev, Ok(WatchEvent::Added(_))), "{ev:?}");
    }
}

#[tokio::test]
async fn fail_next_500_answers_status_then_recovers() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<Namespace> = Api::all(sim.client());
    sim.faults().fail_next(2, 500);
    for _ in 0..2 {
        let (code, reason) = api_status(api.get("default").await.unwrap_err());
        assert_eq!((code, reason.as_str()), (500, "InternalError"));
    }
    assert_eq!(
        api.get("default").await.unwrap().metadata.name.as_deref(),
        Some("default")
    );
    assert_eq!(sim.request_count("get", "namespaces"), 3);
    // Admin path: fail the next one with 503, which kube's client retries.
    let (head, _) = raw(&sim, "POST", "/_sim/faults/fail?n=1&status=503").await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    api.get("default").await.unwrap();
    assert_eq!(
        sim.request_count("get", "namespaces"),
        5,
        "the 503 was answered and retried"
    );
}

#[tokio::test]
async fn fail_next_429_carries_retry_after() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    sim.faults().fail_next(1, 429);
    let (head, body) = raw(&sim, "GET", "/api/v1/namespaces").await;
    assert!(head.starts_with("http/1.1 429"), "{head}");
    assert!(head.contains("\r\nretry-after: 1"), "{head}");
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["code"], 429);
    let (head, _) = raw(&sim, "GET", "/api/v1/namespaces").await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    // kube's client honours Retry-After and succeeds on the retry.
    sim.faults().fail_next(1, 429);
    let api: Api<Namespace> = Api::all(sim.client());
    api.get("default").await.unwrap();
    assert_eq!(sim.request_count("get", "namespaces"), 2);
}

#[tokio::test]
async fn a_failure_aimed_at_one_verb_and_resource_leaves_the_others_served() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let path = "/_sim/faults/fail?n=1&status=500&verb=create&resource=configmaps";
    let (head, _) = raw(&sim, "POST", path).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    // Reads of the resource and writes of others are served and do not count.
    api.list(&ListParams::default()).await.unwrap();
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::default_namespaced(sim.client());
    let secret = serde_json::from_value(serde_json::json!({"metadata": {"name": "s"}})).unwrap();
    secrets.create(&PostParams::default(), &secret).await.unwrap();
    let (code, _) = api_status(api.create(&PostParams::default(), &cm("a")).await.unwrap_err());
    assert_eq!(code, 500);
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    assert_eq!(sim.request_count("create", "configmaps"), 2);
}

#[tokio::test]
async fn compact_makes_resumes_410_and_a_fresh_list_works() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let old = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    // Before compaction the old resourceVersion resumes fine.
    let mut ok = api
        .watch(&WatchParams::default().timeout(1), &old)
        .await
        .unwrap()
        .boxed();
    while let Some(ev) = ok.next().await {
        assert!(!matches!(ev, Ok(WatchEvent::Error(_))), "{ev:?}");
    }
    let (head, _) = raw(&sim, "POST", "/_sim/faults/compact").await;
    assert!(head.starts_with("http/1.1 200"));
    let mut stream = api.watch(&WatchParams::default(), &old).await.unwrap().boxed();
    match stream.next().await {
        Some(Ok(WatchEvent::Error(s))) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert!(
                s.message
                    .starts_with(&format!("too old resource version: {old} (")),
                "{}",
                s.message
            );
        }
        other => panic!("expected an in-stream 410, got {other:?}"),
    }
    assert!(stream.next().await.is_none(), "the stream ends after the ERROR");
    // Relist and watch from the fresh resourceVersion: events flow again.
    let fresh = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(fresh.items.len(), 1);
    let rv = fresh.metadata.resource_version.unwrap();
    assert!(rv.parse::<u64>().unwrap() > old.parse::<u64>().unwrap());
    let mut live = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    assert!(
        matches!(live.next().await, Some(Ok(WatchEvent::Added(o))) if o.metadata.name.as_deref() == Some("b"))
    );
}

#[tokio::test]
async fn pause_holds_requests_until_it_ends() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<Namespace> = Api::all(sim.client());
    sim.faults().pause(Duration::from_millis(1500));
    let held = tokio::spawn({
        let api = api.clone();
        async move { api.get("default").await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!held.is_finished(), "the request is held during the pause");
    assert_eq!(sim.request_count("get", "namespaces"), 1, "but it was received");
    let ns = held.await.unwrap().unwrap();
    assert_eq!(ns.metadata.name.as_deref(), Some("default"));
    api.get("kube-system").await.unwrap();
}

#[tokio::test]
async fn delay_slows_every_response() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<Namespace> = Api::all(sim.client());
    let (head, _) = raw(&sim, "POST", "/_sim/faults/delay?ms=300").await;
    assert!(head.starts_with("http/1.1 200"));
    let t = std::time::Instant::now();
    api.get("default").await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "delayed by at least the delay"
    );
    sim.faults().delay(None);
    api.get("default").await.unwrap();
}

/// A reflector over configmaps; returns its reader.
fn reflect(
    api: Api<ConfigMap>,
) -> (
    kube::runtime::reflector::Store<ConfigMap>,
    tokio::task::JoinHandle<()>,
) {
    use kube::runtime::WatchStreamExt;
    let (reader, writer) = kube::runtime::reflector::store();
    let s = kube::runtime::reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()))
        .default_backoff()
        .touched_objects();
    let task = tokio::spawn(async move { s.for_each(|_| async {}).await });
    (reader, task)
}

fn cached(r: &kube::runtime::reflector::Store<ConfigMap>) -> Vec<String> {
    let mut v: Vec<String> = r
        .state()
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn restart_keeping_state_drops_connections_and_watchers_resume() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let (reader, task) = reflect(api.clone());
    reader.wait_until_ready().await.unwrap();
    until("the watch", || sim.open_watches("configmaps") == 1).await;
    let rv = sim.current_resource_version();
    sim.restart(true).await.unwrap();
    assert_eq!(sim.open_watches("configmaps"), 0, "connections were dropped");
    assert_eq!(sim.current_resource_version(), rv, "state kept");
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    until("the watcher to see b", || cached(&reader) == ["a", "b"]).await;
    until("the resumed watch", || {
        sim.watch_request_rvs("configmaps").len() >= 2
    })
    .await;
    // History was kept: the watcher resumed without a relist.
    assert_eq!(sim.request_count("list", "configmaps"), 1);
    task.abort();
}

#[tokio::test]
async fn restart_replacing_state_makes_watchers_relist() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    api.create(&PostParams::default(), &cm("old")).await.unwrap();
    let (reader, task) = reflect(api.clone());
    reader.wait_until_ready().await.unwrap();
    let rv = sim.current_resource_version();
    sim.restart(false).await.unwrap();
    assert!(
        sim.current_resource_version() > rv,
        "resourceVersions keep increasing"
    );
    api.create(&PostParams::default(), &cm("new")).await.unwrap();
    assert!(api.get_opt("old").await.unwrap().is_none(), "state replaced");
    Api::<Namespace>::all(sim.client()).get("default").await.unwrap();
    until("the watcher to relist to the new state", || {
        cached(&reader) == ["new"]
    })
    .await;
    assert!(sim.request_count("list", "configmaps") >= 2);
    task.abort();
}

#[tokio::test]
async fn admin_stats_report_requests_and_watches() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sim.client());
    api.list(&ListParams::default()).await.unwrap();
    let (head, body) = raw(&sim, "GET", "/_sim/stats").await;
    assert!(head.starts_with("http/1.1 200"));
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["requests"]["list configmaps"], 1);
    assert_eq!(v["resourceVersion"], sim.current_resource_version().to_string());
}
