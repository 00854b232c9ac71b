//! End-to-end: a plugin directory as a careless or hostile local user
//! leaves it. Every bad file gets one clear error that echoes no content and
//! forges no log line; the good plugin runs throughout, hot reload keeps
//! working, and SIGTERM still ends the daemon.

use crate::common;

use common::{Wink, plugin, scratch};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;
use wink_sim::{Sim, SimConfig};

const WAIT: Duration = Duration::from_secs(60);
const SECRET: &str = "root:SECRET-TOKEN-0123456789:0:0";

fn pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap()
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_plugin_files_cost_only_themselves() {
    let dir = scratch("hostile_files");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin("pod_logger"), plugins.join("good.wasm")).unwrap();
    // A good component whose config is a FIFO: reading it would block.
    std::fs::copy(plugin("pod_logger"), plugins.join("fifo.wasm")).unwrap();
    mkfifo(&plugins.join("fifo.json"));
    // 200 MB of zeros (sparse).
    std::fs::File::create(plugins.join("big.wasm"))
        .unwrap()
        .set_len(200 << 20)
        .unwrap();
    // A link to a secret-looking file: its content must never be logged.
    std::fs::write(dir.join("passwd"), format!("{SECRET}\nmore\n")).unwrap();
    std::os::unix::fs::symlink(dir.join("passwd"), plugins.join("y.wasm")).unwrap();
    // Names that would forge log lines, or alias each other.
    for raw in [
        &b"evil\nERROR forged line.wasm"[..],
        b"esc\x1b[31m.wasm",
        b"\xff.wasm",
        b"\xfe.wasm",
        b"..wasm",
        b".wasm",
    ] {
        std::fs::copy(plugin("pod_logger"), plugins.join(OsStr::from_bytes(raw))).unwrap();
    }
    std::fs::create_dir(plugins.join("x.wasm")).unwrap();

    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).unwrap();
    let mut wink = Wink::run_on(&plugins, &kubeconfig, &[]);
    wink.wait_for_line("plugins loaded", WAIT);

    let errors: Vec<String> = wink
        .lines()
        .into_iter()
        .filter(|l| l.contains("plugin not loaded"))
        .collect();
    let has = |needle: &str, why: &str| errors.iter().any(|l| l.contains(needle) && l.contains(why));
    assert!(has("fifo.json", "is a FIFO, not a regular file"), "{errors:#?}");
    assert!(
        has(
            "big.wasm",
            "is 209715200 bytes, more than the 67108864 bytes a component may have"
        ),
        "{errors:#?}"
    );
    assert!(
        has("y.wasm", "only binary components are accepted"),
        "{errors:#?}"
    );
    assert!(has("x.wasm", "is a directory, not a regular file"), "{errors:#?}");
    for escaped in [
        r#""evil\nERROR forged line.wasm""#,
        r#""esc\u{1b}[31m.wasm""#,
        r#""\xFF.wasm""#,
        r#""\xFE.wasm""#,
        r#""..wasm""#,
        r#"".wasm""#,
    ] {
        assert!(has(escaped, "not a valid plugin name"), "{escaped}: {errors:#?}");
    }
    assert_eq!(errors.len(), 10, "one error per bad file: {errors:#?}");
    let all = wink.lines();
    assert!(
        !all.iter().any(|l| l.contains("SECRET-TOKEN")),
        "a file's content was logged"
    );
    assert!(
        !all.iter().any(|l| l.starts_with("ERROR forged")),
        "a file name forged a line"
    );
    assert!(
        !all.iter().any(|l| l.contains('\x1b')),
        "a file name wrote an escape sequence"
    );

    let pods: Api<Pod> = Api::namespaced(sim.client(), "default");
    pods.create(&PostParams::default(), &pod("p1")).await.unwrap();
    wink.wait_for_line("[good] OnAdd: p1", WAIT);

    // Hot reload still works: a new plugin loads; a new bad one is worded
    // as a first load, not as a replacement.
    std::fs::copy(plugin("pod_logger"), plugins.join("late.wasm")).unwrap();
    wink.wait_for_line("[late] OnAdd: p1", WAIT);
    std::fs::write(plugins.join("newbad.wasm"), b"garbage").unwrap();
    wink.wait_for_line("newbad.wasm: not a valid WebAssembly component", WAIT);
    let newbad: Vec<String> = wink
        .lines()
        .into_iter()
        .filter(|l| l.contains("newbad.wasm"))
        .collect();
    assert!(
        newbad
            .iter()
            .all(|l| l.contains("plugin not loaded") && !l.contains("running version stays")),
        "{newbad:#?}"
    );

    let status = wink.terminate(Duration::from_secs(10));
    assert!(
        status.is_some_and(|s| s.success()),
        "SIGTERM ends the daemon: {status:?}"
    );
}
