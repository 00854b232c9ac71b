//! The resource table of the simulated API server: the built-in resource
//! types it serves and the types that CustomResourceDefinitions add.
//!
//! Owns: [`ResourceDef`] (names, scope, versions, subresources) and
//! [`Registry`] (lookup by URL path segments and by apiVersion + kind).
//! Must not touch: objects, resource versions or HTTP (see `store`, `http`).

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use super::builtins::builtins;

/// One served resource type (all its served versions share one storage).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceDef {
    /// API group, "" for the core group.
    pub group: String,
    /// Served versions, the storage version first.
    pub versions: Vec<String>,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Has a `/status` subresource: the main resource ignores status changes.
    pub has_status: bool,
    /// Added by a CustomResourceDefinition (named `<plural>.<group>`).
    pub crd: Option<String>,
    /// Has a `/scale` subresource (autoscaling/v1 Scale) over these fields.
    pub scale: Option<ScalePaths>,
}

/// JSON pointers of the fields a `/scale` subresource reads and writes.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    /// A string selector (CRDs); None: built from `/spec/selector`.
    pub selector: Option<String>,
}

fn pointer(json_path: &str) -> String {
    json_path
        .trim_start_matches('.')
        .split('.')
        .fold(String::new(), |acc, p| acc + "/" + p)
}

impl ResourceDef {
    /// The table key of this resource: `plural` or `plural.group`, the
    /// "qualified resource" the real server names in its error messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `apiVersion` of a served version.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// Objects of this type carry a `metadata.generation`.
    pub fn has_generation(&self) -> bool {
        self.crd.is_some()
            || !matches!(
                self.plural.as_str(),
                "configmaps"
                    | "secrets"
                    | "events"
                    | "leases"
                    | "serviceaccounts"
                    | "endpoints"
                    | "roles"
                    | "rolebindings"
                    | "clusterroles"
                    | "clusterrolebindings"
                    | "horizontalpodautoscalers"
                    | "persistentvolumeclaims"
                    | "resourcequotas"
                    | "limitranges"
                    | "storageclasses"
            )
    }

    /// Field selector labels this resource accepts besides metadata.name/namespace
    /// (the real server's per-type field label conversion functions).
    pub fn field_labels(&self) -> &'static [&'static str] {
        if super::events::is_events_group(self) {
            return super::events::EVENTS_FIELD_LABELS;
        }
        wink_selector::field_labels(&self.group, &self.kind)
    }

    /// The key of the table this type's objects are stored in: its own
    /// ([`ResourceDef::qualified`]), or the one of the type it shares a
    /// storage with (events.k8s.io Events are core Events).
    pub fn storage(&self) -> String {
        match super::events::is_events_group(self) {
            true => "events".to_string(),
            false => self.qualified(),
        }
    }
}

/// Read the resource type a CustomResourceDefinition declares, its printer
/// columns checked as the API server checks them. Errors are the causes of
/// a 422 Invalid.
pub fn from_crd(crd: &Value) -> Result<ResourceDef, Vec<String>> {
    storage_versions(crd)?;
    let def = declared(crd).map_err(|e| vec![e])?;
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    let errs: Vec<String> = versions
        .into_iter()
        .flatten()
        .enumerate()
        .flat_map(|(i, v)| super::table::crd::validate(i, v))
        .collect();
    match errs.is_empty() {
        true => Ok(def),
        false => Err(errs),
    }
}

/// `ValidateCustomResourceDefinitionSpec`'s storage rule: exactly one
/// version is the storage version, and `status.storedVersions` (what the
/// server sets from it) must then hold it.
fn storage_versions(crd: &Value) -> Result<(), Vec<String>> {
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage: Vec<&str> = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    let stored = match storage.as_slice() {
        [_] => return Ok(()),
        [] => "status.storedVersions: Invalid value: null: must have at least one stored version".to_string(),
        [first, .., last] => {
            format!("status.storedVersions: Invalid value: [{first:?}]: must have the storage version {last}")
        }
    };
    Err(vec![
        format!(
            "spec.versions: Invalid value: {}: must have exactly one version marked as storage version",
            Value::Array(versions)
        ),
        stored,
    ])
}

