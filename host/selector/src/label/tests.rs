//! Table-driven cases: the examples of the Kubernetes documentation on
//! labels and selectors, and apimachinery's own parse and match tables.

use super::*;

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Labels as written in a case.
type Pairs = &'static [(&'static str, &'static str)];

/// (selector, labels, whether it matches)
const MATCHES: &[(&str, Pairs, bool)] = &[
    // The documentation's equality- and set-based examples.
    ("environment = production", &[("environment", "production")], true),
    ("environment = production", &[("environment", "qa")], false),
    ("tier != frontend", &[("tier", "backend")], true),
    ("tier != frontend", &[], true),
    ("tier != frontend", &[("tier", "frontend")], false),
    (
        "environment=production,tier!=frontend",
        &[("environment", "production"), ("tier", "db")],
        true,
    ),
    (
        "environment=production,tier!=frontend",
        &[("environment", "production"), ("tier", "frontend")],
        false,
    ),
    ("environment in (production, qa)", &[("environment", "qa")], true),
    (
        "environment in (production, qa)",
        &[("environment", "dev")],
        false,
    ),
    ("environment in (production, qa)", &[], false),
    ("tier notin (frontend, backend)", &[("tier", "db")], true),
    ("tier notin (frontend, backend)", &[], true),
    ("tier notin (frontend, backend)", &[("tier", "backend")], false),
    ("partition", &[("partition", "a")], true),
    ("partition", &[], false),
    ("!partition", &[], true),
    ("!partition", &[("partition", "")], false),
    (
        "partition,environment notin (qa)",
        &[("partition", "x"), ("environment", "prod")],
        true,
    ),
    // apimachinery's TestSelectorMatches and TestRequiresExactMatch.
    ("", &[("x", "y")], true),
    ("x=y", &[("x", "y")], true),
    ("x==y", &[("x", "y")], true),
    ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
    ("x!=y,z!=w", &[("x", "z"), ("z", "a")], true),
    ("notin=in", &[("notin", "in")], true),
    ("x=", &[("x", "")], true),
    ("x=", &[("x", "y")], false),
    ("x=z", &[], false),
    ("x=y", &[("x", "z")], false),
    ("x=y,z=w", &[("x", "w"), ("z", "w")], false),
    ("x!=y,z!=w", &[("x", "z"), ("z", "w")], false),
    ("x in ()", &[("x", "")], true),
    ("x in (a,)", &[("x", "")], true),
    ("x in (a,)", &[("x", "a")], true),
    // Integer comparisons, as the API server has them.
    ("x>1", &[("x", "2")], true),
    ("x>1", &[("x", "1")], false),
    ("x>1", &[("x", "a")], false),
    ("x>1", &[], false),
    ("x<1", &[("x", "0")], true),
    ("x<1", &[("x", "-5")], true),
    ("x<1", &[("x", "1")], false),
    ("x>1,z<5", &[("x", "2"), ("z", "4")], true),
    ("x>1,z<5", &[("x", "2"), ("z", "5")], false),
    ("replicas>3", &[("replicas", "10")], true),
    // Prefixed keys and values with dots, dashes and underscores.
    (
        "app.kubernetes.io/name=my_app-1.2",
        &[("app.kubernetes.io/name", "my_app-1.2")],
        true,
    ),
];

/// Selectors the API server refuses, with the start of its message.
const INVALID: &[(&str, &str)] = &[
    (
        "x=a||y=b",
        "unable to parse requirement: values[0][x]: Invalid value: \"a||y\"",
    ),
    ("x==a==b", "found '==', expected: ',' or 'end of string'"),
    (
        "!x=a",
        "unable to parse requirement: found '=', expected: ',' or 'end of string'",
    ),
    (
        "x<a",
        "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer",
    ),
    (
        "x>1.5",
        "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer",
    ),
    (
        "x in (a",
        "unable to parse requirement: found '', expected: ',' or ')'",
    ),
    ("x in a", "unable to parse requirement: found 'a', expected: '('"),
    (
        "x in (a b)",
        "unable to parse requirement: found 'b', expected: ',' or ')'",
    ),
    ("x notin", "unable to parse requirement: found '', expected: '('"),
    ("a,,b", "found ',', expected: identifier after ','"),
    ("a,", "found '', expected: identifier after ','"),
    (",a", "found ',', expected: !, identifier, or 'end of string'"),
    ("=web", "found '=', expected: !, identifier, or 'end of string'"),
    ("app=we b", "found 'b', expected: ',' or 'end of string'"),
    (
        "x y",
        "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt",
    ),
    (
        "-x=a",
        "unable to parse requirement: key: Invalid value: \"-x\": name part must consist of",
    ),
    (
        "Example.com/x=a",
        "unable to parse requirement: key: Invalid value: \"Example.com/x\": prefix part",
    ),
    (
        "/x=a",
        "unable to parse requirement: key: Invalid value: \"/x\": prefix part must be non-empty",
    ),
    (
        "x=-a",
        "unable to parse requirement: values[0][x]: Invalid value: \"-a\": a valid label",
    ),
    (
        "x in (a,-b)",
        "unable to parse requirement: values[1][x]: Invalid value: \"-b\"",
    ),
];

