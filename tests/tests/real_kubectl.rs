//! The simulated API server judged by the real one through an unmodified
//! `kubectl` (v1.32): the same everyday commands, in the same order, in a
//! namespace of the same name on both. kubectl's imperative generators
//! (`create configmap`, `create deployment`, ...) send protobuf bodies; its
//! `get -o json`, `label`, `annotate`, `scale`, `set image`, each `patch`
//! type, server-side dry runs, server-side apply and deletes send JSON.
//! Each command must agree on success, on what kubectl printed (stdout, and
//! the `Error from server (Reason)` of a failure), and, for the objects the
//! commands leave, on the shape of `kubectl get -o json`: every field path
//! (list indices folded) but the values the server assigns. A difference
//! fails the test, listing every one; the simulator changes, never the case.

use crate::envtest;
use crate::kubectl_support::{self, have_kubectl};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// What the commands are run as: kubectl's own arguments, `{ns}` the
/// test's namespace.
const COMMANDS: &[&str] = &[
    "create configmap c -n {ns} --from-literal=a=b",
    "create configmap c -n {ns} --from-literal=a=b",
    "create configmap Bad_Name -n {ns}",
    "create secret generic s -n {ns} --from-literal=a=b",
    "create secret docker-registry pull -n {ns} --docker-server=r.example.com --docker-username=u --docker-password=p",
    "create deployment web -n {ns} --image=nginx --replicas=2",
    "create deployment neg -n {ns} --image=nginx --replicas=-1",
    "create job j -n {ns} --image=busybox",
    "create cronjob cj -n {ns} --image=busybox --schedule=*/5_*_*_*_*",
    "create cronjob bad -n {ns} --image=busybox --schedule=never",
    "create role r -n {ns} --verb=get --resource=pods",
    "create rolebinding rb -n {ns} --role=r --user=u",
    "create serviceaccount sa -n {ns}",
    "create quota q -n {ns} --hard=pods=2",
    "create ingress ing -n {ns} --rule=a.example.com/=svc:80",
    "create poddisruptionbudget pdb -n {ns} --selector=app=x --min-available=1",
    "create poddisruptionbudget both -n {ns} --selector=app=x --min-available=1 --max-unavailable=1",
    "run p -n {ns} --image=nginx",
    "run q -n {ns} --image=nginx --overrides={\"spec\":{\"serviceAccountName\":\"nosuch\"}}",
    "label configmap c -n {ns} team=a",
    "label configmap c -n {ns} team=b",
    "label configmap c -n {ns} team=b --overwrite",
    "label configmap c -n {ns} bad/key/x=1",
    "annotate configmap c -n {ns} note=x",
    "scale deployment web -n {ns} --replicas=3",
    "set image deployment/web -n {ns} nginx=nginx:2",
    "patch configmap c -n {ns} -p {\"data\":{\"x\":\"y\"}}",
    "patch configmap c -n {ns} --type=merge -p {\"data\":{\"y\":\"z\"}}",
    "patch configmap c -n {ns} --type=json -p [{\"op\":\"add\",\"path\":\"/data/z\",\"value\":\"1\"}]",
    "patch configmap c -n {ns} --type=json -p [{\"op\":\"test\",\"path\":\"/data/z\",\"value\":\"2\"}]",
    "patch configmap c -n {ns} --type=merge -p {\"metadata\":{\"name\":\"other\"}}",
    "patch configmap missing -n {ns} -p {\"data\":{}}",
    "create configmap d -n {ns} --from-literal=a=b --dry-run=server -o name",
    "get configmap d -n {ns}",
    "delete configmap c -n {ns}",
    "delete configmap c -n {ns}",
    "get configmaps -n {ns} -l team=b -o name",
];

/// A server-side apply of this object: stdin of `apply --server-side -f -`.
const APPLIED: &str = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied", "labels": {"a": "b"}}, "data": {"k": "v"}}"#;

/// The objects whose `get -o json` shapes are compared at the end.
const LEFT: &[&str] = &[
    "configmap/applied",
    "secret/s",
    "secret/pull",
    "deployment/web",
    "job/j",
    "cronjob/cj",
    "role/r",
    "rolebinding/rb",
    "serviceaccount/sa",
    "resourcequota/q",
    "ingress/ing",
    "poddisruptionbudget/pdb",
];

/// Values the server assigns: their paths are compared, not their text.
const ASSIGNED: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "time",
    "controller-uid",
];

async fn kubectl(
    kubeconfig: &Path,
    home: &Path,
    args: &[String],
    stdin: Option<&str>,
) -> (bool, String, String) {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(kubectl_support::KUBECTL)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).await.unwrap();
    drop(input);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("kubectl finished in time")
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

