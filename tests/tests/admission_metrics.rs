//! End-to-end: what the admin server's `/metrics` and `/debug/plugins` say
//! of admission. Reviews POSTed to wink's webhook server are counted per
//! plugin, door and result (`allowed`, `denied`, `patched`, and the failure
//! policy's answers, `trapped` and `deadline`, with the policy applied),
//! timed per door, a looping plugin's deadline counted; the plugin's calls
//! (`wink_plugin_calls_total`, `wink_plugin_handler_seconds`, and
//! `/debug/plugins`) include its admission calls.

use crate::admin::sample;
use crate::admission::{ask, ca_pem, pod, review, run};
use crate::cache_support::*;
use serde_json::{Value, json};
use wink_sim::{Sim, SimConfig};

/// The value of the sample whose line starts with `prefix` (a name and
/// all its labels, in order).
fn line_value(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix)?.trim().parse().ok())
}

async fn calls_in_debug(admin: &str, plugin: &str) -> u64 {
    let (status, body) = http(admin, "GET", "/debug/plugins").await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let p = v["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == plugin)
        .unwrap_or_else(|| panic!("no {plugin} in {v}"));
    p["calls"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_requests_are_counted_by_door_and_result_and_as_calls() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admission_metrics", &sim);
    s.install("admit_probe", "probe", None);
    let trap = json!({"behaviour": "trap", "failure": "ignore"});
    s.install("admit_probe", "trap-ignore", Some(&trap));
    s.install(
        "admit_probe",
        "loop-fail",
        Some(&json!({"behaviour": "loop", "timeout": 1})),
    );
    let port = free_port();
    let admin = format!("127.0.0.1:{}", free_port());
    // No configurations: only this test's reviews are counted. Calls may
    // run 5 s: the webhook's own deadline (under its 1 s timeout) answers.
    let args = [
        "--admin-addr",
        &admin,
        "--admission-configurations=false",
        "--call-deadline-ms",
        "5000",
    ];
    let wink = run(&s, port, &args);
    for p in ["probe", "trap-ignore", "loop-fail"] {
        wait_synced(&wink, p);
    }
    let ca = ca_pem(&sim).await;
    let (_, before) = http(&admin, "GET", "/metrics").await;
    let calls_before = sample(&before, "wink_plugin_calls_total", &[("plugin", "probe")]).unwrap();
    let handler_before = line_value(&before, r#"wink_plugin_handler_seconds_count{plugin="probe"}"#).unwrap();
    let debug_before = calls_in_debug(&admin, "probe").await;
    assert_eq!(debug_before as f64, calls_before);

    let ok = review("uid-ok", pod("ok", json!({})));
    let bad = review("uid-bad", pod("bad", json!({"deny": "1"})));
    for _ in 0..2 {
        assert_eq!(
            ask(port, &ca, "/admission/probe/validate", &ok).await["allowed"],
            true
        );
    }
    assert_eq!(
        ask(port, &ca, "/admission/probe/validate", &bad).await["allowed"],
        false
    );
    let r = ask(port, &ca, "/admission/probe/mutate", &ok).await;
    assert!(r["patch"].is_string(), "{r}");
    let r = ask(port, &ca, "/admission/trap-ignore/validate", &bad).await;
    assert_eq!(r["allowed"], true, "Ignore: {r}");
    let r = ask(port, &ca, "/admission/loop-fail/validate", &ok).await;
    assert_eq!(r["allowed"], false, "Fail: {r}");

    let (status, text) = http(&admin, "GET", "/metrics").await;
    assert_eq!(status, 200);
    let requests = |plugin: &str, door: &str, result: &str| {
        let labels = [("plugin", plugin), ("door", door), ("result", result)];
        sample(&text, "wink_admission_requests_total", &labels)
    };
    assert_eq!(requests("probe", "validate", "allowed"), Some(2.0), "{text}");
    assert_eq!(requests("probe", "validate", "denied"), Some(1.0), "{text}");
    assert_eq!(requests("probe", "mutate", "patched"), Some(1.0), "{text}");
    assert_eq!(requests("probe", "mutate", "allowed"), None, "{text}");
    let policy = |plugin: &str, result: &str, policy: &str| {
        let labels = [
            ("plugin", plugin),
            ("door", "validate"),
            ("result", result),
            ("policy", policy),
        ];
        sample(&text, "wink_admission_requests_total", &labels)
    };
    assert_eq!(policy("trap-ignore", "trapped", "Ignore"), Some(1.0), "{text}");
    assert_eq!(policy("loop-fail", "deadline", "Fail"), Some(1.0), "{text}");
    let deadlines = |plugin: &str| {
        let labels = [("plugin", plugin), ("door", "validate")];
        sample(&text, "wink_admission_deadlines_total", &labels)
    };
    assert_eq!(deadlines("loop-fail"), Some(1.0), "{text}");
    assert_eq!(deadlines("probe"), Some(0.0), "{text}");
    assert_eq!(deadlines("trap-ignore"), Some(0.0), "{text}");
    let timed = |plugin: &str, door: &str| {
        let prefix = format!(r#"wink_admission_request_seconds_count{{plugin="{plugin}",door="{door}"}}"#);
        line_value(&text, &prefix)
    };
    assert_eq!(timed("probe", "validate"), Some(3.0), "{text}");
    assert_eq!(timed("probe", "mutate"), Some(1.0), "{text}");
    // The deadline's request took its 0.8 s deadline: past the 0.5 s bucket.
    let under_half = r#"wink_admission_request_seconds_bucket{le="0.5",plugin="loop-fail",door="validate"}"#;
    assert_eq!(line_value(&text, under_half), Some(0.0), "{text}");

    // The plugin's calls: its four admission calls, in the metric, its
    // handler histogram and /debug/plugins.
    let calls = sample(&text, "wink_plugin_calls_total", &[("plugin", "probe")]).unwrap();
    assert_eq!(calls - calls_before, 4.0, "{text}");
    let handler = line_value(&text, r#"wink_plugin_handler_seconds_count{plugin="probe"}"#).unwrap();
    assert_eq!(handler - handler_before, 4.0, "{text}");
    assert_eq!(calls_in_debug(&admin, "probe").await as f64, calls);
    let looped = sample(&text, "wink_plugin_calls_total", &[("plugin", "loop-fail")]).unwrap();
    assert!(
        looped >= 1.0,
        "the call stopped at its deadline is counted: {text}"
    );
    drop(wink);
}

/// A shared webhook's path (`/admission/<a>.<b>/validate`): one review asks
/// each named plugin whose rules take it, and the answer merges theirs
/// (a denial naming its plugin, every warning, annotation keys prefixed
/// with the plugin); a plugin whose rules do not take the review is neither
/// asked nor counted; a name that is no loaded plugin gets Fail, as on a
/// path of its own; a shared path only validates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_webhook_asks_each_plugin_its_rules_take_and_counts_each() {
    use crate::admission::support::post;
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("admission_metrics_shared", &sim);
    s.install("admit_probe", "probe", None);
    let trap = json!({"behaviour": "trap", "failure": "ignore"});
    s.install("admit_probe", "trap-ignore", Some(&trap));
    let port = free_port();
    let admin = format!("127.0.0.1:{}", free_port());
    let args = ["--admin-addr", &admin, "--admission-configurations=false"];
    let wink = run(&s, port, &args);
    for p in ["probe", "trap-ignore"] {
        wait_synced(&wink, p);
    }
    let ca = ca_pem(&sim).await;
    let shared = "/admission/probe.trap-ignore/validate";

    let r = ask(port, &ca, shared, &review("uid-ok", pod("ok", json!({})))).await;
    assert_eq!(r["allowed"], true, "{r}");
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("admit-probe: checked ok")
            && warnings.contains("plugin trap-ignore gave no answer"),
        "each plugin's warning: {r}"
    );
    assert_eq!(r["auditAnnotations"]["probe.admit-probe/seen"], "ok", "{r}");

    let r = ask(
        port,
        &ca,
        shared,
        &review("uid-bad", pod("bad", json!({"deny": "1"}))),
    )
    .await;
    assert_eq!(r["allowed"], false, "{r}");
    assert_eq!(r["status"]["code"], 422, "{r}");
    assert_eq!(
        r["status"]["message"], "probe: admit-probe: pod bad is labelled deny",
        "{r}"
    );

    // A ConfigMap: no plugin's rules take it.
    let mut config_map: Value =
        serde_json::from_str(&review("uid-cm", json!({"metadata": {"name": "cm"}}))).unwrap();
    config_map["request"]["kind"]["kind"] = json!("ConfigMap");
    config_map["request"]["resource"]["resource"] = json!("configmaps");
    let r = ask(port, &ca, shared, &config_map.to_string()).await;
    assert_eq!(r["allowed"], true, "{r}");
    assert!(r.get("warnings").is_none(), "no plugin was asked: {r}");

    // A name that is no loaded plugin: Fail, naming it.
    let r = ask(
        port,
        &ca,
        "/admission/probe.ghost/validate",
        &review("uid-ghost", pod("g", json!({}))),
    )
    .await;
    assert_eq!(r["allowed"], false, "{r}");
    let message = r["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("ghost: wink: no plugin ghost is loaded"),
        "{r}"
    );
    // A shared path only validates; an empty name is none.
    for path in [
        "/admission/probe.trap-ignore/mutate",
        "/admission/probe..x/validate",
    ] {
        let (status, _) = post(port, &ca, path, &review("uid-m", pod("m", json!({})))).await;
        assert_eq!(status, 404, "{path}");
    }

    let (status, text) = http(&admin, "GET", "/metrics").await;
    assert_eq!(status, 200);
    let requests = |plugin: &str, result: &str| {
        let labels = [("plugin", plugin), ("door", "validate"), ("result", result)];
        sample(&text, "wink_admission_requests_total", &labels)
    };
    // probe: ok, bad and g; never the ConfigMap.
    assert_eq!(requests("probe", "allowed"), Some(2.0), "{text}");
    assert_eq!(requests("probe", "denied"), Some(1.0), "{text}");
    let trapped = [
        ("plugin", "trap-ignore"),
        ("door", "validate"),
        ("result", "trapped"),
        ("policy", "Ignore"),
    ];
    assert_eq!(
        sample(&text, "wink_admission_requests_total", &trapped),
        Some(2.0),
        "{text}"
    );
    drop(wink);
}
