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
