use super::*;
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, WatchEvent, WatchParams};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

#[test]
fn only_watch_requests_take_the_watch_stack() {
    assert!(is_watch(&get("/api/v1/pods?watch=true&resourceVersion=5")));
    assert!(is_watch(&get("/api/v1/pods?&watch=1")));
    assert!(is_watch(&get(
        "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    )));
    assert!(!is_watch(&get("/api/v1/pods?limit=500")));
    assert!(!is_watch(&get("/api/v1/pods?watch=false")));
    assert!(!is_watch(&get("/api/v1/pods?labelSelector=watch%3Dtrue")));
    assert!(!is_watch(&get("/api/v1/namespaces/default/pods/watch")));
}

const CA: &[u8] = include_bytes!("testdata/ca.pem");
const CERT: &[u8] = include_bytes!("testdata/server.pem");
const KEY: &[u8] = include_bytes!("testdata/server.key");

/// A TLS server (a certificate for 127.0.0.1 from a test CA) answering one
/// watch with `n` ConfigMap events, one a millisecond; returns its port and
/// the request it got.
async fn tls_watch_server(n: usize) -> (u16, tokio::task::JoinHandle<String>) {
    let certs = vec![CertificateDer::from_pem_slice(CERT).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(KEY).unwrap();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let mut tls = BufReader::new(acceptor.accept(tcp).await.unwrap());
        let mut request = String::new();
        loop {
            let mut line = String::new();
            tls.read_line(&mut line).await.unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            request.push_str(&line);
        }
        let tls = tls.get_mut();
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        tls.write_all(head.as_bytes()).await.unwrap();
        for i in 0..n {
            let event = json!({
                "type": "ADDED",
                "object": {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm-{i}"), "namespace": "default",
                        "resourceVersion": (i + 1).to_string()}},
            });
            let line = format!("{event}\n");
            tls.write_all(format!("{:x}\r\n{line}\r\n", line.len()).as_bytes())
                .await
                .unwrap();
            tls.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tls.write_all(b"0\r\n\r\n").await.unwrap();
        tls.flush().await.unwrap();
        request
    });
    (port, task)
}

/// A watch over TLS (as against every real cluster) goes through the
/// windowed connector under rustls, and a steady stream read in windows
/// arrives whole and in order.
#[tokio::test]
async fn a_watch_over_tls_arrives_whole_and_in_order() {
    let (port, server) = tls_watch_server(300).await;
    let mut config = kube::Config::new(format!("https://127.0.0.1:{port}").parse().unwrap());
    config.root_cert = Some(vec![CertificateDer::from_pem_slice(CA).unwrap().to_vec()]);
    let api: Api<ConfigMap> =
        Api::namespaced(client(config, Some(Duration::from_millis(2))).unwrap(), "default");
    let events: Vec<_> = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let names: Vec<String> = events
        .iter()
        .map(|e| match e {
            WatchEvent::Added(cm) => cm.metadata.name.clone().unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    let expected: Vec<String> = (0..300).map(|i| format!("cm-{i}")).collect();
    assert_eq!(names, expected);
    let request = server.await.unwrap();
    assert!(
        request.starts_with("GET /api/v1/namespaces/default/configmaps?") && request.contains("watch=true"),
        "{request}"
    );
}
