//! End-to-end: the team policy's `namespaceSelector`. Under a policy that
//! names no namespace and selects those labelled `wink.dev/team=true`, a
//! NamespacedWinkPlugin in an unlabelled namespace is refused
//! (`NotAllowed`); labelling the namespace loads it (`Ready`) and taking
//! the label off unloads it (`NotAllowed` again), wink running throughout.

use crate::cache_support::{Setup, WAIT, namespace};
use crate::kubectl_support::{env, have_kubectl};
use crate::team_plugins::{SimTeams, team_plugin, wait_condition};
use crate::winkplugins::support::{apply, condition};
use wink_sim::SimConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_labelled_into_the_selector_runs_team_plugins_and_out_of_it_does_not() {
    if !have_kubectl() {
        return;
    }
    let env = env("team_selector", SimConfig::default()).await;
    namespace(&env.sim, "team-x").await;
    let s = Setup::new("team_selector", &env.sim);
    let policy = "  namespaceSelector: {matchLabels: {wink.dev/team: \"true\"}}\n";
    let teams = SimTeams::start(&s, "team_selector", "cache_probe", policy, &[]);
    let (reference, wink) = (&teams.reference, &teams.wink);
    apply(&env, &team_plugin("team-x", reference, "default")).await;

    // Unlabelled: not allowed.
    let refused = wait_condition(&env, "team-x", "Loaded", |c| c["status"] == "False").await;
    let loaded = condition(&refused, "Loaded").unwrap();
    assert_eq!(loaded["reason"], "NotAllowed", "{refused:#}");
    assert!(
        loaded["message"]
            .as_str()
            .unwrap()
            .contains("team-x may not run team plugins"),
        "{refused:#}"
    );
    assert!(!wink.lines().iter().any(|l| l.contains("[probe--team-x]")));

    // Labelled in: it loads, without a restart.
    env.ok(&["label", "namespace", "team-x", "wink.dev/team=true"])
        .await;
    let ready = wait_condition(&env, "team-x", "Ready", |c| c["status"] == "True").await;
    assert_eq!(ready["status"]["team"], "team-x", "{ready:#}");
    assert_eq!(
        condition(&ready, "Loaded").unwrap()["status"],
        "True",
        "{ready:#}"
    );
    wink.wait_for_line("[probe--team-x] synced", WAIT);

    // Labelled out: it is unloaded, and its status says why.
    env.ok(&["label", "namespace", "team-x", "wink.dev/team-"]).await;
    let out = wait_condition(&env, "team-x", "Loaded", |c| c["reason"] == "NotAllowed").await;
    assert_eq!(out["status"]["ready"], "False", "{out:#}");
    wink.wait_for_line("team plugin no longer allowed: its plugin is unloaded", WAIT);
}
