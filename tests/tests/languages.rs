//! End-to-end: plugins in Python and JavaScript. The examples
//! (`plugins/python/*`, `plugins/js/*`) and the test plugins that crash
//! (`tests/lang/*/misbehave`) are built from source with the SDKs' build
//! commands (componentize-py from PyPI, componentize-js and esbuild from npm,
//! installed into `target/lang-tools` by the test itself), then:
//!
//! - each example passes its `wink test` case, and `wink new --lang` writes
//!   projects that build and pass theirs as generated; the Python SDK's unit
//!   tests pass against the generated bindings, the TypeScript SDK's (`npm
//!   test`) against stubs of the host's interfaces, and `tsc --noEmit`
//!   accepts the TypeScript SDK and examples;
//! - under `wink run` on the simulated server, pod-logger and app-index in
//!   Python and JavaScript log exactly what the Rust ones log, event for
//!   event, and require-labels labels, records its Event and logs as the
//!   Rust one does; and each has its language's memory cap;
//! - a Python plugin that raises and a JavaScript plugin that throws are
//!   restarted, then quarantined, like any crash, with the message in the log.
//!
//! Components load on Winch (`--tier-up`) with one compile cache for the
//! whole run, so each is compiled by Cranelift once, in the background.

use crate::cache_support;
use crate::common;
use crate::lang_support;
use crate::runtime_support;

use cache_support::{REQUIRE_LABELS_GRANT, Setup, WAIT, deployment, free_port, http, pod, wait_synced};
use common::{Wink, root, scratch, wink_bin};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use lang_support::{Lang, example, misbehave};
use runtime_support::log_lines;
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

const LANGS: [Lang; 2] = [Lang::Python, Lang::Js];

/// `wink run` on Winch with the run-wide compile cache, plus `extra`.
fn run(s: &Setup, extra: &[&str]) -> Wink {
    let cache = root().join("target/lang-tools/compile-cache");
    let mut args = vec!["--tier-up", "--compile-cache", cache.to_str().unwrap()];
    args.extend_from_slice(extra);
    s.run(&args)
}

fn install(s: &Setup, component: &Path, name: &str) {
    std::fs::copy(component, s.plugins.join(format!("{name}.wasm"))).unwrap();
}

/// `wink test CASE`: its output, asserting it passed.
fn wink_test(case: &Path) -> String {
    let out = Command::new(wink_bin()).arg("test").arg(case).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "wink test {}:\n{text}", case.display());
    text
}

#[test]
fn python_and_js_examples_pass_their_wink_test_cases() {
    for lang in LANGS {
        let names = lang_support::examples(lang);
        for name in [
            "pod-logger",
            "app-index",
            "require-labels",
            "service-selector-guard",
        ] {
            assert!(
                names.iter().any(|n| n == name),
                "{lang:?} has the example {name}: {names:?}"
            );
        }
        for name in &names {
            let built = example(lang, name);
            let case = built.parent().unwrap().parent().unwrap().join("wink-test.yaml");
            let out = wink_test(&case);
            assert!(out.contains("ok"), "{}: {out}", case.display());
        }
    }
}

#[test]
fn wink_new_lang_python_and_js_build_and_pass_as_generated() {
    let dir = scratch("lang_new");
    for (lang, flag, sdk) in [(Lang::Python, "python", "sdk/python"), (Lang::Js, "js", "sdk/js")] {
        let project = dir.join(format!("hello-{flag}"));
        let out = Command::new(wink_bin())
            .args(["new", project.to_str().unwrap(), "--lang", flag, "--sdk"])
            .arg(root().join(sdk))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        // The build the generated files describe: build.sh, or the
        // package.json's build script (wink-build from the SDK).
        let status = match lang {
            Lang::Python => Command::new("sh")
                .arg("build.sh")
                .current_dir(&project)
                .env("PYTHONPATH", lang_support::python_tools())
                .status(),
            Lang::Js => {
                let path = format!(
                    "{}:{}",
                    lang_support::js_bin().display(),
                    std::env::var("PATH").unwrap_or_default()
                );
                Command::new("npm")
                    .args(["run", "--silent", "build"])
                    .current_dir(&project)
                    .env("PATH", path)
                    .env("WINK_JS_TOOLS", lang_support::js_tools())
                    .status()
            }
        };
        assert!(status.unwrap().success(), "building the new {flag} project");
        let built = project.join(format!("build/hello_{flag}.wasm"));
        assert!(built.is_file(), "{}", built.display());
        wink_test(&project.join("wink-test.yaml"));
    }
}

