//! End-to-end: per-team caps. Under a team policy with `limits.cpu`,
//! `team-a`'s plugin spins 100 ms on every ConfigMap event of its namespace
//! (far past a quarter of a core) while `team-b`'s logs its own: team A's
//! deliveries are held back (`wink_team_throttled_seconds_total{team="team-a"}`
//! grows) while team B's plugin is told of every one of its ConfigMaps,
//! and both are loaded under the policy's memory cap. Under
//! `limits.plugins: 2`, a third NamespacedWinkPlugin of one namespace
//! waits (`TooManyPlugins`) while the two others run, and loads once one of
//! them is deleted. Under `limits.fuel`, team A's plugin, spinning, runs
//! out of fuel on each event (a `fuel` crash) while team B's, asking for
//! less fuel than the policy's and getting it, is told of every one.

use crate::cache_support::{Setup, WAIT, config_map, free_port, http, namespace};
use crate::kubectl_support::{env, have_kubectl};
use crate::team_plugins::SimTeams;
use crate::winkplugins::support::{apply, condition};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use wink_sim::SimConfig;

/// Team `ns`'s `probe`, watching its ConfigMaps, spinning `spin_ms` on each.
fn probe(ns: &str, reference: &str, spin_ms: u64) -> Value {
    json!({"apiVersion": "wink.dev/v1alpha1", "kind": "NamespacedWinkPlugin",
    "metadata": {"name": "probe", "namespace": ns},
    "spec": {"source": {"oci": reference},
             "config": {"name": format!("probe--{ns}"), "log_events": true, "spin_ms": spin_ms,
                        "watches": [{"api_version": "v1", "kind": "ConfigMap"}]}}})
}

/// One test's two teams on the simulated cluster: namespaces `team-a` and
/// `team-b`, and wink running `cache-probe` for them under the team
/// policy's lines `policy`, its admin server on `addr`. Fields drop in
/// order: wink stops before the cluster does.
struct TwoTeams {
    teams: SimTeams,
    addr: String,
    _setup: Setup,
    env: crate::kubectl_support::Env,
}

async fn two_teams(test: &str, policy: &str) -> TwoTeams {
    let env = env(test, SimConfig::default()).await;
    for ns in ["team-a", "team-b"] {
        namespace(&env.sim, ns).await;
    }
    let setup = Setup::new(test, &env.sim);
    let addr = format!("127.0.0.1:{}", free_port());
    let teams = SimTeams::start(&setup, test, "cache_probe", policy, &["--admin-addr", &addr]);
    TwoTeams {
        teams,
        addr,
        _setup: setup,
        env,
    }
}

/// ConfigMaps `cm-0` to `cm-{n-1}` in each team's namespace, one team's
/// after the other's.
async fn config_maps(env: &crate::kubectl_support::Env, n: usize) {
    for i in 0..n {
        for ns in ["team-a", "team-b"] {
            Api::<ConfigMap>::namespaced(env.sim.client(), ns)
                .create(
                    &PostParams::default(),
                    &config_map(ns, &format!("cm-{i}"), json!({})),
                )
                .await
                .unwrap();
        }
    }
}

