//! Admission webhooks, called as kube-apiserver calls them: on a create,
//! update (PUT or any patch), delete or deletecollection of any resource
//! (subresources such as `status` included) the mutating webhooks run first
//! (configurations in name order, webhooks in order, each seeing the object
//! as the previous one patched it), then the validating ones (concurrently,
//! the first refusal in order wins), before anything is stored.
//! admissionregistration.k8s.io objects are never sent to webhooks.
//!
//! A webhook's `clientConfig.service` is reached through a route the test
//! sets ([`Registry::route`], `Sim::route_service`): the call goes to that
//! address, verified as `NAME.NAMESPACE.svc`. Calls are counted per webhook
//! name (`Sim::webhook_calls`).
//!
//! Owns: dispatching (which hooks, in which order, what a failure means).
//! Submodules: `config` (the configuration objects), `matching`, `call`
//! (HTTPS), `review` (AdmissionReview and the errors), `testing` (an HTTPS
//! webhook server for tests). Must not touch: the write paths themselves
//! (`http`, and the control plane's ReplicaSet controller for its Pod
//! creates, call in here before storing).

mod call;
pub mod config;
pub mod flow;
mod matching;
mod review;
pub mod testing;

use super::Shared;
use super::resources::ResourceDef;
use super::status::ApiError;
use base64::Engine;
pub use matching::Attrs;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Webhook calls made and service routes, for the life of a server.
#[derive(Default)]
pub struct Registry {
    calls: Mutex<HashMap<String, u64>>,
    routes: Mutex<HashMap<(String, String, u16), SocketAddr>>,
}

impl Registry {
    /// Calls made to the webhook `name` (attempts, whether they got an answer or not).
    pub fn calls(&self, name: &str) -> u64 {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .copied()
            .unwrap_or(0)
    }

    /// Send calls for service `namespace/name` on `port` to `addr`.
    pub fn route(&self, namespace: &str, name: &str, port: u16, addr: SocketAddr) {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((namespace.into(), name.into(), port), addr);
    }

    /// `{"NAME": calls}` for `/_sim/stats`.
    pub fn to_json(&self) -> Value {
        let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        Value::Object(calls.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
    }

    fn count(&self, name: &str) {
        *self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name.into())
            .or_default() += 1;
    }

    fn routed(&self, namespace: &str, name: &str, port: u16) -> Option<SocketAddr> {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(namespace.to_string(), name.to_string(), port))
            .copied()
    }
}

/// One write being admitted.
pub struct Op<'a> {
    pub def: &'a ResourceDef,
    /// The URL's version.
    pub version: &'a str,
    pub sub: Option<&'a str>,
    pub ns: Option<&'a str>,
    pub name: &'a str,
    /// CREATE, UPDATE or DELETE.
    pub operation: &'static str,
    /// CreateOptions, UpdateOptions, PatchOptions or DeleteOptions.
    pub options: Value,
}

/// The options object of a write, as the API server passes it on.
pub fn options(kind: &str, field_manager: Option<&str>, dry_run: bool) -> Value {
    let mut o = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if let Some(m) = field_manager {
        o["fieldManager"] = json!(m);
    }
    if dry_run {
        o["dryRun"] = json!(["All"]);
    }
    o
}

/// The admission of one request (None when no webhook is configured).
pub struct Ctx {
    shared: Arc<Shared>,
    dry_run: bool,
    user: Value,
    /// Shared by the copies [`Ctx::dry_run`] makes.
    warnings: Arc<Mutex<Vec<String>>>,
}

/// Run `f` to completion from the blocking thread a write is served on.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Handle::current().block_on(f)
}

impl Ctx {
    /// The admission of a request on a server with webhooks configured.
    pub fn new(shared: &Arc<Shared>) -> Option<Arc<Ctx>> {
        config::any(&shared.store.lock()).then(|| {
            Arc::new(Ctx {
                shared: shared.clone(),
                dry_run: false,
                user: review::anonymous(),
                warnings: Arc::default(),
            })
        })
    }

    /// The admission of a write a controller makes as the service account
    /// `kube-system/NAME` (its userInfo), on a server with webhooks configured.
    pub fn for_controller(shared: &Arc<Shared>, name: &str) -> Option<Ctx> {
        config::any(&shared.store.lock()).then(|| Ctx {
            shared: shared.clone(),
            dry_run: false,
            user: review::service_account("kube-system", name),
            warnings: Arc::default(),
        })
    }

