//! End-to-end: interoperability with `wkg` (crates.io `wkg`, the Bytecode
//! Alliance's wasm-pkg-tools CLI), the OCI client Wasm authors publish
//! components with, through a real registry on loopback. What `wkg oci
//! push` writes is the Wasm OCI artifact layout wink reads: `wink pull`
//! gets the component by digest, `wink run --plugin-ref` and a
//! `WinkPlugin` applied with kubectl run it; what `wink push` writes,
//! `wkg oci pull` reads back byte for byte, by tag and by digest.
//!
//! Owns installing wkg: `cargo install --locked` into `target/tools/wkg`
//! when it is missing (about 7 minutes on 2 cores, once per checkout), one
//! installer at a time across test processes (a file lock), the install
//! staged beside and renamed into place, its build directory removed.

use crate::cache_support::{Setup, WAIT, wait_synced};
use crate::common::{cargo, plugin, root, scratch};
use crate::kubectl_support::{env, have_kubectl};
use crate::registry_support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Instant;
use wink_sim::SimConfig;

/// The wkg release the tests install and speak to.
pub const WKG_VERSION: &str = "0.16.1";

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// Whether `bin` is wkg at [`WKG_VERSION`].
fn wkg_installed(bin: &Path) -> bool {
    Command::new(bin).arg("--version").output().is_ok_and(|o| {
        o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == format!("wkg {WKG_VERSION}")
    })
}

/// `target/tools/wkg/bin/wkg`, installed on first use.
pub fn wkg_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let tools = root().join("target/tools");
        let bin = tools.join("wkg/bin/wkg");
        if wkg_installed(&bin) {
            return bin;
        }
        std::fs::create_dir_all(&tools).unwrap();
        // Another test process installing it holds the lock: wait, then
        // find it installed.
        let lock = std::fs::File::create(tools.join("wkg.lock")).unwrap();
        lock.lock().expect("lock target/tools/wkg.lock");
        if !wkg_installed(&bin) {
            let staged = tools.join(format!("wkg.partial-{}", std::process::id()));
            let build = tools.join("wkg-build");
            let _ = std::fs::remove_dir_all(&staged);
            eprintln!(
                "installing wkg {WKG_VERSION} into {} (cargo install, minutes)",
                tools.join("wkg").display()
            );
            let started = Instant::now();
            let status = cargo()
                .args(["install", "wkg", "--version", WKG_VERSION, "--locked", "--root"])
                .arg(&staged)
                .env("CARGO_TARGET_DIR", &build)
                .status()
                .expect("run cargo install");
            let _ = std::fs::remove_dir_all(&build);
            assert!(status.success(), "cargo install wkg {WKG_VERSION} failed");
            eprintln!("wkg installed in {:?}", started.elapsed());
            let _ = std::fs::remove_dir_all(tools.join("wkg"));
            std::fs::rename(&staged, tools.join("wkg")).unwrap();
        }
        drop(lock);
        assert!(wkg_installed(&bin), "{} is not wkg {WKG_VERSION}", bin.display());
        bin
    })
}

/// `wkg <args>` speaking plain HTTP to `reg`, with a home of its own under
/// `dir` (no credentials or config of the machine's user).
fn wkg(reg: &Registry, dir: &Path, args: &[&str]) -> Output {
    let home = dir.join("wkg-home");
    std::fs::create_dir_all(&home).unwrap();
    Command::new(wkg_bin())
        .args(args)
        .args(["--insecure", &reg.host(), "--color", "never"])
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("DOCKER_CONFIG", home.join(".docker"))
        .env_remove("WKG_OCI_USERNAME")
        .env_remove("WKG_OCI_PASSWORD")
        .env_remove("WKG_OCI_INSECURE")
        .output()
        .expect("run wkg")
}

/// stdout and stderr of a successful `wkg <args>`; panics with both otherwise.
fn wkg_ok(reg: &Registry, dir: &Path, args: &[&str]) -> String {
    let out = wkg(reg, dir, args);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "wkg {args:?} failed:\n{said}");
    said
}