/// The value of the metric line starting with `series` in `text`.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_team_is_held_to_its_share_and_the_other_team_gets_every_event() {
    if !have_kubectl() {
        return;
    }
    // A quarter of a core: team B's calls (about a millisecond each, a few
    // on a loaded machine: the share charges their wall time) stay far
    // within it while its ConfigMaps are created.
    let policy = "  namespaces: [team-a, team-b]\n  limits: {cpu: 0.25, memory: 48Mi}\n";
    let TwoTeams { env, addr, teams, .. } = two_teams("team_caps", policy).await;
    let (reference, wink) = (&teams.reference, &teams.wink);
    apply(&env, &probe("team-a", reference, 100)).await;
    apply(&env, &probe("team-b", reference, 0)).await;
    for ns in ["team-a", "team-b"] {
        wink.wait_for_line(&format!("[probe--{ns}] synced"), WAIT);
    }

    const N: usize = 20;
    config_maps(&env, N).await;
    let told = |ns: &str| {
        let prefix = format!("event add {ns}/cm-");
        wink.plugin_lines(&format!("probe--{ns}"))
            .iter()
            .filter(|l| l.starts_with(&prefix))
            .count()
    };
    wink.wait_until("team B told of every ConfigMap", WAIT, |_| told("team-b") == N);
    // 20 events of 100 ms at a quarter of a core take 8 s: team A is
    // still behind, held back.
    let deadline = Instant::now() + WAIT;
    let held = loop {
        let (_, text) = http(&addr, "GET", "/metrics").await;
        let held = metric(&text, "wink_team_throttled_seconds_total{team=\"team-a\"}");
        if held.is_some_and(|h| h > 0.0) {
            assert!(
                metric(&text, "wink_team_throttled_seconds_total{team=\"team-b\"}").unwrap_or(0.0) == 0.0,
                "team B, within its share, is never held:\n{text}"
            );
            break held.unwrap();
        }
        assert!(Instant::now() < deadline, "team A never held back:\n{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(held > 0.0);
    assert!(told("team-a") < N, "team A is held back while team B is done");
    // And it gets every event in the end: held back, never dropped.
    wink.wait_until("team A told of every ConfigMap", WAIT * 2, |_| {
        told("team-a") == N
    });

    let (_, plugins) = http(&addr, "GET", "/debug/plugins").await;
    let plugins: Value = serde_json::from_str(&plugins).unwrap_or(Value::Null);
    for ns in ["team-a", "team-b"] {
        let p = plugins["plugins"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == format!("probe--{ns}"))
            .unwrap_or_else(|| panic!("probe--{ns} in {plugins:#}"));
        assert_eq!(p["memory_mib"], 48, "the policy's memory cap: {p:#}");
    }
    let object = env
        .run(&[
            "get",
            "namespacedwinkplugin",
            "probe",
            "-n",
            "team-a",
            "-o",
            "json",
        ])
        .await
        .1;
    let object: Value = serde_json::from_str(&object).unwrap();
    assert_eq!(
        condition(&object, "Ready").map(|c| c["status"].clone()),
        Some(json!("True")),
        "{object:#}"
    );
}

/// A NamespacedWinkPlugin's name and `Loaded` (status, reason).
type Seen = (String, (String, String));

/// `ns`'s NamespacedWinkPlugin `name` of `cache-probe`, watching ConfigMaps.
pub(crate) fn named_probe(ns: &str, name: &str, reference: &str) -> Value {
    json!({"apiVersion": "wink.dev/v1alpha1", "kind": "NamespacedWinkPlugin",
    "metadata": {"name": name, "namespace": ns},
    "spec": {"source": {"oci": reference},
             "config": {"name": format!("{name}--{ns}"),
                        "watches": [{"api_version": "v1", "kind": "ConfigMap"}]}}})
}

/// The `Loaded` condition's (status, reason) of `object`.
pub(crate) fn loaded(object: &Value) -> (String, String) {
    let c = condition(object, "Loaded").unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (text(&c["status"]), text(&c["reason"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_of_a_teams_plugins_the_newest_waits_until_one_is_deleted() {
    if !have_kubectl() {
        return;
    }
    let env = env("team_caps_plugins", SimConfig::default()).await;
    namespace(&env.sim, "team-a").await;
    let s = Setup::new("team_caps_plugins", &env.sim);
    let policy = "  namespaces: [team-a]\n  limits: {plugins: 2}\n";
    let teams = SimTeams::start(&s, "team_caps_plugins", "cache_probe", policy, &[]);
    let (reference, wink) = (&teams.reference, &teams.wink);
    let all = async || -> Vec<Seen> {
        let (_, out, _) = env
            .run(&["get", "namespacedwinkplugin", "-n", "team-a", "-o", "json"])
            .await;
        let list: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let name = |o: &Value| o["metadata"]["name"].as_str().unwrap_or_default().to_string();
        items.iter().map(|o| (name(o), loaded(o))).collect()
    };
    let until = async |what: &str, pred: &dyn Fn(&[Seen]) -> bool| {
        let deadline = Instant::now() + WAIT;
        loop {
            let now = all().await;
            if pred(&now) {
                return now;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: {now:#?}\n{}",
                wink.lines().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let is = |status: &str, reason: &str| (status.to_string(), reason.to_string());
    let ran = is("True", "Loaded");
    for name in ["p1", "p2"] {
        apply(&env, &named_probe("team-a", name, reference)).await;
    }
    until("p1 and p2 loaded", &|now: &[Seen]| {
        now.len() == 2 && now.iter().all(|(_, l)| *l == ran)
    })
    .await;

    // One past the cap: exactly one waits, the newest; the two others run on.
    apply(&env, &named_probe("team-a", "p3", reference)).await;
    let now = until("p3 refused", &|now: &[Seen]| {
        now.iter().any(|(n, l)| n == "p3" && l.1 == "TooManyPlugins")
    })
    .await;
    let waiting: Vec<_> = now.iter().filter(|(_, l)| l.1 == "TooManyPlugins").collect();
    assert_eq!(waiting.len(), 1, "{now:#?}");
    assert_eq!(waiting[0].1, is("False", "TooManyPlugins"), "{now:#?}");
    for name in ["p1", "p2"] {
        assert!(now.contains(&(name.to_string(), ran.clone())), "{now:#?}");
    }
    let (_, out, _) = env
        .run(&["get", "namespacedwinkplugin", "p3", "-n", "team-a", "-o", "json"])
        .await;
    let p3: Value = serde_json::from_str(&out).unwrap();
    let message = condition(&p3, "Loaded").unwrap()["message"].clone();
    assert!(
        message
            .as_str()
            .unwrap()
            .contains("more than the 2 the operator lets one namespace run (teams.limits.plugins: 2)"),
        "{p3:#}"
    );
    assert!(
        !wink.lines().iter().any(|l| l.contains("[p3--team-a]")),
        "the waiting plugin runs nothing"
    );

    // One deleted: the waiting one loads, without a restart.
    env.ok(&["delete", "namespacedwinkplugin", "p1", "-n", "team-a"])
        .await;
    let now = until("p3 loaded once p1 is gone", &|now: &[Seen]| {
        now.len() == 2 && now.iter().all(|(_, l)| *l == ran)
    })
    .await;
    assert_eq!(
        now.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["p2", "p3"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_plugin_past_its_fuel_traps_and_the_other_team_runs_on() {
    if !have_kubectl() {
        return;
    }
    let policy = "  namespaces: [team-a, team-b]\n  limits: {fuel: 20000000}\n";
    let TwoTeams { env, addr, teams, .. } = two_teams("team_caps_fuel", policy).await;
    let (reference, wink) = (&teams.reference, &teams.wink);
    // 300 ms of spinning is hundreds of millions of instructions, and well
    // within the call deadline (1 s): only the fuel can stop it.
    apply(&env, &probe("team-a", reference, 300)).await;
    let mut b = probe("team-b", reference, 0);
    b["spec"]["grant"] = json!({"limits": {"fuel": 5_000_000}});
    apply(&env, &b).await;
    for ns in ["team-a", "team-b"] {
        wink.wait_for_line(&format!("[probe--{ns}] synced"), WAIT);
    }
    let (_, plugins) = http(&addr, "GET", "/debug/plugins").await;
    let plugins: Value = serde_json::from_str(&plugins).unwrap_or(Value::Null);
    let fuel = |ns: &str| {
        plugins["plugins"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == format!("probe--{ns}"))
            .map(|p| p["fuel"].clone())
    };
    assert_eq!(
        fuel("team-a"),
        Some(json!(20_000_000)),
        "the policy's: {plugins:#}"
    );
    assert_eq!(
        fuel("team-b"),
        Some(json!(5_000_000)),
        "asked less, got less: {plugins:#}"
    );

    const N: usize = 3;
    config_maps(&env, N).await;
    let prefix = "event add team-b/cm-";
    wink.wait_until("team B told of every ConfigMap", WAIT, |_| {
        let lines = wink.plugin_lines("probe--team-b");
        lines.iter().filter(|l| l.starts_with(prefix)).count() == N
    });
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, text) = http(&addr, "GET", "/metrics").await;
        let crashes = |ns: &str, kind: &str| {
            let plugin = format!("probe--{ns}");
            let labels = [("plugin", plugin.as_str()), ("kind", kind)];
            crate::admin::sample(&text, "wink_plugin_crashes_by_kind_total", &labels).unwrap_or(0.0)
        };
        if crashes("team-a", "fuel") >= 1.0 {
            assert_eq!(
                crashes("team-a", "deadline"),
                0.0,
                "fuel, not the deadline:\n{text}"
            );
            let b = crate::admin::sample(&text, "wink_plugin_crashes_total", &[("plugin", "probe--team-b")]);
            assert_eq!(b.unwrap_or(0.0), 0.0, "team B never crashed:\n{text}");
            break;
        }
        assert!(Instant::now() < deadline, "team A never ran out of fuel:\n{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        wink.lines().iter().any(|l| l.contains("all fuel consumed")),
        "the log says why:\n{}",
        wink.lines().join("\n")
    );
}
