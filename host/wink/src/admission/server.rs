//! The admission webhook server: HTTPS (rustls, HTTP/1.1, the only
//! protocol offered by ALPN: kube-apiserver's webhook client asks for
//! HTTP/1.1 alone, or for h2 and HTTP/1.1 on a loopback URL) on a
//! [`BoundedListener`] (its connection cap, and the head and body
//! deadlines of the other surfaces, counted from a request's first byte:
//! see [`super::paced::Paced`]), answering `POST /admission/<plugin>/validate` and
//! `/admission/<plugin>/mutate` with an `admission.k8s.io/v1`
//! AdmissionReview, and a shared validating webhook's
//! `/admission/<plugin>.<plugin>.../validate` with its plugins' decisions
//! merged ([`super::shared`]). A body is capped at [`MAX_BODY`]; a malformed review
//! gets 400 and a sentence; a plugin that does not answer within its
//! webhook's deadline (a little less than its `timeoutSeconds`) gets its
//! failure policy, so the API server always hears from wink before it
//! gives up. Every replica serves, leader or not. Each answered review is
//! counted ([`super::metrics`]).
//!
//! Owns the TLS accept loop and the routes; answers come from the plugin
//! manager, translations from [`super::review`].

use super::metrics::{AdmissionMetrics, Handshake};
use super::paced::Paced;
use super::review;
use super::shared;
use crate::listener::{BoundedListener, ListenOptions};
use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::TlsAcceptor;
use wink_runtime::PluginManager;
use wink_runtime::admission::{self, AdmissionRequest, Decision, Unanswered};
use wink_runtime::bindings::types::FailurePolicy;
use wink_runtime::instance::Door;

/// The largest review read: an UPDATE carries the object and its old
/// version, each up to the API server's own request limit (3 MiB).
pub const MAX_BODY: usize = 6 << 20 | 64 << 10;
/// Review bodies held at once, all connections together (the cache view
/// keeps the same bound on its answers), in two halves: one for bodies of
/// at most [`SMALL_BODY`] (nearly every review) and one for larger ones (or
/// those of unknown length, counted as [`MAX_BODY`]), so large bodies held
/// by slow clients cannot starve ordinary reviews. A request waits for its
/// share up to its body deadline, then gets 503.
pub const BODIES_IN_FLIGHT: usize = 64 << 20;
/// The largest body counted among the small ones.
pub const SMALL_BODY: usize = 256 << 10;
/// How long a TLS handshake may take.
const HANDSHAKE: Duration = Duration::from_secs(5);
/// How long a connection may wait between requests: longer than the
/// API server's client keeps an idle connection (Go's 90 s), so the client
/// always closes first and never sends a review on a connection the server
/// is closing (which it would not retry: the call fails, and the failure
/// policy decides).
pub const KEEP_ALIVE: Duration = Duration::from_secs(120);
/// How long a new connection may take to start its first request (Go's
/// `http.Server.ReadHeaderTimeout` is the anchor): a client that connects,
/// finishes the TLS handshake and sends nothing gives its place back.
pub const FIRST_REQUEST: Duration = Duration::from_secs(5);
/// Open connections from one address at most, of the listener's 256: a
/// client holding its share (idle or slow) leaves the rest to the API
/// server's (whose webhook client opens a handful per replica).
pub const MAX_PER_PEER: usize = 64;
/// The longest answer: the plugin's deadline is under the API server's
/// 30 s at most.
const LONGEST_ANSWER: Duration = Duration::from_secs(30);

/// How long wink waits for a plugin whose webhook gives the API server
/// `timeout_seconds`: a margin shorter, so the failure policy is wink's
/// answer, not the API server's timeout.
pub fn deadline(timeout_seconds: u32) -> Duration {
    let timeout = Duration::from_secs(u64::from(timeout_seconds.clamp(1, 30)));
    let margin = (timeout / 5).clamp(Duration::from_millis(200), Duration::from_secs(2));
    timeout - margin
}