    /// The same admission for a dry run.
    pub fn dry_run(&self, dry_run: bool) -> Ctx {
        Ctx {
            shared: self.shared.clone(),
            dry_run,
            user: self.user.clone(),
            warnings: self.warnings.clone(),
        }
    }

    /// The warnings webhooks sent, for `Warning` headers.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn warn(&self, w: &[String]) {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(w);
    }

    fn attrs(&self, op: &Op) -> Attrs {
        let namespace_object = op.def.group.is_empty() && op.def.plural == "namespaces";
        Attrs {
            operation: op.operation,
            group: op.def.group.clone(),
            version: op.version.to_string(),
            resource: op.def.plural.clone(),
            subresource: op.sub.unwrap_or("").to_string(),
            kind: op.def.kind.clone(),
            namespace: match namespace_object {
                true => op.name.to_string(),
                false => op.ns.filter(|_| op.def.namespaced).unwrap_or("").to_string(),
            },
            name: op.name.to_string(),
        }
    }

    /// The labels the namespaceSelector is matched against; None: cluster-scoped.
    fn namespace_labels(&self, op: &Op, object: Option<&Value>, old: Option<&Value>) -> Option<Value> {
        let (name, labels) = if op.def.group.is_empty() && op.def.plural == "namespaces" {
            let o = object.filter(|o| !o.is_null()).or(old);
            (
                op.name.to_string(),
                o.and_then(|o| o.pointer("/metadata/labels")).cloned(),
            )
        } else {
            let ns = op.ns.filter(|_| op.def.namespaced)?;
            let st = self.shared.store.lock();
            let o = st.table("namespaces").and_then(|t| t.objects.get(ns));
            (
                ns.to_string(),
                o.and_then(|o| o.value.pointer("/metadata/labels").cloned()),
            )
        };
        // The label the API server gives every namespace (selectors name it to pick namespaces by name).
        let mut labels = labels.filter(Value::is_object).unwrap_or(json!({}));
        labels["kubernetes.io/metadata.name"] = json!(name);
        Some(labels)
    }

    /// Which hooks of a kind take this request, with their invocations.
    fn matching(
        &self,
        mutating: bool,
        op: &Op,
        a: &Attrs,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Vec<(config::Hook, Option<matching::Invocation>)> {
        if config::is_configuration(op.def) {
            return Vec::new();
        }
        let hooks = config::hooks(&self.shared.store.lock(), mutating);
        if hooks.is_empty() {
            return Vec::new();
        }
        let labels = self.namespace_labels(op, object, old);
        hooks
            .into_iter()
            .filter_map(|h| {
                let inv = matching::rules(&h.spec, a)?;
                let ok = matching::namespace(&h.spec, labels.as_ref(), labels.is_none())
                    && matching::object(&h.spec, object, old);
                ok.then_some((h, inv))
            })
            .collect()
    }

    /// Run the mutating webhooks on `object`; the object as they leave it.
    /// A webhook with reinvocationPolicy IfNeeded is called once more when a
    /// later webhook changed the object after it ran (one reinvocation round).
    pub fn mutate(&self, op: &Op, mut object: Value, old: Option<&Value>) -> Result<Value, ApiError> {
        if config::is_configuration(op.def) {
            return Ok(object);
        }
        let hooks = config::hooks(&self.shared.store.lock(), true);
        let a = self.attrs(op);
        let (mut previously, mut reinvoke) = (Vec::new(), Vec::new());
        for round in 0..2 {
            if round == 1 && reinvoke.is_empty() {
                break;
            }
            for (i, h) in hooks.iter().enumerate() {
                if round == 1 && !reinvoke.contains(&i) {
                    continue;
                }
                let Some(changed) = self.mutate_one(op, &a, h, &mut object, old)? else {
                    continue;
                };
                if changed && round == 0 {
                    reinvoke.append(&mut previously);
                }
                if h.str("reinvocationPolicy") == "IfNeeded" {
                    previously.push(i);
                }
            }
        }
        Ok(object)
    }

    /// Call one mutating webhook if it matches the object as it is now:
    /// whether it changed it (None: not called, or failed and ignored).
    fn mutate_one(
        &self,
        op: &Op,
        a: &Attrs,
        h: &config::Hook,
        object: &mut Value,
        old: Option<&Value>,
    ) -> Result<Option<bool>, ApiError> {
        // Selectors see the object as the previous webhooks left it.
        let Some(inv) = matching::rules(&h.spec, a) else {
            return Ok(None);
        };
        let current = (op.operation != "DELETE").then_some(&*object);
        let labels = self.namespace_labels(op, current, old);
        if !(matching::namespace(&h.spec, labels.as_ref(), labels.is_none())
            && matching::object(&h.spec, current, old))
        {
            return Ok(None);
        }
        let answer = match self.ask(h, a, inv.as_ref(), current, old, &op.options)? {
            Ok(answer) => answer,
            Err(_) if h.ignore_failures() => return Ok(None),
            Err(why) => return Err(review::calling(&h.name, &why)),
        };
        self.warn(&answer.warnings);
        if !answer.allowed {
            return Err(review::denial(&h.name, answer.result.as_ref()));
        }
        let Some(patch) = answer
            .patch
            .filter(|p| p.as_array().is_some_and(|p| !p.is_empty()))
        else {
            return Ok(Some(false));
        };
        if op.operation == "DELETE" {
            return Err(review::internal(&format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                h.name
            )));
        }
        let patch: json_patch::Patch = match serde_json::from_value(patch) {
            Ok(p) => p,
            Err(_) if h.ignore_failures() => return Ok(None),
            Err(e) => {
                let why = format!("received undecodable patch in webhook response: {e}");
                return Err(review::calling(&h.name, &why));
            }
        };
        // Patched as the webhook saw it: in an equivalent resource's form, converted back.
        let mut patched = convert(object, a, inv.as_ref());
        json_patch::patch(&mut patched, &patch).map_err(|e| review::internal(&e.to_string()))?;
        let patched = match inv.as_ref() {
            Some(i) => convert(
                &patched,
                &matching::Attrs {
                    group: i.group.clone(),
                    ..a.clone()
                },
                Some(&matching::Invocation {
                    group: a.group.clone(),
                    ..i.clone()
                }),
            ),
            None => patched,
        };
        let changed = patched != *object;
        *object = patched;
        Ok(Some(changed))
    }

    /// Run the validating webhooks (concurrently); the first refusal in order.
    pub fn validate(&self, op: &Op, object: Option<&Value>, old: Option<&Value>) -> Result<(), ApiError> {
        let a = self.attrs(op);
        let hooks = self.matching(false, op, &a, object, old);
        if hooks.is_empty() {
            return Ok(());
        }
        let asks = hooks
            .iter()
            .map(|(h, inv)| self.ask_async(h, &a, inv.as_ref(), object, old, &op.options));
        let answers = block_on(futures::future::join_all(asks));
        let mut first = None;
        for ((h, _), answer) in hooks.iter().zip(answers) {
            let err = match answer {
                Err(e) => Some(e),
                Ok(Err(_)) if h.ignore_failures() => None,
                Ok(Err(why)) => Some(review::calling(&h.name, &why)),
                Ok(Ok(answer)) => {
                    self.warn(&answer.warnings);
                    (!answer.allowed).then(|| review::denial(&h.name, answer.result.as_ref()))
                }
            };
            if first.is_none() {
                first = err;
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Ask one webhook; Err: refused without a call (a dry run it cannot do);
    /// Ok(Err): the call failed (the failure policy decides).
    fn ask(
        &self,
        h: &config::Hook,
        a: &Attrs,
        inv: Option<&matching::Invocation>,
        object: Option<&Value>,
        old: Option<&Value>,
        options: &Value,
    ) -> Result<Result<review::Answer, String>, ApiError> {
        block_on(self.ask_async(h, a, inv, object, old, options))
    }

    async fn ask_async(
        &self,
        h: &config::Hook,
        a: &Attrs,
        inv: Option<&matching::Invocation>,
        object: Option<&Value>,
        old: Option<&Value>,
        options: &Value,
    ) -> Result<Result<review::Answer, String>, ApiError> {
        if self.dry_run && !matches!(h.str("sideEffects"), "None" | "NoneOnDryRun") {
            return Err(review::dry_run_unsupported(&h.name));
        }
        let uid = super::meta::uid();
        let (object, old) = (
            object.map(|o| convert(o, a, inv)),
            old.map(|o| convert(o, a, inv)),
        );
        let q = review::Question {
            attrs: a,
            invocation: inv,
            object: object.as_ref(),
            old: old.as_ref(),
            dry_run: self.dry_run,
            options,
            user: &self.user,
        };
        let body = review::request(&uid, &q).to_string().into_bytes();
        let target = match self.target(h) {
            Ok(t) => t,
            Err(why) => return Ok(Err(why)),
        };
        self.shared.admission.count(&h.name);
        let (code, bytes) = match call::post(&target, body, h.timeout()).await {
            Ok(r) => r,
            Err(e) => return Ok(Err(format!("failed to call webhook: {e}"))),
        };
        if !(200..300).contains(&code) {
            let text = String::from_utf8_lossy(&bytes);
            return Ok(Err(format!(
                "failed to call webhook: an error on the server ({:?}) has prevented the request from succeeding",
                text.trim()
            )));
        }
        let review: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Err(format!(
                    "failed to call webhook: couldn't get version/kind; json parse error: {e}"
                )));
            }
        };
        Ok(review::verify(&uid, h.mutating, &review)
            .map_err(|e| format!("received invalid webhook response: {e}")))
    }

    /// Where `h`'s calls go, with `?timeout=` as the API server adds it.
    fn target(&self, h: &config::Hook) -> Result<call::Target, String> {
        let cc = h.spec.get("clientConfig").cloned().unwrap_or_default();
        let ca = match cc.get("caBundle").and_then(Value::as_str) {
            Some(b) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| format!("could not get REST client: {e}"))?,
            None => Vec::new(),
        };
        let query = format!("?timeout={}s", h.timeout().as_secs());
        if let Some(url) = cc.get("url").and_then(Value::as_str) {
            let rest = url.strip_prefix("https://").unwrap_or(url);
            let (authority, path) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, "/"),
            };
            let (host, dial) = match authority.rsplit_once(':') {
                Some((h, p)) if p.parse::<u16>().is_ok() => (h, authority.to_string()),
                _ => (authority, format!("{authority}:443")),
            };
            let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
            return Ok(call::Target {
                url: format!("https://{authority}{path}{query}"),
                host,
                dial: Some(dial),
                path_and_query: format!("{path}{query}"),
                ca,
            });
        }
        let svc = cc.get("service").cloned().unwrap_or_default();
        let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let (ns, name) = (s("namespace"), s("name"));
        let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443) as u16;
        let path = svc.get("path").and_then(Value::as_str).unwrap_or("/");
        let host = format!("{name}.{ns}.svc");
        Ok(call::Target {
            url: format!("https://{host}:{port}{path}{query}"),
            dial: self
                .shared
                .admission
                .routed(&ns, &name, port)
                .map(|a| a.to_string()),
            host,
            path_and_query: format!("{path}{query}"),
            ca,
        })
    }
}

