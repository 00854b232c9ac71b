//! The library shipped: every library plugin `wink push`ed to a real OCI
//! registry, the digest each push prints the one `wink manifests --library
//! --library-components` renders offline from the same component (and a
//! second push the same digest); the rendered objects applied in one go
//! with kubectl on the simulator, where wink runs every one as a
//! WinkPlugin to `Ready`; the ClusterRole it renders covers what the
//! policies' own registrations make `wink manifests --plugins` derive; an
//! unknown name is refused with the library's names.

use super::{all, docs_of};
use crate::cache_support::{Setup, WAIT};
use crate::common::{plugins_dir, scratch};
use crate::kubectl_support::{env, have_kubectl};
use crate::registry_support::{Registry, push, wink_err, wink_ok};
use crate::winkplugins::support::{apply_all, run_args, wait_condition};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Instant;
use wink_sim::SimConfig;

const REGISTRIES: &str = r#"allowed-registries={"registries": ["registry.example.com/"]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_library_plugin_is_pushed_and_runs_as_a_winkplugin_from_the_rendered_manifests() {
    if !have_kubectl() {
        return;
    }
    let components = plugins_dir();
    let reg = Registry::start("library_shipped_registry");
    let prefix = format!("{}/library", reg.host());
    let mut pushed = Vec::new();
    for name in all() {
        let reference = format!("{prefix}/{name}:v0.1.0");
        let file = components.join(format!("{}.wasm", name.replace('-', "_")));
        let digest = push(&reg, &reference, &file);
        pushed.push(format!("{prefix}/{name}@{digest}"));
    }
    // A push of the same component again: the same manifest, the same digest.
    let again = push(
        &reg,
        &format!("{prefix}/pod-security:again"),
        &components.join("pod_security.wasm"),
    );
    assert!(pushed[0].ends_with(&again), "{} vs {again}", pushed[0]);

    let yaml = wink_ok(&[
        "manifests",
        "--library",
        "all",
        "--library-registry",
        &prefix,
        "--library-components",
        components.to_str().unwrap(),
        "--library-config",
        REGISTRIES,
    ]);
    let docs = docs_of(&yaml);
    let sources: Vec<String> = docs
        .iter()
        .filter(|d| d["kind"] == "WinkPlugin")
        .map(|d| d["spec"]["source"]["oci"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(sources, pushed, "the rendered digests are the pushed ones");

    let env = env("library_shipped", SimConfig::default()).await;
    let s = Setup::new("library_shipped", &env.sim);
    let store = scratch("library_shipped_store").join("store");
    let args = run_args(&reg.host(), &store);
    let mut wink = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wink.wait_for_line("watching WinkPlugins", WAIT);
    let started = Instant::now();
    apply_all(&env, &yaml).await;
    for name in all() {
        let object = wait_condition(&env, name, "Ready", |c| c["status"] == "True").await;
        let digest = &pushed[all().iter().position(|n| *n == name).unwrap()];
        assert!(
            digest.ends_with(object["status"]["digest"].as_str().unwrap()),
            "{name}: {object:#}"
        );
        assert_eq!(object["status"]["mode"], "enforce", "{object:#}");
    }
    println!(
        "{} library WinkPlugins Ready in {:?}",
        all().len(),
        started.elapsed()
    );
    let listed = env
        .ok(&["get", "wp", "-l", "wink.dev/library=true", "-o", "name"])
        .await;
    assert_eq!(listed.lines().count(), all().len(), "{listed}");
    wink.terminate(WAIT).expect("stops");
}

/// The (group, resource) of every list+watch rule of the ClusterRoles in `docs`.
fn list_watch(docs: &[Value], role: Option<&str>) -> BTreeSet<(String, String)> {
    docs.iter()
        .filter(|d| d["kind"] == "ClusterRole")
        .filter(|d| role.is_none_or(|r| d["metadata"]["name"] == r))
        .flat_map(|d| d["rules"].as_array().unwrap().clone())
        .filter(|r| r["verbs"].as_array().unwrap().contains(&json!("watch")))
        .flat_map(|r| {
            let groups: Vec<String> = serde_json::from_value(r["apiGroups"].clone()).unwrap();
            let resources: Vec<String> = serde_json::from_value(r["resources"].clone()).unwrap();
            groups
                .into_iter()
                .flat_map(move |g| resources.clone().into_iter().map(move |r| (g.clone(), r)))
        })
        .collect()
}

#[test]
fn the_library_role_covers_what_the_policies_register() {
    let components = plugins_dir();
    let dir = scratch("library_role").join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    for name in all() {
        let file = format!("{}.wasm", name.replace('-', "_"));
        std::fs::copy(components.join(&file), dir.join(format!("{name}.wasm"))).unwrap();
    }
    std::fs::write(
        dir.join("allowed-registries.json"),
        r#"{"registries": ["registry.example.com/"]}"#,
    )
    .unwrap();
    // The grant the library's WinkPlugin of require-labels carries.
    let grants = dir.parent().unwrap().join("grants.yaml");
    std::fs::write(
        &grants,
        "plugins:\n  require-labels:\n    events: true\n    writes: [{apiVersion: apps/v1, kind: Deployment, verbs: [patch]}]\n",
    )
    .unwrap();
    let derived = docs_of(&wink_ok(&[
        "manifests",
        "--plugins",
        dir.to_str().unwrap(),
        "--grants",
        grants.to_str().unwrap(),
    ]));
    let rendered = docs_of(&wink_ok(&[
        "manifests",
        "--library",
        "all",
        "--library-registry",
        "registry.example.com/wink",
        "--library-config",
        REGISTRIES,
    ]));
    let need = list_watch(&derived, None);
    let have = list_watch(&rendered, Some("wink-library"));
    assert!(need.len() >= 10, "{need:?}");
    assert_eq!(
        need, have,
        "the library's ClusterRole reads what the policies watch"
    );
    // require-labels' writes, as its registration declares them.
    let writes = |docs: &[Value], role: &str| {
        docs.iter()
            .filter(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == role)
            .flat_map(|d| d["rules"].as_array().unwrap().clone())
            .filter(|r| r["verbs"].as_array().unwrap().contains(&json!("patch")))
            .map(|r| (r["apiGroups"].to_string(), r["resources"].to_string()))
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(writes(&derived, "wink"), writes(&rendered, "wink-library"));
}

#[test]
fn an_unknown_library_name_is_refused_with_the_librarys_names() {
    let err = wink_err(&[
        "manifests",
        "--library",
        "pod-security,no-such-policy",
        "--library-registry",
        "registry.example.com/wink",
    ]);
    assert!(err.contains(r#"no policy "no-such-policy""#), "{err}");
    for name in all() {
        assert!(err.contains(name), "{name}: {err}");
    }
    let err = wink_err(&[
        "manifests",
        "--library",
        "allowed-registries",
        "--library-registry",
        "registry.example.com/wink",
    ]);
    assert!(err.contains("--library-config 'allowed-registries="), "{err}");
}