/// The CA certificates of `--admission-client-ca` (a PEM file); an error
/// naming the file when it holds none or cannot be read.
pub fn client_roots(path: &std::path::Path) -> anyhow::Result<rustls::RootCertStore> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    let what = || format!("--admission-client-ca {}", path.display());
    let meta = std::fs::metadata(path).with_context(what)?;
    anyhow::ensure!(
        meta.is_file() && meta.len() <= 1 << 20,
        "{}: not a regular file of at most 1 MiB",
        what()
    );
    let pem = std::fs::read(path).with_context(what)?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.with_context(|| format!("{}: not PEM certificates", what()))?;
        roots.add(cert).with_context(what)?;
    }
    anyhow::ensure!(!roots.is_empty(), "{}: holds no certificate", what());
    Ok(roots)
}

/// The TLS configuration: the resolver's certificate, HTTP/1.1; with
/// `client_ca`, only clients presenting a certificate it signed.
pub fn tls_config(
    resolver: Arc<super::certs::Resolver>,
    client_ca: Option<rustls::RootCertStore>,
) -> anyhow::Result<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions");
    let builder = match client_ca {
        Some(roots) => {
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .context("--admission-client-ca")?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Serve admission reviews on `listener` until the task is dropped.
/// `options` are those `listener` was bound with (its deadlines).
pub async fn serve(
    mut listener: BoundedListener,
    options: ListenOptions,
    tls: rustls::ServerConfig,
    manager: Arc<PluginManager>,
    metrics: AdmissionMetrics,
) -> anyhow::Result<()> {
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let manager = Arc::new(Served {
        manager,
        asking: Default::default(),
        small_bodies: Arc::new(tokio::sync::Semaphore::new(BODIES_IN_FLIGHT / 2 / 1024)),
        large_bodies: Arc::new(tokio::sync::Semaphore::new(BODIES_IN_FLIGHT / 2 / 1024)),
        metrics,
    });
    loop {
        let (io, peer, _) = listener.next(false).await;
        let (acceptor, manager, options) = (acceptor.clone(), manager.clone(), options.clone());
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let count = |how| manager.metrics.connection(how, started.elapsed());
            let tls = match tokio::time::timeout(HANDSHAKE, acceptor.accept(io)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    count(Handshake::Failed);
                    return tracing::debug!(%peer, "admission TLS handshake failed: {e}");
                }
                Err(_) => {
                    count(Handshake::TimedOut);
                    return tracing::debug!(%peer, "admission TLS handshake timed out");
                }
            };
            count(Handshake::Done);
            let paced = Paced::new(tls, options.header_timeout, options.body_timeout + LONGEST_ANSWER)
                .first_request_within(FIRST_REQUEST);
            let from = peer.ip().to_canonical();
            if let Err(e) = connection(paced, manager, &options, from).await {
                tracing::debug!(%peer, "admission connection ended: {e}");
            }
        });
    }
}

/// Serve one connection from `peer` (its TCP address: the bound of audit
/// mode's results, see `wink_runtime::admission::audit`).
async fn connection<I>(
    io: I,
    manager: Arc<Served>,
    options: &ListenOptions,
    peer: std::net::IpAddr,
) -> Result<(), hyper::Error>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let body_timeout = options.body_timeout;
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let manager = manager.clone();
        async move { Ok::<_, std::convert::Infallible>(answer(request, manager, body_timeout, peer).await) }
    });
    // No head deadline of hyper's: it would run while a kept-alive
    // connection waits for its next request ([`Paced`] keeps it instead).
    hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .serve_connection(TokioIo::new(io), service)
        .await
}

fn text(status: StatusCode, message: impl Into<String>) -> Response<Full<Bytes>> {
    let mut body = message.into();
    body.push('\n');
    Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body)))
        .expect("a valid response")
}

/// The `timeout` kube-apiserver adds to a webhook's URL (`?timeout=10s`),
/// in whole seconds.
pub fn query_timeout(query: &str) -> Option<u32> {
    let value = query.split('&').find_map(|kv| kv.strip_prefix("timeout="))?;
    value.strip_suffix('s')?.parse().ok()
}

