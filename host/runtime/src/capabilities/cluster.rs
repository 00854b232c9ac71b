//! The API server as the `write` and `events` capabilities reach it: one
//! request at a time from the thread running a plugin, as that plugin
//! (its user agent and field manager), paced by token buckets, and answered
//! as a typed `write-error` when the server refuses.
//!
//! Owns sending (every request passes [`super::request::check_sent`] here,
//! whatever its transport), discovery for writes, the mapping of a `Status`
//! answer to a `write-error`, and rate limiting; URLs are built in
//! [`super::request`]. Permission checks are the callers'. Requests go over
//! HTTP, or to a [`LocalServer`] answering in-process (`wink test` captures
//! writes so).

pub use super::request::Request;
use super::request::check_sent;
use crate::bindings::types::{ApiStatus, StatusCause, WriteError};
pub use crate::rate::TokenBucket;
use http::HeaderValue;
use kube::api::{ApiResource, DynamicObject};
use kube::discovery::Scope;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use wink_informer::ObjRef;
use wink_informer::SharedInformerFactory;
use wink_informer::canonical::Gvk;
use wink_informer::object::{CachePolicy, CachedObject};

/// How often a 429 is retried before the plugin sees it.
pub const RETRIES_429: u32 = 2;

/// The longest Retry-After a write waits for by itself.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Where requests go.
enum Transport {
    /// The API server, through `client`; discovery through `factory`.
    Http {
        client: kube::Client,
        factory: Arc<SharedInformerFactory>,
        /// Where its requests run.
        runtime: tokio::runtime::Handle,
    },
    /// An in-process stand-in for the API server.
    Local(Arc<dyn LocalServer>),
}

/// Something that answers requests as an API server would, in-process:
/// discovery, and one answer (status code and body) per request.
pub trait LocalServer: Send + Sync {
    /// Resolve a resource type, as discovery would.
    fn resolve(&self, api_version: &str, kind: &str) -> Result<Resolved, WriteError>;
    /// Answer `request`: a status code and its body (an object or a `Status`).
    fn answer(&self, request: &Request) -> (u16, Vec<u8>);
}

/// Everything plugins share to reach the API server.
pub struct ClusterAccess {
    transport: Transport,
    /// Resources resolved so far (discovery is asked once per resource).
    resolved: std::sync::Mutex<std::collections::HashMap<(String, String), Resolved>>,
    /// Every plugin's writes together.
    pub daemon_rate: TokenBucket,
    /// How long one request may take.
    pub timeout: Duration,
    /// Only a leader writes (a standby's writes are refused).
    pub leadership: crate::leadership::Leadership,
}

/// A resource resolved through discovery.
#[derive(Clone)]
pub struct Resolved {
    pub ar: ApiResource,
    pub namespaced: bool,
}

impl Resolved {
    /// The collection path: `/api/v1/namespaces/ns/configmaps`.
    pub fn collection(&self, namespace: Option<&str>) -> String {
        super::request::collection_path(&self.ar, namespace.filter(|_| self.namespaced))
    }
}

fn status(code: u16, reason: &str, message: String) -> ApiStatus {
    ApiStatus {
        code,
        reason: reason.to_string(),
        message,
        causes: Vec::new(),
        retry_after_seconds: None,
    }
}

