//! The cargo commands the documents name, in code blocks and in tables
//! alike, name what exists: each `-p PACKAGE` a workspace package (or one a
//! `wink new` of the same documents creates), each `--bench NAME` and
//! `--test NAME` a target of that package, and each suite filter of `--test
//! e2e` (`leader::`) a suite of the `e2e` binary.

use super::markdown;
use crate::common::root;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each workspace package's targets, by kind: `bench:paced`, `test:e2e`.
fn packages() -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--no-deps", "--format-version", "1", "--offline"])
        .current_dir(root())
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut map = BTreeMap::new();
    for p in meta["packages"].as_array().unwrap() {
        let mut targets = BTreeSet::new();
        for t in p["targets"].as_array().unwrap() {
            for kind in t["kind"].as_array().unwrap() {
                targets.insert(format!(
                    "{}:{}",
                    kind.as_str().unwrap(),
                    t["name"].as_str().unwrap()
                ));
            }
        }
        map.insert(p["name"].as_str().unwrap().to_string(), targets);
    }
    map
}

/// The `cargo build|run|test|bench ...` commands in `text`: their words, up
/// to what ends a command in a shell line, a code span or a table cell.
pub fn cargo_commands(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(at) = rest.find("cargo ") {
            let after = &rest[at..];
            let end = after.find(['`', '|', '&', ';', ')', '#']).unwrap_or(after.len());
            let words: Vec<String> = after[..end].split_whitespace().map(str::to_string).collect();
            if words
                .get(1)
                .is_some_and(|w| ["build", "run", "test", "bench"].contains(&w.as_str()))
            {
                out.push(words);
            }
            rest = &after[end.max(1)..];
        }
    }
    out
}

/// The value of `flag` in `words`.
fn value<'a>(words: &'a [String], flag: &str) -> Option<&'a str> {
    let at = words.iter().position(|w| w == flag)?;
    words.get(at + 1).map(String::as_str)
}

#[test]
fn every_cargo_command_in_the_docs_names_a_package_target_and_suite_that_exist() {
    let packages = packages();
    let e2e = std::fs::read_to_string(root().join("tests/tests/e2e.rs")).unwrap();
    let suites: BTreeSet<&str> = e2e
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let mut texts = Vec::new();
    let mut created = BTreeSet::new();
    for doc in markdown::documents() {
        let text = markdown::expanded(&doc, &markdown::read(&doc));
        for line in text.lines() {
            for args in super::commands::wink_invocations(line) {
                if args.first().is_some_and(|a| a == "new")
                    && let Some(dir) = args.get(1)
                {
                    created.insert(dir.rsplit('/').next().unwrap().to_string());
                }
            }
        }
        texts.push((doc, text));
    }
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (doc, text) in &texts {
        for words in cargo_commands(text) {
            let command = words.join(" ");
            let Some(package) = value(&words, "-p") else {
                continue;
            };
            checked += 1;
            if package.chars().all(|c| c.is_ascii_uppercase()) || created.contains(package) {
                continue;
            }
            let Some(targets) = packages.get(package) else {
                wrong.push(format!("{doc}: `{command}`: no package {package}"));
                continue;
            };
            for kind in ["bench", "test"] {
                if let Some(name) = value(&words, &format!("--{kind}"))
                    && !targets.contains(&format!("{kind}:{name}"))
                {
                    wrong.push(format!("{doc}: `{command}`: {package} has no {kind} {name}"));
                }
            }
            if value(&words, "--test") == Some("e2e") {
                let filter = words.iter().find_map(|w| w.strip_suffix("::"));
                if let Some(suite) = filter.filter(|s| !s.contains("::"))
                    && !suites.contains(suite)
                {
                    wrong.push(format!("{doc}: `{command}`: no suite {suite}"));
                }
            }
        }
    }
    assert!(checked >= 20, "the docs name packages: {checked} commands");
    assert!(
        wrong.is_empty(),
        "cargo commands naming what does not exist:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn cargo_commands_are_read_from_tables_spans_and_shell_lines() {
    let text = "| `cargo bench -p wink-e2e --bench paced` | a |\n(cd x && cargo build -p y) # cargo z\n";
    assert_eq!(
        cargo_commands(text),
        vec![
            vec!["cargo", "bench", "-p", "wink-e2e", "--bench", "paced"],
            vec!["cargo", "build", "-p", "y"],
        ]
    );
}
