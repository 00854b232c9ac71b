//! The policy library (`plugins/*`, see `docs/src/library/`): every library
//! plugin's cases pass under `wink test` (its own `wink-test.yaml` and the
//! peers' cases written as ours, `wink-test.gatekeeper-*.yaml` and
//! `wink-test.kyverno.yaml`), and each file's verdicts are really checked:
//! a case whose one denial is turned into an allowance fails.

mod reproducible;
mod shipped;

use crate::common::{plugins_dir, root, scratch, wink_bin};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The library's plugins (crates under `plugins/`).
pub const LIBRARY: [&str; 12] = [
    "disallow-latest-tag",
    "allowed-registries",
    "require-requests-limits",
    "require-probes",
    "require-labels",
    "block-service-types",
    "unique-ingress-host",
    "unique-service-selector",
    "block-wildcard-ingress-host",
    "replica-limits",
    "disallow-default-namespace",
    "require-pdb",
];

/// Every policy of the library, as `wink manifests --library all` renders
/// them: pod-security first, then [`LIBRARY`].
pub fn all() -> Vec<&'static str> {
    std::iter::once("pod-security").chain(LIBRARY).collect()
}

/// The documents of a YAML stream `wink manifests` printed.
pub fn docs_of(yaml: &str) -> Vec<Value> {
    yaml.split("\n---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_norway::from_str(d).unwrap())
        .collect()
}

/// A plugin's case files: `wink-test.yaml` and `wink-test.*.yaml`.
fn cases(plugin: &str) -> Vec<PathBuf> {
    let dir = root().join("plugins").join(plugin);
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("wink-test.") && name.ends_with(".yaml")
        })
        .collect();
    found.sort();
    found
}

fn wink_test(cases: &[PathBuf]) -> Output {
    Command::new(wink_bin())
        .arg("test")
        .args(cases)
        .current_dir(root())
        .env("RUST_LOG", "error")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn every_library_policy_passes_its_own_and_its_peers_cases() {
    plugins_dir();
    let mut all = Vec::new();
    for plugin in LIBRARY {
        let found = cases(plugin);
        assert!(
            found.iter().any(|p| p.ends_with("wink-test.yaml")),
            "{plugin} has its own case"
        );
        all.extend(found);
    }
    let out = wink_test(&all);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out).matches("ok ").count(), all.len(), "{}", text(&out));
    // Each file's admission answers count: the admission lines of all of
    // them, at least one denial and one allowance per policy.
    let mut answers = 0;
    for plugin in LIBRARY {
        let mut denied = 0;
        let mut allowed = 0;
        for case in cases(plugin) {
            let yaml = std::fs::read_to_string(&case).unwrap();
            denied += yaml.matches(": denied 403").count();
            allowed += yaml.matches(": allowed'").count() + yaml.matches(": allowed\n").count();
        }
        // require-labels mutates and never refuses.
        if plugin != "require-labels" {
            assert!(
                denied >= 1 && allowed >= 1,
                "{plugin}: {denied} denied, {allowed} allowed"
            );
        }
        answers += denied + allowed;
    }
    println!("{} case files, {answers} admission answers", all.len());
}

#[test]
fn a_library_case_whose_denial_is_turned_into_an_allowance_fails() {
    plugins_dir();
    let dir = scratch("library_changed");
    let case = root().join("plugins/disallow-latest-tag/wink-test.yaml");
    let yaml = std::fs::read_to_string(&case).unwrap();
    let component = plugins_dir();
    let changed = yaml
        .replace("../../target/wasm32-wasip2/release", component.to_str().unwrap())
        .replacen(
            ": denied 403 Forbidden: disallow-latest-tag:",
            ": allowed'\n  - 'was:",
            1,
        );
    assert_ne!(changed, yaml);
    let path = dir.join("case.yaml");
    std::fs::write(&path, changed).unwrap();
    let out = wink_test(&[path]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("admission:"), "{}", text(&out));
}

#[test]
fn the_library_page_lists_every_policys_component_and_builds_and_pushes_each() {
    let page = std::fs::read_to_string(root().join("docs/src/library/index.md")).unwrap();
    let section = page.split("### Components").nth(1).expect("a Components section");
    let rows: Vec<Vec<&str>> = section
        .lines()
        .skip_while(|l| !l.starts_with("| policy"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(names, all(), "the table's policies, in the library's order");
    for row in &rows {
        let component = format!("`{}.wasm`", row[0].replace('-', "_"));
        assert_eq!(row[1], component, "{row:?}");
        assert!(row[2].parse::<u32>().is_ok_and(|kib| kib > 0), "{row:?}");
    }
    // The build command and the push loop name every policy.
    let shipping = page.split("## Shipping the library").nth(1).unwrap();
    let command = shipping.split("```").nth(1).unwrap();
    for name in all() {
        assert!(
            command.contains(&format!("-p {name} ")) || command.contains(&format!("-p {name}\n")),
            "{name}"
        );
        assert!(
            command.contains(&format!(" {name} ")) || command.contains(&format!(" {name};")),
            "{name}"
        );
    }
}
