//! End-to-end: `wink dev` from the workspace, as a new user runs it. It
//! loads the examples of `plugins/` (not the test and benchmark plugins of
//! `tests/plugins/`, which are built into the same directory) with tier-up
//! on, and each example gets its initial list once: `deployment-lister`
//! prints each seeded Deployment once. `wink dev --src` on a Rust crate, and
//! on Python and TypeScript projects as `wink new --lang` writes them (their
//! build tools installed into `target/lang-tools` by the test): a saved edit
//! is rebuilt and reaches the running plugin, a broken edit is shown once and
//! the old version keeps handling events.

use crate::common;
use crate::lang_support;

use common::{Wink, plugins_dir, root, scratch};
use lang_support::Lang;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(120);
/// Builds of Python and JavaScript components take seconds each, longer
/// while other builds share the cores.
const LANG_WAIT: Duration = Duration::from_secs(600);

/// `wink dev --churn 0` from the workspace, its kubeconfig and precompiled
/// directory in `dir`, with `extra` flags.
fn dev_in(dir: &Path, extra: &[&str]) -> Wink {
    let (kubeconfig, precompiled) = (dir.join("kubeconfig"), dir.join("precompiled"));
    let mut args = vec![
        "dev",
        "--churn",
        "0",
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
        "--precompiled",
        precompiled.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Wink::spawn_in(&root(), &args)
}

/// `wink dev` with no flag serves the examples' webhooks: kubectl creating a
/// privileged Pod in its default namespace meets pod-security's denial, as
/// the getting-started page shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wink_dev_serves_the_webhooks_so_kubectl_meets_a_denial_at_once() {
    if !crate::kubectl_support::have_kubectl() {
        return;
    }
    plugins_dir();
    let dir = scratch("dev_admission");
    let kubeconfig = dir.join("kubeconfig");
    let wink = dev_in(&dir, &[]);
    wink.wait_for_line("plugin synced plugin=pod-security", WAIT);
    let kubectl = |args: &[&str]| {
        std::process::Command::new(crate::kubectl_support::KUBECTL)
            .args(["--kubeconfig", kubeconfig.to_str().unwrap()])
            .args(args)
            .env("HOME", &dir)
            .output()
            .unwrap()
    };
    // The leader writes the configurations soon after the plugins load:
    // the name of the webhook serving pod-security (its own, or one it
    // shares, whose path names it).
    let deadline = std::time::Instant::now() + WAIT;
    let jsonpath = r#"jsonpath={range .webhooks[*]}{.name} {.clientConfig.url}{"\n"}{end}"#;
    let webhook = loop {
        let out = kubectl(&["get", "validatingwebhookconfiguration", "wink", "-o", jsonpath]);
        let listed = String::from_utf8_lossy(&out.stdout).to_string();
        let serving = listed.lines().find_map(|l| {
            let (name, url) = l.split_once(' ')?;
            let segment = url.rsplit('/').nth(1)?;
            segment
                .split('.')
                .any(|p| p == "pod-security")
                .then(|| name.to_string())
        });
        if let Some(name) = serving {
            break name;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no webhook configuration:\n{}",
            wink.lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    // The page's command, as written there.
    // In `default` the first denial may be the library's
    // disallow-default-namespace; in a namespace of its own, pod-security's.
    let out = kubectl(&["run", "root", "--image=busybox", "--privileged"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a privileged Pod was admitted");
    assert!(
        stderr.contains(r#".validate.wink.dev" denied the request"#),
        "{stderr}"
    );
    assert!(kubectl(&["create", "namespace", "team"]).status.success());
    let out = kubectl(&[
        "run",
        "root",
        "-n",
        "team",
        "--image=busybox:1.36",
        "--privileged",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a privileged Pod was admitted");
    println!("{stderr}");
    assert!(
        stderr.contains(&format!(r#"admission webhook "{webhook}" denied the request"#))
            && stderr.contains("violates PodSecurity"),
        "{stderr}"
    );

    // Ingresses are served (no CRD stand-in): unique-ingress-host refuses a
    // host another namespace's Ingress routes, from its field index.
    let ingress = |ns: &str, name: &str| {
        format!(
            r#"{{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {{"name": "{name}", "namespace": "{ns}"}},
                "spec": {{"rules": [{{"host": "shop.example.com"}}]}}}}"#
        )
    };
    let apply = |manifest: String| {
        let file = dir.join("ingress.json");
        std::fs::write(&file, manifest).unwrap();
        kubectl(&["create", "-f", file.to_str().unwrap()])
    };
    for ns in ["team-a", "team-b"] {
        assert!(kubectl(&["create", "namespace", ns]).status.success());
    }
    let first = apply(ingress("team-a", "shop"));
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let deadline = std::time::Instant::now() + WAIT;
    for n in 0.. {
        let out = apply(ingress("team-b", &format!("copy-{n}")));
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("unique-ingress-host: the host shop.example.com is already routed by the Ingress team-a/shop"),
                "{stderr}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never refused");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn wink_dev_loads_the_examples_once_each_and_skips_the_test_plugins() {
    let built = plugins_dir();
    let dir = scratch("dev");
    let seed = dir.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    let deployment = |name: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec: {{containers: [{{name: c, image: nginx}}]}}\n"
        )
    };
    std::fs::write(seed.join("web.yaml"), deployment("web")).unwrap();
    std::fs::write(seed.join("api.yaml"), deployment("api")).unwrap();
    let wink = dev_in(&dir, &["--seed", seed.to_str().unwrap()]);
    let examples = [
        "app_index",
        "deployment_lister",
        "namespace_defaults",
        "pod_logger",
        "pod_security",
        "replica_checker",
        "require_labels",
        "ttl_reaper",
        "unique_ingress_host",
    ];
    for name in examples {
        assert!(built.join(format!("{name}.wasm")).exists(), "{name} is built");
        // The plugin is the file's stem with `_` read as `-`.
        let plugin = name.replace('_', "-");
        wink.wait_for_line(&format!("plugin synced plugin={plugin}"), WAIT);
    }
    // Every Cranelift build cached: nothing more will be handed over.
    wink.wait_until("every Cranelift build cached", WAIT, |w| {
        w.lines()
            .iter()
            .filter(|l| l.contains("Cranelift build cached for the next load"))
            .count()
            >= examples.len()
    });
    std::thread::sleep(Duration::from_millis(500));
    let lines = wink.lines();
    for skipped in [
        "bench_counter",
        "bench_query",
        "cache_probe",
        "misbehave",
        "write_probe",
    ] {
        assert!(
            built.join(format!("{skipped}.wasm")).exists(),
            "{skipped} is built"
        );
        assert!(
            !lines
                .iter()
                .any(|l| l.contains(&format!("plugin={}", skipped.replace('_', "-")))),
            "{skipped} is a test plugin: not loaded"
        );
    }
    let adds: Vec<String> = wink
        .plugin_lines("deployment-lister")
        .into_iter()
        .filter(|l| l.starts_with("add a deployment: "))
        .collect();
    let mut adds = adds;
    adds.sort();
    assert_eq!(
        adds,
        ["add a deployment: api", "add a deployment: web"],
        "each seeded Deployment once"
    );
}

/// Wait for a line containing `needle` that was not there before.
fn wait_new(wink: &Wink, needle: &str, before: usize) {
    wink.wait_until(needle, LANG_WAIT, |w| {
        w.lines().iter().skip(before).any(|l| l.contains(needle))
    });
}

/// `wink dev --src SRC` in `dir` (with `env`) on a simulated cluster seeded
/// with the Pod `pod0`, its kubeconfig written to `dir/kubeconfig`.
fn dev_src(dir: &Path, src: &str, env: &[(&str, &std::ffi::OsStr)]) -> Wink {
    let seed = dir.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    std::fs::write(
        seed.join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: pod0, namespace: default}\nspec: {containers: [{name: c, image: nginx}]}\n",
    )
    .unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let precompiled = dir.join("precompiled");
    let args = [
        "dev",
        "--src",
        src,
        "--churn",
        "0",
        "--seed",
        seed.to_str().unwrap(),
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
        "--precompiled",
        precompiled.to_str().unwrap(),
    ];
    Wink::spawn_with_env(dir, &args, env)
}

/// Create the Pod `name` in `default` through the cluster of `kubeconfig`.
async fn create_pod(kubeconfig: &Path, name: &str) {
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(kubeconfig).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap();
    pods.create(&Default::default(), &pod).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wink_dev_src_rebuilds_on_save_and_a_broken_edit_keeps_the_running_version() {
    let dir = scratch("dev_src");
    let krate = dir.join("crates/dev-echo");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        format!(
            "[package]\nname = \"dev-echo\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\nwink-sdk = {{ path = \"{}\" }}\nserde_json = \"1\"\n\n[workspace]\n",
            root().join("sdk").display()
        ),
    )
    .unwrap();
    let source = std::fs::read_to_string(root().join("plugins/pod-logger/src/lib.rs")).unwrap();
    let lib = krate.join("src/lib.rs");
    std::fs::write(&lib, &source).unwrap();
    // Its build shares the repository's target directory (no dependency is
    // compiled twice).
    std::os::unix::fs::symlink(root().join("target"), krate.join("target")).unwrap();
    common::ensure_wasm_target();
    let wink = dev_src(&dir, "crates", &[]);
    let kubeconfig = dir.join("kubeconfig");
    wink.wait_for_line("[dev-echo] OnAdd: pod0", WAIT);

    // A one-line change: the new version is built, loaded and replayed.
    let before = wink.lines().len();
    let saved = std::time::Instant::now();
    std::fs::write(&lib, source.replace("OnAdd:", "Added:")).unwrap();
    wait_new(&wink, "[dev-echo] Added: pod0", before);
    println!("save -> the new version handled an event: {:?}", saved.elapsed());

    // A broken edit is shown once and changes nothing.
    let before = wink.lines().len();
    let broken = format!("{}\nthis is not Rust\n", source.replace("OnAdd:", "Added:"));
    std::fs::write(&lib, &broken).unwrap();
    wait_new(
        &wink,
        "dev-echo does not build; the running version stays",
        before,
    );
    std::fs::write(&lib, &broken).unwrap();
    create_pod(&kubeconfig, "pod1").await;
    wait_new(&wink, "[dev-echo] Added: pod1", before);
    let shown = wink
        .lines()
        .iter()
        .skip(before)
        .filter(|l| l.contains("does not build"))
        .count();
    assert_eq!(shown, 1, "the same error is shown once");
}

/// `wink dev --src` on the project `wink new --lang` writes for `lang`: the
/// scaffold's handler logs `hello default/pod0: listed`; an edit to its
/// source is rebuilt with the project's build command and reaches the
/// running plugin; a syntax error is shown once (a second save of it says
/// only that it still does not build) and the edited version keeps handling
/// events.
async fn wink_dev_src_on_a_new_project(lang: Lang) {
    let (flag, source, garbage) = match lang {
        Lang::Python => ("python", "app.py", "this is not python("),
        Lang::Js => ("js", "src/app.ts", "this is not typescript("),
    };
    let dir = scratch(&format!("dev_src_{flag}"));
    let (name, plugin) = (format!("dev-{flag}"), format!("dev-{flag}"));
    let project = dir.join("projects").join(&name);
    let sdk = root().join(if lang == Lang::Python {
        "sdk/python"
    } else {
        "sdk/js"
    });
    let new = std::process::Command::new(common::wink_bin())
        .args(["new", project.to_str().unwrap(), "--lang", flag, "--sdk"])
        .arg(sdk)
        .output()
        .unwrap();
    assert!(new.status.success(), "{}", String::from_utf8_lossy(&new.stderr));
    // The tools an author installs: componentize-py on PYTHONPATH; for
    // TypeScript, wink-build on PATH and its packages (what `npm install`
    // puts into node_modules).
    let env: Vec<(&str, OsString)> = match lang {
        Lang::Python => vec![("PYTHONPATH", lang_support::python_tools().into())],
        Lang::Js => {
            let mut path = OsString::from(lang_support::js_bin());
            path.push(":");
            path.push(std::env::var_os("PATH").unwrap_or_default());
            vec![("PATH", path), ("WINK_JS_TOOLS", lang_support::js_tools().into())]
        }
    };
    let env: Vec<(&str, &std::ffi::OsStr)> = env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let wink = dev_src(&dir, "projects", &env);
    let tag = format!("[{plugin}] ");
    wait_new(&wink, &format!("{tag}hello default/pod0: listed"), 0);

    // An edit: the new version is built, loaded and replayed.
    let file = project.join(source);
    let original = std::fs::read_to_string(&file).unwrap();
    assert!(original.contains("\"listed\"") && original.contains("\"added\""));
    let edited = original
        .replace("\"listed\"", "\"listed v2\"")
        .replace("\"added\"", "\"added v2\"");
    let before = wink.lines().len();
    let saved = std::time::Instant::now();
    std::fs::write(&file, &edited).unwrap();
    wait_new(&wink, &format!("{tag}hello default/pod0: listed v2"), before);
    println!(
        "{flag}: save -> the new version handled an event: {:?}",
        saved.elapsed()
    );

    // A syntax error: shown once, with the error; the edited version stays.
    let before = wink.lines().len();
    let broken = format!("{edited}\n{garbage}\n");
    std::fs::write(&file, &broken).unwrap();
    let failed = format!("{name} does not build; the running version stays");
    wait_new(&wink, &failed, before);
    std::fs::write(&file, &broken).unwrap();
    wait_new(
        &wink,
        &format!("{name} still does not build (the same errors)"),
        before,
    );
    create_pod(&dir.join("kubeconfig"), "pod1").await;
    wait_new(&wink, &format!("{tag}hello default/pod1: added v2"), before);
    let lines = wink.lines();
    let after: Vec<&String> = lines.iter().skip(before).collect();
    assert_eq!(
        after.iter().filter(|l| l.contains(&failed)).count(),
        1,
        "the failure is shown once"
    );
    assert_eq!(
        after.iter().filter(|l| l.contains(garbage)).count(),
        1,
        "its error, quoting the line, is shown once: {after:#?}"
    );
    assert!(
        !after.iter().any(|l| l.contains(&format!("{name} built in"))),
        "nothing was built: {after:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wink_dev_src_rebuilds_a_python_project_on_save_and_keeps_it_through_a_syntax_error() {
    wink_dev_src_on_a_new_project(Lang::Python).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wink_dev_src_rebuilds_a_typescript_project_on_save_and_keeps_it_through_a_syntax_error() {
    wink_dev_src_on_a_new_project(Lang::Js).await;
}