/// The `write-error` of a failed answer: its Status body (or what can be
/// said without one) and its Retry-After header.
pub fn error_of(code: u16, retry_after: Option<u32>, body: &[u8]) -> WriteError {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let mut st = status(
        code,
        parsed["reason"].as_str().unwrap_or(""),
        text(&parsed["message"]),
    );
    if st.message.is_empty() {
        st.message = String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned();
    }
    st.causes = parsed["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .map(|c| StatusCause {
                    reason: text(&c["reason"]),
                    message: text(&c["message"]),
                    field: text(&c["field"]),
                })
                .collect()
        })
        .unwrap_or_default();
    st.retry_after_seconds = retry_after.or_else(|| {
        parsed["details"]["retryAfterSeconds"]
            .as_u64()
            .map(|s| s.min(u32::MAX.into()) as u32)
    });
    let reason = st.reason.clone();
    match (code, reason.as_str()) {
        (_, "AlreadyExists") => WriteError::AlreadyExists(st),
        (_, "Conflict") | (409, _) => WriteError::Conflict(st),
        (_, "NotFound") | (404, _) => WriteError::NotFound(st),
        (_, "Invalid") | (422, _) => WriteError::Invalid(st),
        (_, "Forbidden") | (403, _) => WriteError::Forbidden(st),
        (_, "TooManyRequests") | (429, _) => WriteError::TooManyRequests(st),
        (_, "Timeout") | (504, _) => WriteError::Timeout(st),
        (_, "InternalError") | (500, _) => WriteError::InternalError(st),
        _ => WriteError::Other(st),
    }
}

impl ClusterAccess {
    /// Access through `client` (default: `factory`'s), its requests run on
    /// `runtime`.
    pub fn new(
        factory: Arc<SharedInformerFactory>,
        client: Option<kube::Client>,
        runtime: tokio::runtime::Handle,
        daemon_rate: TokenBucket,
    ) -> Self {
        ClusterAccess {
            transport: Transport::Http {
                client: client.unwrap_or_else(|| factory.client().clone()),
                factory,
                runtime,
            },
            resolved: Default::default(),
            daemon_rate,
            timeout: Duration::from_secs(10),
            leadership: crate::leadership::Leadership::always(),
        }
    }

    /// Access answered by `server` in-process: no API server, no client.
    /// Its daemon-wide rate limit is unbounded.
    pub fn local(server: Arc<dyn LocalServer>) -> Self {
        ClusterAccess {
            transport: Transport::Local(server),
            resolved: Default::default(),
            daemon_rate: TokenBucket::new(1e9, 1_000_000_000),
            timeout: Duration::from_secs(10),
            leadership: crate::leadership::Leadership::always(),
        }
    }

    /// Resolve a resource type through discovery (cached by the factory):
    /// only as the API server spells it ([`Gvk::parse`]), and only to itself
    /// ([`Gvk::check_resolved`]).
    pub fn resolve(&self, api_version: &str, kind: &str) -> Result<Resolved, WriteError> {
        let gvk = Gvk::parse(api_version, kind).map_err(|e| WriteError::InvalidArgument(e.0))?;
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.resolved.lock().unwrap().get(&key) {
            return Ok(found.clone());
        }
        let resolved = match &self.transport {
            Transport::Local(server) => server.resolve(api_version, kind)?,
            Transport::Http { factory, runtime, .. } => {
                wink_informer::blocking::blocking(|| runtime.block_on(factory.resolve(api_version, kind)))
                    .map(|(ar, scope)| Resolved {
                        ar,
                        namespaced: matches!(scope, Scope::Namespaced),
                    })
                    .map_err(|e| WriteError::InvalidArgument(format!("{e:#}")))?
            }
        };
        gvk.check_resolved(&resolved.ar)
            .map_err(|e| WriteError::InvalidArgument(e.0))?;
        self.resolved.lock().unwrap().insert(key, resolved.clone());
        Ok(resolved)
    }

    /// Send `request` as `user_agent` and wait for the answer (on the
    /// calling thread, the one running the plugin, handed off by
    /// [`wink_informer::blocking`] when it is a runtime worker). A 429 whose Retry-After
    /// is at most [`MAX_RETRY_AFTER`] is retried after it, up to
    /// [`RETRIES_429`] times; then the plugin gets `too-many-requests` with
    /// the server's retry-after, to decide for itself.
    ///
    /// Not a dry run: writes go through [`Self::send_checked`].
    pub fn send(&self, request: Request, user_agent: &HeaderValue) -> Result<(u16, Vec<u8>), WriteError> {
        self.send_checked(request, user_agent, false)
    }