fn declared(crd: &Value) -> Result<ResourceDef, String> {
    let spec = crd.get("spec").ok_or("spec: Required value")?;
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let group = s(spec.get("group"));
    let names = spec.get("names").ok_or("spec.names: Required value")?;
    let plural = s(names.get("plural"));
    let kind = s(names.get("kind"));
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Err("spec.group, spec.names.plural and spec.names.kind are required".into());
    }
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name != format!("{plural}.{group}") {
        return Err(format!(
            "metadata.name: Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"
        ));
    }
    let list = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    let mut versions = Vec::new();
    let mut has_status = false;
    let mut scale = None;
    for v in spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let vname = s(v.get("name"));
        if vname.is_empty() || v.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        has_status |= v.pointer("/subresources/status").is_some();
        if let Some(sc) = v.pointer("/subresources/scale") {
            let path = |k: &str| sc.get(k).and_then(Value::as_str).map(pointer);
            scale = Some(ScalePaths {
                spec_replicas: path("specReplicasPath").unwrap_or_else(|| "/spec/replicas".into()),
                status_replicas: path("statusReplicasPath").unwrap_or_else(|| "/status/replicas".into()),
                selector: path("labelSelectorPath"),
            });
        }
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            versions.insert(0, vname);
        } else {
            versions.push(vname);
        }
    }
    if versions.is_empty() {
        return Err("spec.versions: Invalid value: the storage version is not served".into());
    }
    let singular = match s(names.get("singular")) {
        x if x.is_empty() => kind.to_ascii_lowercase(),
        x => x,
    };
    let namespaced = match spec.get("scope").and_then(Value::as_str) {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => return Err(format!("spec.scope: Unsupported value: {other:?}")),
    };
    Ok(ResourceDef {
        group,
        versions,
        plural,
        singular,
        kind,
        namespaced,
        short_names: list(names.get("shortNames")),
        categories: list(names.get("categories")),
        has_status,
        crd: Some(name.to_string()),
        scale,
    })
}

/// All served resource types, by qualified name.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    defs: BTreeMap<String, Arc<ResourceDef>>,
}

impl Registry {
    pub fn with_builtins() -> Self {
        let mut r = Registry::default();
        for d in builtins() {
            r.insert(d);
        }
        r
    }

    pub fn insert(&mut self, def: ResourceDef) -> Arc<ResourceDef> {
        let def = Arc::new(def);
        self.defs.insert(def.qualified(), def.clone());
        def
    }

    pub fn remove(&mut self, qualified: &str) -> Option<Arc<ResourceDef>> {
        self.defs.remove(qualified)
    }

    pub fn get(&self, qualified: &str) -> Option<&Arc<ResourceDef>> {
        self.defs.get(qualified)
    }

    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceDef>> {
        self.defs.values()
    }

    /// The type served at `/api(s)/{group}/{version}/.../{plural}`.
    pub fn by_path(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        let key = if group.is_empty() {
            plural.to_string()
        } else {
            format!("{plural}.{group}")
        };
        self.defs
            .get(&key)
            .filter(|d| d.versions.iter().any(|v| v == version))
            .cloned()
    }

    /// The type of an object by its `apiVersion` and `kind`.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceDef>> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.defs
            .values()
            .find(|d| d.group == group && d.kind == kind && d.versions.iter().any(|v| v == version))
            .cloned()
    }

    /// Groups with their served versions, core group excluded, sorted by name.
    pub fn groups(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for d in self.defs.values().filter(|d| !d.group.is_empty()) {
            let vs = out.entry(d.group.clone()).or_default();
            for v in &d.versions {
                if !vs.contains(v) {
                    vs.push(v.clone());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtins_resolve_by_path_and_kind() {
        let r = Registry::with_builtins();
        assert_eq!(r.by_path("", "v1", "pods").unwrap().kind, "Pod");
        assert!(r.by_path("", "v2", "pods").is_none());
        assert_eq!(
            r.by_path("apps", "v1", "deployments").unwrap().qualified(),
            "deployments.apps"
        );
        assert_eq!(r.by_kind("apps/v1", "ReplicaSet").unwrap().plural, "replicasets");
        assert!(!r.by_kind("v1", "Namespace").unwrap().namespaced);
        let events = r.by_path("events.k8s.io", "v1", "events").unwrap();
        assert_eq!(
            (events.qualified(), events.storage()),
            ("events.events.k8s.io".into(), "events".into())
        );
        assert_eq!(r.get("pods").unwrap().storage(), "pods");
    }

    #[test]
    fn crd_declares_a_type() {
        let crd = json!({"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Cluster",
            "names":{"plural":"widgets","kind":"Widget","shortNames":["wd"]},
            "versions":[{"name":"v1beta1","served":true,"storage":false},{"name":"v1","served":true,"storage":true,"subresources":{"status":{}}}]}});
        let d = from_crd(&crd).unwrap();
        assert_eq!(d.versions, vec!["v1", "v1beta1"]);
        assert!(!d.namespaced && d.has_status);
        assert_eq!(d.singular, "widget");
        assert!(d.scale.is_none());
        assert_eq!(pointer(".spec.size"), "/spec/size");
        let bad = json!({"metadata":{"name":"x"},"spec":crd["spec"].clone()});
        assert!(from_crd(&bad).is_err());
    }
}
