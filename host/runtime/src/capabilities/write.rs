//! The `write` import: create, replace, patch and delete (and the `status`
//! subresource), only within the plugin's permissions (what it declared,
//! intersected with the operator's grants), paced by its rate limit and the
//! daemon's, as the plugin (user agent, field manager), server-side dry runs
//! in audit mode. The resource type must be spelled as the API server
//! spells it and is checked as discovery resolved it; a key's namespace and
//! name are checked before anything is sent, and a write in audit mode is
//! refused where it is sent unless it says `dryRun=All` ([`super::request`]).
//! An object outside the plugin's scope is refused (`scoped.rs`).
//! A refusal or a failed request is a `write-error` value, never a trap; a
//! refused write is logged once per (verb, resource).
//!
//! Time spent waiting for the rate limit or the API server is host I/O: the
//! call clock does not count it against the plugin's deadline.

use super::HostState;
use super::cluster::{ClusterAccess, Request, Resolved, TokenBucket, answer_object};
use super::request::{Query, Target};
use crate::bindings::types::{ResourceType as Resource_, WriteError};
use crate::bindings::wink::plugin::write::{self, DeleteOptions, Deleted, PatchType, Propagation, Written};
use crate::grants::{Mode, Permissions, Verb};
use http::{HeaderValue, Method};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use wink_informer::canonical::{Gvk, names};

/// One plugin's access to the API server, once its grants are known.
pub struct WriteAccess {
    plugin: Arc<str>,
    pub(super) cluster: Arc<ClusterAccess>,
    pub(super) permissions: Permissions,
    rate: TokenBucket,
    pub(super) user_agent: HeaderValue,
    field_manager: String,
    refused: Mutex<HashSet<String>>,
    echoes: Mutex<super::echo::EchoTracker>,
    /// Waits on a rate limit: how many, and their total in microseconds.
    rate_waits: std::sync::atomic::AtomicU64,
    rate_waited_us: std::sync::atomic::AtomicU64,
    /// Writes made, by (verb, resource, outcome: HTTP code or reason).
    counts: Mutex<std::collections::BTreeMap<(&'static str, String, String), u64>>,
    /// Targets whose last write met a 409 Conflict: the write that retries
    /// it is not a new write, and is not paced by the plugin's own rate.
    conflicts: Mutex<super::retry::Conflicts>,
}

impl WriteAccess {
    /// Access for `plugin` with `permissions`.
    pub fn new(plugin: Arc<str>, cluster: Arc<ClusterAccess>, permissions: Permissions) -> Self {
        let rate = permissions.rate.unwrap_or(crate::grants::PLUGIN_RATE);
        let user_agent =
            HeaderValue::from_str(&format!("wink/{} (plugin {plugin})", env!("CARGO_PKG_VERSION")))
                .unwrap_or_else(|_| HeaderValue::from_static("wink"));
        WriteAccess {
            field_manager: format!("wink-{plugin}"),
            plugin,
            cluster,
            permissions,
            rate: TokenBucket::new(rate.qps, rate.burst),
            user_agent,
            refused: Mutex::new(HashSet::new()),
            echoes: Mutex::default(),
            counts: Mutex::default(),
            rate_waits: Default::default(),
            rate_waited_us: Default::default(),
            conflicts: Mutex::default(),
        }
    }

    /// The plugin is handed an object at `resource_version`: an echo of its
    /// own write or not; logs when most of its events are echoes.
    pub fn delivered(&self, resource_version: &str) {
        if let Some(warning) = self.echoes.lock().unwrap().delivered(resource_version) {
            tracing::warn!(plugin = %self.plugin, "{warning}");
        }
    }

    /// What the plugin may do.
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// Waits on a rate limit so far: how many, and their total.
    pub fn rate_waits(&self) -> (u64, Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        let waited = Duration::from_micros(self.rate_waited_us.load(Relaxed));
        (self.rate_waits.load(Relaxed), waited)
    }