/// The plugin and door of `/admission/<plugin>/<validate|mutate>`.
pub fn route(path: &str) -> Option<(&str, Door)> {
    let rest = path.strip_prefix("/admission/")?;
    let (plugin, door) = rest.split_once('/')?;
    let door = match door {
        "validate" => Door::Validate,
        "mutate" => Door::Mutate,
        _ => return None,
    };
    (!plugin.is_empty() && !plugin.contains('/')).then_some((plugin, door))
}

async fn answer(
    request: Request<Incoming>,
    manager: Arc<Served>,
    body_timeout: Duration,
    peer: std::net::IpAddr,
) -> Response<Full<Bytes>> {
    let started = std::time::Instant::now();
    let path = request.uri().path().to_string();
    let asked_within = request.uri().query().and_then(query_timeout);
    let no_such = || {
        text(
            StatusCode::NOT_FOUND,
            "no such webhook: the paths are /admission/<plugin>/validate, /admission/<plugin>/mutate and /admission/<plugin>.<plugin>.../validate",
        )
    };
    let Some((plugin, door)) = route(&path) else {
        return no_such();
    };
    let several = shared::plugins(plugin);
    if several.as_ref().is_some_and(|p| p.is_empty()) || (several.is_some() && door == Door::Mutate) {
        return no_such();
    }
    if request.method() != Method::POST {
        return text(StatusCode::METHOD_NOT_ALLOWED, "an admission review is POSTed");
    }
    let too_large = || {
        text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("an admission review is at most {MAX_BODY} bytes"),
        )
    };
    // Said before a byte of it is read, when its length says so.
    if hyper::body::Body::size_hint(request.body()).lower() > MAX_BODY as u64 {
        return too_large();
    }
    // Its share of the bodies in flight, in KiB, held until it is answered.
    let declared = hyper::body::Body::size_hint(request.body()).exact();
    let kib = (declared.map_or(MAX_BODY, |n| n as usize).div_ceil(1024)).max(1) as u32;
    let pool = match kib as usize * 1024 <= SMALL_BODY {
        true => &manager.small_bodies,
        false => &manager.large_bodies,
    };
    let share = pool.clone().acquire_many_owned(kib);
    let Ok(Ok(_share)) = tokio::time::timeout(body_timeout, share).await else {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{BODIES_IN_FLIGHT} bytes of reviews are already being read: try again"),
        );
    };
    // The whole body within its deadline, however slowly it is dribbled.
    let body = Limited::new(request.into_body(), MAX_BODY).collect();
    let body = match tokio::time::timeout(body_timeout, body).await {
        Err(_) => {
            return text(
                StatusCode::REQUEST_TIMEOUT,
                "the request body did not arrive in time",
            );
        }
        Ok(Ok(body)) => body.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
        Ok(Err(e)) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("the body could not be read: {e}"),
            );
        }
    };
    let asked = match review::parse(&body) {
        Ok(asked) => asked,
        Err(why) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("malformed AdmissionReview: {why}"),
            );
        }
    };
    let decision = match several {
        None => {
            let webhook = registered(&manager, plugin, door, &asked.request).await;
            let asked_of = (&asked.request, webhook);
            let decision = decide(&manager, plugin, door, asked_of, asked_within, peer).await;
            manager
                .metrics
                .observe(plugin, door, &decision, started.elapsed());
            decision
        }
        Some(plugins) => {
            let request = Arc::new(asked.request);
            let asked = ask_each(&manager, plugins, request, asked_within, peer, started).await;
            shared::merged(asked)
        }
    };
    let json = review::response(&asked.uid, &decision);
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(json)))
        .expect("a valid response")
}

