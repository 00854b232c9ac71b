//! The simulated kubelets: a Pending Pod bound to an existing, Ready Node
//! is started at once, as KWOK does: phase Running, its IPs (from the
//! node's pod CIDR), every container running and ready, and the
//! PodReadyToStartContainers, Initialized, Ready, ContainersReady and
//! PodScheduled conditions True.
//!
//! Owns: the status of Pods bound to Nodes. Must not touch: Pod specs,
//! unbound Pods (`scheduler`), Pods on Nodes that do not exist.

use super::super::meta::now;
use super::{Ctx, deleting, s, set_status};
use serde_json::{Value, json};

/// The node's pod network prefix (`10.244.1.` of `10.244.1.0/24`).
fn prefix(node: &Value) -> String {
    let cidr = s(node, "/spec/podCIDR");
    match cidr.rsplit_once('.') {
        Some((p, _)) if !cidr.is_empty() => format!("{p}."),
        _ => "10.244.0.".into(),
    }
}

fn running_status(pod: &Value, node: &Value, ip: &str) -> Value {
    let t = now();
    let host_ip = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|x| x["type"] == "InternalIP"))
        .and_then(|x| x["address"].as_str())
        .unwrap_or("10.0.0.1")
        .to_string();
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            let id: String = (0..4).map(|_| format!("{:016x}", rand::random::<u64>())).collect();
            json!({"name": c["name"], "image": c["image"], "imageID": "", "containerID": format!("containerd://{id}"),
                "ready": true, "started": true, "restartCount": 0, "state": {"running": {"startedAt": t}}})
        })
        .collect();
    let cond =
        |ty: &str| json!({"type": ty, "status": "True", "lastProbeTime": null, "lastTransitionTime": t});
    let mut status = pod.get("status").cloned().unwrap_or(json!({}));
    status["phase"] = json!("Running");
    status["conditions"] = json!([
        cond("PodReadyToStartContainers"),
        cond("Initialized"),
        cond("Ready"),
        cond("ContainersReady"),
        cond("PodScheduled"),
    ]);
    status["hostIP"] = json!(host_ip);
    status["hostIPs"] = json!([{"ip": host_ip}]);
    status["podIP"] = json!(ip);
    status["podIPs"] = json!([{"ip": ip}]);
    status["startTime"] = json!(t);
    status["containerStatuses"] = json!(statuses);
    if status.get("qosClass").is_none() {
        status["qosClass"] = json!("BestEffort");
    }
    status
}

/// Start the Pod at `key` if it is Pending on an existing, not deleted
/// Node, with a free IP of that node's range (the IP index).
pub fn run(cx: &mut Ctx, key: &str) {
    let Some(p) = cx.get("pods", key) else { return };
    let node_name = s(&p, "/spec/nodeName");
    if node_name.is_empty() || deleting(&p) || !matches!(s(&p, "/status/phase"), "" | "Pending") {
        return;
    }
    let Some(node) = cx.get("nodes", node_name).filter(|n| !deleting(n)) else {
        return;
    };
    let base = prefix(&node);
    let Some(ip) = (2..255)
        .map(|i| format!("{base}{i}"))
        .find(|ip| cx.ix.take_ip(ip))
    else {
        return;
    };
    let status = running_status(&p, &node, &ip);
    set_status(cx.st, "pods", &p, status);
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use serde_json::json;

    #[test]
    fn runs_bound_pods_and_leaves_others() {
        let mut st = state();
        settle(&mut st);
        let c = json!([{"name": "c", "image": "nginx"}]);
        create(
            &mut st,
            "pods",
            Some("default"),
            "v1",
            json!({"metadata": {"name": "a"}, "spec": {"containers": c}}),
        );
        create(
            &mut st,
            "pods",
            Some("default"),
            "v1",
            json!({"metadata": {"name": "b"}, "spec": {"nodeName": "elsewhere", "containers": c}}),
        );
        settle(&mut st);
        let pods = all(&st, "pods");
        let a = &pods[0]["status"];
        assert_eq!(a["phase"], "Running");
        assert!(a["podIP"].as_str().unwrap().starts_with("10.244."));
        assert_eq!(a["containerStatuses"][0]["ready"], true);
        for ty in ["Ready", "ContainersReady", "PodScheduled", "Initialized"] {
            assert!(
                a["conditions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c["type"] == ty && c["status"] == "True"),
                "{ty}"
            );
        }
        assert_eq!(
            pods[1]["status"]["phase"], "Pending",
            "a pod on a node that does not exist waits"
        );
    }
}
