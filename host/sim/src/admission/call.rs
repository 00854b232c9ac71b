//! One HTTPS call to an admission webhook: the POST of an AdmissionReview
//! to its URL (with the `?timeout=Ns` the API server adds), the server's
//! certificate verified against the webhook's `caBundle` alone and against
//! the host name, the whole call bounded by the webhook's timeout. Failures
//! are worded as Go's HTTP client words them (`Post "URL": dial tcp ...:
//! connect: connection refused`, `context deadline exceeded`,
//! `tls: failed to verify certificate: x509: ...`).
//!
//! Owns: the transport. Must not touch: what is sent or what the answer means
//! (`review`), which webhooks are called (`matching`).

use axum::body::Body;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

/// Where a call goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL as error messages show it, query included.
    pub url: String,
    /// The name the certificate must be valid for (the URL's host).
    pub host: String,
    /// What to dial: `host:port`, or the address a service is routed to;
    /// None: a service nobody routed (an unknown host).
    pub dial: Option<String>,
    /// Path and query of the request line.
    pub path_and_query: String,
    /// PEM certificates: the only roots trusted.
    pub ca: Vec<u8>,
}

/// The largest answer read from a webhook.
const MAX_ANSWER: usize = 3 * 1024 * 1024;

/// POST `body`; the answer's body, or why there is none (Go's wording).
pub async fn post(t: &Target, body: Vec<u8>, timeout: Duration) -> Result<(u16, Vec<u8>), String> {
    match tokio::time::timeout(timeout, exchange(t, body)).await {
        Ok(r) => r.map_err(|e| format!("Post {:?}: {e}", t.url)),
        Err(_) => Err(format!("Post {:?}: context deadline exceeded", t.url)),
    }
}

fn tls_config(ca: &[u8]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca).flatten() {
        let _ = roots.add(cert);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

fn tls_error(e: &std::io::Error, host: &str) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(c)) => {
            let why = match c {
                rustls::CertificateError::UnknownIssuer | rustls::CertificateError::BadSignature => {
                    "x509: certificate signed by unknown authority".to_string()
                }
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. } => {
                    format!("x509: certificate is not valid for {host}")
                }
                rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. } => {
                    "x509: certificate has expired or is not yet valid".to_string()
                }
                other => format!("x509: {other:?}"),
            };
            format!("tls: failed to verify certificate: {why}")
        }
        Some(other) => format!("remote error: tls: {other}"),
        None => e.to_string(),
    }
}

async fn exchange(t: &Target, body: Vec<u8>) -> Result<(u16, Vec<u8>), String> {
    let Some(dial) = &t.dial else {
        return Err(format!("dial tcp: lookup {}: no such host", t.host));
    };
    let tcp = TcpStream::connect(dial.as_str())
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::ConnectionRefused => format!("dial tcp {dial}: connect: connection refused"),
            _ => format!("dial tcp {dial}: {e}"),
        })?;
    let name = ServerName::try_from(t.host.clone()).map_err(|e| format!("invalid host {:?}: {e}", t.host))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls_config(&t.ca)));
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| tls_error(&e, &t.host))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = hyper::Request::post(t.path_and_query.as_str())
        .header(hyper::header::HOST, t.host.as_str())
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::ACCEPT, "application/json, */*")
        .header(hyper::header::USER_AGENT, "kube-apiserver-admission")
        .body(Body::from(body))
        .map_err(|e| e.to_string())?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| match e.is_incomplete_message() {
            true => "EOF".to_string(),
            false => e.to_string(),
        })?;
    let code = resp.status().as_u16();
    let bytes = axum::body::to_bytes(Body::new(resp.into_body()), MAX_ANSWER)
        .await
        .map_err(|e| e.to_string())?;
    Ok((code, bytes.to_vec()))
}