#[test]
fn the_typescript_sdk_and_examples_type_check() {
    let tsc = lang_support::js_tools().join("node_modules/typescript/bin/tsc");
    let examples = lang_support::examples(Lang::Js)
        .into_iter()
        .map(|name| format!("plugins/js/{name}"));
    for project in std::iter::once("sdk/js".to_string()).chain(examples) {
        let out = Command::new("node")
            .arg(&tsc)
            .args(["--noEmit", "-p", "."])
            .current_dir(root().join(&project))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tsc --noEmit in {project}:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn the_python_sdk_unit_tests_pass_against_the_generated_bindings() {
    let tools = lang_support::python_tools();
    let bindings = root().join("target/lang-tools/python-bindings");
    let _ = std::fs::remove_dir_all(&bindings);
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let generate = Command::new(&python)
        .arg(tools.join("bin/componentize-py"))
        .args(["-d", "wit", "-w", "plugin", "bindings"])
        .arg(&bindings)
        .current_dir(root())
        .env("PYTHONPATH", tools)
        .output()
        .unwrap();
    assert!(
        generate.status.success(),
        "{}",
        String::from_utf8_lossy(&generate.stderr)
    );
    let path = format!("{}:{}", bindings.display(), root().join("sdk/python").display());
    let out = Command::new(&python)
        .args(["-m", "unittest", "discover", "-s", "sdk/python/tests"])
        .current_dir(root())
        .env("PYTHONPATH", path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Ran 18 tests"), "{text}");
}

#[test]
fn the_js_sdk_unit_tests_pass_against_stubs_of_the_host() {
    // `npm test`: esbuild bundles sdk/js/test/*.test.mjs with the SDK, the
    // host's interfaces resolved to the fakes of test/stubs/, and node's own
    // runner runs them.
    let out = Command::new("npm")
        .args(["run", "--silent", "test"])
        .current_dir(root().join("sdk/js"))
        .env("WINK_JS_TOOLS", lang_support::js_tools())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.lines().any(|l| l == "# pass 52"), "{text}");
    assert!(text.lines().any(|l| l == "# fail 0"), "{text}");
}

/// Wait until every plugin of `names` has logged `count` lines.
fn wait_lines(wink: &Wink, names: &[String], count: usize) {
    wink.wait_until(&format!("{count} lines from each of {names:?}"), WAIT, |w| {
        names.iter().all(|n| w.plugin_lines(n).len() >= count)
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_and_js_examples_log_what_the_rust_examples_log() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("lang_same_output", &sim);
    let mut names = Vec::new();
    for (krate, ex) in [("pod_logger", "pod-logger"), ("app_index", "app-index")] {
        s.install(krate, ex, None);
        names.push(ex.to_string());
        for lang in LANGS {
            let name = format!("{ex}-{}", lang.suffix());
            install(&s, &example(lang, ex), &name);
            names.push(name);
        }
    }
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    let create = |name: &'static str, app: &'static str| {
        let pods = pods.clone();
        async move {
            pods.create(
                &PostParams::default(),
                &pod("default", name, json!({"app": app}), None),
            )
            .await
            .unwrap();
        }
    };
    create("web-1", "web").await;
    create("db-1", "db").await;
    let admin = format!("127.0.0.1:{}", free_port());
    let wink = run(&s, &["--admin-addr", &admin]);
    for n in &names {
        wait_synced(&wink, n);
    }
    // Each got its language's memory cap: JavaScript's engine collects late.
    let (_, body) = http(&admin, "GET", "/debug/plugins").await;
    let plugins: serde_json::Value = serde_json::from_str(&body).unwrap();
    let cap = |name: &str| {
        let p = plugins["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name);
        p.unwrap_or_else(|| panic!("{name} in {body}"))["memory_mib"].clone()
    };
    assert_eq!(
        [cap("pod-logger"), cap("pod-logger-py"), cap("pod-logger-js")],
        [json!(64), json!(64), json!(256)]
    );
    wait_lines(&wink, &names, 2);
    // One step at a time: app-index reads the index when it handles an
    // event, so each plugin must have handled a step before the next.
    create("web-2", "web").await;
    wait_lines(&wink, &names, 3);
    let patch = json!({"metadata": {"labels": {"app": "db"}}});
    pods.patch("web-2", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    wait_lines(&wink, &names, 4);
    pods.delete("web-1", &DeleteParams::default()).await.unwrap();
    wait_lines(&wink, &names, 5);

    let rust_pods = wink.plugin_lines("pod-logger");
    assert_eq!(
        rust_pods[2..],
        ["OnAdd: web-2", "OnUpdate: web-2", "OnDelete: web-1"]
    );
    let rust_index = wink.plugin_lines("app-index");
    assert_eq!(
        rust_index[2..],
        [
            "add: default/web-2 app=web -> [default/web-1 default/web-2]",
            "update: default/web-2 app=db -> [default/db-1 default/web-2]",
            "delete: default/web-1 app=web -> []",
        ]
    );
    for lang in LANGS {
        let sfx = lang.suffix();
        assert_eq!(
            wink.plugin_lines(&format!("pod-logger-{sfx}")),
            rust_pods,
            "{lang:?}"
        );
        assert_eq!(
            wink.plugin_lines(&format!("app-index-{sfx}")),
            rust_index,
            "{lang:?}"
        );
    }
}

/// require-labels (Rust, or the example in `lang`) against a fresh server
/// with an unlabelled Deployment: its log lines once it converged.
async fn require_labels(lang: Option<Lang>) -> Vec<String> {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let test = format!("lang_require_labels_{}", lang.map_or("rs", Lang::suffix));
    let s = Setup::new(&test, &sim);
    match lang {
        None => s.install("require_labels", "require-labels", None),
        Some(lang) => install(&s, &example(lang, "require-labels"), "require-labels"),
    }
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    std::fs::write(&grants, REQUIRE_LABELS_GRANT).unwrap();
    let deployments: Api<Deployment> = Api::namespaced(sim.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("default", "web", 1))
        .await
        .unwrap();
    let wink = run(&s, &["--grants", grants.to_str().unwrap()]);
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let d = deployments.get("web").await.unwrap();
        if d.labels().get("team").map(String::as_str) == Some("unassigned") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{lang:?}: never labeled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let web = deployments.get("web").await.unwrap();
    assert!(
        web.managed_fields()
            .iter()
            .any(|m| m.manager.as_deref() == Some("wink-require-labels")),
        "{lang:?}: the write is the plugin's"
    );
    let events: Api<Event> = Api::all(sim.client());
    let deadline = std::time::Instant::now() + WAIT;
    let event = loop {
        let list = events.list(&ListParams::default()).await.unwrap();
        if let Some(e) = list
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("MissingLabel"))
        {
            break e;
        }
        assert!(std::time::Instant::now() < deadline, "{lang:?}: no Event");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.note.as_deref(),
        Some(r#"missing label team: set to "unassigned""#),
        "{lang:?}"
    );
    // Converged: the patched Deployment came back as an update needing nothing.
    wink.wait_for_line("plugin synced plugin=require-labels", WAIT);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        sim.request_count("patch", "deployments"),
        1,
        "{lang:?}: one patch"
    );
    wink.plugin_lines("require-labels")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_labels_in_python_and_js_acts_as_the_rust_one() {
    let rust = require_labels(None).await;
    assert_eq!(
        rust,
        [r#"require-labels: default/web: missing label team: set to "unassigned""#]
    );
    for lang in LANGS {
        assert_eq!(require_labels(Some(lang)).await, rust, "{lang:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_raise_and_a_js_throw_are_restarted_then_quarantined() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("lang_crash", &sim);
    s.install("pod_logger", "good", None);
    let crashers = [
        ("misbehave-py", Lang::Python, "misbehave: raising on bomb"),
        ("misbehave-js", Lang::Js, "misbehave: throwing on bomb"),
    ];
    for (name, lang, _) in crashers {
        install(&s, &misbehave(lang), name);
    }
    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    for name in ["a0", "bomb", "b0"] {
        pods.create(&PostParams::default(), &pod("default", name, json!({}), None))
            .await
            .unwrap();
    }
    let wink = run(&s, &["--max-restarts", "2"]);
    for (name, _, _) in crashers {
        let me = format!("plugin={name}");
        wink.wait_until(&format!("{name} quarantined"), WAIT, |w| {
            !log_lines(w, &["plugin quarantined", &me]).is_empty()
        });
    }
    pods.create(&PostParams::default(), &pod("default", "after", json!({}), None))
        .await
        .unwrap();
    wink.wait_for_line("[good] OnAdd: after", WAIT);
    let lines = wink.lines();
    for (name, _, message) in crashers {
        let me = format!("plugin={name}");
        // Three crashes: the first, then one per restart's replay, each on bomb.
        let traps = log_lines(&wink, &["plugin trapped", &me]);
        assert_eq!(traps.len(), 3, "{name}: {traps:#?}");
        assert!(
            traps
                .iter()
                .all(|t| t.contains("call=on-add object=default/bomb")),
            "{traps:#?}"
        );
        assert_eq!(
            log_lines(&wink, &["restarting plugin after a crash", &me]).len(),
            2
        );
        let quarantined = log_lines(&wink, &["plugin quarantined", &me]);
        assert!(
            quarantined[0].contains("3 consecutive crashes"),
            "{}",
            quarantined[0]
        );
        // The exception's message reached the log, once per crash.
        let said = wink.plugin_lines(name);
        assert_eq!(
            said.iter().filter(|l| l.contains(message)).count(),
            3,
            "{name}: {said:#?}"
        );
        // It handled what came before the bomb on each instance.
        assert_eq!(said.iter().filter(|l| *l == "OnAdd: a0").count(), 3, "{said:#?}");
        // Nothing reached it after the quarantine.
        let at = lines.iter().position(|l| *l == quarantined[0]).unwrap();
        let tag = format!("[{name}] ");
        assert!(
            !lines[at..].iter().any(|l| l.contains(&tag)),
            "{name}: output after the quarantine"
        );
    }
}

/// Plugins of a directory load side by side: a Python component's compile
/// (several seconds; tens on a loaded machine) delays no other plugin. The
/// Python file sorts first, so loading one file after another would start
/// the Rust plugin only after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_compile_delays_no_other_plugin() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let s = Setup::new("lang_parallel_load", &sim);
    install(&s, &example(Lang::Python, "pod-logger"), "a-python");
    s.install("pod_logger", "b-rust", None);
    // No precompiled directory: the Python component is compiled now.
    let wink = s.run(&[]);
    wink.wait_for_line("plugin loaded", WAIT);
    wink.wait_for_line("plugins loaded loaded=2", Duration::from_secs(600));
    let loaded: Vec<String> = wink
        .lines()
        .into_iter()
        .filter(|l| l.contains("plugin loaded from"))
        .collect();
    assert_eq!(loaded.len(), 2, "{loaded:#?}");
    assert!(
        loaded[0].contains("plugin=b-rust"),
        "the Rust plugin was loaded first, while the Python one compiled: {loaded:#?}"
    );
}
