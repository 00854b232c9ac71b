//! End-to-end: cosign key-based signatures, made with nothing of wink's:
//! keys and signatures by openssl (ECDSA P-256, SHA-256, DER), the
//! simple-signing payload and the `sha256-<hex>.sig` manifest written here
//! as cosign writes them, and pushed with plain HTTP requests. A
//! WinkPlugin whose `spec.verify` key signed its digest is `Verified` and
//! runs; one unsigned is `SignatureMissing`, one signed by another key or
//! over another digest `SignatureInvalid`, and none of those is pulled or
//! loaded. `wink run --cosign-key` holds every WinkPlugin to its key, those
//! without `spec.verify` too; a restart with the registry stopped verifies
//! the signatures the store kept. `wink pull --cosign-key` verifies alike.

use super::support::{apply, condition, create_pod, push, run_args, wait_condition, winkplugin};
use crate::cache_support::{Setup, WAIT};
use crate::common::{plugin, scratch};
use crate::kubectl_support::{Env, env, have_kubectl};
use crate::registry_support::{Registry, sha256, wink};
use base64::Engine;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use wink_sim::SimConfig;

/// `openssl <args>`; panics with its output when it fails.
fn openssl(args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl").args(args).output().expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A P-256 key pair in `dir`: (the private key's file, the public one's),
/// and the public key's id as wink names it: `sha256:` and 16 hex digits
/// of the DER key's digest.
fn keypair(dir: &Path, name: &str) -> (PathBuf, PathBuf, String) {
    let key = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let (k, p) = (key.to_str().unwrap(), public.to_str().unwrap());
    openssl(&["ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", k]);
    openssl(&["ec", "-in", k, "-pubout", "-out", p]);
    let der = openssl(&["ec", "-in", k, "-pubout", "-outform", "DER"]);
    let id = sha256(&der)[..23].to_string();
    (key, public, id)
}

/// One HTTP/1.0 request to the registry: (status, body).
fn request(reg: &Registry, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", reg.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.0\r\nHost: {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        reg.host(),
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, text)
}

/// Upload `bytes` as a blob of `repo` (an upload started, then finished
/// with the whole blob): its digest.
fn put_blob(reg: &Registry, repo: &str, bytes: &[u8]) -> String {
    let digest = sha256(bytes);
    let path = format!("/v2/{repo}/blobs/uploads/");
    let (status, text) = request(reg, "POST", &path, "application/octet-stream", b"");
    assert_eq!(status, 202, "upload start: {text}");
    let location = text
        .lines()
        .find_map(|l| l.strip_prefix("Location: "))
        .expect("a Location")
        .trim();
    let location = location
        .strip_prefix(&format!("http://{}", reg.host()))
        .unwrap_or(location);
    let separator = if location.contains('?') { '&' } else { '?' };
    let path = format!("{location}{separator}digest={digest}");
    let (status, text) = request(reg, "PUT", &path, "application/octet-stream", bytes);
    assert_eq!(status, 201, "upload: {text}");
    digest
}

/// cosign's signature of the manifest `digest` of `repo` by `key`, its
/// payload naming `names` (the signed digest, unless a test says
/// otherwise), pushed under the tag `sha256-<hex>.sig`.
fn sign(reg: &Registry, dir: &Path, repo: &str, digest: &str, names: &str, key: &Path) {
    let payload = json!({
        "critical": {
            "identity": {"docker-reference": format!("{}/{repo}", reg.host())},
            "image": {"docker-manifest-digest": names},
            "type": "cosign container image signature"
        },
        "optional": null
    })
    .to_string();
    let file = dir.join("payload.json");
    std::fs::write(&file, &payload).unwrap();
    let der = openssl(&[
        "dgst",
        "-sha256",
        "-sign",
        key.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    let signature = base64::engine::general_purpose::STANDARD.encode(der);
    let layer = put_blob(reg, repo, payload.as_bytes());
    let config = json!({
        "architecture": "", "os": "", "created": "0001-01-01T00:00:00Z",
        "config": {}, "rootfs": {"type": "layers", "diff_ids": [layer]}
    })
    .to_string();
    let config_digest = put_blob(reg, repo, config.as_bytes());
    let media = "application/vnd.oci.image.manifest.v1+json";
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": media,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config.len()},
        "layers": [{
            "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "digest": layer,
            "size": payload.len(),
            "annotations": {"dev.cosignproject.cosign/signature": signature}
        }]
    })
    .to_string();
    let tag = format!("sha256-{}.sig", digest.strip_prefix("sha256:").unwrap());
    let path = format!("/v2/{repo}/manifests/{tag}");
    let (status, text) = request(reg, "PUT", &path, media, manifest.as_bytes());
    assert_eq!(status, 201, "signature manifest: {text}");
}

