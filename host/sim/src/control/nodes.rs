//! The nodes controller: when the cluster has no Node, it registers three
//! simulated ones (`node-1`..`node-3`, Ready, with addresses, capacity and
//! node info), as KWOK's fake nodes stand in for kubelets.
//!
//! Owns: creating simulated Nodes. Must not touch: Nodes that exist (a
//! user's or a seed's), Pods (`scheduler`, `kubelet`).

use super::super::demo::create_with_status;
use super::super::meta::now;
use super::Ctx;
use serde_json::{Value, json};

/// Simulated nodes registered when there are none.
pub const NODES: usize = 3;

/// The Node object of simulated node `i` (1-based).
pub fn node(i: usize) -> Value {
    let name = format!("node-{i}");
    let t = now();
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "type": "kwok"}, "annotations": {"node.alpha.kubernetes.io/ttl": "0", "wink.dev/simulated": "true"}},
        "spec": {"podCIDR": format!("10.244.{i}.0/24"), "podCIDRs": [format!("10.244.{i}.0/24")]},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
                 "message": "kubelet has sufficient memory available", "lastHeartbeatTime": t, "lastTransitionTime": t},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
                 "message": "kubelet has no disk pressure", "lastHeartbeatTime": t, "lastTransitionTime": t},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID",
                 "message": "kubelet has sufficient PID available", "lastHeartbeatTime": t, "lastTransitionTime": t},
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status", "lastHeartbeatTime": t, "lastTransitionTime": t},
            ],
            "addresses": [{"type": "InternalIP", "address": format!("10.0.0.{}", i + 1)},
                          {"type": "Hostname", "address": name}],
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"kubeletVersion": "v1.32.0", "kubeProxyVersion": "v1.32.0", "osImage": "wink simulated node",
                "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.7.0",
                "operatingSystem": "linux", "architecture": "amd64", "machineID": "", "systemUUID": "", "bootID": ""},
        },
    })
}

pub fn reconcile(cx: &mut Ctx) {
    if cx.st.table("nodes").is_some_and(|t| !t.objects.is_empty()) {
        return;
    }
    for i in 1..=NODES {
        if let Err(e) = create_with_status(cx.st, node(i)) {
            tracing::debug!("control: node-{i}: {}", e.message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn registers_nodes_once() {
        let mut st = state();
        settle(&mut st);
        let nodes = all(&st, "nodes");
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[0]["status"]["conditions"][3]["type"], "Ready");
        let def = st.registry.get("nodes").cloned().unwrap();
        super::super::super::write::delete(&mut st, &def, None, "node-3", &Default::default()).unwrap();
        settle(&mut st);
        assert_eq!(all(&st, "nodes").len(), 2, "existing nodes are left as they are");
    }
}