#[test]
fn documented_selectors_match_as_the_api_server_matches() {
    for (selector, pairs, want) in MATCHES {
        let parsed = LabelSelector::parse(selector).unwrap_or_else(|e| panic!("{selector:?}: {e}"));
        assert_eq!(parsed.matches(&labels(pairs)), *want, "{selector:?} on {pairs:?}");
    }
}

#[test]
fn malformed_selectors_get_the_api_servers_message() {
    for (selector, message) in INVALID {
        let err = LabelSelector::parse(selector).expect_err(selector);
        assert!(
            err.starts_with(message),
            "{selector:?}: got {err:?}, want {message:?}..."
        );
    }
}

#[test]
fn key_and_value_length_limits() {
    let long = "a".repeat(64);
    assert!(LabelSelector::parse(&format!("{long}=x")).is_err());
    assert!(LabelSelector::parse(&format!("x={long}")).is_err());
    assert!(LabelSelector::parse(&format!("{}=x", &long[..63])).is_ok());
    assert!(LabelSelector::parse(&format!("x={}", &long[..63])).is_ok());
}

#[test]
fn parses_into_requirements() {
    let s = LabelSelector::parse("a=b,c!=d,e in (f,g),h notin (i),j,!k,l>1,m<2").unwrap();
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        s.requirements,
        vec![
            Requirement::Equals("a".into(), "b".into()),
            Requirement::NotEquals("c".into(), "d".into()),
            Requirement::In("e".into(), owned(&["f", "g"])),
            Requirement::NotIn("h".into(), owned(&["i"])),
            Requirement::Exists("j".into()),
            Requirement::DoesNotExist("k".into()),
            Requirement::GreaterThan("l".into(), 1),
            Requirement::LessThan("m".into(), 2),
        ]
    );
    assert!(LabelSelector::parse("  ").unwrap().is_empty());
}

/// `n` requirements `!k0,!k1,...`.
fn not_keys(n: usize) -> String {
    (0..n).map(|i| format!("!k{i}")).collect::<Vec<_>>().join(",")
}

#[test]
fn selectors_up_to_the_caps_parse() {
    let s = LabelSelector::parse(&not_keys(MAX_REQUIREMENTS)).unwrap();
    assert_eq!(s.requirements.len(), MAX_REQUIREMENTS);
    let values = (0..MAX_VALUES)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let s = LabelSelector::parse(&format!("a in ({values})")).unwrap();
    assert!(s.matches(&labels(&[("a", "999")])));
}

#[test]
fn selectors_past_a_cap_are_refused_naming_it() {
    let err = LabelSelector::parse(&not_keys(MAX_REQUIREMENTS + 1)).unwrap_err();
    assert_eq!(err, "label selector has more than the 100 requirements allowed");
    let err = LabelSelector::parse(&not_keys(4_000)).unwrap_err();
    assert!(err.starts_with("label selector is 26889 bytes long"), "{err}");

    let long = format!("a={}", "x".repeat(MAX_SELECTOR_BYTES));
    let err = LabelSelector::parse(&long).unwrap_err();
    assert_eq!(
        err,
        format!(
            "label selector is {} bytes long, more than the 16384 allowed",
            long.len()
        )
    );

    let half = (0..600).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let err = LabelSelector::parse(&format!("a in ({half}),b notin ({half})")).unwrap_err();
    assert_eq!(
        err,
        "label selector has more than the 1000 values allowed in its sets"
    );
}
