//! End-to-end: plugins as cluster objects. A `WinkPlugin` applied with
//! kubectl, its component pushed to a real OCI registry on loopback, is
//! pulled by digest, loaded beside the plugin directory's plugins, handles
//! Pod events, and shows READY True and its digest in `kubectl get
//! winkplugins` (its language and compiler with `-o wide`); an edit of its config swaps it (the new instance sees the
//! new config and every Pod); bytes that do not match their digest and a
//! name the plugin directory has are False conditions with their reasons,
//! and the others run on; a restart with the registry stopped loads it
//! from the store; an https source whose sha256 the store has loads with
//! no network; deleting it unloads it; its grant edited from audit to
//! enforce is in force for its next write, and its admission failure
//! policy replaces the plugin's in the webhook configuration, with no
//! reload. `wink manifests --winkplugins` ships the CRD (which the
//! simulator serves) and the controller's rights. A moved tag, a real
//! https download, two replicas, what is written of the status, and
//! when, cosign signatures, a deleted one's policy report results, a registry
//! that dribbles bytes and what the store keeps are
//! the modules beside this one's.

mod cosign;
mod https;
mod moved_tag;
mod replicas;
mod report_results;
mod scoped;
mod slow_registry;
mod status_writes;
mod store_sharing;
pub(crate) mod support;

