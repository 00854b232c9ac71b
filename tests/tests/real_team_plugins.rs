//! On the real kube-apiserver (see `envtest`): team plugins. wink installs
//! the NamespacedWinkPlugin CRD (which the real server validates); two
//! teams' NamespacedWinkPlugins of `cache-probe`, applied with kubectl, are
//! each told of their own namespace's Pods only and their cache queries of
//! every Pod, of the other namespace's and of the other team's Pod by key
//! answer with their own alone (the shared server holds other tests' Pods
//! too); a namespace outside the team policy gets a status saying so.

use crate::cache_support::{Setup, WAIT, lines_starting, pod};
use crate::common::{plugin, scratch};
use crate::envtest;
use crate::registry_support::{Registry, push};
use crate::team_plugins::team_plugin;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_team_sees_only_its_namespace_on_the_real_server() {
    let Some(cp) = envtest::shared() else { return };
    let client = cp.client().await;
    let (a, b, c) = (
        cp.namespace("team-a").await,
        cp.namespace("team-b").await,
        cp.namespace("team-c").await,
    );
    let s = Setup::with_kubeconfig("real_team_plugins", &cp.kubeconfig);
    let reg = Registry::start("real_team_plugins_registry");
    let reference = format!("{}/teams/probe:v1", reg.host());
    push(&reg, &reference, &plugin("cache_probe"));
    for ns in [&a, &b, &c] {
        Api::<Pod>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &pod(ns, "p", json!({}), None))
            .await
            .unwrap();
    }
    let grants = scratch("real_team_plugins_grants").join("grants.yaml");
    std::fs::write(
        &grants,
        format!(
            "teams:\n  namespaces: [{a}, {b}]\n  registries: [\"{}/teams\"]\n",
            reg.host()
        ),
    )
    .unwrap();
    let store = scratch("real_team_plugins_store").join("store");
    let wink = s.run(&[
        "--winkplugins",
        "install",
        "--plain-http",
        &reg.host(),
        "--oci-store",
        store.to_str().unwrap(),
        "--grants",
        grants.to_str().unwrap(),
    ]);
    wink.wait_for_line("watching NamespacedWinkPlugins", WAIT);
    let kubectl = cp.kubectl(&scratch("real_team_plugins_kubectl"));
    for (ns, other) in [(&a, &b), (&b, &a), (&c, &a)] {
        let (ok, out, err) = kubectl
            .apply(&team_plugin(ns, &reference, other).to_string())
            .await;
        assert!(ok, "{err}\n{out}");
    }
    let condition = |v: &Value, kind: &str| {
        v["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .cloned()
    };
    let wait = async |ns: &str, kind: &str, status: &str| {
        let deadline = Instant::now() + WAIT;
        loop {
            let (_, out, _) = kubectl
                .run(&["get", "namespacedwinkplugin", "probe", "-n", ns, "-o", "json"])
                .await;
            let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
            if condition(&v, kind).is_some_and(|c| c["status"] == status) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "{ns}: no {kind}={status}: {v:#}\n{}",
                wink.lines().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    };
    for ns in [&a, &b] {
        let v = wait(ns, "Ready", "True").await;
        assert_eq!(v["status"]["team"], ns.as_str(), "{v:#}");
    }
    let refused = wait(&c, "Loaded", "False").await;
    assert_eq!(
        condition(&refused, "Loaded").unwrap()["reason"],
        "NotAllowed",
        "{refused:#}"
    );

    for ns in [&a, &b] {
        Api::<Pod>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &pod(ns, "trigger", json!({}), None))
            .await
            .unwrap();
    }
    for ns in [&a, &b] {
        let name = format!("probe--{ns}");
        wink.wait_for_line(&format!("[{name}] probe done"), WAIT);
        assert_eq!(
            lines_starting(&wink, &name, "query "),
            [
                format!("query 0 list Pod: ok [{ns}/p {ns}/trigger]"),
                "query 1 list Pod: ok []".to_string(),
                "query 2 get Pod: ok [none]".to_string(),
            ],
            "{name} sees its own Pods only"
        );
        let events = lines_starting(&wink, &name, "event add ");
        assert!(
            !events.is_empty() && events.iter().all(|l| l.starts_with(&format!("event add {ns}/"))),
            "{events:#?}"
        );
    }
}
