//! What the informer scenarios share: a recording handler that notes what
//! the store said at each callback, and helpers driving the simulated API
//! server (direct writes, taking the watch down and up).

// Each suite that includes this module uses part of it.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use wink::informer::factory::FactoryOptions;
use wink::informer::{EventHandler, ObjRef, SharedInformerFactory, Store, WatchSpec};
use wink_sim::{Sim, SimConfig};

pub const WAIT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------- recorder

/// One notification as a handler saw it, with what the store said about the
/// object's key at that moment.
#[derive(Debug, Clone, PartialEq)]
pub enum Ev {
    Add {
        key: String,
        rv: String,
        initial: bool,
        store_rv: Option<String>,
    },
    Update {
        key: String,
        old_rv: String,
        new_rv: String,
        old_uid: String,
        new_uid: String,
        store_rv: Option<String>,
    },
    Delete {
        key: String,
        rv: String,
        unknown: bool,
        store_rv: Option<String>,
    },
    Synced,
}

impl Ev {
    pub fn key(&self) -> Option<&str> {
        match self {
            Ev::Add { key, .. } | Ev::Update { key, .. } | Ev::Delete { key, .. } => Some(key),
            Ev::Synced => None,
        }
    }
}

/// Records every notification; `gate` held by a test makes it stuck.
#[derive(Default)]
pub struct Rec {
    events: Mutex<Vec<Ev>>,
    /// Held by a test, it makes the handler hang.
    pub gate: Mutex<()>,
    store: OnceLock<Store>,
    /// For each callback: which keys the `app` index lists under the
    /// object's `app` label (when the store has that index).
    pub index_seen: Mutex<Vec<(String, Vec<String>)>>,
}

impl Rec {
    pub fn new() -> Arc<Rec> {
        Arc::new(Rec::default())
    }
    pub fn watching(store: &Store) -> Arc<Rec> {
        let r = Rec::default();
        let _ = r.store.set(store.clone());
        Arc::new(r)
    }
    pub fn events(&self) -> Vec<Ev> {
        self.events.lock().unwrap().clone()
    }
    pub fn count(&self) -> usize {
        self.events.lock().unwrap().len()
    }
    fn store_rv(&self, key: &str) -> Option<String> {
        let store = self.store.get()?;
        store.get(key).map(|o| o.resource_version().to_string())
    }
    fn record(&self, obj: &ObjRef, ev: Ev) {
        let _stuck = self.gate.lock().unwrap();
        if let (Some(store), Some(app)) = (self.store.get(), obj.label("app"))
            && let Ok(keys) = store.index_keys("app", app)
        {
            self.index_seen.lock().unwrap().push((app.to_string(), keys));
        }
        self.events.lock().unwrap().push(ev);
    }
    /// The objects this handler believes exist: key -> (rv, uid), replayed
    /// from its notifications.
    pub fn view(&self) -> BTreeMap<String, String> {
        let mut view = BTreeMap::new();
        for e in self.events() {
            match e {
                Ev::Add { key, rv, .. } => {
                    view.insert(key, rv);
                }
                Ev::Update { key, new_rv, .. } => {
                    view.insert(key, new_rv);
                }
                Ev::Delete { key, .. } => {
                    view.remove(&key);
                }
                Ev::Synced => {}
            }
        }
        view
    }
}

impl EventHandler for Rec {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        let key = obj.key();
        let ev = Ev::Add {
            store_rv: self.store_rv(&key),
            key,
            rv: obj.resource_version().to_string(),
            initial: in_initial_list,
        };
        self.record(obj, ev);
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        let key = new.key();
        let ev = Ev::Update {
            store_rv: self.store_rv(&key),
            key,
            old_rv: old.resource_version().to_string(),
            new_rv: new.resource_version().to_string(),
            old_uid: old.uid().to_string(),
            new_uid: new.uid().to_string(),
        };
        self.record(new, ev);
    }
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        let key = obj.key();
        let ev = Ev::Delete {
            store_rv: self.store_rv(&key),
            key,
            rv: obj.resource_version().to_string(),
            unknown: final_state_unknown,
        };
        self.record(obj, ev);
    }
    fn on_synced(&self) {
        let _stuck = self.gate.lock().unwrap();
        self.events.lock().unwrap().push(Ev::Synced);
    }
}

// ---------------------------------------------------------------- helpers

pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn pod_json(name: &str, labels: &[(&str, &str)]) -> serde_json::Value {
    let labels: serde_json::Map<String, serde_json::Value> =
        labels.iter().map(|(k, v)| (k.to_string(), (*v).into())).collect();
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    })
}

/// Create a pod directly on the server; returns it.
pub fn create(sim: &Sim, name: &str, labels: &[(&str, &str)]) -> serde_json::Value {
    sim.insert(pod_json(name, labels)).unwrap()
}

/// Change a pod's `app` label directly on the server.
pub fn relabel(sim: &Sim, name: &str, app: &str) -> serde_json::Value {
    let mut p = pod_json(name, &[("app", app)]);
    p["metadata"]["annotations"] = serde_json::json!({"changed": app});
    sim.update("pods", p).unwrap()
}

pub fn rv_of(v: &serde_json::Value) -> String {
    v["metadata"]["resourceVersion"].as_str().unwrap().to_string()
}

/// The server's pods in `default`, key -> resourceVersion, through the API.
pub async fn server_pods(sim: &Sim) -> BTreeMap<String, String> {
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    pods.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| {
            (
                format!("default/{}", p.metadata.name.unwrap()),
                p.metadata.resource_version.unwrap(),
            )
        })
        .collect()
}

pub fn store_view(store: &Store) -> BTreeMap<String, String> {
    store
        .list(None, None)
        .into_iter()
        .map(|o| (o.key(), o.resource_version().to_string()))
        .collect()
}

pub fn pods_spec() -> WatchSpec {
    let mut s = WatchSpec::all("v1", "Pod");
    s.namespace = Some("default".into());
    s
}

/// The daemon's watch window (`--watch-window-us` by default).
pub const WATCH_WINDOW: Duration = Duration::from_millis(2);

/// A simulated server, and a factory on a client built as the daemon builds
/// its own: watches are read in windows of [`WATCH_WINDOW`] under a steady
/// stream.
pub async fn start(options: FactoryOptions) -> (Sim, Arc<SharedInformerFactory>) {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let client = wink::client::client(sim.kube_config(), Some(WATCH_WINDOW)).unwrap();
    let factory = SharedInformerFactory::new(client, options);
    (sim, factory)
}

/// Take the watch down: every request fails until `up` is called, and the
/// open watches end. Writes made meanwhile go straight to the server.
pub async fn watch_down(sim: &Sim) {
    sim.faults().fail_next(usize::MAX / 2, 500);
    sim.faults().close_watches();
    eventually("the pod watch to close", || sim.open_watches("pods") == 0).await;
}

/// Bring the API back after `watch_down`; with `compact` the informer's
/// resume point is gone and it must relist.
pub fn up(sim: &Sim, compact: bool) {
    if compact {
        sim.faults().compact();
    }
    sim.faults().fail_next(0, 500);
}

pub fn adds(events: &[Ev]) -> usize {
    events.iter().filter(|e| matches!(e, Ev::Add { .. })).count()
}