use crate::cache_support::{Setup, WAIT, deployment, wait_synced};
use crate::common::{plugin, scratch};
use crate::kubectl_support::{Env, env, have_kubectl};
use crate::registry_support::*;
use base64::Engine;
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::{apply, create_pod, push, run, wait_condition, winkplugin};
use wink_sim::{Sim, SimConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winkplugin_is_pulled_loaded_swapped_on_edit_kept_across_restarts_and_unloaded_on_delete() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins", SimConfig::default()).await;
    let s = Setup::new("winkplugins", &env.sim);
    s.install("pod_logger", "good", None);
    let mut reg = Registry::start("winkplugins_registry");
    let reference = format!("{}/wink/logger:v1", reg.host());
    let digest = push(&reg, &reference, &plugin("pod_logger"));
    // A component whose layer the registry serves damaged.
    let tampered = format!("{}/wink/tampered:v1", reg.host());
    let bytes = std::fs::read(plugin("deployment_lister")).unwrap();
    push(&reg, &tampered, &plugin("deployment_lister"));
    let blob = reg.blob_file(&sha256(&bytes));
    let mut damaged = std::fs::read(&blob).unwrap();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xff;
    std::fs::write(&blob, &damaged).unwrap();
    let store = scratch("winkplugins_store").join("store");

    let mut wink = run(&s, &reg.host(), &store);
    wink.wait_for_line("watching WinkPlugins", WAIT);
    wait_synced(&wink, "good");
    let logger = |tag: &str| {
        winkplugin(
            "logger",
            json!({"source": {"oci": reference}, "config": {"tag": tag}}),
        )
    };
    apply(&env, &logger("a")).await;
    wink.wait_for_line(
        &format!("WinkPlugin fetched winkplugin=logger reference={reference} digest={digest} from=registry"),
        WAIT,
    );
    wait_synced(&wink, "logger");
    create_pod(&env.sim, "p1").await;
    wink.wait_for_line("[logger] OnAdd:a p1", WAIT);
    wink.wait_for_line("[good] OnAdd: p1", WAIT);
    let object = wait_condition(&env, "logger", "Ready", |c| c["status"] == "True").await;
    assert_eq!(object["status"]["digest"], digest.as_str(), "{object:#}");
    assert_eq!(
        object["status"]["observedGeneration"],
        object["metadata"]["generation"]
    );
    // What the component was written in, from its metadata, and what
    // compiled it here.
    assert_eq!(object["status"]["language"], "rust", "{object:#}");
    assert!(
        ["cranelift", "winch"].contains(&object["status"]["compiler"].as_str().unwrap_or("")),
        "{object:#}"
    );
    for kind in ["Pulled", "Loaded", "Synced"] {
        let c = object["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == kind)
            .unwrap();
        assert_eq!(c["status"], "True", "{kind}: {object:#}");
        assert!(
            c["lastTransitionTime"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{c}"
        );
    }
    let table = env.ok(&["get", "winkplugins"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "SOURCE", "DIGEST", "MODE", "READY", "AGE"],
        "{table}"
    );
    let row = table.lines().find(|l| l.starts_with("logger ")).expect(&table);
    for cell in [reference.as_str(), digest.as_str(), "enforce", "True"] {
        assert!(row.split_whitespace().any(|c| c == cell), "{cell} in {row}");
    }
    // Language and compiler are the wide table's.
    let wide = env.ok(&["get", "winkplugins", "-o", "wide"]).await;
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(&header[6..], ["LANGUAGE", "COMPILER"], "{wide}");
    let row: Vec<&str> = wide
        .lines()
        .find(|l| l.starts_with("logger "))
        .expect(&wide)
        .split_whitespace()
        .collect();
    assert_eq!(row[6], "rust", "{wide}");
    assert_eq!(
        env.ok(&["get", "wp", "-o", "name"]).await.trim(),
        "winkplugin.wink.dev/logger"
    );

    // An edit of the config swaps it: the new instance has the new config
    // and every Pod, the one created during the swap too.
    apply(&env, &logger("b")).await;
    create_pod(&env.sim, "p2").await;
    wink.wait_for_line("[logger] OnAdd:b p1", WAIT);
    wink.wait_for_line("[logger] OnAdd:b p2", WAIT);
    wait_condition(&env, "logger", "Ready", |c| {
        c["status"] == "True" && c["observedGeneration"] == 2
    })
    .await;

    // Damaged bytes, a name the directory has: False, with why; the rest runs.
    apply(
        &env,
        &winkplugin("tampered", json!({"source": {"oci": tampered}})),
    )
    .await;
    let object = wait_condition(&env, "tampered", "Pulled", |c| c["status"] == "False").await;
    let pulled = object["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Pulled")
        .unwrap();
    assert_eq!(pulled["reason"], "DigestMismatch", "{object:#}");
    assert!(
        pulled["message"].as_str().unwrap().contains("digest mismatch"),
        "{pulled}"
    );
    assert!(
        object["status"]["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("digest mismatch"))
    );
    let ready = object["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert_eq!(
        (&ready["status"], &ready["reason"]),
        (&json!("False"), &json!("DigestMismatch"))
    );
    apply(&env, &winkplugin("good", json!({"source": {"oci": reference}}))).await;
    let object = wait_condition(&env, "good", "Loaded", |c| c["status"] == "False").await;
    let loaded = object["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Loaded")
        .unwrap();
    assert_eq!(loaded["reason"], "NameClash", "{object:#}");
    assert!(
        loaded["message"].as_str().unwrap().contains("has good.wasm"),
        "{loaded}"
    );
    create_pod(&env.sim, "p3").await;
    wink.wait_for_line("[logger] OnAdd:b p3", WAIT);
    wink.wait_for_line("[good] OnAdd: p3", WAIT);
    assert_eq!(
        wink.lines()
            .iter()
            .filter(|l| l.contains("[good] OnAdd: p3"))
            .count(),
        1,
        "the directory's plugin alone answers to its name"
    );

    // An https source pinned by its sha256: a component the store has
    // needs no network (the host does not resolve).
    let layer = sha256(&std::fs::read(plugin("pod_logger")).unwrap());
    let url = "https://unreachable.invalid/pod_logger.wasm";
    let https = json!({"source": {"https": url, "sha256": layer}, "config": {"tag": "h"}});
    apply(&env, &winkplugin("from-https", https)).await;
    let object = wait_condition(&env, "from-https", "Ready", |c| c["status"] == "True").await;
    assert_eq!(object["status"]["digest"], layer.as_str());
    assert_eq!(object["status"]["source"], url);
    wink.wait_for_line("[from-https] OnAdd:h p3", WAIT);
    wink.terminate(WAIT).expect("stops");

    // The registry gone, a restart loads the pinned digest from the store.
    reg.stop();
    let mut wink = run(&s, &reg.host(), &store);
    wink.wait_for_line(
        &format!("WinkPlugin fetched winkplugin=logger reference={reference} digest={digest} from=store"),
        WAIT,
    );
    wait_synced(&wink, "logger");
    wink.wait_for_line("[logger] OnAdd:b p3", WAIT);

    // Deleted, it is unloaded: no later Pod reaches it.
    env.ok(&["delete", "winkplugin", "logger"]).await;
    wink.wait_for_line(
        "WinkPlugin deleted: its plugin is unloaded winkplugin=logger",
        WAIT,
    );
    create_pod(&env.sim, "p4").await;
    wink.wait_for_line("[good] OnAdd: p4", WAIT);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !wink.lines().iter().any(|l| l.contains("[logger] OnAdd:b p4")),
        "an unloaded plugin takes no events"
    );
    wink.terminate(WAIT).expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_ship_the_crd_and_the_controllers_rights() {
    if !have_kubectl() {
        return;
    }
    let dir = scratch("winkplugins_manifests");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin("pod_logger"), plugins.join("logger.wasm")).unwrap();
    let out = wink_ok(&[
        "manifests",
        "--plugins",
        plugins.to_str().unwrap(),
        "--winkplugins",
        "--namespace",
        "ops",
    ]);
    let docs: Vec<Value> = out
        .split("\n---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_norway::from_str(d).unwrap())
        .collect();
    let crd = docs
        .iter()
        .find(|d| d["kind"] == "CustomResourceDefinition")
        .expect("the CRD");
    assert_eq!(crd["metadata"]["name"], "winkplugins.wink.dev");
    assert_eq!(crd["spec"]["scope"], "Cluster");
    assert_eq!(crd["spec"]["names"]["shortNames"], json!(["wp"]));
    let role = docs
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "wink-winkplugins")
        .expect("the ClusterRole");
    let rule = |resource: &str| {
        role["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resources"] == json!([resource]))
            .cloned()
    };
    assert_eq!(
        rule("winkplugins").unwrap()["verbs"],
        json!(["get", "list", "watch"])
    );
    assert!(
        rule("winkplugins/status").unwrap()["verbs"]
            .as_array()
            .unwrap()
            .contains(&json!("update"))
    );
    // A WinkPlugin's scope may select namespaces by label.
    assert_eq!(rule("namespaces").unwrap()["verbs"], json!(["list", "watch"]));
    let secrets = docs
        .iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "wink-winkplugins")
        .expect("the Role on Secrets");
    assert_eq!(secrets["metadata"]["namespace"], "ops");
    assert_eq!(
        secrets["rules"],
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])
    );
    for kind in ["ClusterRoleBinding", "RoleBinding"] {
        let b = docs
            .iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == "wink-winkplugins")
            .expect(kind);
        assert_eq!(b["subjects"][0]["name"], "wink");
    }
    // Without the flag, none of it.
    let plain = wink_ok(&["manifests", "--plugins", plugins.to_str().unwrap()]);
    assert!(!plain.contains("winkplugins"), "{plain}");

    // The CRD is one the API server takes: objects of it are listed.
    let env = env("winkplugins_manifests", SimConfig::default()).await;
    apply(&env, crd).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let (ok, _, err) = env.run(&["get", "winkplugins"]).await;
        if ok {
            break;
        }
        assert!(Instant::now() < deadline, "{err}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    apply(
        &env,
        &winkplugin("x", json!({"source": {"oci": "localhost:1/x:v1"}})),
    )
    .await;
    assert_eq!(env.items(&["get", "wp"]).await.len(), 1);
}

