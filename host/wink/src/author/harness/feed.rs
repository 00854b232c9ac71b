//! The informers of a `wink test` case, fed by its objects and steps as a
//! watch would feed them: one informer per watch or read the plugin
//! registered (resource, namespace, label and field selectors), each given
//! only the objects its selectors select. An object updated out of a
//! watch's selection is a delete there, as the API server's watch says it.
//!
//! Owns turning case objects into cached objects (a uid and a
//! resourceVersion when the case gives none) and playing steps; the
//! informers themselves are the real ones.

use super::Step;
use crate::informer::object::{CachePolicy, CachedObject};
use crate::informer::reflector::Delta;
use crate::informer::{ObjRef, SharedInformer};
use anyhow::{Context, bail};
use kube::api::{ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wink_selector::{FieldSelector, LabelSelector};

/// One watch or read of the plugin: its informer and what it selects.
pub(super) struct Watch {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    labels: Option<(String, LabelSelector)>,
    fields: Option<(String, FieldSelector)>,
    pub(super) informer: Arc<SharedInformer>,
}

impl Watch {
    /// Whether `obj` (`v` as JSON) is what this watch lists.
    fn selects(&self, obj: &CachedObject, v: &Value) -> bool {
        let labels = self.labels.as_ref().map(|(_, s)| s);
        crate::informer::store::selected(obj, self.namespace.as_deref(), labels)
            && self.fields.as_ref().is_none_or(|(_, f)| f.matches(v))
    }
}

/// Every watch of the case, and the resourceVersions given so far.
#[derive(Default)]
pub(super) struct Feed {
    pub(super) watches: Vec<Watch>,
    versions: u64,
}

fn nonempty(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl Feed {
    /// The informer of a watch or read (one per distinct resource,
    /// namespace and selectors).
    pub(super) fn watch(
        &mut self,
        api_version: &str,
        kind: &str,
        namespace: &Option<String>,
        label_selector: &Option<String>,
        field_selector: &Option<String>,
    ) -> anyhow::Result<Arc<SharedInformer>> {
        let (labels, fields) = (nonempty(label_selector), nonempty(field_selector));
        let same = |w: &&Watch| {
            (w.api_version.as_str(), w.kind.as_str()) == (api_version, kind)
                && w.namespace == *namespace
                && w.labels.as_ref().map(|(s, _)| s.as_str()) == labels
                && w.fields.as_ref().map(|(s, _)| s.as_str()) == fields
        };
        if let Some(w) = self.watches.iter().find(same) {
            return Ok(w.informer.clone());
        }
        let labels = labels
            .map(|s| LabelSelector::parse(s).map(|p| (s.to_string(), p)))
            .transpose()
            .map_err(|e| anyhow::anyhow!("{api_version} {kind}: label selector: {e}"))?;
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let fields = fields
            .map(|s| {
                FieldSelector::parse(s, wink_selector::field_labels(group, kind)).map(|p| (s.to_string(), p))
            })
            .transpose()
            .map_err(|e| anyhow::anyhow!("{api_version} {kind}: field selector: {e}"))?;
        let same_kind = self
            .watches
            .iter()
            .filter(|w| (w.api_version.as_str(), w.kind.as_str()) == (api_version, kind));
        let name = match same_kind.count() {
            0 => format!("{api_version}/{kind}"),
            n => format!("{api_version}/{kind}#{n}"),
        };
        let informer = SharedInformer::new(name);
        self.watches.push(Watch {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: namespace.clone(),
            labels,
            fields,
            informer: informer.clone(),
        });
        Ok(informer)
    }

    /// The cached form of `v` (with a uid and a resourceVersion when the
    /// case gives none) for every watch of its type, and whether that watch
    /// selects it.
    fn object(&mut self, v: &Value) -> anyhow::Result<Vec<(Arc<SharedInformer>, ObjRef, bool)>> {
        let api_version = v["apiVersion"]
            .as_str()
            .context("an object needs an apiVersion")?;
        let kind = v["kind"].as_str().context("an object needs a kind")?;
        let mut v = v.clone();
        let ns = v["metadata"]["namespace"].as_str().map(str::to_string);
        let name = v["metadata"]["name"]
            .as_str()
            .context("an object needs metadata.name")?
            .to_string();
        if v["metadata"]["uid"].is_null() {
            v["metadata"]["uid"] = format!("uid-{}-{name}", ns.as_deref().unwrap_or("")).into();
        }
        self.versions += 1;
        if v["metadata"]["resourceVersion"].is_null() {
            v["metadata"]["resourceVersion"] = self.versions.to_string().into();
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        let policy = CachePolicy {
            compress: false,
            ..CachePolicy::default()
        };
        let mut out = Vec::new();
        for w in &self.watches {
            if (w.api_version.as_str(), w.kind.as_str()) != (api_version, kind) {
                continue;
            }
            let obj: DynamicObject = serde_json::from_value(v.clone()).context("not a Kubernetes object")?;
            let obj = CachedObject::from_dynamic(obj, &ar, policy);
            let selected = w.selects(&obj, &v);
            out.push((w.informer.clone(), obj, selected));
        }
        Ok(out)
    }

    /// Wait until every informer's listeners delivered everything.
    pub(super) fn settle(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.watches.iter().all(|w| w.informer.is_idle()) {
            if Instant::now() > deadline {
                bail!("the plugin did not finish its deliveries within 30 s");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// Play one step.
    pub(super) fn play(&mut self, step: &Step) -> anyhow::Result<()> {
        match step {
            Step::Add(v) | Step::Update(v) => {
                for (informer, obj, selected) in self.object(v)? {
                    let last = informer.store().get(&obj.key());
                    match (selected, last) {
                        (true, _) => informer.apply(Delta::Apply(obj)),
                        (false, Some(last)) => informer.apply(Delta::Delete(last)),
                        (false, None) => {}
                    }
                }
            }
            Step::Delete(v) => {
                for (informer, obj, selected) in self.object(v)? {
                    match informer.store().get(&obj.key()) {
                        Some(last) => informer.apply(Delta::Delete(last)),
                        None if selected => informer.apply(Delta::Delete(obj)),
                        None => {}
                    }
                }
            }
            Step::Resync(_) => {
                for w in &self.watches {
                    w.informer
                        .resync_due(Instant::now() + Duration::from_secs(366 * 24 * 3600));
                }
            }
            Step::Relist(objects) => self.replace_all(objects)?,
            // Admission steps reach no informer (the harness plays them).
            Step::Admit(_) => {}
        }
        Ok(())
    }

    /// A (re)list of every informer with `objects`: what is missing becomes a
    /// tombstone; an object listed again with no resourceVersion of its own and
    /// unchanged content is the cached version.
    pub(super) fn replace_all(&mut self, objects: &[Value]) -> anyhow::Result<()> {
        let content = |o: &ObjRef| {
            let mut v: Value = serde_json::from_str(&o.json()).unwrap_or_default();
            if let Some(m) = v["metadata"].as_object_mut() {
                m.remove("resourceVersion");
            }
            v
        };
        let mut lists: BTreeMap<String, Vec<ObjRef>> = BTreeMap::new();
        for v in objects {
            for (informer, obj, selected) in self.object(v)? {
                if !selected {
                    continue;
                }
                let cached = informer
                    .store()
                    .get(&obj.key())
                    .filter(|c| v["metadata"]["resourceVersion"].is_null() && content(c) == content(&obj));
                lists
                    .entry(informer.name().to_string())
                    .or_default()
                    .push(cached.unwrap_or(obj));
            }
        }
        for w in &self.watches {
            let list = lists.remove(w.informer.name()).unwrap_or_default();
            w.informer.apply(Delta::Replace(list));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, ns: &str, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels}})
    }

    #[test]
    fn watches_get_what_their_namespace_label_and_field_selectors_select() {
        let mut feed = Feed::default();
        let some = |s: &str| Some(s.to_string());
        let web = feed.watch("v1", "Pod", &None, &some("app=web"), &None).unwrap();
        let named = feed
            .watch("v1", "Pod", &some("default"), &None, &some("metadata.name!=b"))
            .unwrap();
        let all = feed.watch("v1", "Pod", &None, &some(" "), &None).unwrap();
        assert!(Arc::ptr_eq(
            &all,
            &feed.watch("v1", "Pod", &None, &None, &None).unwrap()
        ));
        feed.replace_all(&[
            pod("a", "default", json!({"app": "web"})),
            pod("b", "default", json!({"app": "web"})),
            pod("c", "other", json!({"app": "db"})),
        ])
        .unwrap();
        let keys = |i: &Arc<SharedInformer>| {
            let mut k = i.store().list_keys();
            k.sort();
            k
        };
        assert_eq!(keys(&web), ["default/a", "default/b"]);
        assert_eq!(keys(&named), ["default/a"]);
        assert_eq!(keys(&all), ["default/a", "default/b", "other/c"]);

        // Relabeled out of a selection: gone from that watch only.
        feed.play(&Step::Update(pod("a", "default", json!({"app": "api"}))))
            .unwrap();
        assert_eq!(keys(&web), ["default/b"]);
        assert_eq!(keys(&named), ["default/a"]);
        // Into it again.
        feed.play(&Step::Add(pod("c", "other", json!({"app": "web"}))))
            .unwrap();
        assert_eq!(keys(&web), ["default/b", "other/c"]);

        let bad = feed.watch("v1", "Pod", &None, &None, &some("spec.nope=1"));
        let Err(bad) = bad else {
            panic!("an unsupported field label")
        };
        assert!(format!("{bad:#}").contains("field label not supported"));
        assert!(feed.watch("v1", "Pod", &None, &some("a in ("), &None).is_err());
    }
}
