//! End-to-end: `pod-security` against Kubernetes' own Pod Security
//! fixtures (PodSecurity admission's `test/testdata`: `{baseline,restricted}/
//! vX.Y/{pass,fail}/<check><n>.yaml`, one Pod each). Every fixture is played
//! through the plugin's validating webhook, as `wink test` plays an `admit`
//! step (the real runtime, the real informer cache holding one Namespace per
//! level and version, labelled `pod-security.kubernetes.io/enforce` and
//! `-version`): a Pod under `pass/` must be allowed, one under `fail/`
//! refused with PodSecurity's message and the check its file is named after
//! among the failed checks (the plugin's `pod-security.wink.dev/failed-checks`
//! annotation). Under Restricted a Baseline check that a Restricted one
//! overrides is named by the overriding one, as PodSecurity reports it. The
//! count per level and version is printed; any disagreement fails.
//!
//! The fixtures come from `PSS_TESTDATA` (default `../shared/pss-testdata`
//! beside the repository); without them the test says so in one line and
//! steps aside.

use crate::common::{plugin, root};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wink::author::harness::{self, Case};

/// The fixtures' folder, or `None` (said in one line) when `PSS_TESTDATA`
/// is unset and the default folder is missing. Panics when `PSS_TESTDATA`
/// names a folder without fixtures: a CI that asked for the test gets it.
fn testdata() -> Option<PathBuf> {
    let fixtures_in = |dir: &Path| dir.join("baseline").is_dir() && dir.join("restricted").is_dir();
    if let Some(dir) = std::env::var_os("PSS_TESTDATA").filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        assert!(
            fixtures_in(&dir),
            "PSS_TESTDATA={} holds no baseline/ and restricted/ fixtures",
            dir.display()
        );
        return Some(dir);
    }
    let dir = root().join("../shared/pss-testdata");
    if fixtures_in(&dir) {
        return Some(dir);
    }
    println!(
        "PSS_TESTDATA is unset and {} holds no Pod Security fixtures: skipping the conformance test",
        dir.display()
    );
    None
}

/// Every check ID of PodSecurity admission (a fixture's file name is its
/// check ID in lower case, then a number).
const CHECKS: [&str; 19] = [
    "allowPrivilegeEscalation",
    "appArmorProfile",
    "capabilities_baseline",
    "capabilities_restricted",
    "hostNamespaces",
    "hostPathVolumes",
    "hostPorts",
    "hostProbesAndHostLifecycle",
    "privileged",
    "procMount",
    "procMount_restricted",
    "restrictedVolumes",
    "runAsNonRoot",
    "runAsUser",
    "seLinuxOptions",
    "seccompProfile_baseline",
    "seccompProfile_restricted",
    "sysctls",
    "windowsHostProcess",
];

/// Under Restricted, from the minor version given, the Baseline check on
/// the left is replaced by the Restricted one on the right.
const OVERRIDES: [(&str, &str, u32); 4] = [
    ("capabilities_baseline", "capabilities_restricted", 22),
    ("hostPathVolumes", "restrictedVolumes", 0),
    ("seccompProfile_baseline", "seccompProfile_restricted", 19),
    ("procMount", "procMount_restricted", 35),
];

/// One fixture.
struct Fixture {
    level: &'static str,
    minor: u32,
    /// `None` under `pass/`; the check it must fail under `fail/`.
    fails: Option<&'static str>,
    file: PathBuf,
    pod: Value,
}

impl Fixture {
    fn namespace(&self) -> String {
        format!("pss-{}-v1-{}", self.level, self.minor)
    }
}

/// The check a `fail/` fixture named `stem` must be refused by.
fn expected_check(level: &str, minor: u32, stem: &str) -> &'static str {
    let prefix = stem.trim_end_matches(|c: char| c.is_ascii_digit());
    let named = CHECKS
        .iter()
        .find(|id| id.to_ascii_lowercase() == prefix)
        .unwrap_or_else(|| panic!("{stem}: no check is named {prefix:?}"));
    match OVERRIDES
        .iter()
        .find(|(from, _, since)| from == named && minor >= *since)
    {
        Some((_, to, _)) if level == "restricted" => to,
        _ => named,
    }
}

/// Every fixture under `dir`, by level, version and file name.
fn fixtures(dir: &Path) -> Vec<Fixture> {
    let mut all = Vec::new();
    for level in ["baseline", "restricted"] {
        for version in std::fs::read_dir(dir.join(level)).unwrap() {
            let version = version.unwrap().path();
            let name = version.file_name().unwrap().to_str().unwrap().to_string();
            let minor: u32 = name
                .strip_prefix("v1.")
                .and_then(|m| m.parse().ok())
                .unwrap_or_else(|| panic!("{}: not a version folder", version.display()));
            for outcome in ["pass", "fail"] {
                let mut files: Vec<PathBuf> = std::fs::read_dir(version.join(outcome))
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .collect();
                files.sort();
                for file in files {
                    let text = std::fs::read_to_string(&file).unwrap();
                    let pod: Value =
                        serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                    let stem = file.file_stem().unwrap().to_str().unwrap();
                    let fails = (outcome == "fail").then(|| expected_check(level, minor, stem));
                    all.push(Fixture {
                        level,
                        minor,
                        fails,
                        file,
                        pod,
                    });
                }
            }
        }
    }
    all.sort_by(|a, b| (a.level, a.minor, &a.file).cmp(&(b.level, b.minor, &b.file)));
    all
}

