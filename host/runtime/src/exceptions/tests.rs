use super::*;
use serde_json::json;
use std::time::Duration;

fn exception(name: &str, spec: serde_json::Value) -> Result<Exception, String> {
    Exception::from_object(&json!({"metadata": {"namespace": "ops", "name": name}, "spec": spec}))
}

fn pod<'a>(ns: &'a str, name: &'a str, app: Option<&'a str>) -> Target<'a, impl Fn(&str) -> Option<&'a str>> {
    Target {
        api_version: "v1",
        kind: "Pod",
        namespace: Some(ns),
        name,
        labels: move |k: &str| (k == "app").then_some(app).flatten(),
    }
}

#[test]
fn names_match_with_wildcards() {
    assert!(wildcard("web-*", "web-7f9c"));
    assert!(wildcard("web-?", "web-1"));
    assert!(!wildcard("web-?", "web-12"));
    assert!(wildcard("*", ""));
    assert!(wildcard("a*b*c", "aXXbYYc"));
    assert!(!wildcard("a*b*c", "aXXbYY"));
    assert!(wildcard("exact", "exact"));
    assert!(!wildcard("exact", "exactly"));
    assert!(wildcard("*ly", "exactly"));
}

#[test]
fn an_exception_excepts_its_targets_from_its_plugins_alone() {
    let e = exception(
        "legacy",
        json!({"plugins": [{"name": "pod-security"}],
               "match": {"namespaces": ["team"], "names": ["legacy-*"], "kinds": ["Pod"],
                         "objectSelector": {"matchLabels": {"app": "legacy"}}},
               "reason": "needs hostPath until Q3"}),
    )
    .unwrap();
    let set = ExceptionSet::default();
    assert!(set.put(e));
    let now = SystemTime::now();
    let hit = set.excepting(
        "pod-security",
        None,
        &pod("team", "legacy-1", Some("legacy")),
        now,
    );
    assert_eq!(
        hit.unwrap().message(),
        "excepted by WinkException ops/legacy: needs hostPath until Q3"
    );
    for (plugin, ns, name, app) in [
        ("other", "team", "legacy-1", Some("legacy")),
        ("pod-security", "elsewhere", "legacy-1", Some("legacy")),
        ("pod-security", "team", "web-1", Some("legacy")),
        ("pod-security", "team", "legacy-1", Some("web")),
        ("pod-security", "team", "legacy-1", None),
    ] {
        assert!(
            set.excepting(plugin, None, &pod(ns, name, app), now).is_none(),
            "{plugin} {ns}/{name} {app:?}"
        );
    }
    let deployment = Target {
        api_version: "apps/v1",
        kind: "Deployment",
        namespace: Some("team"),
        name: "legacy-1",
        labels: |k: &str| (k == "app").then_some("legacy"),
    };
    assert!(set.excepting("pod-security", None, &deployment, now).is_none());
    set.remove("ops", "legacy");
    assert!(
        set.excepting(
            "pod-security",
            None,
            &pod("team", "legacy-1", Some("legacy")),
            now
        )
        .is_none()
    );
}

#[test]
fn an_expired_exception_stops_applying() {
    let e = exception(
        "brief",
        json!({"plugins": [{"name": "p"}], "match": {"namespaces": ["team"]},
               "expires": "2030-01-01T00:00:00Z", "reason": "migration"}),
    )
    .unwrap();
    let at = e.expires.unwrap();
    let set = ExceptionSet::default();
    set.put(e);
    let before = at - Duration::from_secs(1);
    assert!(
        set.excepting("p", None, &pod("team", "a", None), before)
            .is_some()
    );
    assert!(set.excepting("p", None, &pod("team", "a", None), at).is_none());
}

#[test]
fn an_exception_limited_to_webhooks_excepts_at_those_doors_only() {
    let e = exception(
        "door",
        json!({"plugins": [{"name": "p", "webhooks": ["validate"]}], "match": {"namespaces": ["team"]}, "reason": "r"}),
    )
    .unwrap();
    let set = ExceptionSet::default();
    set.put(e);
    let now = SystemTime::now();
    assert!(
        set.excepting("p", Some("validate"), &pod("team", "a", None), now)
            .is_some()
    );
    assert!(
        set.excepting("p", Some("mutate"), &pod("team", "a", None), now)
            .is_none()
    );
    assert!(set.excepting("p", None, &pod("team", "a", None), now).is_none());
}

#[test]
fn bad_exceptions_are_said() {
    let good = json!({"plugins": [{"name": "p"}], "match": {"namespaces": ["a"]}, "reason": "r"});
    assert!(exception("ok", good.clone()).is_ok());
    let mut cases = Vec::new();
    for (field, value) in [
        ("reason", json!(" ")),
        ("plugins", json!([])),
        ("plugins", json!([{"name": "p", "webhooks": ["other"]}])),
        ("match", json!({})),
        ("match", json!({"names": [""]})),
        ("match", json!({"kinds": ["bad/version/x/Pod"]})),
        (
            "match",
            json!({"objectSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
        ),
        ("match", json!({"unknown": 1})),
        ("expires", json!("tomorrow")),
    ] {
        let mut spec = good.clone();
        spec[field] = value;
        cases.push((field, exception("bad", spec)));
    }
    for (field, got) in cases {
        let why = got.expect_err(field);
        // serde names an unknown field, not the object that holds it.
        assert!(
            why.contains(field) || why.contains("unknown field"),
            "{field}: {why}"
        );
    }
}

#[test]
fn the_set_is_capped() {
    let set = ExceptionSet::default();
    let spec = json!({"plugins": [{"name": "p"}], "match": {"namespaces": ["a"]}, "reason": "r"});
    for i in 0..MAX_EXCEPTIONS {
        assert!(set.put(exception(&format!("e{i}"), spec.clone()).unwrap()));
    }
    assert!(!set.put(exception("one-more", spec.clone()).unwrap()));
    assert!(set.put(exception("e0", spec).unwrap()), "a replacement is taken");
}
