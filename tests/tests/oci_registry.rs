//! End-to-end: plugins through a real OCI registry (CNCF distribution on
//! loopback). `wink push` writes the Wasm OCI artifact layout, read back
//! here over plain HTTP as any client would; `wink pull` round-trips by
//! digest, refuses bytes that do not match it and a component over the
//! cap, and serves a second pull from its store with the registry
//! stopped; a second client (skopeo) reads what `wink push` wrote and
//! wink pulls what that client pushed; a private registry takes the
//! credentials of a dockerconfigjson; `wink run --plugin-ref` runs a
//! plugin pulled from the registry against the simulator, keeps its
//! pinned digest when the tag moves and the registry is gone, and runs on
//! when a registry is down or a reference is not found, trying again
//! until it is there.

use crate::cache_support::{Setup, WAIT, from_json, wait_synced};
use crate::common::{plugin, scratch};
use crate::registry_support::*;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::path::Path;
use std::time::Instant;
use wink_sim::{Sim, SimConfig};

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// `wink pull` arguments with the registry and store flags.
fn pull_args<'a>(reg: &'a str, store: &'a str, reference: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["pull", reference, "--plain-http", reg, "--oci-store", store];
    args.extend_from_slice(extra);
    args
}

#[test]
fn push_writes_the_wasm_artifact_layout_and_pull_round_trips_by_digest() {
    let reg = Registry::start("oci_round_trip");
    let file = plugin("pod_logger");
    let bytes = std::fs::read(&file).unwrap();
    let reference = format!("{}/wink/pod-logger:v1", reg.host());
    let digest = push(&reg, &reference, &file);

    // The manifest as the registry serves it to any client.
    let m = reg.get("/v2/wink/pod-logger/manifests/v1", &[MANIFEST]);
    assert_eq!(m.status, 200);
    assert_eq!(m.header("Docker-Content-Digest"), Some(digest.as_str()));
    assert_eq!(sha256(&m.body), digest, "the digest is the manifest's own");
    let manifest = m.json();
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(manifest["mediaType"], MANIFEST);
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "one layer: {manifest}");
    assert_eq!(layers[0]["mediaType"], "application/wasm");
    assert_eq!(layers[0]["digest"], sha256(&bytes));
    assert_eq!(layers[0]["size"], bytes.len());
    let config_digest = manifest["config"]["digest"].as_str().unwrap();
    let config = reg.get(&format!("/v2/wink/pod-logger/blobs/{config_digest}"), &[]);
    assert_eq!(sha256(&config.body), config_digest);
    assert_eq!(manifest["config"]["size"], config.body.len());
    let config = config.json();
    assert_eq!(config["architecture"], "wasm");
    assert_eq!(config["os"], "wasip2");
    assert_eq!(config["layerDigests"], json!([sha256(&bytes)]));
    let exports = config["component"]["exports"].as_array().unwrap();
    assert!(
        exports
            .iter()
            .any(|e| e.as_str().unwrap().starts_with("wink:plugin/handler@")),
        "{config}"
    );
    let imports = config["component"]["imports"].as_array().unwrap();
    assert!(
        imports.iter().any(|e| e.as_str().unwrap().starts_with("wasi:")),
        "{config}"
    );
    let layer = reg.get(&format!("/v2/wink/pod-logger/blobs/{}", sha256(&bytes)), &[]);
    assert_eq!(layer.body, bytes, "the layer is the component as is");

    // Pulled by tag and by digest: the same digest, the same bytes.
    let dir = scratch("oci_round_trip_pull");
    let store = dir.join("store");
    let (host, store_s) = (reg.host(), store.to_str().unwrap().to_string());
    let out = dir.join("by-tag.wasm");
    let pulled = wink_ok(&pull_args(
        &host,
        &store_s,
        &reference,
        &["-o", out.to_str().unwrap()],
    ));
    assert_eq!(pulled, digest);
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    let by_digest = format!("{}/wink/pod-logger@{digest}", reg.host());
    let out = dir.join("by-digest.wasm");
    let pulled = wink_ok(&pull_args(
        &host,
        &store_s,
        &by_digest,
        &["-o", out.to_str().unwrap()],
    ));
    assert_eq!(pulled, digest);
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    // The store holds it under its digest.
    let hex = sha256(&bytes).trim_start_matches("sha256:").to_string();
    assert_eq!(
        std::fs::read(store.join("blobs/sha256").join(hex)).unwrap(),
        bytes
    );
}

