//! End-to-end: `wink test` under the operator's scope. Every `yaml,wink-test`
//! case of the manual passes as written (pod-security under a namespace
//! selector: a Pod outside the scope is neither reported nor reviewed, a
//! Namespace relabelled by a step moves its Pods across); the same case
//! without its `match` fails, with the results and the review the scope
//! kept from the plugin.

use crate::common::{scratch, wink_bin};
use crate::manual::markdown;
use std::process::{Command, Output};

/// `wink test` of `case`, written in a scratch folder `name`: its output and what it said.
pub fn wink_test(case: &str, name: &str) -> (Output, String) {
    let dir = scratch(name);
    let path = dir.join("case.yaml");
    std::fs::write(&path, case).unwrap();
    let out = Command::new(wink_bin())
        .current_dir(&dir)
        .args(["test", "case.yaml"])
        .env("RUST_LOG", "error")
        .output()
        .expect("run wink test");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, said)
}

#[test]
fn the_manuals_scoped_case_passes_and_fails_without_its_scope() {
    let case = markdown::pod_security_case("docs/src/running/scope.md");
    // What the case claims: relaxed's Pod reported once it opted in,
    // strict's not once it opted out, relaxed's review not asked.
    assert!(
        case.contains("relaxed/priv pod-security privileged fail"),
        "{case}"
    );
    assert!(!case.contains("strict/priv pod-security"), "{case}");
    assert!(case.contains("relaxed/new: allowed without the plugin"), "{case}");
    let (out, said) = wink_test(&case, "author_scope");
    assert!(out.status.success(), "{said}");
    assert!(said.contains("ok      case.yaml"), "{said}");

    // Without its scope the plugin sees and reviews everything.
    let unscoped: String = case
        .lines()
        .filter(|l| !l.starts_with("match:") && !l.contains("namespaceSelector: {matchLabels"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!unscoped.contains("match:"));
    let (out, said) = wink_test(&unscoped, "author_scope_none");
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("+ strict/priv pod-security privileged fail"),
        "{said}"
    );
    assert!(said.contains("+ validate relaxed/new: denied 403"), "{said}");
}
