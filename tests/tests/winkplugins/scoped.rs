//! End-to-end: a WinkPlugin's scope. `cache-probe`, pushed to the registry
//! and run as the WinkPlugin `probe` with `spec.match.namespaces`, is told
//! of the ConfigMaps of that namespace alone (the CRD keeps the field, the
//! controller hands it to the manager as the plugin's grant); its
//! `spec.match` edited to another namespace, what leaves is deleted for it
//! and what enters added, with no reload.

use super::support::{apply, push, run_args, wait_condition, winkplugin};
use crate::cache_support::{Setup, WAIT, config_map, namespace};
use crate::common::{plugin, scratch};
use crate::kubectl_support::{env, have_kubectl};
use crate::registry_support::Registry;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use wink_sim::SimConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winkplugins_match_scopes_it_and_an_edit_moves_the_scope() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_scoped", SimConfig::default()).await;
    let s = Setup::new("winkplugins_scoped", &env.sim);
    let reg = Registry::start("winkplugins_scoped_registry");
    let reference = format!("{}/wink/probe:v1", reg.host());
    push(&reg, &reference, &plugin("cache_probe"));
    for ns in ["one", "two"] {
        namespace(&env.sim, ns).await;
        Api::<ConfigMap>::namespaced(env.sim.client(), ns)
            .create(&PostParams::default(), &config_map(ns, "cm", json!({})))
            .await
            .unwrap();
    }
    let store = scratch("winkplugins_scoped_store").join("store");
    let args = run_args(&reg.host(), &store);
    let wink = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wink.wait_for_line("watching WinkPlugins", WAIT);
    let probe = |ns: &str| {
        winkplugin(
            "probe",
            json!({"source": {"oci": reference},
                   "config": {"name": "probe", "log_events": true,
                              "watches": [{"api_version": "v1", "kind": "ConfigMap"}]},
                   "match": {"namespaces": [ns]}}),
        )
    };
    apply(&env, &probe("one")).await;
    wait_condition(&env, "probe", "Ready", |c| c["status"] == "True").await;
    wink.wait_for_line("[probe] event add one/cm watch=0 initial=true", WAIT);
    assert!(
        !wink.lines().iter().any(|l| l.contains("[probe] event add two/")),
        "{:#?}",
        wink.lines()
    );
    let stored = env
        .ok(&[
            "get",
            "winkplugin",
            "probe",
            "-o",
            "jsonpath={.spec.match.namespaces[0]}",
        ])
        .await;
    assert_eq!(stored.trim(), "one", "the CRD keeps spec.match");

    apply(&env, &probe("two")).await;
    wink.wait_for_line("[probe] event delete one/cm watch=0", WAIT);
    wink.wait_for_line("[probe] event add two/cm watch=0 initial=false", WAIT);
    let loads = wink
        .lines()
        .iter()
        .filter(|l| l.contains("plugin loaded from"))
        .count();
    assert_eq!(loads, 1, "{:#?}", wink.lines());
}