#[test]
fn bytes_that_do_not_match_their_digest_are_refused_and_nothing_is_kept() {
    let reg = Registry::start("oci_mismatch");
    let file = plugin("pod_logger");
    let bytes = std::fs::read(&file).unwrap();
    let reference = format!("{}/wink/tampered:v1", reg.host());
    push(&reg, &reference, &file);
    // The registry's copy of the layer damaged in place, same length.
    let layer_digest = sha256(&bytes);
    let blob = reg.blob_file(&layer_digest);
    let mut damaged = std::fs::read(&blob).unwrap();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xff;
    std::fs::write(&blob, &damaged).unwrap();

    let dir = scratch("oci_mismatch_pull");
    let store = dir.join("store");
    let out = dir.join("out.wasm");
    let (host, store_s) = (reg.host(), store.to_str().unwrap().to_string());
    let err = wink_err(&pull_args(
        &host,
        &store_s,
        &reference,
        &["-o", out.to_str().unwrap()],
    ));
    assert!(err.contains("digest mismatch"), "{err}");
    assert!(err.contains(&layer_digest), "names the expected digest: {err}");
    assert!(!out.exists(), "nothing written");
    let kept: Vec<_> = std::fs::read_dir(store.join("blobs/sha256")).unwrap().collect();
    assert!(kept.is_empty(), "nothing stored: {kept:?}");

    // A digest the repository does not have: not found, said so.
    let unknown = format!("{}/wink/tampered@{}", reg.host(), sha256(b"no such manifest"));
    let err = wink_err(&pull_args(&host, &store_s, &unknown, &[]));
    assert!(err.contains("not found") && err.contains("404"), "{err}");
    let malformed = format!("{}/wink/tampered@sha256:1234", reg.host());
    let err = wink_err(&pull_args(&host, &store_s, &malformed, &[]));
    assert!(
        err.contains("not an OCI reference") || err.contains("not a sha256 digest"),
        "{err}"
    );
}

#[test]
fn a_component_over_the_cap_is_refused_and_a_core_module_is_not_pushed() {
    let reg = Registry::start("oci_cap");
    let dir = scratch("oci_cap_files");
    let big = dir.join("big.wasm");
    std::fs::write(&big, big_component(3 << 20)).unwrap();
    let reference = format!("{}/wink/big:v1", reg.host());
    push(&reg, &reference, &big);
    let store = dir.join("store");
    let (host, store_s) = (reg.host(), store.to_str().unwrap().to_string());
    let err = wink_err(&pull_args(
        &host,
        &store_s,
        &reference,
        &["--max-component-mib", "2"],
    ));
    assert!(err.contains("over the cap of 2 MiB"), "{err}");
    assert!(
        std::fs::read_dir(store.join("blobs/sha256"))
            .unwrap()
            .next()
            .is_none()
    );
    // Under a larger cap the same artifact pulls.
    wink_ok(&pull_args(
        &host,
        &store_s,
        &reference,
        &["--max-component-mib", "4"],
    ));
    let err = wink_err(&[
        "push",
        &reference,
        big.to_str().unwrap(),
        "--plain-http",
        &host,
        "--max-component-mib",
        "2",
    ]);
    assert!(err.contains("more than the 2097152 bytes"), "{err}");

    let module = dir.join("module.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    let err = wink_err(&[
        "push",
        &reference,
        module.to_str().unwrap(),
        "--plain-http",
        &host,
    ]);
    assert!(err.contains("not a component"), "{err}");
}

