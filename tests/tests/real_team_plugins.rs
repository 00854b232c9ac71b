//! On the real kube-apiserver (see `envtest`): team plugins. wink installs
//! the NamespacedWinkPlugin CRD (which the real server validates); two
//! teams' NamespacedWinkPlugins of `cache-probe`, applied with kubectl, are
//! each told of their own namespace's Pods only and their cache queries of
//! every Pod, of the other namespace's and of the other team's Pod by key
//! answer with their own alone (the shared server holds other tests' Pods
//! too); a namespace outside the team policy gets a status saying so. A
//! team's `pod-security` writes its results, each saying its team, in its
//! namespace's PolicyReport, and `wink_plugin_info` gives its team. Under
//! `limits.plugins: 1`, a second NamespacedWinkPlugin of a namespace waits
//! (`TooManyPlugins`) and loads once the first is deleted. Under a policy
//! of `namespaceSelector` alone, a namespace's NamespacedWinkPlugin is
//! refused (`NotAllowed`), loads once the namespace is labelled, and is
//! unloaded once the label is taken off. A team's `spec.grant.limits.fuel`
//! is kept by the server and is the plugin's fuel cap.

use crate::cache_support::{Setup, WAIT, lines_starting, pod};
use crate::common::{Wink, plugin, scratch};
use crate::envtest;
use crate::registry_support::{Registry, push};
use crate::team_plugins::team_plugin;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::path::Path;
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
    for ns in [&a, &b, &c] {
        Api::<Pod>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &pod(ns, "p", json!({}), None))
            .await
            .unwrap();
    }
    let policy = format!("  namespaces: [{a}, {b}]\n");
    let daemon = TeamDaemon::start(&cp.kubeconfig, "real_team_plugins", "cache_probe", &policy, &[]);
    let (reference, wink) = (&daemon.reference, &daemon.wink);
    let kubectl = cp.kubectl(&scratch("real_team_plugins_kubectl"));
    for (ns, other) in [(&a, &b), (&b, &a), (&c, &a)] {
        let (ok, out, err) = kubectl
            .apply(&team_plugin(ns, reference, other).to_string())
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
            lines_starting(wink, &name, "query "),
            [
                format!("query 0 list Pod: ok [{ns}/p {ns}/trigger]"),
                "query 1 list Pod: ok []".to_string(),
                "query 2 get Pod: ok [none]".to_string(),
            ],
            "{name} sees its own Pods only"
        );
        let events = lines_starting(wink, &name, "event add ");
        assert!(
            !events.is_empty() && events.iter().all(|l| l.starts_with(&format!("event add {ns}/"))),
            "{events:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_plugins_report_says_its_team_on_the_real_server() {
    // A server of its own: the daemon of the test above would pass over
    // this NamespacedWinkPlugin too (and this one over its own).
    let Some(cp) = envtest::ControlPlane::start(&envtest::Options::default()) else {
        return;
    };
    let client = cp.client().await;
    let team = cp.namespace("team-reports").await;
    let privileged = crate::report_support::violating_pod(&team, "priv", 1);
    Api::<Pod>::namespaced(client.clone(), &team)
        .create(
            &PostParams::default(),
            &serde_json::from_value(privileged).unwrap(),
        )
        .await
        .unwrap();
    let admin = format!("127.0.0.1:{}", crate::cache_support::free_port());
    let policy = format!("  namespaces: [{team}]\n");
    let flags = ["--admin-addr", &admin, "--report-batch-ms", "200"];
    let daemon = TeamDaemon::start(
        &cp.kubeconfig,
        "real_team_plugins_reports",
        "pod_security",
        &policy,
        &flags,
    );
    let reference = &daemon.reference;
    let object = json!({"apiVersion": "wink.dev/v1alpha1", "kind": "NamespacedWinkPlugin",
        "metadata": {"name": "pods", "namespace": team}, "spec": {"source": {"oci": reference}}});
    let kubectl = cp.kubectl(&scratch("real_team_plugins_reports_kubectl"));
    let (ok, out, err) = kubectl.apply(&object.to_string()).await;
    assert!(ok, "{err}\n{out}");
    let name = format!("pods--{team}");
    crate::team_plugins::until_team_results(&client, &team, &name, None).await;
    let (code, text) = crate::cache_support::http(&admin, "GET", "/metrics").await;
    assert_eq!(code, 200);
    let line = format!(r#"wink_plugin_info{{plugin="{name}",team="{team}"}} 1"#);
    assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_of_a_teams_plugins_one_waits_on_the_real_server() {
    // A server of its own: another test's daemon would pass over these too.
    let Some(cp) = envtest::ControlPlane::start(&envtest::Options::default()) else {
        return;
    };
    let team = cp.namespace("team-cap").await;
    let policy = format!("  namespaces: [{team}]\n  limits: {{plugins: 1}}\n");
    let daemon = TeamDaemon::start(
        &cp.kubeconfig,
        "real_team_plugins_cap",
        "cache_probe",
        &policy,
        &[],
    );
    let (reference, wink) = (&daemon.reference, &daemon.wink);
    let kubectl = cp.kubectl(&scratch("real_team_plugins_cap_kubectl"));
    let wait = async |name: &str, want: (&str, &str)| until_loaded(&kubectl, &team, name, want, wink).await;
    let probe = |name: &str| crate::team_caps::named_probe(&team, name, reference).to_string();
    let (ok, out, err) = kubectl.apply(&probe("first")).await;
    assert!(ok, "{err}\n{out}");
    wait("first", ("True", "Loaded")).await;
    let (ok, out, err) = kubectl.apply(&probe("second")).await;
    assert!(ok, "{err}\n{out}");
    let v = wait("second", ("False", "TooManyPlugins")).await;
    assert!(v.to_string().contains("(teams.limits.plugins: 1)"), "{v:#}");
    wait("first", ("True", "Loaded")).await;
    let (ok, out, err) = kubectl
        .run(&["delete", "namespacedwinkplugin", "first", "-n", team.as_str()])
        .await;
    assert!(ok, "{err}\n{out}");
    wait("second", ("True", "Loaded")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_labelled_in_and_out_of_the_selector_on_the_real_server() {
    // A server of its own: another test's daemon would pass over this one too.
    let Some(cp) = envtest::ControlPlane::start(&envtest::Options::default()) else {
        return;
    };
    let team = cp.namespace("team-sel").await;
    let policy = "  namespaceSelector: {matchLabels: {wink.dev/team: \"true\"}}\n";
    let daemon = TeamDaemon::start(
        &cp.kubeconfig,
        "real_team_plugins_selector",
        "cache_probe",
        policy,
        &[],
    );
    let (reference, wink) = (&daemon.reference, &daemon.wink);
    let kubectl = cp.kubectl(&scratch("real_team_plugins_selector_kubectl"));
    let wait = async |want: (&str, &str)| until_loaded(&kubectl, &team, "probe", want, wink).await;
    let (ok, out, err) = kubectl
        .apply(&team_plugin(&team, reference, "default").to_string())
        .await;
    assert!(ok, "{err}\n{out}");
    let v = wait(("False", "NotAllowed")).await;
    assert!(
        v.to_string()
            .contains(&format!("{team} may not run team plugins")),
        "{v:#}"
    );
    kubectl
        .ok(&["label", "namespace", team.as_str(), "wink.dev/team=true"])
        .await;
    let v = wait(("True", "Loaded")).await;
    assert_eq!(v["status"]["team"], team.as_str(), "{v:#}");
    wink.wait_for_line(&format!("[probe--{team}] synced"), WAIT);
    kubectl
        .ok(&["label", "namespace", team.as_str(), "wink.dev/team-"])
        .await;
    let v = wait(("False", "NotAllowed")).await;
    assert_eq!(v["status"]["ready"], "False", "{v:#}");
    wink.wait_for_line("team plugin no longer allowed: its plugin is unloaded", WAIT);
}

/// A team asks for less fuel than the policy's in `spec.grant.limits.fuel`:
/// the real server keeps the field (the CRD's schema has it, so it is not
/// pruned), and the plugin runs under the team's cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_plugins_fuel_cap_is_kept_by_the_real_server() {
    // A server of its own: another test's daemon would pass over this one too.
    let Some(cp) = envtest::ControlPlane::start(&envtest::Options::default()) else {
        return;
    };
    let team = cp.namespace("team-fuel").await;
    let admin = format!("127.0.0.1:{}", crate::cache_support::free_port());
    let policy = format!("  namespaces: [{team}]\n  limits: {{fuel: 20000000}}\n");
    let daemon = TeamDaemon::start(
        &cp.kubeconfig,
        "real_team_plugins_fuel",
        "cache_probe",
        &policy,
        &["--admin-addr", &admin],
    );
    let kubectl = cp.kubectl(&scratch("real_team_plugins_fuel_kubectl"));
    let mut probe = crate::team_caps::named_probe(&team, "metered", &daemon.reference);
    probe["spec"]["grant"] = json!({"limits": {"fuel": 5_000_000}});
    let (ok, out, err) = kubectl.apply(&probe.to_string()).await;
    assert!(ok, "{err}\n{out}");
    let stored = until_loaded(&kubectl, &team, "metered", ("True", "Loaded"), &daemon.wink).await;
    assert_eq!(stored["spec"]["grant"]["limits"]["fuel"], 5_000_000, "{stored:#}");
    let (code, plugins) = crate::cache_support::http(&admin, "GET", "/debug/plugins").await;
    assert_eq!(code, 200);
    let plugins: Value = serde_json::from_str(&plugins).unwrap();
    let name = format!("metered--{team}");
    let ours = plugins["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name);
    assert_eq!(
        ours.map(|p| p["fuel"].clone()),
        Some(json!(5_000_000)),
        "{plugins:#}"
    );
}

/// One test's team-plugin daemon: the test plugin `component` pushed to a
/// registry on loopback (as `<registry>/teams/<component>:v1`), a grants
/// file holding the team policy's lines `policy` and a `registries` line
/// allowing that registry's `teams/`, and wink run on `kubeconfig` with
/// `--winkplugins install` and `extra`, once it watches
/// NamespacedWinkPlugins. The registry and wink stop when it is dropped.
struct TeamDaemon {
    _registry: Registry,
    reference: String,
    wink: Wink,
}

impl TeamDaemon {
    fn start(kubeconfig: &Path, test: &str, component: &str, policy: &str, extra: &[&str]) -> TeamDaemon {
        let s = Setup::with_kubeconfig(test, kubeconfig);
        let registry = Registry::start(&format!("{test}_registry"));
        let host = registry.host();
        let reference = format!("{host}/teams/{}:v1", component.replace('_', "-"));
        push(&registry, &reference, &plugin(component));
        let grants = scratch(&format!("{test}_grants")).join("grants.yaml");
        let policy = format!("teams:\n{policy}  registries: [\"{host}/teams\"]\n");
        std::fs::write(&grants, policy).unwrap();
        let store = scratch(&format!("{test}_store")).join("store");
        let (store, grants) = (store.to_str().unwrap(), grants.to_str().unwrap());
        let mut args = vec![
            "--winkplugins",
            "install",
            "--plain-http",
            &host,
            "--oci-store",
            store,
            "--grants",
            grants,
        ];
        args.extend_from_slice(extra);
        let wink = s.run(&args);
        wink.wait_for_line("watching NamespacedWinkPlugins", WAIT);
        TeamDaemon {
            _registry: registry,
            reference,
            wink,
        }
    }
}

/// The NamespacedWinkPlugin `name` of `ns`, once its `Loaded` condition's
/// status and reason are `want` (`wink`'s lines said when it never is).
async fn until_loaded(
    kubectl: &envtest::Kubectl,
    ns: &str,
    name: &str,
    want: (&str, &str),
    wink: &Wink,
) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, out, _) = kubectl
            .run(&["get", "namespacedwinkplugin", name, "-n", ns, "-o", "json"])
            .await;
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        if crate::team_caps::loaded(&v) == (want.0.to_string(), want.1.to_string()) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{ns}/{name}: not {want:?}: {v:#}\n{}",
            wink.lines().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