/// `v`, of the request's resource, as the equivalent resource a webhook is
/// called for serves it (core/v1 and events.k8s.io/v1 Events).
fn convert(v: &Value, a: &Attrs, inv: Option<&matching::Invocation>) -> Value {
    match inv {
        Some(i) if i.group == super::events::GROUP && a.group.is_empty() => {
            super::events::as_version(v, super::events::API_VERSION)
        }
        Some(i) if i.group.is_empty() && a.group == super::events::GROUP => super::events::to_core(v),
        _ => v.clone(),
    }
}

/// `Warning` header values for `warnings` (`299 - "text"`).
pub fn warning_headers(warnings: &[String]) -> Vec<String> {
    warnings
        .iter()
        .map(|w| {
            let text: String = w.chars().filter(|c| !c.is_control()).collect();
            format!("299 - \"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
        })
        .collect()
}

/// `resp` with a `Warning` header for each warning the webhooks sent.
pub fn with_warnings(mut resp: super::response::Resp, adm: Option<&Ctx>) -> super::response::Resp {
    for w in warning_headers(&adm.map(Ctx::warnings).unwrap_or_default()) {
        if let Ok(v) = axum::http::HeaderValue::from_str(&w) {
            resp.headers_mut().append(axum::http::header::WARNING, v);
        }
    }
    resp
}