#[test]
fn a_second_pull_with_the_registry_stopped_comes_from_the_store() {
    let mut reg = Registry::start("oci_store");
    let file = plugin("pod_logger");
    let reference = format!("{}/wink/pod-logger:v1", reg.host());
    let digest = push(&reg, &reference, &file);
    let dir = scratch("oci_store_pull");
    let (host, store) = (reg.host(), dir.join("store").to_str().unwrap().to_string());
    let started = Instant::now();
    let first = wink(&pull_args(&host, &store, &reference, &[]));
    let first_took = started.elapsed();
    assert!(first.status.success());
    let said = String::from_utf8_lossy(&first.stderr);
    // Progress first (a pull may take seconds), then where it came from.
    assert!(said.starts_with(&format!("pulling {reference}\n")), "{said}");
    assert!(said.contains("from the registry"), "{said}");

    reg.stop();
    let by_digest = format!("{}/wink/pod-logger@{digest}", reg.host());
    let out = dir.join("again.wasm");
    let started = Instant::now();
    let second = wink(&pull_args(
        &host,
        &store,
        &by_digest,
        &["-o", out.to_str().unwrap()],
    ));
    let second_took = started.elapsed();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(stderr.contains("from the store"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&second.stdout).trim(), digest);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&file).unwrap());
    eprintln!("pull from the registry: {first_took:?} (process); from the store: {second_took:?}");

    // A tag needs the registry: down, said so.
    let err = wink_err(&pull_args(
        &host,
        &store,
        &reference,
        &["--registry-timeout-secs", "5"],
    ));
    assert!(err.contains("cannot be reached"), "{err}");
}

/// `wink run` with one directory plugin (`good`, pod_logger) and `refs`.
fn run_with_refs(s: &Setup, reg: &str, store: &Path, refs: &[String], extra: &[&str]) -> crate::common::Wink {
    let mut args: Vec<&str> = vec!["--plain-http", reg, "--oci-store", store.to_str().unwrap()];
    for r in refs {
        args.extend(["--plugin-ref", r.as_str()]);
    }
    args.extend_from_slice(extra);
    s.run(&args)
}

