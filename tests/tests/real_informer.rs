//! On the real kube-apiserver (see `envtest`): the reflector's watch
//! resumes as client-go's does against what the server really sends.
//!
//! - Bookmarks: a quiet resource served from the watch cache gets
//!   `BOOKMARK` events (the server sends one shortly before a watch's
//!   timeout); the informer resumes from the bookmark's resourceVersion, not
//!   from its list's, and a bookmark is never an event for a handler.
//! - 410: with the watch cache off for ConfigMaps and etcd compacting every
//!   two seconds, a quiet resource's resume point is compacted away; the
//!   server answers `Expired` (410) and the informer relists, losing
//!   nothing and adding nothing twice.
//!
//! Both read the server's audit log for the watch requests' resume points.

use crate::envtest::{ControlPlane, Options};
use crate::informer_support::{Ev, Rec, WATCH_WINDOW, adds, store_view};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wink::informer::SharedInformer;
use wink::informer::object::{CachePolicy, RawObject};
use wink::informer::reflector::Reflector;

/// How long these waits may take: several watch timeouts.
const WAIT: Duration = Duration::from_secs(90);

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wink-real-informer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The resume points (`resourceVersion`) of the watches on `resource` in
/// `namespace`, in order, from the audit log.
fn watch_resume_points(log: &Path, resource: &str, namespace: &str) -> Vec<u64> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| {
            e["verb"] == "watch"
                && e["stage"] == "ResponseComplete"
                && e["objectRef"]["resource"] == resource
                && e["objectRef"]["namespace"] == namespace
        })
        .filter_map(|e| {
            let uri = e["requestURI"].as_str()?.to_string();
            let rv = uri
                .split(['?', '&'])
                .find_map(|p| p.strip_prefix("resourceVersion="))?;
            rv.parse().ok()
        })
        .collect()
}

/// An informer on `K` in `namespace` whose watches time out after `secs`,
/// on a client built as the daemon builds its own.
async fn start_informer<K>(cp: &ControlPlane, namespace: &str, secs: u32) -> (Arc<SharedInformer>, Arc<Rec>)
where
    K: kube::Resource<DynamicType = ()>,
{
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&cp.kubeconfig).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let client = wink::client::client(config, Some(WATCH_WINDOW)).unwrap();
    let ar = kube::api::ApiResource::erase::<K>(&());
    let api: Api<RawObject> = Api::namespaced_with(client, namespace, &ar);
    let informer = SharedInformer::new(format!("{} in {namespace}", ar.plural));
    let stream = watcher::watcher(api, watcher::Config::default().timeout(secs)).default_backoff();
    informer.spawn(stream, Reflector::new(ar, CachePolicy::default()));
    let rec = Rec::new();
    let listener = informer.add_listener("rec", rec.clone(), None);
    wait("synced", || listener.has_synced()).await;
    (informer, rec)
}

async fn wait(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Writes elsewhere, moving the server's resourceVersion on.
async fn noise(client: &kube::Client, namespace: &str, n: usize, prefix: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    for i in 0..n {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("{prefix}-{i}")}})).unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_resume_from_real_bookmarks_and_relist_on_a_real_410() {
    let dir = scratch();
    let policy = dir.join("audit-policy.yaml");
    let audit_log = dir.join("audit.log");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n\
         - level: Metadata\n  verbs: [watch]\n- level: None\n",
    )
    .unwrap();
    let options = Options {
        apiserver_args: vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", audit_log.display()),
            "--audit-log-mode=blocking".into(),
            // ConfigMaps are watched straight from etcd (no bookmarks, a
            // resume point can be compacted away); Secrets from the cache.
            "--watch-cache-sizes=configmaps#0".into(),
            "--etcd-compaction-interval=2s".into(),
        ],
        ..Options::default()
    };
    let Some(cp) = ControlPlane::start(&options) else {
        return;
    };
    let client = cp.client().await;
    let quiet = cp.namespace("quiet").await;
    let busy = cp.namespace("busy").await;

    // Bookmarks: Secrets in `quiet` never change; writes elsewhere do.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &quiet);
    let s: Secret = serde_json::from_value(json!({"metadata": {"name": "kept"}})).unwrap();
    secrets.create(&PostParams::default(), &s).await.unwrap();
    let listed: u64 = secrets
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap();
    let (informer, rec) = start_informer::<Secret>(&cp, &quiet, 8).await;
    noise(&client, &busy, 20, "before-bookmark").await;
    wait("a watch resumed past the list's resourceVersion", || {
        watch_resume_points(&audit_log, "secrets", &quiet)
            .iter()
            .any(|rv| *rv > listed)
    })
    .await;
    let points = watch_resume_points(&audit_log, "secrets", &quiet);
    assert_eq!(informer.relists(), 1, "resumed, never relisted: {points:?}");
    assert_eq!(
        rec.events().iter().filter(|e| !matches!(e, Ev::Synced)).count(),
        1,
        "only the Secret's add; a bookmark is no event: {:?}",
        rec.events()
    );
    informer.stop();

    // 410: ConfigMaps in `quiet` stay quiet past a compaction.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &quiet);
    for name in ["a", "b", "c"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let (informer, rec) = start_informer::<ConfigMap>(&cp, &quiet, 3).await;
    noise(&client, &busy, 20, "before-410").await;
    wait("a relist after 410", || informer.relists() >= 2).await;
    // A change after the relist arrives through the new watch.
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let server: BTreeMap<String, String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| {
            (
                format!("{quiet}/{}", c.metadata.name.unwrap()),
                c.metadata.resource_version.unwrap(),
            )
        })
        .collect();
    assert_eq!(server.len(), 2);
    wait("the cache equals the server", || {
        store_view(informer.store()) == server
    })
    .await;
    wait("the handler's view equals the server", || rec.view() == server).await;
    assert_eq!(
        adds(&rec.events()),
        3,
        "a relist adds nothing twice: {:?}",
        rec.events()
    );
    informer.stop();
    cp.stop();
}