    /// Writes made so far: (verb, resource, outcome, count).
    pub fn write_counts(&self) -> Vec<(&'static str, String, String, u64)> {
        let counts = self.counts.lock().unwrap();
        counts
            .iter()
            .map(|((v, r, o), n)| (*v, r.clone(), o.clone(), *n))
            .collect()
    }

    fn count(&self, verb: Verb, resource: &str, outcome: &Result<(Vec<u8>, Resolved, DryRun), WriteError>) {
        let outcome = match outcome {
            Ok(_) => "2xx".to_string(),
            Err(e) => match e {
                WriteError::NotPermitted(_) => "not-permitted".to_string(),
                WriteError::InvalidArgument(_) => "invalid-argument".to_string(),
                WriteError::Unavailable(_) => "unavailable".to_string(),
                WriteError::AlreadyExists(s)
                | WriteError::Conflict(s)
                | WriteError::NotFound(s)
                | WriteError::Invalid(s)
                | WriteError::Forbidden(s)
                | WriteError::TooManyRequests(s)
                | WriteError::Timeout(s)
                | WriteError::InternalError(s)
                | WriteError::Other(s) => s.code.to_string(),
            },
        };
        let key = (verb.as_str(), resource.to_string(), outcome);
        *self.counts.lock().unwrap().entry(key).or_default() += 1;
    }

    /// Whether writes are server-side dry runs.
    pub fn audit(&self) -> bool {
        self.permissions.mode == Mode::Audit
    }

    /// A refusal, logged once per (what, resource).
    pub(super) fn refuse(&self, what: &str, resource: &str, why: String) -> WriteError {
        if self.refused.lock().unwrap().insert(format!("{what} {resource}")) {
            tracing::warn!(plugin = %self.plugin, "{what} of {resource} refused: {why}");
        }
        WriteError::NotPermitted(why)
    }

    /// Wait for both rate limits; returns how long that took.
    pub(super) fn pace(&self) -> Duration {
        self.wait(self.rate.reserve().max(self.cluster.daemon_rate.reserve()))
    }

    /// Wait for the daemon's rate only: a retry after a conflict.
    fn pace_retry(&self) -> Duration {
        self.wait(self.cluster.daemon_rate.reserve())
    }

    fn wait(&self, wait: Duration) -> Duration {
        if !wait.is_zero() {
            use std::sync::atomic::Ordering::Relaxed;
            self.rate_waits.fetch_add(1, Relaxed);
            self.rate_waited_us.fetch_add(wait.as_micros() as u64, Relaxed);
            wink_informer::blocking::blocking(|| std::thread::sleep(wait));
        }
        wait
    }

    /// The query of every write: field manager and, in audit mode, dry run.
    fn query(&self, force: bool) -> Query {
        Query {
            field_manager: Some(self.field_manager.clone()),
            dry_run: self.audit(),
            force,
        }
    }

    /// Send a write: in audit mode it is refused unless the request as it
    /// goes out says `dryRun=All` (checked where it is sent).
    fn send_write(&self, request: Request) -> Result<(u16, Vec<u8>), WriteError> {
        self.cluster.send_checked(request, &self.user_agent, self.audit())
    }
}

/// What a plugin may write: empty (nothing) until the manager grants it.
#[derive(Clone, Default)]
pub struct WriteScope {
    access: Arc<RwLock<Option<Arc<WriteAccess>>>>,
}

impl WriteScope {
    /// Set the plugin's access (after its registration is resolved).
    pub fn grant(&self, access: WriteAccess) {
        *self.access.write().unwrap() = Some(Arc::new(access));
    }

    /// The plugin's access, if it has any.
    pub fn get(&self) -> Option<Arc<WriteAccess>> {
        self.access.read().unwrap().clone()
    }