async fn create_pod(sim: &Sim, name: &str) {
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    let pod: Pod =
        from_json(json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}));
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_runs_a_plugin_from_the_registry_pinned_to_its_digest() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("oci_daemon", &sim);
    let mut reg = Registry::start("oci_daemon_registry");
    let reference = format!("{}/wink/logger:stable", reg.host());
    let first = push(&reg, &reference, &plugin("pod_logger"));
    let store = scratch("oci_daemon_store").join("store");
    let refs = [format!("logger={reference}")];

    let mut wink = run_with_refs(&s, &reg.host(), &store, &refs, &[]);
    wink.wait_for_line(
        &format!("plugin fetched plugin=logger reference={reference} digest={first} from=registry"),
        WAIT,
    );
    wait_synced(&wink, "logger");
    create_pod(&sim, "p1").await;
    wink.wait_for_line("[logger] OnAdd: p1", WAIT);
    wink.terminate(WAIT).expect("stops");

    // The tag moves to another component; then the registry goes away.
    let moved = push(&reg, &reference, &plugin("deployment_lister"));
    assert_ne!(moved, first);
    reg.stop();
    let mut wink = run_with_refs(&s, &reg.host(), &store, &refs, &[]);
    wink.wait_for_line(
        &format!("plugin fetched plugin=logger reference={reference} digest={first} from=store"),
        WAIT,
    );
    wait_synced(&wink, "logger");
    create_pod(&sim, "p2").await;
    wink.wait_for_line("[logger] OnAdd: p2", WAIT);
    wink.terminate(WAIT).expect("stops");

    // Asked to, it follows the tag.
    reg.restart();
    let mut wink = run_with_refs(&s, &reg.host(), &store, &refs, &["--resolve-tags"]);
    wink.wait_for_line(
        &format!("plugin fetched plugin=logger reference={reference} digest={moved} from=registry"),
        WAIT,
    );
    wink.terminate(WAIT).expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_down_or_a_reference_not_found_is_said_the_daemon_runs_on_and_tries_again() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("oci_down", &sim);
    s.install("pod_logger", "good", None);
    let reg = Registry::start("oci_down_registry");
    // A registry that is down when wink starts, up later.
    let mut late = Registry::start("oci_down_late");
    late.stop();
    let down = late.host();
    let store = scratch("oci_down_store").join("store");
    let refs = [
        format!("gone={down}/wink/x:v1"),
        format!("missing={}/wink/nope:v1", reg.host()),
    ];
    let mut args: Vec<&str> = vec!["--plain-http", &down, "--registry-timeout-secs", "10"];
    let host = reg.host();
    args.extend(["--plain-http", &host]);
    let mut wink = run_with_refs(&s, &host, &store, &refs, &args);
    wink.wait_for_line("plugin from the registry not loaded plugin=gone", WAIT);
    wink.wait_for_line("plugin from the registry not loaded plugin=missing", WAIT);
    let lines = wink.lines().join("\n");
    assert!(
        lines.contains(&format!("the registry {down} cannot be reached")),
        "{lines}"
    );
    assert!(
        lines.contains("not found in the registry") && lines.contains("(404)"),
        "{lines}"
    );
    wait_synced(&wink, "good");
    create_pod(&sim, "p1").await;
    wink.wait_for_line("[good] OnAdd: p1", WAIT);
    assert!(
        wink.wait_exit(std::time::Duration::from_millis(200)).is_none(),
        "still running"
    );
    // Up, with the artifact: tried again with backoff, it loads.
    late.restart();
    push(&late, &format!("{down}/wink/x:v1"), &plugin("pod_logger"));
    wink.wait_for_line(
        &format!("plugin fetched plugin=gone reference={down}/wink/x:v1"),
        WAIT,
    );
    wink.wait_for_line("[gone] OnAdd: p1", WAIT);
    wink.terminate(WAIT).expect("stops");

    // A name the plugin directory has too is refused at start, clearly.
    let clash = [format!("good={}/wink/x:v1", reg.host())];
    let mut wink = run_with_refs(&s, &host, &store, &clash, &[]);
    let status = wink.wait_exit(WAIT).expect("the start ends");
    assert!(!status.success());
    wink.wait_for_line("has good.wasm too", WAIT);
}