/// The `admit` step asking about the creation of `f`'s Pod in its namespace.
fn admit_step(i: usize, f: &Fixture) -> Value {
    let mut pod = f.pod.clone();
    pod["metadata"]["namespace"] = json!(f.namespace());
    json!({"admit": {"door": "validate", "request": {
        "uid": format!("pss-{i}"),
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": pod["metadata"]["name"], "namespace": f.namespace(),
        "operation": "CREATE", "userInfo": {"username": "pss-conformance"},
        "object": pod, "dryRun": false,
    }}})
}

/// The answers of an `expect.admission` list, one per `validate` line with
/// the lines that follow it.
fn answers(lines: &[String]) -> Vec<Vec<&str>> {
    let mut all: Vec<Vec<&str>> = Vec::new();
    for line in lines {
        match line.starts_with("validate ") {
            true => all.push(vec![line]),
            false => all.last_mut().expect("an answer first").push(line),
        }
    }
    all
}

/// Where `answer` disagrees with what `f` expects, if it does.
fn disagreement(f: &Fixture, answer: &[&str]) -> Option<String> {
    let head = answer[0];
    let failed = answer
        .iter()
        .find_map(|l| l.strip_prefix("  annotation: pod-security.wink.dev/failed-checks="))
        .unwrap_or("");
    let prefix = format!("violates PodSecurity \"{}:v1.{}\": ", f.level, f.minor);
    match f.fails {
        None if head.ends_with(": allowed") => None,
        None => Some(format!("should be allowed: {head}")),
        Some(check) if !head.contains(&format!("denied 403 Forbidden: {prefix}")) => {
            Some(format!("should be refused by {check}: {head}"))
        }
        Some(check) if !failed.split(',').any(|c| c == check) => {
            Some(format!("refused, but not by {check} (failed: {failed}): {head}"))
        }
        Some(_) => None,
    }
}

#[test]
fn every_pod_security_fixture_agrees_at_every_level_and_version() {
    let Some(dir) = testdata() else { return };
    let fixtures = fixtures(&dir);
    assert!(
        fixtures.len() > 4000,
        "only {} fixtures in {}",
        fixtures.len(),
        dir.display()
    );
    let mut namespaces: BTreeMap<String, Value> = BTreeMap::new();
    for f in &fixtures {
        let (level, version) = (f.level, format!("v1.{}", f.minor));
        let mut labels = serde_json::Map::new();
        for mode in ["enforce", "warn", "audit"] {
            labels.insert(format!("pod-security.kubernetes.io/{mode}"), json!(level));
            labels.insert(
                format!("pod-security.kubernetes.io/{mode}-version"),
                json!(version),
            );
        }
        namespaces.insert(
            f.namespace(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f.namespace(), "labels": labels}}),
        );
    }
    let steps: Vec<Value> = fixtures
        .iter()
        .enumerate()
        .map(|(i, f)| admit_step(i, f))
        .collect();
    let case: Case = serde_json::from_value(json!({
        "plugin": plugin("pod_security"),
        "objects": namespaces.into_values().collect::<Vec<_>>(),
        "steps": steps,
    }))
    .expect("a case");
    let started = std::time::Instant::now();
    let outcome = harness::run(Path::new("pss-conformance.yaml"), &case).expect("the case runs");
    let elapsed = started.elapsed();
    let answers = answers(&outcome.got.admission);
    assert_eq!(answers.len(), fixtures.len(), "one answer per fixture");

    // Per level and version: (pass agreed, pass total, fail agreed, fail total).
    let mut counts: BTreeMap<(&str, u32), [usize; 4]> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (f, answer) in fixtures.iter().zip(&answers) {
        let c = counts.entry((f.level, f.minor)).or_default();
        let slot = if f.fails.is_some() { 2 } else { 0 };
        c[slot + 1] += 1;
        match disagreement(f, answer) {
            None => c[slot] += 1,
            Some(why) => wrong.push(format!("{}: {why}", f.file.display())),
        }
    }
    let mut agreed = 0;
    for ((level, minor), [p, pt, fl, ft]) in &counts {
        println!("{level:<10} v1.{minor:<3} pass {p}/{pt}  fail {fl}/{ft}");
        agreed += p + fl;
    }
    println!(
        "pod-security agrees with {agreed} of {} Pod Security fixtures ({} levels x versions) in {elapsed:?}",
        fixtures.len(),
        counts.len()
    );
    assert!(
        wrong.is_empty(),
        "{} disagreements:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