/// Whether the Deployment `name` has the label `team`, once `want` holds.
async fn wait_labelled(sim: &Sim, name: &str, want: bool) {
    let deployments: Api<Deployment> = Api::namespaced(sim.client(), "default");
    let deadline = Instant::now() + WAIT;
    loop {
        let d = deployments.get(name).await.unwrap();
        if d.labels().contains_key("team") == want {
            return;
        }
        assert!(Instant::now() < deadline, "{name}: labelled is not {want}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winkplugins_grant_edited_from_audit_to_enforce_changes_what_it_writes_without_a_restart() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_grant", SimConfig::default()).await;
    let s = Setup::new("winkplugins_grant", &env.sim);
    let reg = Registry::start("winkplugins_grant_registry");
    let reference = format!("{}/wink/require-labels:v1", reg.host());
    push(&reg, &reference, &plugin("require_labels"));
    let store = scratch("winkplugins_grant_store").join("store");
    let wink = run(&s, &reg.host(), &store);
    wink.wait_for_line("watching WinkPlugins", WAIT);
    let with_mode = |mode: &str| {
        winkplugin(
            "require-labels",
            json!({"source": {"oci": reference}, "grant": {
                "mode": mode, "events": true,
                "writes": [{"apiVersion": "apps/v1", "kind": "Deployment", "verbs": ["patch"]}]}}),
        )
    };
    apply(&env, &with_mode("audit")).await;
    wait_synced(&wink, "require-labels");
    let deployments: Api<Deployment> = Api::namespaced(env.sim.client(), "default");
    let pp = PostParams::default();
    deployments
        .create(&pp, &deployment("default", "web", 1))
        .await
        .unwrap();
    wink.wait_for_line(
        "require-labels: default/web: missing label team: would be set to (audit mode: nothing changed)",
        WAIT,
    );
    wait_labelled(&env.sim, "web", false).await;
    let object = wait_condition(&env, "require-labels", "Ready", |c| c["status"] == "True").await;
    assert_eq!(object["status"]["mode"], "audit");

    // Enforce: the next write persists; the plugin was not loaded again.
    apply(&env, &with_mode("enforce")).await;
    wait_condition(&env, "require-labels", "Ready", |c| c["observedGeneration"] == 2).await;
    deployments
        .create(&pp, &deployment("default", "api", 1))
        .await
        .unwrap();
    wait_labelled(&env.sim, "api", true).await;
    let object = wait_condition(&env, "require-labels", "Ready", |c| c["status"] == "True").await;
    assert_eq!(object["status"]["mode"], "enforce");
    let loads = wink
        .lines()
        .iter()
        .filter(|l| l.contains("plugin synced plugin=require-labels"))
        .count();
    assert_eq!(loads, 1, "re-granted in place, not reloaded");

    // A component that declares another name than its WinkPlugin's is
    // refused, said in status, and the others run on.
    let named = format!("{}/wink/cache-probe:v1", reg.host());
    push(&reg, &named, &plugin("cache_probe"));
    let misnamed = json!({"source": {"oci": named}, "config": {"name": "other"}});
    apply(&env, &winkplugin("misnamed", misnamed)).await;
    let object = wait_condition(&env, "misnamed", "Loaded", |c| c["status"] == "False").await;
    let error = object["status"]["lastError"].as_str().unwrap();
    assert!(
        error.contains(r#"the component declares the name "other""#),
        "{object:#}"
    );
    deployments
        .create(&pp, &deployment("default", "db", 1))
        .await
        .unwrap();
    wait_labelled(&env.sim, "db", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_registry_takes_the_pull_secret_a_winkplugin_names() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_private", SimConfig::default()).await;
    let s = Setup::new("winkplugins_private", &env.sim);
    let reg = Registry::start_private("winkplugins_private_registry", "alice", "s3cret");
    let host = reg.host();
    let reference = format!("{host}/team/private:v1");
    let dir = scratch("winkplugins_private_files");
    // base64("alice:s3cret")
    let config = format!(r#"{{"auths": {{"{host}": {{"auth": "YWxpY2U6czNjcmV0"}}}}}}"#);
    let auth = dir.join("config.json");
    std::fs::write(&auth, &config).unwrap();
    let file = plugin("pod_logger");
    let pushed = wink_ok(&[
        "push",
        &reference,
        file.to_str().unwrap(),
        "--plain-http",
        &host,
        "--registry-auth",
        auth.to_str().unwrap(),
    ]);
    let digest = pushed.split_once('@').unwrap().1.to_string();
    let wink = run(&s, &host, &dir.join("store"));
    wink.wait_for_line("watching WinkPlugins", WAIT);

    let private = |secret: &str| {
        winkplugin(
            "private",
            json!({"source": {"oci": reference}, "pullSecret": secret}),
        )
    };
    // No credentials, then a Secret that is not there: False, with why.
    apply(
        &env,
        &winkplugin("private", json!({"source": {"oci": reference}})),
    )
    .await;
    let object = wait_condition(&env, "private", "Pulled", |c| c["status"] == "False").await;
    let pulled = &object["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Pulled")
        .unwrap()
        .clone();
    assert_eq!(pulled["reason"], "Unauthorized", "{object:#}");
    apply(&env, &private("regcred")).await;
    let object = wait_condition(&env, "private", "Pulled", |c| c["reason"] == "PullSecret").await;
    assert!(
        object["status"]["lastError"].as_str().unwrap().contains(
            "the pull Secret default/regcred cannot be read: it does not exist or wink may not read it"
        ),
        "{object:#}"
    );
    // The Secret appears: the retry pulls with its credentials.
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "regcred", "namespace": "default"},
        "data": {".dockerconfigjson": base64::engine::general_purpose::STANDARD.encode(&config)}});
    apply(&env, &secret).await;
    let object = wait_condition(&env, "private", "Ready", |c| c["status"] == "True").await;
    assert_eq!(object["status"]["digest"], digest.as_str());
    wait_synced(&wink, "private");
    create_pod(&env.sim, "p1").await;
    wink.wait_for_line("[private] OnAdd: p1", WAIT);
}

/// The failure policies of the ValidatingWebhookConfiguration `wink`, once
/// they are `want`.
async fn wait_failure_policies(env: &Env, want: &[&str]) {
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, out, _) = env
            .run(&["get", "validatingwebhookconfiguration", "wink", "-o", "json"])
            .await;
        let c: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        let got: Vec<&str> = c["webhooks"]
            .as_array()
            .map(|ws| ws.iter().filter_map(|w| w["failurePolicy"].as_str()).collect())
            .unwrap_or_default();
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "failure policies {got:?}, not {want:?}: {c:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winkplugins_admission_failure_policy_overrides_the_plugins_own_without_a_reload() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_admission", SimConfig::default()).await;
    let s = Setup::new("winkplugins_admission", &env.sim);
    let reg = Registry::start("winkplugins_admission_registry");
    let reference = format!("{}/wink/admit-probe:v1", reg.host());
    push(&reg, &reference, &plugin("admit_probe"));
    let store = scratch("winkplugins_admission_store").join("store");
    let port = crate::cache_support::free_port();
    let (addr, url) = (format!("127.0.0.1:{port}"), format!("https://127.0.0.1:{port}"));
    let (reg_host, store_s) = (reg.host(), store.to_str().unwrap().to_string());
    let wink = s.run(&[
        "--winkplugins",
        "install",
        "--plain-http",
        &reg_host,
        "--oci-store",
        &store_s,
        "--admission-addr",
        &addr,
        "--admission-webhook-url",
        &url,
    ]);
    wink.wait_for_line("watching WinkPlugins", WAIT);
    let probe = |policy: Option<&str>| {
        let mut spec = json!({"source": {"oci": reference}});
        if let Some(p) = policy {
            spec["admission"] = json!({"failurePolicy": p});
        }
        winkplugin("probe", spec)
    };
    // The plugin declares Fail; the WinkPlugin says Ignore, then nothing.
    apply(&env, &probe(Some("Ignore"))).await;
    wait_synced(&wink, "probe");
    wait_failure_policies(&env, &["Ignore"]).await;
    apply(&env, &probe(None)).await;
    wait_failure_policies(&env, &["Fail"]).await;
    let loads = wink
        .lines()
        .iter()
        .filter(|l| l.contains("plugin synced plugin=probe"))
        .count();
    assert_eq!(loads, 1, "given in place, not reloaded");
}
