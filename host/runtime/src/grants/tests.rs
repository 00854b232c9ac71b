//! Grants: parsing, the intersection with declarations, deny by default.

use super::*;

fn declared(api_version: &str, kind: &str, verbs: &[Verb]) -> Declared {
    Declared {
        api_version: api_version.into(),
        kind: kind.into(),
        verbs: verbs.to_vec(),
    }
}

const FILE: &str = r#"
plugins:
  require-labels:
    mode: audit
    events: true
    writes:
      - apiVersion: apps/v1
        kind: Deployment
        verbs: [patch]
        namespaces: [default]
    rate: {qps: 2, burst: 4}
  "*":
    secrets: true
daemon:
  rate: {qps: 5, burst: 5}
"#;

#[test]
fn a_file_parses_and_each_plugin_gets_its_entry_or_the_star() {
    let g = Grants::parse(FILE.as_bytes()).unwrap();
    let mine = g.for_plugin("require-labels").unwrap();
    assert_eq!(mine.mode, Mode::Audit);
    assert_eq!(mine.rate, Some(Rate { qps: 2.0, burst: 4 }));
    assert!(!g.secrets("require-labels"), "its own entry, not the star's");
    assert!(g.secrets("other"));
    assert_eq!(g.daemon_rate(), Rate { qps: 5.0, burst: 5 });
    assert_eq!(Grants::parse(b"").unwrap(), Grants::default());
    assert!(Grants::parse(b"plugins: {x: {mode: yolo}}").is_err());
    assert!(
        Grants::parse(b"plugins: {x: {typo: 1}}").is_err(),
        "unknown fields are errors"
    );
}

#[test]
fn permissions_are_the_intersection_of_declared_and_granted() {
    let g = Grants::parse(FILE.as_bytes()).unwrap();
    let decl = [
        declared("apps/v1", "Deployment", &[Verb::Patch, Verb::Delete]),
        declared("v1", "ConfigMap", &[Verb::Create]),
    ];
    let (p, missing) = g.permissions("require-labels", &decl, true);
    assert_eq!(p.mode, Mode::Audit);
    assert!(p.events);
    assert!(p.allows("apps/v1", "Deployment", Verb::Patch, Some("default")));
    assert!(
        !p.allows("apps/v1", "Deployment", Verb::Patch, Some("prod")),
        "namespace not granted"
    );
    assert!(
        !p.allows("apps/v1", "Deployment", Verb::Delete, Some("default")),
        "verb not granted"
    );
    assert!(
        !p.allows("v1", "ConfigMap", Verb::Create, Some("default")),
        "resource not granted"
    );
    assert!(
        !p.allows("apps/v1", "Deployment", Verb::Update, Some("default")),
        "not declared"
    );
    assert!(!missing.events);
    assert_eq!(
        missing.snippet("require-labels"),
        r#"{"plugins":{"require-labels":{"writes":[{"apiVersion":"apps/v1","kind":"Deployment","verbs":["delete"]},{"apiVersion":"v1","kind":"ConfigMap","verbs":["create"]}]}}}"#
    );
    // The snippet is a grants file that grants what was missing.
    let fixed = Grants::parse(missing.snippet("require-labels").as_bytes()).unwrap();
    let (p, still) = fixed.permissions("require-labels", &decl[1..], false);
    assert!(p.allows("v1", "ConfigMap", Verb::Create, Some("any")));
    assert!(still.is_empty());
}

