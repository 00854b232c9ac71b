//! End-to-end: the operator's exceptions to a plugin's policy. The
//! WinkException of the worked example of `docs/src/running/exceptions.md`
//! lets one Deployment's privileged Pods (`app: legacy-batch`) past
//! `pod-security` with a warning naming it, where wink reads exceptions
//! (`--exception-namespaces`), and keeps their Pod from the plugin's
//! handlers, a `skip` in the reports; the same exception elsewhere does nothing,
//! and one past its expiry stops applying without any event: on the
//! simulated API server here, on a real one in `real_exceptions.rs`.

use crate::cache_support::*;
use crate::report_support::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

/// Where the example's exception lives (the daemon's `--exception-namespaces`).
pub const EXCEPTIONS: &str = "wink-exceptions";
/// The Deployment's label the example excepts.
pub const LABEL: &str = "legacy-batch";

/// The WinkException of the worked example in `docs/src/running/exceptions.md`.
pub fn example_exception() -> Value {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/running/exceptions.md"),
    )
    .unwrap();
    let (_, after) = page
        .split_once("<!-- winkexception: applied by tests/tests/exceptions.rs -->\n```yaml,ignore\n")
        .expect("the worked example's WinkException");
    serde_norway::from_str(after.split_once("```").unwrap().0).unwrap()
}

/// The example's exception in namespace `ns` (its `team` as `team`), with
/// `expires` when given.
pub fn exception_in(ns: &str, team: &str, expires: Option<&str>) -> Value {
    let mut e = example_exception();
    e["metadata"]["namespace"] = json!(ns);
    e["spec"]["match"]["namespaces"] = json!([team]);
    if let Some(t) = expires {
        e["spec"]["expires"] = json!(t);
    }
    e
}

