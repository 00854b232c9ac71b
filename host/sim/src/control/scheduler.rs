//! The scheduler: binds each unscheduled Pod (no `spec.nodeName`) to the
//! Ready, schedulable Node with the fewest Pods, and records the
//! `PodScheduled` condition.
//!
//! Owns: `spec.nodeName` of unbound Pods and their PodScheduled condition.
//! Must not touch: Nodes, Pods already bound, Pods' other status (`kubelet`).

use super::super::meta::now;
use super::{Ctx, deleting, name, s, set_status, update};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

fn schedulable(node: &Value) -> bool {
    node.pointer("/spec/unschedulable") != Some(&json!(true))
        && node
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
        && !deleting(node)
}

/// Bind the queued Pods that still wait for a node, each to the
/// schedulable Node with the fewest Pods (counted by the node index).
pub fn schedule(cx: &mut Ctx, pods: &BTreeSet<Arc<str>>) {
    if pods.is_empty() {
        return;
    }
    let node_names: Vec<Arc<str>> = cx
        .st
        .table("nodes")
        .map(|t| t.objects.keys().cloned().collect())
        .unwrap_or_default();
    // Node name -> Pods bound to it (by the index, plus this batch's).
    let mut load: BTreeMap<String, usize> = BTreeMap::new();
    for n in node_names {
        if let Some(node) = cx.get("nodes", &n).filter(schedulable) {
            load.insert(name(&node).to_string(), cx.ix.load(name(&node)));
        }
    }
    if load.is_empty() {
        return;
    }
    for key in pods {
        let Some(p) = cx.get("pods", key) else { continue };
        if !s(&p, "/spec/nodeName").is_empty() || deleting(&p) || s(&p, "/status/phase") != "Pending" {
            continue;
        }
        let node = load
            .iter()
            .min_by_key(|(_, n)| **n)
            .map(|(k, _)| k.clone())
            .expect("a node");
        *load.get_mut(&node).expect("counted") += 1;
        let mut bound = p.clone();
        bound["spec"]["nodeName"] = json!(node);
        update(cx.st, "pods", &p, bound);
        let Some(cur) = cx.get("pods", key) else { continue };
        let mut status = cur.get("status").cloned().unwrap_or(json!({}));
        let mut conditions: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
        conditions.retain(|c| c["type"] != "PodScheduled");
        conditions.push(
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null,
            "lastTransitionTime": now()}),
        );
        status["conditions"] = json!(conditions);
        set_status(cx.st, "pods", &cur, status);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use serde_json::json;

    #[test]
    fn spreads_pods_over_nodes() {
        let mut st = state();
        settle(&mut st);
        for i in 0..6 {
            let pod = json!({"metadata": {"name": format!("p{i}")}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
            create(&mut st, "pods", Some("default"), "v1", pod);
        }
        settle(&mut st);
        let mut per_node = std::collections::BTreeMap::new();
        for p in all(&st, "pods") {
            *per_node
                .entry(p["spec"]["nodeName"].as_str().unwrap().to_string())
                .or_insert(0) += 1;
            let conds = p["status"]["conditions"].as_array().unwrap();
            assert!(
                conds
                    .iter()
                    .any(|c| c["type"] == "PodScheduled" && c["status"] == "True")
            );
        }
        assert_eq!(per_node.values().copied().collect::<Vec<_>>(), [2, 2, 2]);
    }
}
