//! A registry that misbehaves (401, 429, 500, hangs) or wants Basic
//! credentials, served by a small fake on loopback: each failure becomes
//! an error that says what happened, within the deadline, and the
//! credentials of a dockerconfigjson reach the registry.

use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use wink_oci::auth::Auths;
use wink_oci::fetch::parse_reference;
use wink_oci::registry::{Registry, RegistryOptions};

#[derive(Clone, Copy)]
enum Fake {
    /// Every request answered with this status and an OCI error body.
    Status(u16, &'static str),
    /// Connections accepted, never answered.
    Hang,
    /// Basic credentials `u:p` wanted; with them, a manifest digest.
    Basic,
    /// A manifest of 5 MiB, its length not announced.
    HugeManifest,
}

const DIGEST: &str = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

async fn serve(fake: Fake) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).to_lowercase();
                let answer = match fake {
                    Fake::Hang => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        return;
                    }
                    Fake::Status(code, error) => {
                        let body = format!(r#"{{"errors":[{{"code":"{error}","message":"fake"}}]}}"#);
                        format!(
                            "HTTP/1.1 {code} Fake\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    }
                    // base64("u:p")
                    Fake::Basic if head.contains("authorization: basic dtpw") => format!(
                        "HTTP/1.1 200 OK\r\nDocker-Content-Digest: {DIGEST}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    ),
                    Fake::HugeManifest if head.contains("/manifests/") => {
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n").await;
                        let filler = vec![b' '; 64 << 10];
                        for _ in 0..80 {
                            if s.write_all(&filler).await.is_err() {
                                return;
                            }
                        }
                        return;
                    }
                    Fake::HugeManifest => "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
                    Fake::Basic => "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"fake\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
                };
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

fn registry(port: u16, auths: Auths) -> Registry {
    Registry::new(RegistryOptions {
        plain_http: vec![format!("127.0.0.1:{port}")],
        auths,
        max_component_bytes: 1 << 20,
        timeout: Duration::from_secs(2),
    })
}

async fn resolve_error(fake: Fake) -> String {
    let port = serve(fake).await;
    let r = parse_reference(&format!("127.0.0.1:{port}/team/plugin:v1")).unwrap();
    let e = registry(port, Auths::default()).resolve(&r).await.unwrap_err();
    format!("{e:#}")
}

#[tokio::test]
async fn each_failure_says_what_happened() {
    let e = resolve_error(Fake::Status(401, "UNAUTHORIZED")).await;
    assert!(
        e.contains("refused access (401/403)") && e.contains("--registry-auth"),
        "{e}"
    );
    let e = resolve_error(Fake::Status(429, "TOOMANYREQUESTS")).await;
    assert!(e.contains("rate limiting (429)"), "{e}");
    let e = resolve_error(Fake::Status(500, "UNKNOWN")).await;
    assert!(e.contains("failed (500)"), "{e}");
    let e = resolve_error(Fake::Status(404, "MANIFEST_UNKNOWN")).await;
    assert!(e.contains("not found") && e.contains("(404)"), "{e}");
}

#[tokio::test]
async fn a_registry_that_hangs_is_given_up_at_the_deadline() {
    let started = Instant::now();
    let e = resolve_error(Fake::Hang).await;
    let took = started.elapsed();
    assert!(e.contains("did not") && e.contains("hanging"), "{e}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn dockerconfigjson_credentials_reach_the_registry() {
    let e = resolve_error(Fake::Basic).await;
    assert!(e.contains("refused access"), "without credentials: {e}");
    let port = serve(Fake::Basic).await;
    let host = format!("127.0.0.1:{port}");
    let auths = Auths::parse(&format!(r#"{{"auths": {{"{host}": {{"auth": "dTpw"}}}}}}"#)).unwrap();
    let r = parse_reference(&format!("{host}/team/plugin:v1")).unwrap();
    let registry = registry(port, auths);
    let digest = registry.resolve(&r).await.unwrap();
    assert_eq!(digest.to_string(), DIGEST);
    // The manifest's GET carries them too: answered (an empty body,
    // which is not that digest), not refused.
    let e = format!("{:#}", registry.manifest(&r, digest).await.unwrap_err());
    assert!(e.contains("digest mismatch"), "{e}");
}

#[tokio::test]
async fn a_manifest_over_the_cap_is_not_read_to_its_end() {
    let port = serve(Fake::HugeManifest).await;
    let r = parse_reference(&format!("127.0.0.1:{port}/team/plugin@{DIGEST}")).unwrap();
    let digest = wink_oci::Digest::parse(DIGEST).unwrap();
    let e = registry(port, Auths::default())
        .manifest(&r, digest)
        .await
        .unwrap_err();
    let e = format!("{e:#}");
    assert!(e.contains("over the cap of 4194304"), "{e}");
}