    /// Tell the plugin's access (if any) that an object at
    /// `resource_version` was delivered, without taking a reference to it.
    pub fn delivered(&self, resource_version: &str) {
        if let Some(access) = &*self.access.read().unwrap() {
            access.delivered(resource_version);
        }
    }
}

/// `namespace/name` or `name`.
/// Whether a write went out as a server-side dry run (audit mode).
#[derive(Debug, Clone, Copy)]
pub(super) struct DryRun(pub(super) bool);

/// How much of a body the audit log line shows.
const AUDIT_BODY_BYTES: usize = 1024;

fn split_key(key: &str) -> (Option<&str>, &str) {
    match key.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, key),
    }
}

fn invalid(why: impl Into<String>) -> WriteError {
    WriteError::InvalidArgument(why.into())
}

/// A JSON object body, with its namespace and name.
fn object_body(body: &str) -> Result<(Value, Option<String>, Option<String>), WriteError> {
    let v: Value = serde_json::from_str(body).map_err(|e| invalid(format!("the body is not JSON: {e}")))?;
    if !v.is_object() {
        return Err(invalid("the body must be a JSON object"));
    }
    let text = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
    let (ns, name) = (text("/metadata/namespace"), text("/metadata/name"));
    Ok((v, ns, name))
}

fn patch_content_type(patch: &PatchType) -> (&'static str, bool) {
    match patch {
        PatchType::Merge => ("application/merge-patch+json", false),
        PatchType::Json => ("application/json-patch+json", false),
        PatchType::StrategicMerge => ("application/strategic-merge-patch+json", false),
        PatchType::Apply(force) => ("application/apply-patch+yaml", *force),
    }
}

/// A write's guest-visible result.
type Reply<T> = wasmtime::Result<Result<T, WriteError>>;

impl HostState {
    /// Check, pace and send one write of `verb` on `resource` in
    /// `namespace`; `build` makes the request from the resolved resource,
    /// the namespace (none for a cluster-scoped resource) and the write
    /// query. The resource type is checked in its canonical form, as
    /// discovery resolved it; the namespace before anything else. Host I/O
    /// time goes on the call clock.
    fn perform(
        &mut self,
        verb: Verb,
        resource: &Resource_,
        namespace: Option<&str>,
        subject: (Option<&str>, Option<&Value>),
        build: impl FnOnce(&Resolved, Option<&str>, &Query) -> Result<Request, WriteError>,
        force: bool,
    ) -> Result<(Vec<u8>, Resolved, DryRun), WriteError> {
        let what = match Gvk::parse(&resource.api_version, &resource.kind) {
            Ok(gvk) => gvk.to_string(),
            Err(e) => return Err(invalid(e.0)),
        };
        let Some(access) = self.writes.get() else {
            return Err(WriteError::NotPermitted(format!(
                "{} of {what}: this plugin has no writes granted",
                verb.as_str()
            )));
        };
        let started = Instant::now();
        let standing_by = || {
            WriteError::NotPermitted(
                "this replica is not the leader: it writes nothing while it stands by".into(),
            )
        };
        let result = (|| {
            if !access.cluster.leadership.is_leading() {
                return Err(standing_by());
            }
            let resolved = access.cluster.resolve(&resource.api_version, &resource.kind)?;
            let namespace = namespace.filter(|_| resolved.namespaced);
            if resolved.namespaced && namespace.is_none() {
                return Err(invalid(format!("{what} is namespaced: a namespace is needed")));
            }
            if let Some(ns) = namespace {
                names::namespace(ns).map_err(|e| invalid(e.0))?;
            }
            let ar = &resolved.ar;
            if !access
                .permissions
                .allows(&ar.api_version, &ar.kind, verb, namespace)
            {
                let scope = namespace.map_or(String::new(), |ns| format!(" in namespace {ns}"));
                return Err(access.refuse(
                    verb.as_str(),
                    &what,
                    format!("{} of {what}{scope} is not declared and granted", verb.as_str()),
                ));
            }
            if let Some(refused) = self.out_of_scope(ar, namespace, subject.0, subject.1) {
                let WriteError::NotPermitted(why) = refused else {
                    return Err(refused);
                };
                return Err(access.refuse(verb.as_str(), &what, why));
            }
            let query = access.query(force);
            let request = build(&resolved, namespace, &query)?;
            let target = request
                .uri
                .split(['?', '#'])
                .next()
                .unwrap_or_default()
                .to_string();
            if access.conflicts.lock().unwrap().retrying(&target) {
                access.pace_retry();
            } else {
                access.pace();
            }
            // Leadership may have gone while the write waited on its rate.
            if !access.cluster.leadership.is_leading() {
                return Err(standing_by());
            }
            let dry_run = DryRun(query.dry_run);
            let audit = query.dry_run.then(|| {
                let body = crate::text_log::capped(&request.body, AUDIT_BODY_BYTES);
                format!("{} {} {body}", request.method, request.uri)
            });
            let answer = access.send_write(request);
            if let Some(what) = audit {
                let outcome = match &answer {
                    Ok((code, _)) => format!("the server accepted it ({code})"),
                    Err(e) => format!("the server refused it: {e:?}"),
                };
                tracing::info!(plugin = %self.plugin, "audit: would {what}: {outcome}");
            }
            if let Err(WriteError::Conflict(_)) = &answer {
                access.conflicts.lock().unwrap().conflicted(target);
            }
            answer.map(|(_, body)| (body, resolved, dry_run))
        })();
        access.count(verb, &what, &result);
        self.clock.io += started.elapsed();
        result
    }

