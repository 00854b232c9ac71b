//! An HTTPS admission webhook server for tests (the e2e suites and anyone
//! checking a webhook against the simulator): [`WebhookCerts`] makes a CA
//! and a serving certificate for 127.0.0.1, `localhost` and any names given
//! (e.g. `NAME.NAMESPACE.svc` for a service reference); [`WebhookServer`]
//! serves a handler over TLS with that certificate on an ephemeral port.
//!
//! Owns: test certificates and the test server. Must not touch: the API
//! server's admission (the server is a client of nothing).

use anyhow::Context;
use axum::body::Body;
use base64::Engine;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A CA and a serving certificate signed by it.
#[derive(Clone)]
pub struct WebhookCerts {
    /// The CA certificate (PEM): what a `caBundle` holds.
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl WebhookCerts {
    /// A new CA and a certificate for 127.0.0.1, `localhost` and `names`.
    pub fn generate(names: &[&str]) -> anyhow::Result<WebhookCerts> {
        let ca_key = rcgen::KeyPair::generate()?;
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "wink-sim test CA");
        let ca_cert = ca.self_signed(&ca_key)?;
        let key = rcgen::KeyPair::generate()?;
        let mut sans: Vec<String> = vec!["127.0.0.1".into(), "localhost".into()];
        sans.extend(names.iter().map(|n| n.to_string()));
        let params = rcgen::CertificateParams::new(sans)?;
        let cert = params.signed_by(&key, &ca_cert, &ca_key)?;
        Ok(WebhookCerts {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// The CA as a webhook's `clientConfig.caBundle` (base64 of the PEM).
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }
}

/// Answers one AdmissionReview: called with the request's path (and query)
/// and the review; returns the review to send back.
pub type Handler = Arc<dyn Fn(String, Value) -> Pin<Box<dyn Future<Output = Value> + Send>> + Send + Sync>;

/// A running HTTPS webhook server; stopped when dropped.
pub struct WebhookServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl WebhookServer {
    /// Serve `handler` with `certs` on 127.0.0.1 (ephemeral port).
    pub async fn start(certs: &WebhookCerts, handler: Handler) -> anyhow::Result<WebhookServer> {
        let chain = vec![CertificateDer::from_pem_slice(certs.cert_pem.as_bytes()).context("certificate")?];
        let key = PrivateKeyDer::from_pem_slice(certs.key_pem.as_bytes()).context("key")?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, handler) = (acceptor.clone(), handler.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service =
                        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                            let handler = handler.clone();
                            async move {
                                let path = req
                                    .uri()
                                    .path_and_query()
                                    .map(|p| p.to_string())
                                    .unwrap_or_default();
                                let body = axum::body::to_bytes(Body::new(req.into_body()), 16 << 20)
                                    .await
                                    .unwrap_or_default();
                                let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                                let answer = handler(path, review).await;
                                Ok::<_, std::convert::Infallible>(
                                    hyper::Response::builder()
                                        .header("content-type", "application/json")
                                        .body(Body::from(answer.to_string()))
                                        .expect("response"),
                                )
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Ok(WebhookServer { addr, task })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:PORT{path}`
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The answer to `review`: allowed or not, with an optional status, JSONPatch and warnings.
pub fn answer(
    review: &Value,
    allowed: bool,
    status: Option<Value>,
    patch: Option<Value>,
    warnings: &[&str],
) -> Value {
    let mut r = serde_json::json!({
        "uid": review.pointer("/request/uid").cloned().unwrap_or_default(),
        "allowed": allowed,
    });
    if let Some(s) = status {
        r["status"] = s;
    }
    if let Some(p) = patch {
        r["patchType"] = "JSONPatch".into();
        r["patch"] = base64::engine::general_purpose::STANDARD
            .encode(p.to_string())
            .into();
    }
    if !warnings.is_empty() {
        r["warnings"] = warnings.iter().map(|w| Value::from(*w)).collect();
    }
    serde_json::json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r})
}
