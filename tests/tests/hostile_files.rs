//! End-to-end: a plugin directory as a careless or hostile local user
//! leaves it. Every bad file gets one clear error that echoes no content and
//! forges no log line; the good plugin runs throughout, hot reload keeps
//! working, and SIGTERM still ends the daemon. The other files wink reads
//! (`wink manifests --grants`, `wink test` cases, `wink sim --seed`
//! manifests) are refused at once when they are a FIFO, a device, too large
//! or nested too deep.

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

/// Run `wink ARGS`, which must exit (with an error) within 30 s: its stderr.
fn fails_at_once(args: &[&std::ffi::OsStr]) -> String {
    use std::io::Read;
    let mut child = std::process::Command::new(common::wink_bin())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("wink {args:?} did not end within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(!status.success(), "wink {args:?} succeeded: {stderr}");
    stderr
}

#[test]
fn hostile_input_files_are_refused_at_once_with_a_clear_error() {
    let dir = scratch("hostile_input_files");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let fifo = dir.join("fifo.yaml");
    mkfifo(&fifo);
    // 3 GiB that take no disk, and would take memory if read.
    let sparse = dir.join("sparse.yaml");
    std::fs::File::create(&sparse).unwrap().set_len(3 << 30).unwrap();
    // 128 KiB of `[`: seconds of a YAML scanner's time if parsed.
    let deep = dir.join("deep.yaml");
    std::fs::write(&deep, "[".repeat(128 << 10)).unwrap();
    let zero = Path::new("/dev/zero");
    let too_large = |limit: u64, what: &str| {
        format!("sparse.yaml: is 3221225472 bytes, more than the {limit} bytes a {what} may have")
    };
    let files = |what: &str, limit: u64| {
        [
            (
                fifo.clone(),
                "fifo.yaml: is a FIFO, not a regular file".to_string(),
            ),
            (
                zero.to_path_buf(),
                "/dev/zero: is a device, not a regular file".to_string(),
            ),
            (sparse.clone(), too_large(limit, what)),
            (deep.clone(), "nested deeper than 256 levels".to_string()),
        ]
    };
    for (file, why) in files("grants file", 1 << 20) {
        let stderr = fails_at_once(&[
            "manifests".as_ref(),
            "--plugins".as_ref(),
            plugins.as_os_str(),
            "--grants".as_ref(),
            file.as_os_str(),
        ]);
        assert!(stderr.contains(&why), "manifests --grants {file:?}: {stderr}");
    }
    for (file, why) in files("test case", 4 << 20) {
        let stderr = fails_at_once(&["test".as_ref(), file.as_os_str()]);
        assert!(stderr.contains(&why), "test {file:?}: {stderr}");
    }
    for (i, (file, why)) in files("seed file", 16 << 20).into_iter().enumerate() {
        let seed = dir.join(format!("seed-{i}"));
        std::fs::create_dir_all(&seed).unwrap();
        std::os::unix::fs::symlink(&file, seed.join("objects.yaml")).unwrap();
        // Named by the link in the seed directory.
        let why = match why.split_once(": ") {
            Some((_, what)) => format!("objects.yaml: {what}"),
            None => why,
        };
        let stderr = fails_at_once(&["sim".as_ref(), "--seed".as_ref(), seed.as_os_str()]);
        assert!(stderr.contains(&why), "sim --seed with {file:?}: {stderr}");
    }
}