#[test]
fn a_second_client_reads_what_wink_pushes_and_wink_pulls_what_it_pushes() {
    let reg = Registry::start("oci_interop");
    let file = plugin("pod_logger");
    let bytes = std::fs::read(&file).unwrap();
    let dir = scratch("oci_interop_files");

    // wink -> registry -> skopeo: the layer comes out as the component.
    let digest = push(&reg, &format!("{}/wink/by-wink:v1", reg.host()), &file);
    let out = dir.join("from-wink");
    skopeo_copy(
        &format!("docker://{}/wink/by-wink:v1", reg.host()),
        &format!("dir:{}", out.display()),
    );
    assert_eq!(sha256(&std::fs::read(out.join("manifest.json")).unwrap()), digest);
    let layer = sha256(&bytes);
    assert_eq!(
        std::fs::read(out.join(layer.trim_start_matches("sha256:"))).unwrap(),
        bytes
    );

    // An artifact laid out here by hand -> skopeo -> registry -> wink pull.
    let layout = dir.join("by-hand");
    std::fs::create_dir_all(&layout).unwrap();
    let config = format!(
        r#"{{"created":"2026-01-01T00:00:00Z","author":"interop test","architecture":"wasm","os":"wasip2","layerDigests":["{layer}"],"component":null}}"#
    );
    let config_digest = sha256(config.as_bytes());
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": "application/wasm", "digest": layer, "size": bytes.len()}],
    }))
    .unwrap();
    let blob = |d: &str| layout.join(d.trim_start_matches("sha256:"));
    std::fs::write(blob(&config_digest), &config).unwrap();
    std::fs::write(blob(&layer), &bytes).unwrap();
    std::fs::write(layout.join("manifest.json"), &manifest).unwrap();
    std::fs::write(layout.join("version"), "Directory Transport Version: 1.1\n").unwrap();
    skopeo_copy(
        &format!("dir:{}", layout.display()),
        &format!("docker://{}/other/by-skopeo:v1", reg.host()),
    );
    let pulled_file = dir.join("pulled.wasm");
    let (host, store) = (reg.host(), dir.join("store").to_str().unwrap().to_string());
    let reference = format!("{}/other/by-skopeo:v1", reg.host());
    let pulled = wink_ok(&pull_args(
        &host,
        &store,
        &reference,
        &["-o", pulled_file.to_str().unwrap()],
    ));
    assert_eq!(pulled, sha256(&manifest));
    assert_ne!(pulled, digest, "not the artifact wink pushed");
    assert_eq!(std::fs::read(&pulled_file).unwrap(), bytes);
}

#[test]
fn a_private_registry_takes_the_credentials_of_a_dockerconfigjson() {
    let reg = Registry::start_private("oci_private", "alice", "s3cret");
    let dir = scratch("oci_private_files");
    let file = plugin("pod_logger");
    let host = reg.host();
    let reference = format!("{host}/team/private:v1");
    let auth = dir.join("config.json");
    // base64("alice:s3cret")
    std::fs::write(
        &auth,
        format!(r#"{{"auths": {{"{host}": {{"auth": "YWxpY2U6czNjcmV0"}}}}}}"#),
    )
    .unwrap();
    let wrong = dir.join("wrong.json");
    std::fs::write(
        &wrong,
        format!(r#"{{"auths": {{"{host}": {{"username": "alice", "password": "no"}}}}}}"#),
    )
    .unwrap();
    let (file_s, auth_s, wrong_s) = (
        file.to_str().unwrap(),
        auth.to_str().unwrap(),
        wrong.to_str().unwrap(),
    );

    let err = wink_err(&["push", &reference, file_s, "--plain-http", &host]);
    assert!(
        err.contains("refused access") && err.contains("--registry-auth"),
        "{err}"
    );
    let digest = wink_ok(&[
        "push",
        &reference,
        file_s,
        "--plain-http",
        &host,
        "--registry-auth",
        auth_s,
    ]);
    let digest = digest.split_once('@').unwrap().1.to_string();

    let store = dir.join("store");
    let store_s = store.to_str().unwrap();
    for creds in [None, Some(wrong_s)] {
        let mut args = pull_args(&host, store_s, &reference, &[]);
        args.extend(creds.map(|c| ["--registry-auth", c]).into_iter().flatten());
        let err = wink_err(&args);
        assert!(err.contains("refused access (401/403)"), "{creds:?}: {err}");
    }
    let out = dir.join("pulled.wasm");
    let pulled = wink_ok(&pull_args(
        &host,
        store_s,
        &reference,
        &["--registry-auth", auth_s, "-o", out.to_str().unwrap()],
    ));
    assert_eq!(pulled, digest);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&file).unwrap());
    // A malformed credentials file is refused by name before any request.
    std::fs::write(&wrong, "{\"auths\": {\"x\": {\"auth\": \"!!\"}}}").unwrap();
    let err = wink_err(&pull_args(
        &host,
        store_s,
        &reference,
        &["--registry-auth", wrong_s],
    ));
    assert!(
        err.contains("not a dockerconfigjson") || err.contains("not base64"),
        "{err}"
    );
}