/// A command's arguments: split on spaces, `_` in a cron schedule a space.
fn args(command: &str, ns: &str) -> Vec<String> {
    command
        .replace("{ns}", ns)
        .split(' ')
        .map(|a| {
            if a.starts_with("--schedule=") {
                a.replace('_', " ")
            } else {
                a.to_string()
            }
        })
        .collect()
}

/// What kubectl's answer comes to: success, stdout, and a failure's
/// `Error from server (Reason)` (or its first line, when kubectl refused
/// the command itself).
fn outcome((ok, stdout, stderr): (bool, String, String)) -> (bool, String, String) {
    let error = stderr
        .lines()
        .find(|l| l.starts_with("Error") || l.starts_with("error"))
        .map(|l| match l.find("): ") {
            Some(end) if l.starts_with("Error from server (") => l[..end + 1].to_string(),
            _ => l.to_string(),
        })
        .unwrap_or_default();
    (ok, if ok { stdout } else { String::new() }, error)
}

/// Every field path of `v` (list indices folded to `[]`), with the value
/// for leaves the server does not assign.
fn shape(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            out.insert(format!("{at}{{}}"));
            for (k, x) in m {
                let key = if at.contains(".managedFields") && k.contains(':') {
                    "f:*"
                } else {
                    k
                };
                shape(x, &format!("{at}.{key}"), out);
            }
        }
        Value::Array(a) => {
            out.insert(format!("{at}[]"));
            for x in a {
                shape(x, &format!("{at}[]"), out);
            }
        }
        leaf => {
            // A label key's last segment too (`batch.kubernetes.io/controller-uid`).
            let last = at.rsplit(['.', '/']).next().unwrap_or("");
            if ASSIGNED.contains(&last) || at.ends_with(".clusterIP") {
                out.insert(at.to_string());
            } else {
                out.insert(format!("{at}={leaf}"));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_the_same_answers_from_the_simulator_as_from_the_real_api_server() {
    let Some(real) = envtest::shared() else { return };
    if !have_kubectl() {
        return;
    }
    let sim = kubectl_support::env("real-diff", wink_sim::SimConfig::default()).await;
    let home = crate::common::scratch("real_kubectl");
    let ns = format!("kubectl-{}", std::process::id());
    let servers = [
        ("real", real.kubeconfig.as_path()),
        ("sim", sim.kubeconfig.as_path()),
    ];
    for (_, config) in servers {
        let (ok, _, err) = kubectl(config, &home, &args("create namespace {ns}", &ns), None).await;
        assert!(ok, "{err}");
        // What the ServiceAccount controller makes in a cluster; the real
        // pair runs no controller-manager.
        kubectl(
            config,
            &home,
            &args("create serviceaccount default -n {ns}", &ns),
            None,
        )
        .await;
    }
    let mut differences = Vec::new();
    for command in COMMANDS {
        let a = args(command, &ns);
        let want = outcome(kubectl(servers[0].1, &home, &a, None).await);
        let got = outcome(kubectl(servers[1].1, &home, &a, None).await);
        if want != got {
            differences.push(format!("kubectl {command}\n  real: {want:?}\n  sim:  {got:?}"));
        }
    }
    let apply = args(
        "apply --server-side --validate=false --field-manager=diff -n {ns} -f -",
        &ns,
    );
    let want = outcome(kubectl(servers[0].1, &home, &apply, Some(APPLIED)).await);
    let got = outcome(kubectl(servers[1].1, &home, &apply, Some(APPLIED)).await);
    if want != got {
        differences.push(format!(
            "kubectl apply --server-side\n  real: {want:?}\n  sim:  {got:?}"
        ));
    }
    for object in LEFT {
        let get = args(&format!("get {object} -n {{ns}} -o json"), &ns);
        let mut shapes = Vec::new();
        for (_, config) in servers {
            let (ok, stdout, stderr) = kubectl(config, &home, &get, None).await;
            let mut paths = BTreeSet::new();
            match serde_json::from_str::<Value>(&stdout) {
                Ok(v) if ok => shape(&v, "", &mut paths),
                _ => {
                    paths.insert(format!("no object: {stderr}"));
                }
            }
            shapes.push(paths);
        }
        if shapes[0] != shapes[1] {
            let only =
                |a: &BTreeSet<String>, b: &BTreeSet<String>| a.difference(b).cloned().collect::<Vec<_>>();
            differences.push(format!(
                "kubectl get {object} -o json\n  only real: {:?}\n  only sim:  {:?}",
                only(&shapes[0], &shapes[1]),
                only(&shapes[1], &shapes[0])
            ));
        }
    }
    println!(
        "{} kubectl commands and {} objects compared, {} differ",
        COMMANDS.len() + 1,
        LEFT.len(),
        differences.len()
    );
    assert!(
        differences.is_empty(),
        "the simulator differs:\n{}",
        differences.join("\n")
    );
}