/// A shared webhook's review, asked of each of `plugins` whose own rules
/// take it (the others were never sent it, and are neither asked nor
/// counted), at once: each loaded one on a task of its own, so the guests
/// run on every core (one not loaded, or without the webhook, answers at
/// once, as on a path of its own: its failure policy); each counted in the
/// metrics. Their decisions, in `plugins`' order.
async fn ask_each(
    served: &Arc<Served>,
    plugins: Vec<&str>,
    request: Arc<AdmissionRequest>,
    asked_within: Option<u32>,
    peer: std::net::IpAddr,
    started: std::time::Instant,
) -> Vec<(String, Decision)> {
    let door = Door::Validate;
    let ask = |plugin: String, webhook: Registered| {
        let (served, request) = (served.clone(), request.clone());
        async move {
            let asked_of = (&*request, webhook);
            let decision = decide(&served, &plugin, door, asked_of, asked_within, peer).await;
            served
                .metrics
                .observe(&plugin, door, &decision, started.elapsed());
            (plugin, decision)
        }
    };
    // Each asked plugin's place in the answer, in `plugins`' order.
    let mut out: Vec<Option<(String, Decision)>> = Vec::with_capacity(plugins.len());
    let (mut first, mut others) = (None, Vec::new());
    for plugin in plugins {
        let webhook = registered(served, plugin, door, &request).await;
        let plugin = plugin.to_string();
        match webhook {
            Some((Err(_), ..)) => continue,
            None => out.push(Some(ask(plugin, None).await)),
            // The first one is asked in this task, once the others run.
            Some(_) if first.is_none() => {
                first = Some((out.len(), plugin, webhook));
                out.push(None);
            }
            Some(_) => {
                let task = tokio::spawn(ask(plugin.clone(), webhook));
                others.push((out.len(), plugin, task));
                out.push(None);
            }
        }
    }
    // Dropped unanswered (the client went away): the others stop too.
    let mut others = Asking(others);
    if let Some((i, plugin, webhook)) = first {
        out[i] = Some(ask(plugin, webhook).await);
    }
    for (i, plugin, task) in &mut others.0 {
        out[*i] = Some(task.await.unwrap_or_else(|e| {
            // Its task ended without an answer: refused, as under Fail.
            let why = Unanswered::Failed(plugin.clone(), format!("its task ended: {e}"));
            (plugin.clone(), admission::failed_under(None, &why))
        }));
    }
    out.into_iter().flatten().collect()
}

/// A shared review's plugins asked on tasks of their own (each with its
/// place in the answer), aborted when dropped: no call outlives the
/// review it answers.
struct Asking(Vec<(usize, String, Answering)>);

/// A plugin's answer to a shared review, on its task.
type Answering = tokio::task::JoinHandle<(String, Decision)>;

impl Drop for Asking {
    fn drop(&mut self) {
        for (_, _, task) in &self.0 {
            task.abort();
        }
    }
}

/// How many requests one plugin may have under way (each waits for an
/// instance of its pool, up to its deadline): past it, a request gets the
/// failure policy at once rather than a growing queue behind a plugin that
/// does not answer.
pub const MAX_ASKING: usize = 32;

/// What the server answers from: the plugins, and the requests each one
/// has under way.
struct Served {
    manager: Arc<PluginManager>,
    asking: std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Semaphore>>>,
    /// KiB of small and of large review bodies that may be held (halves
    /// of [`BODIES_IN_FLIGHT`]).
    small_bodies: Arc<tokio::sync::Semaphore>,
    large_bodies: Arc<tokio::sync::Semaphore>,
    metrics: AdmissionMetrics,
}

impl Served {
    /// A place among `plugin`'s requests under way, if one is free.
    fn place(&self, plugin: &str) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let mut asking = self.asking.lock().unwrap();
        // Plugins come and go: forget those with nothing under way.
        if asking.len() > 1024 {
            asking.retain(|_, s| s.available_permits() < MAX_ASKING);
        }
        if let Some(places) = asking.get(plugin) {
            return places.clone().try_acquire_owned().ok();
        }
        let places = Arc::new(tokio::sync::Semaphore::new(MAX_ASKING));
        asking.insert(plugin.to_string(), places.clone());
        places.try_acquire_owned().ok()
    }
}

/// What a plugin's webhook says of a review: whether the API server would
/// have sent it (if not, why), the failure policy in force and the
/// timeout; none when the plugin is not loaded or has no such webhook.
type Registered = Option<(Result<(), String>, FailurePolicy, u32)>;

