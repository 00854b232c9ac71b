//! What the admission suites share: wink with its webhook server on the
//! simulated API server, HTTPS requests trusting its CA, AdmissionReviews,
//! and the webhook configurations it keeps.

use crate::cache_support::*;
use crate::common::Wink;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wink_sim::Sim;

/// wink on `port`, its webhooks reached at `https://127.0.0.1:port`.
pub(crate) fn run(s: &Setup, port: u16, extra: &[&str]) -> Wink {
    let addr = format!("127.0.0.1:{port}");
    let url = format!("https://{addr}");
    let mut args = vec!["--admission-addr", &addr, "--admission-webhook-url", &url];
    args.extend_from_slice(extra);
    let wink = s.run(&args);
    wink.wait_for_line("admission webhook server listening", WAIT);
    wink
}

/// The CA wink keeps in the Secret `wink-admission-ca` of `default`.
pub(crate) async fn ca_pem(sim: &Sim) -> String {
    let secrets: Api<Secret> = Api::namespaced(sim.client(), "default");
    // The leader writes it as it starts serving: wait for it under load.
    let deadline = Instant::now() + WAIT;
    let secret = loop {
        match secrets
            .get_opt("wink-admission-ca")
            .await
            .expect("a read of Secrets")
        {
            Some(secret) => break secret,
            None if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            None => panic!("no CA Secret wink-admission-ca within {WAIT:?}"),
        }
    };
    let data = secret.data.expect("data");
    assert!(data.contains_key("ca.key"), "the CA's key is kept beside it");
    String::from_utf8(data["ca.crt"].0.clone()).unwrap()
}

/// A TLS connection to the webhook server on `port`, trusting `ca` (PEM).
pub(crate) async fn connect(port: u16, ca: &str) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    handshake(tcp, ca).await
}

/// A TLS handshake over `tcp` to the webhook server, trusting `ca` (PEM).
pub(crate) async fn handshake(
    tcp: tokio::net::TcpStream,
    ca: &str,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    handshake_result(tcp, ca)
        .await
        .expect("a TLS handshake trusting the CA")
}

/// [`handshake`], its failure returned (a connection closed by the server).
pub(crate) async fn handshake_result(
    tcp: tokio::net::TcpStream,
    ca: &str,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_certs(&mut ca.as_bytes()) {
        roots.add(cert).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    connector.connect(name, tcp).await
}

/// The (status, body) of an HTTP/1.1 answer.
pub(crate) fn status_and_body(answer: &[u8]) -> (u16, String) {
    let answer = String::from_utf8_lossy(answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, body.to_string())
}

/// POST `body` to `path` over HTTPS, trusting `ca`: (status, body).
pub(crate) async fn post(port: u16, ca: &str, path: &str, body: &str) -> (u16, String) {
    let mut tls = connect(port, ca).await;
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    status_and_body(&answer)
}

/// Send only the head of a POST whose body would be `length` bytes:
/// (status, body) of the answer.
pub(crate) async fn post_head(port: u16, ca: &str, path: &str, length: usize) -> (u16, String) {
    let mut tls = connect(port, ca).await;
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n"
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut answer)).await;
    status_and_body(&answer)
}

pub(crate) fn rustls_certs(pem: &mut &[u8]) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .map(Result::unwrap)
        .collect()
}

pub(crate) fn pod(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default", "labels": labels},
           "spec": {"containers": [{"name": "c", "image": "i"}]}})
}

pub(crate) fn review(uid: &str, object: Value) -> String {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": object["metadata"]["name"], "namespace": "default", "operation": "CREATE",
        "userInfo": {"username": "tester", "groups": ["system:authenticated"]},
        "object": object, "oldObject": null, "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
    }})
    .to_string()
}

/// The AdmissionReview answered to `review` at `path`.
pub(crate) async fn ask(port: u16, ca: &str, path: &str, review: &str) -> Value {
    let (status, body) = post(port, ca, path, review).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(v["kind"], "AdmissionReview");
    v["response"].clone()
}

pub(crate) fn configuration_api(sim: &Sim, kind: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind));
    Api::all_with(sim.client(), &ar)
}

/// The configuration `wink` of `kind` once it satisfies `ok` (`wink`'s
/// lines shown when it never does).
pub(crate) async fn configuration(
    sim: &Sim,
    wink: &Wink,
    kind: &str,
    ok: impl Fn(Option<&Value>) -> bool,
) -> Option<Value> {
    let api = configuration_api(sim, kind);
    let deadline = Instant::now() + WAIT;
    loop {
        let got = api
            .get_opt("wink")
            .await
            .unwrap()
            .map(|o| serde_json::to_value(o).unwrap());
        if ok(got.as_ref()) {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{kind} wink never as wanted: {got:?}\nwink said:\n{}",
            wink.lines().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The URL in the validating configuration, once there is one.
pub(crate) async fn configured_url(sim: &Sim, wink: &Wink, want: &str) {
    let want = want.to_string();
    configuration(sim, wink, "ValidatingWebhookConfiguration", |c| {
        c.is_some_and(|c| {
            c["webhooks"][0]["clientConfig"]["url"]
                .as_str()
                .is_some_and(|u| u.starts_with(&want))
        })
    })
    .await;
}

/// The certificate the webhook server on `port` presents.
pub(crate) async fn served_certificate(port: u16, ca: &str) -> Vec<u8> {
    let tls = connect(port, ca).await;
    tls.get_ref().1.peer_certificates().expect("a certificate")[0].to_vec()
}
