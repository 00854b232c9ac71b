//! The scheduler: binds each unscheduled Pod (no `spec.nodeName`) to the
//! Ready, schedulable Node with the fewest Pods, and records the
//! `PodScheduled` condition.
//!
//! Owns: `spec.nodeName` of unbound Pods and their PodScheduled condition.
//! Must not touch: Nodes, Pods already bound, Pods' other status (`kubelet`).

use super::super::meta::now;
use super::super::store::State;
use super::{deleting, name, objects, s, set_status, update};
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn schedulable(node: &Value) -> bool {
    node.pointer("/spec/unschedulable") != Some(&json!(true))
        && node
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
        && !deleting(node)
}

pub fn reconcile(st: &mut State) {
    let pods = objects(st, "pods");
    let mut load: BTreeMap<String, usize> = objects(st, "nodes")
        .iter()
        .filter(|n| schedulable(n))
        .map(|n| (name(n).to_string(), 0))
        .collect();
    if load.is_empty() {
        return;
    }
    for p in &pods {
        if let Some(n) = load.get_mut(s(p, "/spec/nodeName")) {
            *n += 1;
        }
    }
    for p in pods {
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
        update(st, "pods", &p, bound);
        let Some(cur) = st
            .table("pods")
            .and_then(|t| {
                t.objects
                    .get(&super::super::store::key(super::namespace(&p), name(&p)))
            })
            .map(|o| o.value.clone())
        else {
            continue;
        };
        let mut status = cur.get("status").cloned().unwrap_or(json!({}));
        let mut conditions: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
        conditions.retain(|c| c["type"] != "PodScheduled");
        conditions.push(
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null,
            "lastTransitionTime": now()}),
        );
        status["conditions"] = json!(conditions);
        set_status(st, "pods", &cur, status);
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
