//! The API server as `wink test` plays it: a [`LocalServer`] that records
//! each write and Event a plugin makes instead of sending it, and answers
//! as an API server would. A create answers with the object and a generated
//! uid, resourceVersion and creationTimestamp; an update or a patch (merge,
//! JSON, strategic merge applied as a merge, apply) with the object it
//! changed, taken from an earlier write, else the informers' stores, else
//! the case's objects; a delete with a success `Status`; a write to an
//! object that is not there with `NotFound`, a create of one that is with
//! `AlreadyExists`. Discovery is offline: built-in kinds from k8s-openapi's
//! resource metadata, other kinds from the case's objects.
//!
//! Owns the captured state, the one-line summaries of writes and Events
//! that cases expect, and offline discovery; it never reaches a network.

use super::patch;
use crate::informer::Store;
use crate::runtime::bindings::types::WriteError;
use crate::runtime::capabilities::cluster::{LocalServer, Request, Resolved};
use axum::http::Method;
use kube::api::ApiResource;
use kube::core::GroupVersionKind;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// (apiVersion, kind).
type Kind = (String, String);

/// Records writes and Events; answers them.
#[derive(Default)]
pub struct Capture {
    state: Mutex<State>,
    /// Panics while answering: each answered 500, and failing the case.
    pub faults: super::panics::Faults,
}

#[derive(Default)]
struct State {
    /// Resources resolved, by (apiVersion, kind) and by (group/version, plural).
    kinds: BTreeMap<Kind, Resolved>,
    plurals: BTreeMap<(String, String), Kind>,
    /// The case's objects, by kind and key.
    seeds: BTreeMap<(Kind, String), Value>,
    /// The informers' stores, by kind (what the case played so far).
    stores: Vec<(Kind, Store)>,
    /// Objects as the plugin's writes left them (none: deleted).
    written: BTreeMap<(Kind, String), Option<Value>>,
    /// Events recorded, by namespace/name: their summary.
    events: BTreeMap<String, String>,
    writes: Vec<String>,
    event_lines: Vec<String>,
    versions: u64,
    /// Statuses the next writes are answered with (the case's `fail`).
    injected: std::collections::VecDeque<u16>,
}

/// Built-in kinds: (apiVersion, kind, plural, namespaced).
fn builtins() -> Vec<(&'static str, &'static str, &'static str, bool)> {
    use k8s_openapi::api::{apps::v1 as apps, batch::v1 as batch, core::v1 as core};
    use k8s_openapi::api::{networking::v1 as net, policy::v1 as policy, rbac::v1 as rbac};
    fn of<T: k8s_openapi::Resource<Scope: 'static>>() -> (&'static str, &'static str, &'static str, bool) {
        let namespaced = std::any::TypeId::of::<T::Scope>()
            == std::any::TypeId::of::<k8s_openapi::NamespaceResourceScope>();
        (T::API_VERSION, T::KIND, T::URL_PATH_SEGMENT, namespaced)
    }
    vec![
        of::<core::Pod>(),
        of::<core::ConfigMap>(),
        of::<core::Secret>(),
        of::<core::Service>(),
        of::<core::ServiceAccount>(),
        of::<core::Namespace>(),
        of::<core::Node>(),
        of::<core::Event>(),
        of::<core::PersistentVolumeClaim>(),
        of::<core::PersistentVolume>(),
        of::<core::LimitRange>(),
        of::<core::ResourceQuota>(),
        of::<core::Endpoints>(),
        of::<apps::Deployment>(),
        of::<apps::ReplicaSet>(),
        of::<apps::StatefulSet>(),
        of::<apps::DaemonSet>(),
        of::<batch::Job>(),
        of::<batch::CronJob>(),
        of::<net::Ingress>(),
        of::<net::NetworkPolicy>(),
        of::<policy::PodDisruptionBudget>(),
        of::<rbac::Role>(),
        of::<rbac::RoleBinding>(),
        of::<rbac::ClusterRole>(),
        of::<rbac::ClusterRoleBinding>(),
        of::<k8s_openapi::api::events::v1::Event>(),
        of::<k8s_openapi::api::coordination::v1::Lease>(),
    ]
}

