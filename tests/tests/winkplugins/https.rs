//! End-to-end: a WinkPlugin whose component is downloaded over HTTPS from
//! a server on loopback with a certificate of a test CA, which wink trusts
//! through `SSL_CERT_FILE`: the component is downloaded once, checked
//! against its sha256 and loaded; a sha256 the bytes do not have is
//! `Pulled=False` with `DigestMismatch` and nothing is loaded; a server
//! whose certificate another CA signed is refused.

use super::support::{apply, condition, create_pod, run_args, wait_condition, winkplugin};
use crate::cache_support::{Setup, WAIT, wait_synced};
use crate::common::{Wink, plugin, scratch};
use crate::kubectl_support::{env, have_kubectl};
use crate::registry_support::sha256;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wink_sim::SimConfig;
use wink_sim::webhook_testing::WebhookCerts;

/// An HTTPS server on 127.0.0.1 serving files by path, with a certificate
/// for 127.0.0.1; it counts the GETs of each path. Stopped when dropped.
struct FileServer {
    port: u16,
    hits: Arc<Mutex<BTreeMap<String, u64>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FileServer {
    async fn start(certs: &WebhookCerts, files: BTreeMap<String, Vec<u8>>) -> FileServer {
        let chain = vec![CertificateDer::from_pem_slice(certs.cert_pem.as_bytes()).unwrap()];
        let key = PrivateKeyDer::from_pem_slice(certs.key_pem.as_bytes()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
        let files = Arc::new(files);
        let task = {
            let hits = hits.clone();
            tokio::spawn(async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    let (acceptor, files, hits) = (acceptor.clone(), files.clone(), hits.clone());
                    tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let service = hyper::service::service_fn(move |req: hyper::Request<_>| {
                            let path = req.uri().path().to_string();
                            *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
                            let response = match files.get(&path) {
                                Some(bytes) => hyper::Response::new(Full::new(Bytes::from(bytes.clone()))),
                                None => hyper::Response::builder()
                                    .status(404)
                                    .body(Full::new(Bytes::new()))
                                    .unwrap(),
                            };
                            async move { Ok::<_, std::convert::Infallible>(response) }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tls), service)
                            .await;
                    });
                }
            })
        };
        FileServer { port, hits, task }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    fn hits(&self, path: &str) -> u64 {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `wink run` on `s` with the WinkPlugin controller, trusting the CAs of
/// the PEM file `ca` for https sources.
fn run_trusting(s: &Setup, reg: &str, store: &Path, ca: &Path) -> Wink {
    let mut args: Vec<String> = [
        "run",
        "--plugins",
        s.plugins.to_str().unwrap(),
        "--kubeconfig",
        s.kubeconfig.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    args.extend(run_args(reg, store));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Wink::spawn_with_env(Path::new("."), &args, &[("SSL_CERT_FILE", ca.as_os_str())])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_source_is_downloaded_from_a_server_of_a_trusted_ca_checked_and_loaded() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_https", SimConfig::default()).await;
    let s = Setup::new("winkplugins_https", &env.sim);
    let dir = scratch("winkplugins_https_files");
    let certs = WebhookCerts::generate(&[]).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &certs.ca_pem).unwrap();
    let logger = std::fs::read(plugin("pod_logger")).unwrap();
    let lister = std::fs::read(plugin("deployment_lister")).unwrap();
    let files = BTreeMap::from([
        ("/pod_logger.wasm".to_string(), logger.clone()),
        ("/deployment_lister.wasm".to_string(), lister),
    ]);
    let server = FileServer::start(&certs, files.clone()).await;
    // The same files behind a certificate of a CA wink does not trust.
    let stranger = FileServer::start(&WebhookCerts::generate(&[]).unwrap(), files).await;
    // No OCI source here: no registry is spoken to.
    let wink = run_trusting(&s, "127.0.0.1:1", &dir.join("store"), &ca);
    wink.wait_for_line("watching WinkPlugins", WAIT);

    // Downloaded, checked and loaded: Ready, its digest the sha256.
    let layer = sha256(&logger);
    let url = server.url("/pod_logger.wasm");
    let spec = json!({"source": {"https": url, "sha256": layer}, "config": {"tag": "h"}});
    apply(&env, &winkplugin("from-https", spec)).await;
    let object = wait_condition(&env, "from-https", "Ready", |c| c["status"] == "True").await;
    assert_eq!(object["status"]["digest"], layer.as_str(), "{object:#}");
    assert_eq!(object["status"]["source"], url.as_str());
    assert_eq!(object["status"]["language"], "rust");
    wink.wait_for_line(
        &format!("WinkPlugin fetched winkplugin=from-https url={url} digest={layer} from=https"),
        WAIT,
    );
    wait_synced(&wink, "from-https");
    create_pod(&env.sim, "p1").await;
    wink.wait_for_line("[from-https] OnAdd:h p1", WAIT);
    assert_eq!(server.hits("/pod_logger.wasm"), 1, "downloaded once");

    // Bytes that are not the sha256 named: refused, nothing loaded.
    let wrong = sha256(b"not the component served");
    let url = server.url("/deployment_lister.wasm");
    let spec = json!({"source": {"https": url, "sha256": wrong}});
    apply(&env, &winkplugin("wrong-sha", spec)).await;
    let object = wait_condition(&env, "wrong-sha", "Pulled", |c| c["status"] == "False").await;
    let pulled = condition(&object, "Pulled").unwrap();
    assert_eq!(pulled["reason"], "DigestMismatch", "{object:#}");
    let message = pulled["message"].as_str().unwrap();
    assert!(
        message.contains("digest mismatch") && message.contains(&wrong),
        "{pulled}"
    );
    let ready = condition(&object, "Ready").unwrap();
    assert_eq!(
        (&ready["status"], &ready["reason"]),
        (&json!("False"), &json!("DigestMismatch"))
    );
    assert!(condition(&object, "Loaded").is_none(), "{object:#}");
    assert!(object["status"]["digest"].is_null(), "{object:#}");
    assert!(server.hits("/deployment_lister.wasm") >= 1, "it was downloaded");
    assert!(
        !dir.join("store/blobs/sha256")
            .join(wrong.trim_start_matches("sha256:"))
            .exists(),
        "nothing stored under the digest"
    );

    // A server whose certificate is not of a trusted CA: refused.
    let url = stranger.url("/pod_logger.wasm");
    let other = sha256(&[logger.as_slice(), b"\0"].concat());
    let spec = json!({"source": {"https": url, "sha256": other}});
    apply(&env, &winkplugin("untrusted", spec)).await;
    let object = wait_condition(&env, "untrusted", "Pulled", |c| c["status"] == "False").await;
    let pulled = condition(&object, "Pulled").unwrap();
    assert_eq!(pulled["reason"], "CertificateRejected", "{object:#}");
    assert!(
        pulled["message"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("certificate"),
        "{pulled}"
    );
    assert_eq!(
        stranger.hits("/pod_logger.wasm"),
        0,
        "no request past the handshake"
    );

    // Nothing of the refused ones runs; the good one runs on.
    create_pod(&env.sim, "p2").await;
    wink.wait_for_line("[from-https] OnAdd:h p2", WAIT);
    tokio::time::sleep(Duration::from_millis(500)).await;
    for name in ["wrong-sha", "untrusted"] {
        // The manager names a plugin it has as ` plugin=NAME`.
        let managed = format!(" plugin={name}");
        assert!(
            !wink.lines().iter().any(|l| l.contains(&managed)),
            "{name} is not loaded"
        );
        assert!(wink.plugin_lines(name).is_empty(), "{name} took no event");
    }
}
