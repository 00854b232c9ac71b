//! The native baseline: the same registrations served by kube-runtime
//! watchers in one Rust process, as a controller-runtime-style operator
//! would: one watch per distinct (kind, namespace, selector) shared by its
//! handlers, a store of the last object of each key (so an update has its
//! old object), and each handler's predicates evaluated on (old, new)
//! before it is called. A handler counts the event and reads the name,
//! as the plugin does.

use super::set::{Spec, Stream, plugins};
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::runtime::watcher;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Handler {
    updates_when: Vec<&'static str>,
    events: u64,
    name_bytes: u64,
}

impl Handler {
    fn call(&mut self, obj: &DynamicObject) {
        self.events += 1;
        self.name_bytes += obj.metadata.name.as_deref().map_or(0, str::len) as u64;
    }

    /// Whether an update passes this handler's predicates (any of them).
    fn wants(&self, old: &DynamicObject, new: &DynamicObject) -> bool {
        let (o, n) = (&old.metadata, &new.metadata);
        self.updates_when.is_empty()
            || self.updates_when.iter().any(|c| match c.split_once(':') {
                None if *c == "generation" => o.generation != n.generation,
                None if *c == "labels" => o.labels != n.labels,
                Some(("label", key)) => {
                    o.labels.as_ref().and_then(|l| l.get(key)) != n.labels.as_ref().and_then(|l| l.get(key))
                }
                _ => panic!("unknown change {c}"),
            })
    }
}

fn resource(api_version: &str, kind: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let plural = match kind {
        "ConfigMap" => "configmaps",
        "Pod" => "pods",
        "Service" => "services",
        "Deployment" => "deployments",
        other => panic!("no plural for {other}"),
    };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

type Key = (Option<String>, String);

/// The native process: syncs every watch, says `synced`, then serves
/// events until stdin closes.
pub fn role(rt: &tokio::runtime::Runtime, stream: Stream, set: &str, n: usize, kubeconfig: &str) {
    let client = rt.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    });
    let mut groups: BTreeMap<_, Vec<Handler>> = BTreeMap::new();
    for spec in plugins(stream, set, n) {
        let Spec { updates_when, .. } = spec.clone();
        groups.entry(spec.watch()).or_default().push(Handler {
            updates_when,
            events: 0,
            name_bytes: 0,
        });
    }
    let watches = groups.len();
    let synced = Arc::new(AtomicUsize::new(0));
    for ((api_version, kind, namespace, selector), mut handlers) in groups {
        let ar = resource(api_version, kind);
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
            None => Api::all_with(client.clone(), &ar),
        };
        let mut config = watcher::Config::default().streaming_lists();
        if let Some(s) = selector {
            config = config.labels(s);
        }
        let synced = synced.clone();
        rt.spawn(async move {
            let mut events = std::pin::pin!(watcher(api, config));
            let mut store: HashMap<Key, Arc<DynamicObject>> = HashMap::new();
            let key = |o: &DynamicObject| {
                (
                    o.metadata.namespace.clone(),
                    o.metadata.name.clone().unwrap_or_default(),
                )
            };
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                        let new = Arc::new(o);
                        match store.insert(key(&new), new.clone()) {
                            Some(old) => {
                                for h in &mut handlers {
                                    if h.wants(&old, &new) {
                                        h.call(&new);
                                    }
                                }
                            }
                            None => handlers.iter_mut().for_each(|h| h.call(&new)),
                        }
                    }
                    Ok(watcher::Event::Delete(o)) => {
                        store.remove(&key(&o));
                        handlers.iter_mut().for_each(|h| h.call(&o));
                    }
                    Ok(watcher::Event::InitDone) => {
                        synced.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(watcher::Event::Init) | Err(_) => {}
                }
            }
            std::hint::black_box(handlers.iter().map(|h| h.events + h.name_bytes).sum::<u64>());
        });
    }
    while synced.load(Ordering::Relaxed) < watches {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    println!("synced");
    std::io::stdout().flush().unwrap();
    for _ in std::io::stdin().lock().lines() {}
}