/// What `plugin`'s webhook through `door` says of `request` (read once per
/// plugin and review).
async fn registered(served: &Served, plugin: &str, door: Door, request: &AdmissionRequest) -> Registered {
    served
        .manager
        .with_webhook(plugin, door, |w, policy| {
            let sent = super::scope::sent(w, request.fields());
            (sent, policy, w.timeout_seconds)
        })
        .await
}

/// The plugin's decision on a request (and what its webhook says of it,
/// [`registered`]), or its failure policy's when it has none in time.
/// `asked_within`: the timeout the API server sent with the request, when
/// it did (it may be shorter than the plugin's webhook says: an operator's
/// edit of the configuration).
async fn decide(
    served: &Served,
    plugin: &str,
    door: Door,
    (request, webhook): (&AdmissionRequest, Registered),
    asked_within: Option<u32>,
    peer: std::net::IpAddr,
) -> Decision {
    if review::is_lease(request.fields()) {
        return Decision::allow();
    }
    let manager = &served.manager;
    // A review the API server would not have sent this webhook (a client
    // other than the API server): answered without the plugin.
    if let Some((Err(why), ..)) = &webhook {
        tracing::debug!(plugin, "review answered without the plugin: {why}");
        return Decision::allow();
    }
    let policy = webhook.as_ref().map(|(_, policy, _)| *policy);
    if let Some(scope) = manager.scope_of(plugin).await
        && let Err(why) = super::scope::request_in_scope(&scope, request)
    {
        tracing::debug!(plugin, "review answered without the plugin: {why}");
        return Decision::allow();
    }
    let webhook_name = match door {
        Door::Validate => "validate",
        Door::Mutate => "mutate",
    };
    let now = std::time::SystemTime::now();
    if let Some(e) =
        crate::exceptions::review::excepted(manager.exceptions(), plugin, webhook_name, request, now)
    {
        tracing::debug!(plugin, "review answered without the plugin: {}", e.message());
        return crate::exceptions::review::allowed(&e);
    }
    let timeout = webhook.as_ref().map_or(10, |(_, _, timeout)| *timeout);
    let within = deadline(asked_within.map_or(timeout, |t| t.min(timeout)));
    let Some(place) = served.place(plugin) else {
        let why = Unanswered::Overloaded(plugin.to_string(), MAX_ASKING);
        return admission::failed_under(policy, &why);
    };
    // Asked in this task: at the deadline the call is dropped (the runtime
    // then replaces the instance it was running on, see
    // `PluginInstance::admit`), so no request outlives its answer.
    let asked = async {
        let decision = manager.admit(plugin, door, request, Some(peer)).await;
        drop(place);
        decision
    };
    match tokio::time::timeout(within, asked).await {
        Ok(decision) => decision,
        Err(_) => {
            tracing::warn!(
                plugin,
                "admission request not answered within {within:?}: failure policy applied"
            );
            let why = Unanswered::Deadline(plugin.to_string(), within);
            admission::failed_under(policy, &why)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_name_a_plugin_and_a_door() {
        assert!(matches!(
            route("/admission/p/validate"),
            Some(("p", Door::Validate))
        ));
        assert!(matches!(route("/admission/p/mutate"), Some(("p", Door::Mutate))));
        for bad in [
            "/admission/p",
            "/admission//validate",
            "/admission/p/x",
            "/other/p/validate",
            "/admission/a/b/validate",
        ] {
            assert!(route(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_api_servers_timeout_is_read_from_the_query() {
        assert_eq!(query_timeout("timeout=10s"), Some(10));
        assert_eq!(query_timeout("a=b&timeout=3s"), Some(3));
        assert_eq!(query_timeout("timeout=1m"), None);
        assert_eq!(query_timeout("x=1"), None);
    }

    #[test]
    fn the_deadline_leaves_a_margin_before_the_api_servers_timeout() {
        assert_eq!(deadline(10), Duration::from_secs(8));
        assert_eq!(deadline(1), Duration::from_millis(800));
        assert_eq!(deadline(30), Duration::from_secs(28));
        assert_eq!(deadline(0), Duration::from_millis(800), "clamped to 1 s");
    }
}