    /// [`Self::send`], refused unless the request as it goes out passes
    /// [`check_sent`] (with `dryRun=All` when `dry_run`).
    pub fn send_checked(
        &self,
        request: Request,
        user_agent: &HeaderValue,
        dry_run: bool,
    ) -> Result<(u16, Vec<u8>), WriteError> {
        wink_informer::blocking::blocking(|| self.send_retrying(request, user_agent, dry_run))
    }

    fn send_retrying(
        &self,
        request: Request,
        user_agent: &HeaderValue,
        dry_run: bool,
    ) -> Result<(u16, Vec<u8>), WriteError> {
        let mut retries = 0;
        loop {
            match self.send_once(&request, user_agent, dry_run) {
                Err(WriteError::TooManyRequests(st)) if retries < RETRIES_429 => {
                    let wait = Duration::from_secs(st.retry_after_seconds.unwrap_or(1).into());
                    if wait > MAX_RETRY_AFTER {
                        return Err(WriteError::TooManyRequests(st));
                    }
                    retries += 1;
                    std::thread::sleep(wait);
                }
                answer => return answer,
            }
        }
    }

    fn send_once(
        &self,
        request: &Request,
        user_agent: &HeaderValue,
        dry_run: bool,
    ) -> Result<(u16, Vec<u8>), WriteError> {
        let (client, runtime) = match &self.transport {
            Transport::Http { client, runtime, .. } => (client.clone(), runtime),
            Transport::Local(server) => {
                check_sent(&request.uri, &request.uri, dry_run)?;
                return match server.answer(request) {
                    (code, body) if (200..300).contains(&code) => Ok((code, body)),
                    (code, body) => Err(error_of(code, None, &body)),
                };
            }
        };
        let req = http::Request::builder()
            .method(request.method.clone())
            .uri(request.uri.as_str())
            .header(http::header::CONTENT_TYPE, request.content_type)
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::USER_AGENT, user_agent)
            .body(kube::client::Body::from(request.body.clone()))
            .map_err(|e| WriteError::InvalidArgument(e.to_string()))?;
        let sent = req.uri().path_and_query().map_or("", |pq| pq.as_str());
        check_sent(&request.uri, sent, dry_run)?;
        let exchange = async move {
            let resp = client.send(req).await.map_err(|e| e.to_string())?;
            let code = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok());
            let body = resp
                .into_body()
                .collect_bytes()
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>((code, retry_after, body.to_vec()))
        };
        let answer = runtime.block_on(async { tokio::time::timeout(self.timeout, exchange).await });
        match answer {
            Err(_) => Err(WriteError::Unavailable(format!(
                "no answer from the API server within {:?}",
                self.timeout
            ))),
            Ok(Err(e)) => Err(WriteError::Unavailable(e)),
            Ok(Ok((code, _, body))) if (200..300).contains(&code) => Ok((code, body)),
            Ok(Ok((code, retry_after, body))) => Err(error_of(code, retry_after, &body)),
        }
    }
}

