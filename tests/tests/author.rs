//! End-to-end: the plugin author's tools. `wink test` passes every example's
//! case, fails with a diff (and exit 1) when an expectation changes, and
//! `--bless` records what happened (log lines, writes, Events); `wink new` scaffolds a crate that builds
//! for wasm32-wasip2 and passes its own case as generated.

use crate::common;

use common::{plugins_dir, root, scratch, wink_bin};
use std::path::Path;
use std::process::{Command, Output};

fn wink(dir: &Path, args: &[&str]) -> Output {
    Command::new(wink_bin())
        .current_dir(dir)
        .args(args)
        .env("RUST_LOG", "error")
        .output()
        .expect("run wink")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn wink_test_passes_every_example_and_a_changed_expectation_fails_with_a_diff() {
    plugins_dir();
    let cases: Vec<String> = std::fs::read_dir(root().join("plugins"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("wink-test.yaml"))
        .filter(|p| p.exists())
        .map(|p| p.strip_prefix(root()).unwrap().display().to_string())
        .collect();
    assert!(cases.len() >= 8, "every example has a case: {cases:?}");
    let mut args = vec!["test"];
    args.extend(cases.iter().map(String::as_str));
    let out = wink(&root(), &args);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out).matches("ok ").count(), cases.len(), "{}", text(&out));

    // A copy of pod-logger's case with one expectation changed.
    let dir = scratch("author_test");
    let case = std::fs::read_to_string(root().join("plugins/pod-logger/wink-test.yaml")).unwrap();
    let component = plugins_dir().join("pod_logger.wasm");
    let case = case
        .replace(
            "../../target/wasm32-wasip2/release/pod_logger.wasm",
            component.to_str().unwrap(),
        )
        .replace("OnUpdate: pod1", "OnUpdate: someone-else");
    let path = dir.join("case.yaml");
    std::fs::write(&path, &case).unwrap();
    let out = wink(&dir, &["test", "case.yaml"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("FAILED  case.yaml"), "{said}");
    assert!(said.contains("  - INFO OnUpdate: someone-else"), "{said}");
    assert!(said.contains("  + INFO OnUpdate: pod1"), "{said}");
    assert!(
        said.contains("    INFO OnAdd: pod0"),
        "unchanged lines shown as context: {said}"
    );

    let out = wink(&dir, &["test", "--bless", "case.yaml"]);
    assert!(
        out.status.success() && text(&out).contains("blessed case.yaml"),
        "{}",
        text(&out)
    );
    let blessed = std::fs::read_to_string(&path).unwrap();
    assert!(blessed.contains("OnUpdate: pod1") && !blessed.contains("someone-else"));
    assert!(
        blessed.starts_with("# wink test case"),
        "the leading comment stays"
    );
    let out = wink(&dir, &["test", "case.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn wink_test_expects_the_writes_and_events_a_plugin_made() {
    // require-labels patches what misses its label and records a Warning.
    let dir = scratch("author_writes");
    let case = std::fs::read_to_string(root().join("plugins/require-labels/wink-test.yaml")).unwrap();
    let component = plugins_dir().join("require_labels.wasm");
    let write = r#"patch apps/v1 Deployment default/web merge {"metadata":{"labels":{"team":"unassigned"}}}"#;
    let event = r#"Warning MissingLabel default/web: missing label team: set to "unassigned""#;
    assert!(case.contains(write) && case.contains(event), "{case}");
    let case = case.replace(
        "../../target/wasm32-wasip2/release/require_labels.wasm",
        component.to_str().unwrap(),
    );
    let path = dir.join("case.yaml");

    // An expected write altered: the diff names the one expected and the one made.
    std::fs::write(
        &path,
        case.replace(r#""team":"unassigned"}}}"#, r#""team":"someone"}}}"#),
    )
    .unwrap();
    let out = wink(&dir, &["test", "case.yaml"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("writes:\n"), "{said}");
    assert!(
        said.contains(
            r#"  - patch apps/v1 Deployment default/web merge {"metadata":{"labels":{"team":"someone"}}}"#
        ),
        "{said}"
    );
    assert!(said.contains(&format!("  + {write}")), "{said}");
    assert!(!said.contains("events:\n"), "the Events matched: {said}");

    // No writes nor Events expected: --bless records them.
    let bare: String = case
        .lines()
        .filter(|l| {
            !l.contains("MissingLabel")
                && !l.contains("merge {")
                && !l.starts_with("  writes:")
                && !l.starts_with("  events:")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, &bare).unwrap();
    let out = wink(&dir, &["test", "case.yaml"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("  + {write}")) && said.contains(&format!("  + {event}")),
        "{said}"
    );
    let out = wink(&dir, &["test", "--bless", "case.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
    let blessed = std::fs::read_to_string(&path).unwrap();
    assert!(blessed.contains(write) && blessed.contains(event), "{blessed}");
    let out = wink(&dir, &["test", "case.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// Patches no API server would apply (a merge patch that is a string, a
/// JSON patch replacing the whole object with a number, a merge patch
/// making metadata a string): each write gets a 422 as from a server, and
/// the case plays to its end, well within the harness's 30 s per step.
#[test]
fn wink_test_answers_patches_that_leave_no_object_with_422() {
    let dir = scratch("author_bad_patches");
    let patch = |kind: &str, body: serde_json::Value| {
        serde_json::json!({"op": "patch", "api_version": "v1", "kind": "ConfigMap",
                           "key": "default/trigger", "type": kind, "body": body})
    };
    let case = serde_json::json!({
        "plugin": plugins_dir().join("write_probe.wasm"),
        "config": {
            "writes": [{"api_version": "v1", "kind": "ConfigMap", "verbs": ["patch"]}],
            "ops": [
                patch("merge", "x".into()),
                patch("json", serde_json::json!([{"op": "add", "path": "", "value": 5}])),
                patch("merge", serde_json::json!({"metadata": "x"})),
                patch("merge", serde_json::json!({"data": {"a": "b"}})),
            ],
        },
        "objects": [{"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "trigger", "namespace": "default"}}],
    });
    let path = dir.join("case.yaml");
    std::fs::write(&path, case.to_string()).unwrap();
    let started = std::time::Instant::now();
    let out = wink(&dir, &["test", "case.yaml"]);
    let took = started.elapsed();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "no expectation yet: {said}");
    assert!(took < std::time::Duration::from_secs(25), "took {took:?}: {said}");
    assert!(
        !said.contains("panicked") && !said.contains("did not finish"),
        "{said}"
    );
    for i in 0..3 {
        assert!(
            said.contains(&format!("  + INFO write {i} patch: error invalid 422 Invalid: ")),
            "write {i}: {said}"
        );
    }
    assert!(
        said.contains("  + INFO write 3 patch: ok default/trigger"),
        "{said}"
    );
    assert!(
        said.contains(r#"  + patch v1 ConfigMap default/trigger merge {"data":{"a":"b"}}"#),
        "only the good patch is a write: {said}"
    );
    let out = wink(&dir, &["test", "--bless", "case.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = wink(&dir, &["test", "case.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// An admission step whose request is not an AdmissionRequest (a string, a
/// list, an object naming no operation) fails the case with an error that
/// says so, not an `unknown operation ""`.
#[test]
fn wink_test_refuses_an_admission_request_that_is_not_one() {
    let dir = scratch("author_bad_admit");
    for (request, said_then) in [
        (
            serde_json::json!("CREATE"),
            "the request is a string, not a JSON object",
        ),
        (
            serde_json::json!([{"operation": "CREATE"}]),
            "the request is a list, not a JSON object",
        ),
        (
            serde_json::json!({"request": 5}),
            "the request is a number, not a JSON object",
        ),
        (
            serde_json::json!({"uid": "u"}),
            "the request names no operation: CREATE, UPDATE, DELETE or CONNECT",
        ),
    ] {
        let case = serde_json::json!({
            "plugin": plugins_dir().join("admit_probe.wasm"),
            "steps": [{"admit": {"door": "validate", "request": request}}],
        });
        std::fs::write(dir.join("case.yaml"), case.to_string()).unwrap();
        let out = wink(&dir, &["test", "--bless", "case.yaml"]);
        let said = text(&out);
        assert!(!out.status.success(), "{request}: {said}");
        assert!(said.contains(said_then), "{request}: {said}");
        assert!(!said.contains("unknown operation \"\""), "{request}: {said}");
    }
}

/// A case's `name:` (the plugin's name in the log) with a newline and
/// terminal escapes stays on its lines in the text log.
#[test]
fn a_forged_case_name_stays_on_its_log_lines() {
    let dir = scratch("author_forged_name");
    let case = serde_json::json!({
        "plugin": plugins_dir().join("pod_logger.wasm"),
        "name": "a\"} 1\nwink_leader 1\r\u{1b}[2K",
        "objects": [{"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "p0", "namespace": "default"}}],
    });
    std::fs::write(dir.join("case.yaml"), case.to_string()).unwrap();
    let out = Command::new(wink_bin())
        .current_dir(&dir)
        .args(["test", "--bless", "case.yaml"])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let named: Vec<&str> = said.lines().filter(|l| l.contains("wink_leader 1")).collect();
    assert!(!named.is_empty(), "{said}");
    for line in named {
        assert!(line.contains(r#"[a"} 1\nwink_leader 1\r"#), "{line}");
    }
    assert!(!said.contains('\u{1b}') && !said.contains('\r'), "{said}");
}

#[test]
fn wink_new_scaffolds_a_plugin_that_builds_and_passes_its_test() {
    let dir = scratch("author_new");
    let out = wink(
        &dir,
        &[
            "new",
            "hello-plugin",
            "--sdk",
            root().join("sdk").to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let krate = dir.join("hello-plugin");
    for f in [
        "Cargo.toml",
        "src/lib.rs",
        "config.example.json",
        "wink-test.yaml",
    ] {
        assert!(krate.join(f).exists(), "{f}");
    }
    let again = wink(&dir, &["new", "hello-plugin", "--sdk", "x"]);
    assert!(
        !again.status.success(),
        "an existing directory is not overwritten"
    );

    // Its own workspace; the build shares the repository's target directory
    // (a link), so the SDK's dependencies are not compiled again.
    std::os::unix::fs::symlink(root().join("target"), krate.join("target")).unwrap();
    common::ensure_wasm_target();
    let build = Command::new(env!("CARGO"))
        .current_dir(&krate)
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", text(&build));
    let out = wink(&krate, &["test", "wink-test.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("ok      wink-test.yaml"));
}