/// The WinkPlugin `name` once its `Ready` is False for the reason `reason`
/// (which its `Verified` condition gives).
async fn refused(env: &Env, name: &str, reason: &str) -> Value {
    let object = wait_condition(env, name, "Ready", |c| c["reason"] == reason).await;
    let verified = condition(&object, "Verified").expect("a Verified condition");
    assert_eq!(verified["status"], "False", "{object:#}");
    assert_eq!(verified["reason"], reason, "{object:#}");
    assert_eq!(object["status"]["ready"], "False", "{object:#}");
    assert!(
        object["status"].get("digest").is_none(),
        "nothing runs: {object:#}"
    );
    assert!(condition(&object, "Pulled").is_none(), "not pulled: {object:#}");
    object
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_components_signed_by_the_cosign_key_run_and_a_daemon_key_holds_every_winkplugin() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_cosign", SimConfig::default()).await;
    let s = Setup::new("winkplugins_cosign", &env.sim);
    let mut reg = Registry::start("winkplugins_cosign_registry");
    let dir = scratch("winkplugins_cosign_keys");
    std::fs::create_dir_all(&dir).unwrap();
    let (key_a, pub_a, id_a) = keypair(&dir, "a");
    let (key_b, _, id_b) = keypair(&dir, "b");
    assert_ne!(id_a, id_b);
    let pem_a = std::fs::read_to_string(&pub_a).unwrap();

    // Each repository a component of its own, so that no two manifests
    // share a digest (signatures are of digests).
    let host = reg.host();
    let source = |repo: &str| format!("{host}/{repo}:v1");
    let pushed = |repo: &str, crate_name: &str| push(&reg, &source(repo), &plugin(crate_name));
    let signed = pushed("wink/signed", "pod_logger");
    sign(&reg, &dir, "wink/signed", &signed, &signed, &key_a);
    let unsigned = pushed("wink/unsigned", "deployment_lister");
    let other_key = pushed("wink/other-key", "misbehave");
    sign(&reg, &dir, "wink/other-key", &other_key, &other_key, &key_b);
    let other_digest = pushed("wink/other-digest", "require_labels");
    let elsewhere = sha256(b"another manifest");
    sign(&reg, &dir, "wink/other-digest", &other_digest, &elsewhere, &key_a);
    let digests = std::collections::BTreeSet::from([&signed, &unsigned, &other_key, &other_digest]);
    assert_eq!(digests.len(), 4, "{digests:?}");

    // `wink pull --cosign-key` (a store of its own): the signed one, and
    // not the unsigned one.
    let pulled = scratch("winkplugins_cosign_pulled").join("store");
    let pull = |repo: &str| {
        let store = pulled.to_str().unwrap().to_string();
        let args = [
            "pull",
            &source(repo),
            "--cosign-key",
            pub_a.to_str().unwrap(),
            "--plain-http",
            &reg.host(),
            "--oci-store",
            &store,
        ]
        .map(String::from);
        wink(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let out = pull("wink/signed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), signed);
    assert!(
        stderr.contains(&format!("signed by the cosign key {id_a}")),
        "{stderr}"
    );
    let out = pull("wink/unsigned");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("no cosign signature"),
        "{stderr}"
    );

    // WinkPlugins with the key in their spec.
    let store = scratch("winkplugins_cosign_store").join("store");
    let args = run_args(&reg.host(), &store);
    let wink_run = |extra: &[&str]| {
        let all: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .chain(extra.iter().copied())
            .collect();
        s.run(&all)
    };
    let mut daemon = wink_run(&[]);
    daemon.wait_for_line("watching WinkPlugins", WAIT);
    let verify = json!({"cosign": {"publicKey": pem_a}});
    for (name, repo) in [
        ("signed", "wink/signed"),
        ("unsigned", "wink/unsigned"),
        ("other-key", "wink/other-key"),
        ("other-digest", "wink/other-digest"),
    ] {
        let spec = json!({"source": {"oci": source(repo)}, "config": {"tag": name}, "verify": verify});
        apply(&env, &winkplugin(name, spec)).await;
    }
    let object = wait_condition(&env, "signed", "Ready", |c| c["status"] == "True").await;
    assert_eq!(object["status"]["digest"], signed.as_str(), "{object:#}");
    let verified = condition(&object, "Verified").unwrap();
    assert_eq!(verified["status"], "True", "{object:#}");
    assert_eq!(verified["reason"], "Verified");
    assert!(
        verified["message"].as_str().unwrap().contains(&id_a),
        "{verified}"
    );
    create_pod(&env.sim, "p1").await;
    daemon.wait_for_line("[signed] OnAdd:signed p1", WAIT);

    let missing = refused(&env, "unsigned", "SignatureMissing").await;
    let message = condition(&missing, "Verified").unwrap()["message"].to_string();
    assert!(message.contains("no cosign signature"), "{message}");
    let by_b = refused(&env, "other-key", "SignatureInvalid").await;
    let message = condition(&by_b, "Verified").unwrap()["message"].to_string();
    assert!(
        message.contains(&id_a) && message.contains("verifies under"),
        "{message}"
    );
    let moved = refused(&env, "other-digest", "SignatureInvalid").await;
    let message = condition(&moved, "Verified").unwrap()["message"].to_string();
    assert!(message.contains("another digest"), "{message}");
    for name in ["unsigned", "other-key", "other-digest"] {
        assert!(daemon.plugin_lines(name).is_empty(), "{name} never ran");
        assert!(
            !daemon
                .lines()
                .iter()
                .any(|l| l.contains(&format!("WinkPlugin fetched winkplugin={name} "))),
            "{name} was never fetched"
        );
    }
    daemon.terminate(WAIT).expect("stops");

    // The daemon's key: WinkPlugins without spec.verify are held to it.
    let mut daemon = wink_run(&["--cosign-key", pub_a.to_str().unwrap()]);
    daemon.wait_for_line("watching WinkPlugins", WAIT);
    for (name, repo) in [
        ("policy-signed", "wink/signed"),
        ("policy-unsigned", "wink/unsigned"),
    ] {
        let spec = json!({"source": {"oci": source(repo)}, "config": {"tag": name}});
        apply(&env, &winkplugin(name, spec)).await;
    }
    let object = wait_condition(&env, "policy-signed", "Ready", |c| c["status"] == "True").await;
    let verified = condition(&object, "Verified").unwrap();
    assert!(
        verified["message"].as_str().unwrap().contains(&id_a),
        "{object:#}"
    );
    daemon.wait_for_line("[policy-signed] OnAdd:policy-signed p1", WAIT);
    refused(&env, "policy-unsigned", "SignatureMissing").await;
    assert!(daemon.plugin_lines("policy-unsigned").is_empty());
    daemon.terminate(WAIT).expect("stops");

    // The registry gone: the signed ones load from the store, verified by
    // the signatures kept there (a check that needed the registry would
    // fail, as the next one's does).
    reg.stop();
    let daemon = wink_run(&["--cosign-key", pub_a.to_str().unwrap()]);
    let reference = source("wink/signed");
    for name in ["signed", "policy-signed"] {
        daemon.wait_for_line(
            &format!("WinkPlugin fetched winkplugin={name} reference={reference} digest={signed} from=store"),
            WAIT,
        );
        daemon.wait_for_line(&format!("[{name}] OnAdd:{name} p1"), WAIT);
    }
    // A digest whose signatures were never read: with no registry, the
    // check cannot be made.
    let unread = format!("{host}/wink/unsigned@{unsigned}");
    apply(
        &env,
        &winkplugin("unreachable", json!({"source": {"oci": unread}})),
    )
    .await;
    let object = refused(&env, "unreachable", "VerifyFailed").await;
    let message = condition(&object, "Verified").unwrap()["message"].to_string();
    assert!(message.contains("cannot be reached"), "{message}");
    assert!(daemon.plugin_lines("unreachable").is_empty());
}