    /// A write answered with an object: its handle, and whether it was a
    /// dry run.
    fn object_reply(&mut self, result: Result<(Vec<u8>, Resolved, DryRun), WriteError>) -> Reply<Written> {
        let object = result.and_then(|(body, resolved, dry_run)| {
            let obj = answer_object(&body, &resolved.ar)?
                .ok_or_else(|| invalid("the server answered with a Status"))?;
            Ok((obj, dry_run))
        });
        match object {
            Ok((obj, DryRun(dry_run))) => {
                if !dry_run && let Some(access) = self.writes.get() {
                    access.echoes.lock().unwrap().written(obj.resource_version());
                }
                Ok(Ok(Written {
                    object: self.push_object(&obj)?,
                    dry_run,
                }))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    fn put(
        &mut self,
        resource: &Resource_,
        body: &str,
        subresource: Option<&'static str>,
    ) -> Result<(Vec<u8>, Resolved, DryRun), WriteError> {
        let (value, ns, name) = object_body(body)?;
        let name = name.ok_or_else(|| invalid("the body has no metadata.name"))?;
        self.perform(
            Verb::Update,
            resource,
            ns.as_deref(),
            (Some(&name), Some(&value)),
            |r, ns, q| {
                let target = Target {
                    ar: &r.ar,
                    namespace: ns,
                    name: Some(&name),
                    subresource,
                };
                Ok(Request {
                    method: Method::PUT,
                    uri: target.uri(q)?,
                    content_type: "application/json",
                    body: value.to_string().into_bytes(),
                })
            },
            false,
        )
    }

    fn patch_at(
        &mut self,
        resource: &Resource_,
        key: &str,
        patch: &PatchType,
        body: String,
        subresource: Option<&'static str>,
    ) -> Result<(Vec<u8>, Resolved, DryRun), WriteError> {
        let (ns, name) = split_key(key);
        serde_json::from_str::<serde::de::IgnoredAny>(&body)
            .map_err(|e| invalid(format!("the patch is not JSON: {e}")))?;
        let (content_type, force) = patch_content_type(patch);
        self.perform(
            Verb::Patch,
            resource,
            ns,
            (Some(name), None),
            |r, ns, q| {
                let target = Target {
                    ar: &r.ar,
                    namespace: ns,
                    name: Some(name),
                    subresource,
                };
                Ok(Request {
                    method: Method::PATCH,
                    uri: target.uri(q)?,
                    content_type,
                    body: body.into_bytes(),
                })
            },
            force,
        )
    }
}

impl write::Host for HostState {
    fn create(&mut self, resource: Resource_, body: String) -> Reply<Written> {
        let result = object_body(&body).and_then(|(value, ns, name)| {
            if name.is_none() && value.pointer("/metadata/generateName").is_none() {
                return Err(invalid("the body has no metadata.name (nor generateName)"));
            }
            self.perform(
                Verb::Create,
                &resource,
                ns.as_deref(),
                (name.as_deref(), Some(&value)),
                |r, ns, q| {
                    // The name goes in the body only: the server checks it,
                    // and its 422 names the field.
                    let target = Target {
                        ar: &r.ar,
                        namespace: ns,
                        name: None,
                        subresource: None,
                    };
                    Ok(Request {
                        method: Method::POST,
                        uri: target.uri(q)?,
                        content_type: "application/json",
                        body: value.to_string().into_bytes(),
                    })
                },
                false,
            )
        });
        self.object_reply(result)
    }

    fn replace(&mut self, resource: Resource_, body: String) -> Reply<Written> {
        let result = self.put(&resource, &body, None);
        self.object_reply(result)
    }

    fn patch(
        &mut self,
        resource: Resource_,
        key: String,
        patch_type: PatchType,
        body: String,
    ) -> Reply<Written> {
        let result = self.patch_at(&resource, &key, &patch_type, body, None);
        self.object_reply(result)
    }

    fn delete(&mut self, resource: Resource_, key: String, options: DeleteOptions) -> Reply<Deleted> {
        let (ns, name) = split_key(&key);
        let result = self.perform(
            Verb::Delete,
            &resource,
            ns,
            (Some(name), None),
            |r, ns, q| {
                let mut body = serde_json::json!({"kind": "DeleteOptions", "apiVersion": "v1"});
                if options.uid.is_some() || options.resource_version.is_some() {
                    body["preconditions"] =
                        serde_json::json!({"uid": options.uid, "resourceVersion": options.resource_version});
                }
                if let Some(p) = options.propagation {
                    body["propagationPolicy"] = Value::from(match p {
                        Propagation::Orphan => "Orphan",
                        Propagation::Background => "Background",
                        Propagation::Foreground => "Foreground",
                    });
                }
                if q.dry_run {
                    body["dryRun"] = serde_json::json!(["All"]);
                }
                // A delete takes no field manager.
                let query = Query {
                    field_manager: None,
                    ..q.clone()
                };
                let target = Target {
                    ar: &r.ar,
                    namespace: ns,
                    name: Some(name),
                    subresource: None,
                };
                Ok(Request {
                    method: Method::DELETE,
                    uri: target.uri(&query)?,
                    content_type: "application/json",
                    body: body.to_string().into_bytes(),
                })
            },
            false,
        );
        let object = result
            .and_then(|(body, resolved, DryRun(dry_run))| Ok((answer_object(&body, &resolved.ar)?, dry_run)));
        match object {
            Ok((obj, dry_run)) => Ok(Ok(Deleted {
                object: obj.map(|o| self.push_object(&o)).transpose()?,
                dry_run,
            })),
            Err(e) => Ok(Err(e)),
        }
    }

    fn replace_status(&mut self, resource: Resource_, body: String) -> Reply<Written> {
        let result = self.put(&resource, &body, Some("status"));
        self.object_reply(result)
    }

    fn patch_status(
        &mut self,
        resource: Resource_,
        key: String,
        patch_type: PatchType,
        body: String,
    ) -> Reply<Written> {
        let result = self.patch_at(&resource, &key, &patch_type, body, Some("status"));
        self.object_reply(result)
    }
}
