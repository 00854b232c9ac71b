//! The ~4 KiB Pod the dispatch and languages benchmarks stream: four
//! containers with env, resources and ports, labels, an annotation and
//! managed fields (which the cache strips).

/// Pod `i` at version `rv` of a stream of `pods` pods.
pub fn pod_json(i: usize, rv: usize, pods: usize) -> serde_json::Value {
    let containers: Vec<serde_json::Value> = (0..4)
        .map(|c| {
            serde_json::json!({
                "name": format!("container-{c}"), "image": format!("registry.example.com/team/app-{c}:v1.{rv}"),
                "args": ["--port=8080", "--log-level=info", "--feature-gates=A=true,B=false"],
                "env": (0..6).map(|e| serde_json::json!({"name": format!("ENV_{e}"), "value": format!("value-{e}-{i}")})).collect::<Vec<_>>(),
                "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "ports": [{"containerPort": 8080 + c, "protocol": "TCP"}],
            })
        })
        .collect();
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("pod-{i}"), "namespace": "bench", "uid": format!("uid-{i}"),
            "resourceVersion": format!("{}", rv * pods + i + 1),
            "labels": {"app": format!("app-{}", i % 50), "tier": "backend", "bench": "yes"},
            "annotations": {"example.com/owner": "team-a"},
            "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]},
        "spec": {"nodeName": format!("node-{}", i % 20), "containers": containers},
        "status": {"phase": "Running", "podIP": format!("10.0.{}.{}", i / 250, i % 250)}
    })
}