/// Run kubectl on `kubeconfig` with `stdin`: (success, stdout, stderr).
pub fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    use std::io::Write;
    let mut child = std::process::Command::new("/usr/bin/kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default().as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// `kubectl apply` of `obj`, which must succeed.
pub fn apply(kubeconfig: &Path, obj: &Value) {
    let (ok, out, err) = kubectl(
        kubeconfig,
        &["apply", "--validate=false", "-f", "-"],
        Some(&obj.to_string()),
    );
    assert!(ok, "kubectl apply: {out}{err}");
}

/// Whether `kubectl create` lets a privileged Pod `name` into `ns`
/// (labelled `app: legacy-batch` when `labelled`): its warnings when it
/// does (the Pod is deleted again), none when pod-security refuses it.
pub fn created(kubeconfig: &Path, ns: &str, name: &str, labelled: bool) -> Option<String> {
    let mut pod = violating_pod(ns, name, 1);
    if labelled {
        pod["metadata"]["labels"] = json!({"app": LABEL});
    }
    let (ok, out, err) = kubectl(
        kubeconfig,
        &["create", "--validate=false", "-f", "-"],
        Some(&pod.to_string()),
    );
    if !ok {
        assert!(err.contains("pod-security.validate.wink.dev"), "{out}{err}");
        return None;
    }
    let (deleted, _, why) = kubectl(
        kubeconfig,
        &["-n", ns, "delete", "pod", name, "--wait=false"],
        None,
    );
    assert!(deleted, "{why}");
    Some(err)
}

/// Wait until a labelled privileged Pod is let in (its warnings) or not.
pub fn until_let_in(kubeconfig: &Path, ns: &str, let_in: bool, within: Duration) -> Option<String> {
    let deadline = Instant::now() + within;
    let mut n = 0;
    loop {
        n += 1;
        let got = created(kubeconfig, ns, &format!("legacy-batch-{n}"), true);
        if got.is_some() == let_in {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "a labelled privileged Pod {} in {ns}",
            if let_in {
                "is still refused"
            } else {
                "is still let in"
            }
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Wait until `kubectl get winkexceptions -n ns` shows the line `want`
/// (its columns joined by single spaces, Age left out).
pub fn until_listed(kubeconfig: &Path, ns: &str, want: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let (ok, out, err) = kubectl(kubeconfig, &["-n", ns, "get", "winkexceptions"], None);
        assert!(ok, "{err}");
        let lines: Vec<String> = out
            .lines()
            .map(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                cells[..cells.len() - 1].join(" ")
            })
            .collect();
        if lines.iter().any(|l| l == want) {
            assert_eq!(lines[0], "NAME PLUGINS TARGETS EXPIRES EXCEPTING", "{out}");
            return;
        }
        assert!(Instant::now() < deadline, "no line {want:?} in:\n{out}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// An RFC 3339 time `secs` from now.
pub fn in_seconds(secs: u64) -> String {
    let t = std::time::SystemTime::now() + Duration::from_secs(secs);
    let t = t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    k8s_openapi::jiff::Timestamp::from_second(t).unwrap().to_string()
}

/// The outcomes the reports hold about the Pod `ns`/`name`, by rule.
pub async fn outcomes(client: &kube::Client, ns: &str, name: &str) -> BTreeSet<(String, String)> {
    let reports = reports_of(client, wink::reports::ReportApi::Wgpolicyk8s).await;
    rows(&reports)
        .into_iter()
        .filter(|r| r.0 == ns && r.1 == name)
        .map(|r| (r.3, r.4))
        .collect()
}

/// Wait until the reports about `ns`/`name` are `skip`s alone (`skipped`),
/// or hold pod-security's own `fail` and no `skip`.
pub fn until_reported(client: &kube::Client, ns: &str, name: &str, skipped: bool) {
    let deadline = Instant::now() + WAIT;
    let runtime = tokio::runtime::Handle::current();
    loop {
        let got = runtime.block_on(outcomes(client, ns, name));
        let skips = got.iter().filter(|(_, o)| o == "skip").count();
        let done = match skipped {
            true => got == BTreeSet::from([("wink-exception".to_string(), "skip".to_string())]),
            false => skips == 0 && got.iter().any(|(_, o)| o == "fail"),
        };
        if done {
            return;
        }
        assert!(Instant::now() < deadline, "{ns}/{name} reported {got:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The namespaces of a run of the example.
pub struct Namespaces<'a> {
    /// wink's `--exception-namespaces`.
    pub exceptions: &'a str,
    /// Where the Pods are, with the privileged `app: legacy-batch` Pod `legacy-batch-old`.
    pub team: &'a str,
    /// Where the same exception does nothing.
    pub elsewhere: &'a str,
}

/// The exception's whole life, on the cluster of `kubeconfig` (`client`)
/// where wink runs pod-security with `--exception-namespaces` `ns.exceptions`.
pub fn the_exceptions_life(kubeconfig: &Path, client: &kube::Client, ns: &Namespaces<'_>) {
    let (team, elsewhere, exceptions) = (ns.team, ns.elsewhere, ns.exceptions);
    // No exception: refused, and the Pod there reported failing.
    until_let_in(kubeconfig, team, false, WAIT);
    until_reported(client, team, "legacy-batch-old", false);

    // The same exception where wink does not read them, then the example.
    apply(kubeconfig, &exception_in(elsewhere, team, None));
    apply(kubeconfig, &exception_in(exceptions, team, None));
    let warning = until_let_in(kubeconfig, team, true, WAIT).unwrap();
    assert!(
        warning.contains(&format!(
            "Warning: excepted by WinkException {exceptions}/legacy-batch: legacy-batch loads"
        )),
        "{warning}"
    );
    // The Pod there: not the plugin's any more, a `skip` naming the exception.
    until_reported(client, team, "legacy-batch-old", true);
    let reports =
        tokio::runtime::Handle::current().block_on(reports_of(client, wink::reports::ReportApi::Wgpolicyk8s));
    let skip = reports
        .iter()
        .flat_map(|r| r["results"].as_array().cloned().unwrap_or_default())
        .find(|r| r["result"] == "skip")
        .unwrap();
    assert_eq!(skip["policy"], "pod-security", "{skip}");
    assert!(
        skip["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("excepted by WinkException {exceptions}/legacy-batch: ")),
        "{skip}"
    );
    // A privileged Pod of another Deployment is still refused.
    assert!(created(kubeconfig, team, "other", false).is_none());
    // kubectl shows it, with the one Pod of the cache it excepts.
    let targets = format!("namespaces={team} kinds=Pod labels=app={LABEL}");
    let line = format!("legacy-batch pod-security {targets} 2099-01-01T00:00:00Z 1");
    until_listed(kubeconfig, exceptions, &line, WAIT);

    // Deleted: refused again, the one elsewhere notwithstanding.
    let (ok, _, err) = kubectl(
        kubeconfig,
        &["-n", exceptions, "delete", "winkexception", "legacy-batch"],
        None,
    );
    assert!(ok, "{err}");
    until_let_in(kubeconfig, team, false, WAIT);
    until_reported(client, team, "legacy-batch-old", false);

    // One that expires in a few seconds: in force, then not, with no event.
    apply(kubeconfig, &exception_in(exceptions, team, Some(&in_seconds(6))));
    until_let_in(kubeconfig, team, true, WAIT);
    let expiring = Instant::now();
    until_let_in(kubeconfig, team, false, Duration::from_secs(20));
    assert!(expiring.elapsed() < Duration::from_secs(20));
    // And the Pod there is the plugin's again.
    until_reported(client, team, "legacy-batch-old", false);
}

/// wink's arguments for the example: pod-security's webhook on `port`,
/// exceptions read in `exceptions`.
pub fn wink_args(port: u16, exceptions: &str) -> Vec<String> {
    vec![
        "--admission-addr".into(),
        format!("127.0.0.1:{port}"),
        "--admission-webhook-url".into(),
        format!("https://127.0.0.1:{port}"),
        "--report-batch-ms".into(),
        "200".into(),
        "--exception-namespaces".into(),
        exceptions.into(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exception_lets_one_deployments_pods_in_with_a_warning_until_it_expires() {
    let sim = wink_sim::Sim::start(wink_sim::SimConfig::default())
        .await
        .unwrap();
    for ns in ["team", "elsewhere", EXCEPTIONS] {
        namespace(&sim, ns).await;
    }
    let mut old = violating_pod("team", "legacy-batch-old", 1);
    old["metadata"]["labels"] = json!({"app": LABEL});
    sim.insert(old).unwrap();
    let s = Setup::new("exceptions_pod_security", &sim);
    s.install("pod_security", "pod-security", None);
    let args = wink_args(free_port(), EXCEPTIONS);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let wink = s.run(&args);
    wait_synced(&wink, "pod-security");
    let (kubeconfig, client) = (s.kubeconfig.clone(), sim.client());
    let life = tokio::task::spawn_blocking(move || {
        let ns = Namespaces {
            exceptions: EXCEPTIONS,
            team: "team",
            elsewhere: "elsewhere",
        };
        the_exceptions_life(&kubeconfig, &client, &ns)
    })
    .await;
    let lines = wink.lines();
    assert!(life.is_ok(), "{life:?}\n{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("WinkExceptions honoured in namespace(s) wink-exceptions alone")),
        "{lines:#?}"
    );
}

#[test]
fn manifests_ship_the_crd_the_rights_and_the_flag() {
    let dir = crate::common::scratch("exceptions_manifests");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(
        crate::common::plugin("pod_security"),
        plugins.join("pod-security.wasm"),
    )
    .unwrap();
    let render = |extra: &[&str]| -> Vec<Value> {
        let mut args = vec!["manifests", "--plugins", plugins.to_str().unwrap()];
        args.extend_from_slice(extra);
        crate::registry_support::wink_ok(&args)
            .split("\n---\n")
            .filter(|d| !d.trim().is_empty())
            .map(|d| serde_norway::from_str(d).unwrap())
            .collect()
    };
    let docs = render(&["--exceptions", "wink-exceptions,team-b"]);
    let crd = docs
        .iter()
        .find(|d| d["metadata"]["name"] == "winkexceptions.wink.dev")
        .expect("the CRD");
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(crd["spec"]["names"]["shortNames"], json!(["wex"]));
    let columns: Vec<&str> = crd["spec"]["versions"][0]["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Plugins", "Targets", "Expires", "Excepting", "Age"]);
    let role = docs
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "wink-winkexceptions")
        .expect("the ClusterRole");
    let rules = role["rules"].as_array().unwrap();
    let verbs = |resource: &str| {
        rules
            .iter()
            .find(|r| r["resources"] == json!([resource]))
            .map(|r| r["verbs"].clone())
    };
    assert_eq!(verbs("winkexceptions"), Some(json!(["get", "list", "watch"])));
    assert_eq!(verbs("winkexceptions/status"), Some(json!(["get", "patch"])));
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("the Deployment");
    let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(
        args.as_array()
            .unwrap()
            .contains(&json!("--exception-namespaces=wink-exceptions,team-b")),
        "{args}"
    );
    // Without the flag, none of it.
    let plain = serde_json::to_string(&render(&[])).unwrap();
    assert!(!plain.contains("winkexceptions") && !plain.contains("--exception-namespaces"));
}
