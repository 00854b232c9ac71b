//! End-to-end: a WinkPlugin's policy results in the PolicyReports. The
//! `pod-security` component, pushed to the registry and run as the
//! WinkPlugin `psa`, reports under the policy `psa` beside the plugin
//! directory's `pod-security`, in the same reports; deleting the WinkPlugin
//! takes every `psa` result out of them, while `pod-security`'s stay, and
//! follow a Pod created after.

use super::support::{apply, push, run_args, wait_condition, winkplugin};
use crate::cache_support::{Setup, WAIT, namespace};
use crate::common::{plugin, scratch};
use crate::kubectl_support::{env, have_kubectl};
use crate::registry_support::Registry;
use crate::report_support::{Row, expected, until_reports, violating_pod};
use serde_json::json;
use std::collections::BTreeSet;
use wink_sim::{Sim, SimConfig};

/// Pods as (namespace, name, flaw).
type Pods = Vec<(String, String, usize)>;

/// The rows `pod-security`'s rules give about `pods` under `policy`.
fn rows_of(pods: &Pods, policy: &str) -> BTreeSet<Row> {
    expected(pods)
        .into_iter()
        .map(|(ns, name, _, rule, result)| (ns, name, policy.to_string(), rule, result))
        .collect()
}

/// The Pod `name` in `team-a`, breaking the rule `flaw` (none for 0).
fn create(sim: &Sim, pods: &mut Pods, name: &str, flaw: usize) {
    sim.insert(violating_pod("team-a", name, flaw)).unwrap();
    pods.push(("team-a".to_string(), name.to_string(), flaw));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_winkplugins_report_results_go_while_another_plugins_stay() {
    if !have_kubectl() {
        return;
    }
    let env = env("winkplugins_reports", SimConfig::default()).await;
    let s = Setup::new("winkplugins_reports", &env.sim);
    s.install("pod_security", "pod-security", None);
    let reg = Registry::start("winkplugins_reports_registry");
    let reference = format!("{}/wink/pod-security:v1", reg.host());
    push(&reg, &reference, &plugin("pod_security"));
    namespace(&env.sim, "team-a").await;
    let mut pods = Pods::new();
    for (name, flaw) in [("privileged", 1), ("host-path", 3), ("compliant", 0)] {
        create(&env.sim, &mut pods, name, flaw);
    }
    let store = scratch("winkplugins_reports_store").join("store");
    let mut args = run_args(&reg.host(), &store);
    args.extend(["--report-batch-ms", "200"].map(String::from));
    let wink = s.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wink.wait_for_line("watching WinkPlugins", WAIT);
    until_reports(&env.sim, &rows_of(&pods, "pod-security"), WAIT).await;

    // The WinkPlugin's results join the directory plugin's, under its name.
    apply(&env, &winkplugin("psa", json!({"source": {"oci": reference}}))).await;
    wait_condition(&env, "psa", "Ready", |c| c["status"] == "True").await;
    let both: BTreeSet<Row> = rows_of(&pods, "pod-security")
        .into_iter()
        .chain(rows_of(&pods, "psa"))
        .collect();
    until_reports(&env.sim, &both, WAIT).await;

    // Deleted: no report holds a `psa` result; `pod-security`'s stay.
    env.ok(&["delete", "winkplugin", "psa"]).await;
    wink.wait_for_line("WinkPlugin deleted: its plugin is unloaded winkplugin=psa", WAIT);
    until_reports(&env.sim, &rows_of(&pods, "pod-security"), WAIT).await;

    // A Pod created after: `pod-security` reports it, `psa` does not.
    create(&env.sim, &mut pods, "host-ports", 5);
    until_reports(&env.sim, &rows_of(&pods, "pod-security"), WAIT).await;
}