#[test]
fn no_grant_means_nothing_beyond_reading() {
    let g = Grants::default();
    let (p, missing) = g.permissions("p", &[declared("v1", "ConfigMap", &[Verb::Delete])], true);
    assert!(p.writes.is_empty() && !p.events);
    assert!(missing.events);
    assert!(missing.snippet("p").contains(r#""events":true"#));
    assert!(!g.secrets("p"));
    // A grant for nothing declared permits nothing either.
    let g = Grants::parse(FILE.as_bytes()).unwrap();
    let (p, _) = g.permissions("require-labels", &[], false);
    assert!(p.writes.is_empty() && !p.events);
}

#[test]
fn wink_dev_grants_whatever_is_declared() {
    let g = Grants::whatever_is_declared();
    let (p, missing) = g.permissions("p", &[declared("v1", "ConfigMap", &[Verb::Create])], true);
    assert!(p.allows("v1", "ConfigMap", Verb::Create, Some("x")) && p.events);
    assert!(
        !p.allows("v1", "ConfigMap", Verb::Delete, Some("x")),
        "still only what is declared"
    );
    assert!(missing.is_empty() && g.secrets("p"));
}

#[test]
fn unknown_fields_are_errors_at_every_level() {
    let write = "{apiVersion: apps/v1, kind: Deployment, verbs: [patch]";
    for (text, field) in [
        ("plugin: {}".to_string(), "plugin"),
        ("plugins: {x: {typo: 1}}".to_string(), "typo"),
        (
            format!("plugins: {{x: {{writes: [{write}, namespace: [team-a]}}]}}}}"),
            "namespace",
        ),
        (
            "plugins: {x: {rate: {qps: 1, burst: 1, bursts: 2}}}".to_string(),
            "bursts",
        ),
        ("daemon: {rates: {qps: 1, burst: 1}}".to_string(), "rates"),
        ("daemon: {rate: {qps: 1, burst: 1, x: 1}}".to_string(), "`x`"),
    ] {
        let e = Grants::parse(text.as_bytes()).unwrap_err();
        assert!(e.contains("unknown field") && e.contains(field), "{text}: {e}");
    }
    // Spelled right, the write grant is namespaced.
    let g =
        Grants::parse(format!("plugins: {{x: {{writes: [{write}, namespaces: [team-a]}}]}}}}").as_bytes())
            .unwrap();
    assert_eq!(
        g.plugins["x"].writes[0].namespaces,
        Some(vec!["team-a".to_string()])
    );
}

#[test]
fn duplicate_keys_are_errors_at_every_level() {
    for (text, key) in [
        ("plugins: {}\nplugins: {}\n", "plugins"),
        ("plugins:\n  x: {mode: audit}\n  x: {mode: enforce}\n", "x"),
        ("plugins:\n  '1': {}\n  1: {}\n", "1"),
        ("plugins:\n  x: {mode: audit, mode: enforce}\n", "mode"),
        (
            "plugins:\n  x:\n    writes:\n      - {apiVersion: v1, kind: Pod, kind: Secret, verbs: [patch]}\n",
            "kind",
        ),
        ("daemon: {rate: {qps: 1, burst: 1, qps: 2}}", "qps"),
        ("{\"plugins\": {\"x\": {}, \"x\": {}}}", "x"),
    ] {
        let e = Grants::parse(text.as_bytes()).unwrap_err();
        assert!(e.contains("duplicate") && e.contains(key), "{text}: {e}");
    }
}

#[test]
fn grants_nested_too_deep_are_refused_before_parsing() {
    let started = std::time::Instant::now();
    let e = Grants::parse("[".repeat(128 << 10).as_bytes()).unwrap_err();
    assert_eq!(e, "nested deeper than 256 levels");
    let e = Grants::parse(format!("plugins: {{x: {}", "{a: ".repeat(100_000)).as_bytes()).unwrap_err();
    assert_eq!(e, "nested deeper than 256 levels");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "refused at once"
    );
}

#[test]
fn a_grants_file_that_is_not_a_regular_file_or_too_large_is_refused_at_once() {
    use std::os::unix::ffi::OsStrExt;
    let dir = std::env::temp_dir().join(format!("wink-grants-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.yaml");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let sparse = dir.join("sparse.yaml");
    std::fs::File::create(&sparse).unwrap().set_len(3 << 30).unwrap();
    let started = std::time::Instant::now();
    let e = Grants::load(&fifo).unwrap_err().to_string();
    assert!(e.ends_with("fifo.yaml: is a FIFO, not a regular file"), "{e}");
    let e = Grants::load(std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert_eq!(e, "/dev/zero: is a device, not a regular file");
    let e = Grants::load(&sparse).unwrap_err().to_string();
    assert!(
        e.ends_with("is 3221225472 bytes, more than the 1048576 bytes a grants file may have"),
        "{e}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "nothing blocked or was read"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn grants_compare_canonical_forms() {
    let grant = |api_version: &str| super::WriteGrant {
        api_version: api_version.into(),
        kind: "Secret".into(),
        verbs: vec![super::Verb::Patch],
        namespaces: None,
    };
    assert!(grant("v1").allows("v1", "Secret", super::Verb::Patch, Some("default")));
    for spelled in ["/v1", "core/v1", "V1", " v1", "v1\0"] {
        assert!(
            !grant("v1").allows(spelled, "Secret", super::Verb::Patch, Some("default")),
            "{spelled:?}"
        );
        assert!(
            !grant(spelled).allows(spelled, "Secret", super::Verb::Patch, Some("default")),
            "{spelled:?}"
        );
    }
}

#[test]
fn an_entry_under_the_other_spelling_of_a_name_is_used_and_named() {
    let g = Grants::parse(b"plugins: {team_label_guard: {mode: enforce, events: true}}").unwrap();
    assert_eq!(g.other_spelling("team-label-guard"), Some("team_label_guard"));
    assert!(g.for_plugin("team-label-guard").is_some_and(|p| p.events));
    assert_eq!(g.other_spelling("team_label_guard"), None, "its own entry");
    assert_eq!(g.other_spelling("team-label"), None);
    assert!(g.for_plugin("other").is_none());
}

#[test]
fn an_entry_may_scope_its_plugin() {
    let g = Grants::parse(
        br#"
plugins:
  pod-security:
    match:
      namespaceSelector: {matchLabels: {enforce: "yes"}}
      kinds: [Pod]
    exclude:
      namespaces: [kube-system]
"#,
    )
    .unwrap();
    let scope = g.scope("pod-security").unwrap().expect("a scope");
    assert!(scope.needs_namespaces());
    assert_eq!(scope.include().kinds.as_deref(), Some(&["Pod".to_string()][..]));
    assert!(g.scope("other").unwrap().is_none(), "no entry, no scope");
    let bad = |text: &str| Grants::parse(text.as_bytes()).unwrap_err();
    assert!(bad("plugins: {p: {match: {namespace: [a]}}}").contains("unknown field"));
    assert!(bad("plugins: {p: {exclude: {}}}").contains("the grant of plugin p: exclude: name at least one"));
    assert!(
        bad("plugins: {p: {match: {objectSelector: {matchExpressions: [{key: a, operator: In}]}}}}")
            .contains("match.objectSelector.matchExpressions[0]: In needs values")
    );
}
