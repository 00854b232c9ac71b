//! The status of WinkExceptions, written by the leader alone each
//! [`EVERY`] when it changed: the plugins named and the targets (in a line
//! each, for `kubectl get`'s columns), whether the exception applies now
//! (`active`: parsed and not expired) and `excepting`, how many objects of
//! wink's cache it excepts now (objects of every resource wink watches,
//! each counted once; an expired exception excepts none). Counting reads
//! the cache, capped at [`MAX_COUNTED`] objects a pass.

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use wink_informer::repeated::{RepeatedFailure, short_error};
use wink_informer::{SharedInformer, SharedInformerFactory};
use wink_runtime::PluginManager;
use wink_runtime::exceptions::{Exception, Targets, target_of};

/// How often statuses are computed (and written when changed).
pub const EVERY: Duration = Duration::from_secs(3);
/// The most cached objects one pass reads to count.
pub const MAX_COUNTED: usize = 200_000;

/// The leader's status writer.
pub struct Writer {
    client: kube::Client,
    manager: Arc<PluginManager>,
    cache: Arc<SharedInformerFactory>,
    informers: Vec<Arc<SharedInformer>>,
    _factory: Arc<SharedInformerFactory>,
    failures: RepeatedFailure,
}

impl Writer {
    pub fn new(
        client: kube::Client,
        manager: Arc<PluginManager>,
        cache: Arc<SharedInformerFactory>,
        informers: Vec<Arc<SharedInformer>>,
        factory: Arc<SharedInformerFactory>,
    ) -> Self {
        Writer {
            client,
            manager,
            cache,
            informers,
            _factory: factory,
            failures: RepeatedFailure::default(),
        }
    }

    pub async fn run(mut self) {
        let mut tick = tokio::time::interval(EVERY);
        loop {
            tick.tick().await;
            if self.manager.leadership().is_leading() {
                self.pass().await;
            }
        }
    }

    async fn pass(&mut self) {
        let gvk = GroupVersionKind::gvk(super::crd::GROUP, "v1alpha1", super::crd::KIND);
        let resource = ApiResource::from_gvk_with_plural(&gvk, super::crd::PLURAL);
        let in_force: BTreeMap<(String, String), Arc<Exception>> = self
            .manager
            .exceptions()
            .all()
            .into_iter()
            .map(|e| ((e.namespace.clone(), e.name.clone()), e))
            .collect();
        let now = SystemTime::now();
        for informer in &self.informers {
            for obj in informer.store().list(None, None) {
                let (ns, name) = (
                    obj.namespace().unwrap_or_default().to_string(),
                    obj.name().to_string(),
                );
                let Ok(object) = serde_json::from_str::<Value>(&obj.json()) else {
                    continue;
                };
                let new = match in_force.get(&(ns.clone(), name.clone())) {
                    Some(e) => {
                        let active = !e.expired(now);
                        let excepting = if active { count(&self.cache, e) } else { 0 };
                        render(e, active, excepting)
                    }
                    None => json!({"active": false, "excepting": 0}),
                };
                let current = object.get("status");
                if current.is_some_and(|c| same(c, &new)) {
                    continue;
                }
                let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &ns, &resource);
                let patch = Patch::Merge(json!({"status": new}));
                match api.patch_status(&name, &PatchParams::default(), &patch).await {
                    Ok(_) => {
                        if let Some(said) = self.failures.succeeded() {
                            tracing::info!("WinkException status written: {said}");
                        }
                    }
                    Err(err) => {
                        if let Some(said) = self.failures.failed(&short_error(&err)) {
                            tracing::warn!(winkexception = %format!("{ns}/{name}"), "WinkException status not written: {said}");
                        }
                    }
                }
            }
        }
    }
}

/// Whether the status `current` already says every field of `new`.
fn same(current: &Value, new: &Value) -> bool {
    new.as_object()
        .is_some_and(|n| n.iter().all(|(k, v)| current.get(k) == Some(v)))
}

/// The status of `e`.
pub fn render(e: &Exception, active: bool, excepting: usize) -> Value {
    let plugins: Vec<&str> = e.plugins.iter().map(|p| p.name.as_str()).collect();
    json!({
        "plugins": plugins.join(","),
        "targets": targets(&e.targets),
        "active": active,
        "excepting": excepting,
    })
}

/// The targets in a line: `namespaces=a,b names=web-* kinds=Pod labels=app=web`.
pub fn targets(t: &Targets) -> String {
    let mut parts = Vec::new();
    for (field, list) in [
        ("namespaces", &t.namespaces),
        ("names", &t.names),
        ("kinds", &t.kinds),
    ] {
        if let Some(list) = list {
            parts.push(format!("{field}={}", list.join(",")));
        }
    }
    if let Some(s) = &t.object_selector {
        let reqs: Vec<String> = s
            .requirements()
            .iter()
            .map(|r| match (r.operator, r.values.as_slice()) {
                (wink_runtime::scope::Operator::In, [v]) => format!("{}={v}", r.key),
                (op, vs) => format!("{} {op:?} ({})", r.key, vs.join(",")),
            })
            .collect();
        parts.push(format!("labels={}", reqs.join(",")));
    }
    parts.join(" ")
}

/// How many objects of the cache `e` targets (each counted once).
fn count(cache: &SharedInformerFactory, e: &Exception) -> usize {
    let mut seen: HashSet<(String, String, String)> = HashSet::new();
    let mut read = 0;
    for informer in cache.informers() {
        let store = informer.store();
        let objects = match &e.targets.namespaces {
            Some(names) => names.iter().flat_map(|ns| store.list(Some(ns), None)).collect(),
            None => store.list(None, None),
        };
        for obj in objects {
            read += 1;
            if read > MAX_COUNTED {
                return seen.len();
            }
            if e.targets(&target_of(&obj)) {
                seen.insert((
                    obj.kind().to_string(),
                    obj.namespace().unwrap_or_default().to_string(),
                    obj.name().to_string(),
                ));
            }
        }
    }
    seen.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_targets_are_said_in_a_line() {
        let t: Targets = serde_json::from_value(json!({
            "namespaces": ["team"], "names": ["web-*"], "kinds": ["Pod"],
            "objectSelector": {"matchLabels": {"app": "web"},
                               "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}}))
        .unwrap();
        assert_eq!(
            targets(&t),
            "namespaces=team names=web-* kinds=Pod labels=app=web,tier In (a,b)"
        );
    }
}