fn kind_of(v: &Value) -> Option<Kind> {
    Some((
        v["apiVersion"].as_str()?.to_string(),
        v["kind"].as_str()?.to_string(),
    ))
}

fn key_of(ns: Option<&str>, name: &str) -> String {
    crate::informer::object::key_of(ns, name)
}

/// A `Status` answer.
fn status(code: u16, reason: &str, message: String) -> (u16, Vec<u8>) {
    let st = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": if code < 300 { "Success" } else { "Failure" },
        "reason": reason, "message": message, "code": code});
    (code, st.to_string().into_bytes())
}

/// A request's target, from its path.
struct Target {
    group_version: String,
    namespace: Option<String>,
    plural: String,
    name: Option<String>,
    subresource: Option<String>,
}

fn target(uri: &str) -> Option<Target> {
    let path = uri.split('?').next()?;
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group_version, rest) = match parts.as_slice() {
        ["api", v, rest @ ..] => (v.to_string(), rest),
        ["apis", g, v, rest @ ..] => (format!("{g}/{v}"), rest),
        _ => return None,
    };
    let namespace_sub = |r: &[&str]| r.len() == 3 && matches!(r[2], "status" | "finalize");
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() && !namespace_sub(rest) => {
            (Some(ns.to_string()), rest)
        }
        _ => (None, rest),
    };
    let owned = |i: usize| rest.get(i).map(|s| s.to_string());
    Some(Target {
        group_version,
        namespace,
        plural: owned(0)?,
        name: owned(1),
        subresource: owned(2),
    })
}

impl Capture {
    /// A capture that knows the case's `objects` (for discovery, and as
    /// what writes apply to).
    pub fn new(objects: &[Value]) -> Self {
        let capture = Capture::default();
        let mut state = capture.state.lock().unwrap();
        for v in objects {
            if let (Some(kind), Some(name)) = (kind_of(v), v["metadata"]["name"].as_str()) {
                let key = key_of(v["metadata"]["namespace"].as_str(), name);
                state.seeds.insert((kind, key), v.clone());
            }
        }
        drop(state);
        capture
    }

    /// Answer the plugin's next writes with `statuses`, one each, in
    /// order: each is recorded with its status and applies nothing.
    pub fn inject(&self, statuses: &[u16]) {
        let mut state = self.state.lock().unwrap();
        state.injected.extend(statuses.iter().copied());
    }

    /// Writes of `kind` apply to what `store` holds.
    pub fn watch(&self, api_version: &str, kind: &str, store: Store) {
        let kind = (api_version.to_string(), kind.to_string());
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stores
            .push((kind, store));
    }

    /// The writes made so far, as one line each.
    pub fn writes(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .writes
            .clone()
    }

    /// The Events recorded so far, as `TYPE REASON namespace/name: note`.
    pub fn events(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .event_lines
            .clone()
    }
}

impl State {
    /// The object `key` of `kind` as the plugin would find it now.
    fn current(&self, kind: &Kind, key: &str) -> Option<Value> {
        let k = (kind.clone(), key.to_string());
        if let Some(written) = self.written.get(&k) {
            return written.clone();
        }
        let cached = self
            .stores
            .iter()
            .filter(|(of, _)| of == kind)
            .find_map(|(_, store)| store.get(key));
        match cached {
            Some(obj) => serde_json::from_str(&obj.json()).ok(),
            None => self.seeds.get(&k).cloned(),
        }
    }

    fn next_version(&mut self) -> String {
        self.versions += 1;
        format!("captured-{}", self.versions)
    }