/// The manifest of `repo:tag` as the registry serves it: its digest and JSON.
fn manifest(reg: &Registry, repo: &str, tag: &str) -> (String, Value) {
    let m = reg.get(&format!("/v2/{repo}/manifests/{tag}"), &[MANIFEST]);
    assert_eq!(m.status, 200, "{}", String::from_utf8_lossy(&m.body));
    let digest = sha256(&m.body);
    assert_eq!(m.header("Docker-Content-Digest"), Some(digest.as_str()));
    (digest, m.json())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_wkg_pushes_wink_pulls_by_digest_and_runs_from_a_plugin_ref_and_a_winkplugin() {
    let reg = Registry::start("oci_wkg_push");
    let dir = scratch("oci_wkg_push_files");
    let file = plugin("pod_logger");
    let bytes = std::fs::read(&file).unwrap();
    let reference = format!("{}/authors/pod-logger:v1", reg.host());
    let said = wkg_ok(&reg, &dir, &["oci", "push", &reference, file.to_str().unwrap()]);

    // wkg's manifest: the Wasm artifact layout, as wink writes it too.
    let (digest, m) = manifest(&reg, "authors/pod-logger", "v1");
    assert!(said.contains(&digest), "wkg names the digest it pushed: {said}");
    assert_eq!(m["schemaVersion"], 2);
    assert_eq!(m["mediaType"], MANIFEST);
    assert_eq!(m["config"]["mediaType"], "application/vnd.wasm.config.v0+json");
    let layers = m["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "one layer: {m}");
    assert_eq!(layers[0]["mediaType"], "application/wasm");
    assert_eq!(layers[0]["digest"], sha256(&bytes));
    assert_eq!(layers[0]["size"], bytes.len());
    // What wkg adds beyond wink's own layout: the file's name on the layer.
    assert_eq!(
        layers[0]["annotations"]["org.opencontainers.image.title"], "pod_logger.wasm",
        "{m}"
    );
    let config_digest = m["config"]["digest"].as_str().unwrap();
    let config = reg.get(&format!("/v2/authors/pod-logger/blobs/{config_digest}"), &[]);
    assert_eq!(sha256(&config.body), config_digest);
    let config = config.json();
    assert_eq!(
        (&config["architecture"], &config["os"]),
        (&json!("wasm"), &json!("wasip2"))
    );
    assert_eq!(config["layerDigests"], json!([sha256(&bytes)]));

    // wink pulls it by tag, and by the digest wkg printed.
    let store = dir.join("store");
    let (host, store_s) = (reg.host(), store.to_str().unwrap().to_string());
    for (i, r) in [reference.clone(), format!("{host}/authors/pod-logger@{digest}")]
        .iter()
        .enumerate()
    {
        let out = dir.join(format!("pulled-{i}.wasm"));
        let pulled = wink_ok(&[
            "pull",
            r,
            "--plain-http",
            &host,
            "--oci-store",
            &store_s,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(pulled, digest, "{r}");
        assert_eq!(std::fs::read(&out).unwrap(), bytes, "{r}");
    }

    // The daemon runs it from `--plugin-ref` and from a WinkPlugin: each
    // sees a Pod that was there before it.
    let env = env("oci_wkg_push", SimConfig::default()).await;
    env.sim
        .insert(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "before", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}))
        .unwrap();
    let s = Setup::new("oci_wkg_push_run", &env.sim);
    let run_store = dir.join("run-store");
    let wink = s.run(&[
        "--plain-http",
        &host,
        "--oci-store",
        run_store.to_str().unwrap(),
        "--plugin-ref",
        &format!("by-ref={reference}"),
        "--winkplugins",
        "install",
    ]);
    wink.wait_for_line(
        &format!("plugin fetched plugin=by-ref reference={reference} digest={digest} from=registry"),
        WAIT,
    );
    wait_synced(&wink, "by-ref");
    wink.wait_for_line("[by-ref] OnAdd: before", WAIT);
    if !have_kubectl() {
        return;
    }
    wink.wait_for_line("watching WinkPlugins", WAIT);
    let object = json!({"apiVersion": "wink.dev/v1alpha1", "kind": "WinkPlugin",
        "metadata": {"name": "by-object"}, "spec": {"source": {"oci": reference}}});
    let file = env.dir.join("winkplugin.json");
    std::fs::write(&file, object.to_string()).unwrap();
    env.ok(&["apply", "-f", file.to_str().unwrap()]).await;
    wink.wait_for_line("[by-object] OnAdd: before", WAIT);
    let object = env.json(&["get", "winkplugin", "by-object", "-o", "json"]).await;
    assert_eq!(object["status"]["digest"], digest.as_str(), "{object:#}");
}

#[test]
fn what_wink_pushes_wkg_pulls_byte_for_byte() {
    let reg = Registry::start("oci_wkg_pull");
    let dir = scratch("oci_wkg_pull_files");
    let file = plugin("pod_logger");
    let bytes = std::fs::read(&file).unwrap();
    let reference = format!("{}/wink/pod-logger:v1", reg.host());
    let out = wink_ok(&[
        "push",
        &reference,
        file.to_str().unwrap(),
        "--plain-http",
        &reg.host(),
    ]);
    let (_, digest) = out.split_once('@').expect("REF@DIGEST");
    let by_digest = format!("{}/wink/pod-logger@{digest}", reg.host());
    for (i, r) in [&reference, &by_digest].into_iter().enumerate() {
        let pulled = dir.join(format!("by-wkg-{i}.wasm"));
        wkg_ok(&reg, &dir, &["oci", "pull", r, "-o", pulled.to_str().unwrap()]);
        assert_eq!(std::fs::read(&pulled).unwrap(), bytes, "{r}");
    }
    // A reference the registry does not have is wkg's error, not an empty file.
    let missing = dir.join("missing.wasm");
    let nope = format!("{}/wink/nope:v1", reg.host());
    let out = wkg(
        &reg,
        &dir,
        &["oci", "pull", &nope, "-o", missing.to_str().unwrap()],
    );
    assert!(!out.status.success(), "pulling {nope} should fail");
    assert!(!missing.exists());
}