/// The object of a successful answer, as a cached object for a handle; none
/// when the answer is a `Status` (a delete that completed).
pub fn answer_object(body: &[u8], ar: &ApiResource) -> Result<Option<ObjRef>, WriteError> {
    let obj: DynamicObject = serde_json::from_slice(body)
        .map_err(|e| WriteError::InvalidArgument(format!("unreadable answer: {e}")))?;
    if obj.types.as_ref().is_some_and(|t| t.kind == "Status") {
        return Ok(None);
    }
    let policy = CachePolicy {
        compress: false,
        ..CachePolicy::default()
    };
    Ok(Some(CachedObject::from_dynamic(obj, ar, policy)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    /// A server that records every request it is handed.
    #[derive(Default)]
    struct Recording(std::sync::Mutex<Vec<String>>);

    impl LocalServer for Recording {
        fn resolve(&self, _: &str, _: &str) -> Result<Resolved, WriteError> {
            let gvk = kube::core::GroupVersionKind::gvk("", "v1", "ConfigMap");
            Ok(Resolved {
                ar: ApiResource::from_gvk_with_plural(&gvk, "configmaps"),
                namespaced: true,
            })
        }
        fn answer(&self, request: &Request) -> (u16, Vec<u8>) {
            self.0.lock().unwrap().push(request.uri.clone());
            (200, b"{}".to_vec())
        }
    }

    #[test]
    fn a_request_that_must_be_a_dry_run_and_does_not_say_so_is_never_sent() {
        let server = Arc::new(Recording::default());
        let access = ClusterAccess::local(server.clone());
        let ua = HeaderValue::from_static("test");
        let request = |uri: &str| Request {
            method: Method::PATCH,
            uri: uri.to_string(),
            content_type: "application/merge-patch+json",
            body: b"{}".to_vec(),
        };
        let lost = "/api/v1/namespaces/default/configmaps/victim#?fieldManager=wink-p&dryRun=All";
        assert!(access.send_checked(request(lost), &ua, true).is_err());
        let plain = "/api/v1/namespaces/default/configmaps/victim?fieldManager=wink-p";
        assert!(access.send_checked(request(plain), &ua, true).is_err());
        assert!(server.0.lock().unwrap().is_empty(), "nothing reached the server");
        let dry = "/api/v1/namespaces/default/configmaps/victim?fieldManager=wink-p&dryRun=All";
        assert!(access.send_checked(request(dry), &ua, true).is_ok());
        assert!(
            access.send(request(plain), &ua).is_ok(),
            "not a dry run: sent as it is"
        );
        assert_eq!(*server.0.lock().unwrap(), [dry, plain]);
    }

    #[test]
    fn resource_types_resolve_only_as_the_api_server_spells_them() {
        let access = ClusterAccess::local(Arc::new(Recording::default()));
        assert!(access.resolve("v1", "ConfigMap").is_ok());
        for (v, k) in [
            ("/v1", "ConfigMap"),
            ("core/v1", "ConfigMap"),
            ("V1", "ConfigMap"),
            ("v1", "ConfigMap\0"),
        ] {
            match access.resolve(v, k) {
                Err(WriteError::InvalidArgument(why)) => assert!(why.starts_with("invalid"), "{why}"),
                Err(other) => panic!("{v:?} {k:?}: {other:?}"),
                Ok(_) => panic!("{v:?} {k:?} resolved"),
            }
        }
        match access.resolve("v1", "Configmap") {
            Err(WriteError::InvalidArgument(why)) => {
                assert!(why.contains("resolved to v1 ConfigMap"), "{why}")
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("a kind discovery answers in another case is refused"),
        }
    }

    #[test]
    fn statuses_map_to_the_matching_error() {
        let body = |reason: &str| {
            serde_json::json!({"kind": "Status", "reason": reason, "message": "m",
                "details": {"causes": [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.x"}],
                            "retryAfterSeconds": 3}})
            .to_string()
            .into_bytes()
        };
        assert!(matches!(
            error_of(409, None, &body("AlreadyExists")),
            WriteError::AlreadyExists(_)
        ));
        assert!(matches!(
            error_of(409, None, &body("Conflict")),
            WriteError::Conflict(_)
        ));
        assert!(matches!(
            error_of(404, None, &body("NotFound")),
            WriteError::NotFound(_)
        ));
        assert!(matches!(
            error_of(500, None, &body("InternalError")),
            WriteError::InternalError(_)
        ));
        match error_of(422, None, &body("Invalid")) {
            WriteError::Invalid(st) => {
                assert_eq!((st.code, st.causes.len()), (422, 1));
                assert_eq!(st.causes[0].field, "spec.x");
            }
            other => panic!("{other:?}"),
        }
        match error_of(429, Some(7), &body("TooManyRequests")) {
            WriteError::TooManyRequests(st) => assert_eq!(st.retry_after_seconds, Some(7), "the header wins"),
            other => panic!("{other:?}"),
        }
        match error_of(502, None, b"bad gateway") {
            WriteError::Other(st) => assert_eq!((st.code, st.message.as_str()), (502, "bad gateway")),
            other => panic!("{other:?}"),
        }
    }
}
