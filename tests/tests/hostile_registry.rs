//! End-to-end: `wink pull` against registries that answer without end (a
//! manifest in place of a digest, a token, an error's body, a blob past
//! the size its manifest gives), each offering 1 GiB made as it is read:
//! the pull fails naming the cap, and the peak resident memory of the
//! `wink` process, as the kernel counts it (`wait4`'s `ru_maxrss`, of a
//! child forked from a small python3 process, so that the test binary's
//! own memory is not counted), stays far below what was offered.

use crate::common::{self, scratch};
use crate::registry_support::scripted::{Answer, Body, HUGE, Scripted};
use crate::registry_support::sha256;
use std::io::Read;
use std::process::{Command, Stdio};

/// The most resident memory a refused pull may reach: a debug `wink`'s
/// own footprint (37 MiB here) and the caps' buffers, against the
/// gigabyte offered (read whole, it was 3 GiB).
const MAX_RSS: u64 = 192 << 20;

/// Runs the command its arguments give in a child of its own and says, as
/// the last line of its stderr, that child's peak resident memory in KiB.
/// The child is forked from this small process: a process's peak is kept
/// across `exec`, so a child forked straight from the test binary (some
/// hundred MiB while every suite runs) would report the test's memory.
const PEAK: &str = r#"
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\npeak-rss-kib {usage.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(status))
"#;

/// `wink pull REF` from `reg`: (whether it succeeded, its stderr, its
/// peak resident memory in bytes).
fn pull_measured(test: &str, reg: &Scripted, reference: &str) -> (bool, String, u64) {
    let store = scratch(test).join("store");
    let out = Command::new("python3")
        .args(["-c", PEAK])
        .arg(common::wink_bin())
        .args(["pull", reference, "--plain-http", &reg.host(), "--oci-store"])
        .arg(&store)
        .args(["--registry-timeout-secs", "120"])
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run wink under python3");
    let mut child = out;
    // Its first 64 KiB (an error quoting what it read is long) and its
    // last line (the peak), the rest drained.
    let mut pipe = child.stderr.take().unwrap();
    let mut kept = Vec::new();
    (&mut pipe).take(64 << 10).read_to_end(&mut kept).unwrap();
    let mut rest = Vec::new();
    pipe.read_to_end(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let stderr = String::from_utf8_lossy(&kept).into_owned();
    let all = String::from_utf8_lossy(if rest.is_empty() { &kept } else { &rest }).into_owned();
    let kib: u64 = all
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak-rss-kib ")?.trim().parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "no peak said: {}",
                &all[all.floor_char_boundary(all.len().saturating_sub(500))..]
            )
        });
    (status.success(), stderr, kib * 1024)
}

fn refused_within_bounds(test: &str, reg: &Scripted, reference: &str, says: &str) {
    let (ok, stderr, rss) = pull_measured(test, reg, reference);
    let tail = &stderr[stderr.floor_char_boundary(stderr.len().saturating_sub(2000))..];
    assert!(!ok, "the pull should fail: {tail}");
    assert!(stderr.contains(says), "the error should say {says:?}: {tail}");
    eprintln!("{test}: peak {} MiB", rss >> 20);
    assert!(
        rss < MAX_RSS,
        "wink held {} MiB while the registry offered {} MiB: {tail}",
        rss >> 20,
        HUGE >> 20
    );
}

/// A small Wasm artifact manifest whose one layer is `size` bytes.
fn manifest(size: u64) -> Vec<u8> {
    let zero = format!("sha256:{}", "0".repeat(64));
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": zero, "size": 2},
        "layers": [{"mediaType": "application/wasm", "digest": zero, "size": size}],
    }))
    .unwrap()
}

#[test]
fn a_manifest_without_end_in_place_of_a_digest_is_cut_at_the_manifest_cap() {
    let reg = Scripted::start(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/v2/") => Answer::new(200, Body::Bytes(b"{}".to_vec())),
        // No Docker-Content-Digest: the client must GET the manifest.
        ("HEAD", "/v2/huge/manifests/latest") => Answer::new(200, Body::Bytes(Vec::new()))
            .header("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
        ("GET", "/v2/huge/manifests/latest") => Answer::new(200, Body::Endless(b' '))
            .header("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
        _ => Answer::new(404, Body::Bytes(Vec::new())),
    });
    let reference = format!("{}/huge:latest", reg.host());
    refused_within_bounds(
        "hostile_registry_manifest",
        &reg,
        &reference,
        "over the cap of 4194304 bytes",
    );
}

#[test]
fn a_token_without_end_is_cut_at_the_token_cap() {
    let port = std::sync::Arc::new(std::sync::OnceLock::<u16>::new());
    let p = port.clone();
    let reg = Scripted::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/v2/") => Answer::new(401, Body::Bytes(Vec::new())).header(
            "WWW-Authenticate",
            &format!(
                "Bearer realm=\"http://127.0.0.1:{}/token\",service=\"hostile\"",
                p.get().unwrap()
            ),
        ),
        ("GET", t) if t.starts_with("/token") => Answer::new(200, Body::Endless(b'a')),
        _ => Answer::new(401, Body::Bytes(Vec::new())),
    });
    port.set(reg.port).unwrap();
    let reference = format!("{}/huge:latest", reg.host());
    refused_within_bounds(
        "hostile_registry_token",
        &reg,
        &reference,
        "over the cap of 65536 bytes",
    );
}

#[test]
fn an_error_body_without_end_is_cut_and_the_error_said() {
    let m = manifest(100);
    let digest = sha256(&m);
    let reg = Scripted::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/v2/") => Answer::new(200, Body::Bytes(b"{}".to_vec())),
        ("HEAD", "/v2/huge/manifests/latest") => {
            Answer::new(200, Body::Bytes(Vec::new())).header("Docker-Content-Digest", &digest)
        }
        ("GET", p) if p.starts_with("/v2/huge/manifests/sha256:") => Answer::new(200, Body::Bytes(m.clone()))
            .header("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
        _ => Answer::new(404, Body::Endless(b'x')),
    });
    let reference = format!("{}/huge:latest", reg.host());
    refused_within_bounds("hostile_registry_error", &reg, &reference, "not found");
}

#[test]
fn a_blob_past_the_size_its_manifest_gives_is_cut_there() {
    let m = manifest(100);
    let digest = sha256(&m);
    let reg = Scripted::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/v2/") => Answer::new(200, Body::Bytes(b"{}".to_vec())),
        ("HEAD", "/v2/huge/manifests/latest") => {
            Answer::new(200, Body::Bytes(Vec::new())).header("Docker-Content-Digest", &digest)
        }
        ("GET", p) if p.starts_with("/v2/huge/manifests/sha256:") => Answer::new(200, Body::Bytes(m.clone()))
            .header("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
        ("GET", p) if p.starts_with("/v2/huge/blobs/") => Answer::new(200, Body::Endless(0)),
        _ => Answer::new(404, Body::Bytes(Vec::new())),
    });
    let reference = format!("{}/huge:latest", reg.host());
    refused_within_bounds(
        "hostile_registry_blob",
        &reg,
        &reference,
        "over the cap of 100 bytes",
    );
}