    fn resolve(&mut self, api_version: &str, kind: &str) -> Option<Resolved> {
        let k: Kind = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.kinds.get(&k) {
            return Some(found.clone());
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let builtin = builtins()
            .into_iter()
            .find(|(av, kd, _, _)| *av == api_version && *kd == kind);
        let resolved = match builtin {
            Some((_, _, plural, namespaced)) => Resolved {
                ar: ApiResource::from_gvk_with_plural(&gvk, plural),
                namespaced,
            },
            None => {
                let seen = self.seeds.iter().find(|((of, _), _)| *of == k)?;
                Resolved {
                    ar: ApiResource::from_gvk(&gvk),
                    namespaced: seen.1["metadata"]["namespace"].is_string(),
                }
            }
        };
        let plural = (resolved.ar.api_version.clone(), resolved.ar.plural.clone());
        self.plurals.insert(plural, k.clone());
        self.kinds.insert(k, resolved.clone());
        Some(resolved)
    }

    fn answer(&mut self, request: &Request) -> (u16, Vec<u8>) {
        let Some(t) = target(&request.uri) else {
            return status(
                404,
                "NotFound",
                format!("the server could not find {}", request.uri),
            );
        };
        if (t.group_version.as_str(), t.plural.as_str()) == ("events.k8s.io/v1", "events") {
            self.resolve("events.k8s.io/v1", "Event");
        }
        let Some(kind) = self
            .plurals
            .get(&(t.group_version.clone(), t.plural.clone()))
            .cloned()
        else {
            return status(
                404,
                "NotFound",
                format!("the server could not find {}", request.uri),
            );
        };
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        // A body the server would not decode as an object: 400, as it answers.
        if matches!(request.method, Method::POST | Method::PUT)
            && let Err(e) = patch::object(&body)
        {
            return status(400, "BadRequest", e);
        }
        if kind.1 == "Event" && kind.0 == "events.k8s.io/v1" {
            return self.event(&t, &request.method, body);
        }
        let name = match &t.name {
            Some(name) => name.clone(),
            None if request.method == Method::POST => match body["metadata"]["name"].as_str() {
                Some(name) => name.to_string(),
                None => format!(
                    "{}{:05x}",
                    body["metadata"]["generateName"].as_str().unwrap_or_default(),
                    self.versions + 1
                ),
            },
            None => return status(405, "MethodNotAllowed", "a write needs a name".into()),
        };
        let key = key_of(t.namespace.as_deref(), &name);
        let what = format!("{} {} {key}", kind.0, kind.1);
        let sub = t
            .subresource
            .as_deref()
            .map_or(String::new(), |s| format!("/{s}"));
        let not_found = || status(404, "NotFound", format!("{} \"{name}\" not found", t.plural));
        let existing = self.current(&kind, &key);
        let method = request.method.as_str();
        let (line, object) = match (method, existing) {
            ("POST", Some(_)) => {
                return status(
                    409,
                    "AlreadyExists",
                    format!("{} \"{name}\" already exists", t.plural),
                );
            }
            ("POST", None) => {
                let mut obj = body;
                obj["metadata"]["name"] = name.clone().into();
                if let Some(ns) = &t.namespace {
                    obj["metadata"]["namespace"] = ns.clone().into();
                }
                let stamp = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ");
                obj["metadata"]["uid"] = format!("captured-uid-{key}").into();
                obj["metadata"]["creationTimestamp"] = stamp.to_string().into();
                (format!("create {what}"), obj)
            }
            ("PUT", Some(old)) => {
                let mut obj = body;
                obj["metadata"]["uid"] = old["metadata"]["uid"].clone();
                obj["metadata"]["creationTimestamp"] = old["metadata"]["creationTimestamp"].clone();
                (format!("update {what}{sub}"), obj)
            }
            ("PATCH", old) => {
                let (kind_name, applied) = match request.content_type {
                    "application/json-patch+json" => ("json", None),
                    "application/strategic-merge-patch+json" => ("strategic", Some(())),
                    "application/apply-patch+yaml" => ("apply", Some(())),
                    _ => ("merge", Some(())),
                };
                let mut obj = match (old, kind_name) {
                    (Some(old), _) => old,
                    (None, "apply") => json!({"metadata": {"uid": format!("captured-uid-{key}")}}),
                    (None, _) => return not_found(),
                };
                let patched = match applied {
                    Some(()) => patch::merge_object(&mut obj, &body),
                    None => patch::json(&mut obj, &body),
                };
                if let Err(e) = patched {
                    return status(422, "Invalid", e);
                }
                (format!("patch {what}{sub} {kind_name} {body}"), obj)
            }
            ("DELETE", Some(old)) => {
                let uid = &body["preconditions"]["uid"];
                if uid.is_string() && *uid != old["metadata"]["uid"] {
                    return status(
                        409,
                        "Conflict",
                        format!("Precondition failed: UID in precondition: {uid}"),
                    );
                }
                let mut options = body.clone();
                if let Some(o) = options.as_object_mut() {
                    o.remove("kind");
                    o.remove("apiVersion");
                    if let Some(p) = o.get_mut("preconditions").and_then(Value::as_object_mut) {
                        p.retain(|_, v| !v.is_null());
                    }
                }
                let options = match options.as_object().is_some_and(|o| !o.is_empty()) {
                    true => format!(" {options}"),
                    false => String::new(),
                };
                let line = format!("delete {what}{options}");
                if let Some(failed) = self.inject_failure(&line) {
                    return failed;
                }
                self.writes.push(line);
                self.written.insert((kind, key), None);
                return status(200, "", String::new());
            }
            _ => return not_found(),
        };
        if let Some(failed) = self.inject_failure(&line) {
            return failed;
        }
        let mut object = object;
        object["metadata"]["resourceVersion"] = self.next_version().into();
        self.writes.push(line);
        self.written.insert((kind, key), Some(object.clone()));
        let code = if method == "POST" { 201 } else { 200 };
        (code, object.to_string().into_bytes())
    }

    /// The case's next injected status, if any, as the answer to the write
    /// `line` (recorded as `line -> STATUS`).
    fn inject_failure(&mut self, line: &str) -> Option<(u16, Vec<u8>)> {
        let code = self.injected.pop_front()?;
        self.writes.push(format!("{line} -> {code}"));
        let reason = match code {
            409 => "Conflict",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        Some(status(code, reason, format!("injected by the case ({code})")))
    }

    /// An Event created (recorded) or patched (seen again: recorded again).
    fn event(&mut self, t: &Target, method: &Method, body: Value) -> (u16, Vec<u8>) {
        let ns = t.namespace.clone().unwrap_or_default();
        if *method == Method::POST {
            let regarding = &body["regarding"];
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            let about = key_of(regarding["namespace"].as_str(), &text(&regarding["name"]));
            let line = format!(
                "{} {} {about}: {}",
                text(&body["type"]),
                text(&body["reason"]),
                text(&body["note"])
            );
            let name = text(&body["metadata"]["name"]);
            self.events.insert(key_of(Some(&ns), &name), line.clone());
            self.event_lines.push(line);
            let mut obj = body;
            obj["metadata"]["resourceVersion"] = self.next_version().into();
            return (201, obj.to_string().into_bytes());
        }
        let key = key_of(Some(&ns), t.name.as_deref().unwrap_or_default());
        match self.events.get(&key).cloned() {
            Some(line) if *method == Method::PATCH => {
                self.event_lines.push(line);
                (
                    200,
                    json!({"metadata": {"name": t.name, "namespace": ns}})
                        .to_string()
                        .into_bytes(),
                )
            }
            _ => status(
                404,
                "NotFound",
                format!("events.events.k8s.io \"{key}\" not found"),
            ),
        }
    }
}

impl LocalServer for Capture {
    fn resolve(&self, api_version: &str, kind: &str) -> Result<Resolved, WriteError> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .resolve(api_version, kind)
            .ok_or_else(|| {
                WriteError::InvalidArgument(format!(
                    "the API server does not serve {api_version} {kind} (wink test knows the built-in kinds and those of the case's objects)"
                ))
            })
    }

    fn answer(&self, request: &Request) -> (u16, Vec<u8>) {
        let what = format!("wink test answering {} {}", request.method, request.uri);
        let answered = self.faults.guard(&what, || {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.answer(request)
        });
        answered.unwrap_or_else(|| status(500, "InternalError", format!("{what}: the harness failed")))
    }
}

#[cfg(test)]
mod tests;
