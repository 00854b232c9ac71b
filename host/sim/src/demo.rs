//! Demo content: `--seed DIR` manifests (YAML, multi-document, `List`
//! kinds, or JSON) loaded at start, and `--churn RATE` background activity
//! in `default`: Deployments web/api/db scaled, and standalone demo pods
//! created, relabelled and deleted. With the control plane on, the
//! Deployments' pods are the controllers' (owned through ReplicaSets,
//! scheduled and run), their images are rolled now and then (a rolling
//! update to a new ReplicaSet), and the standalone pods move between apps
//! (their `app` label changes); without it, the standalone pods carry a
//! node and a Running status of their own.
//!
//! Owns: reading manifests and the churn loop. Must not touch: HTTP; it
//! writes through the same `write` functions the API uses.

use super::Shared;
use super::status::ApiError;
use super::store::State;
use super::write;
use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The largest seed file read.
pub const MAX_SEED_FILE_BYTES: u64 = 16 << 20;

/// Every object of the manifests in `dir` (sorted by file name).
pub fn read_manifests(dir: &Path) -> anyhow::Result<Vec<Value>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading seed directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            )
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        // The one safe-file reader (a regular file, capped); nesting checked before parsing.
        let text = wink_input::read_text(&f, MAX_SEED_FILE_BYTES, "seed file")?;
        wink_input::depth::check_yaml(text.as_bytes()).with_context(|| format!("parsing {}", f.display()))?;
        for doc in serde_norway::Deserializer::from_str(&text) {
            let v = Value::deserialize(doc).with_context(|| format!("parsing {}", f.display()))?;
            flatten(v, &mut out);
        }
    }
    Ok(out)
}

fn flatten(v: Value, out: &mut Vec<Value>) {
    match v {
        Value::Null => {}
        Value::Object(ref m)
            if m.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k.ends_with("List"))
                && m.get("items").is_some_and(Value::is_array) =>
        {
            for item in m["items"].as_array().into_iter().flatten() {
                flatten(item.clone(), out);
            }
        }
        v => out.push(v),
    }
}

/// Create `objects` (namespaces, CRDs and ServiceAccounts first, as Pods
/// need theirs), with their status. A seeded `default` ServiceAccount
/// replaces the one its namespace was given.
pub fn seed(st: &mut State, mut objects: Vec<Value>) -> anyhow::Result<usize> {
    let rank = |v: &Value| match v.get("kind").and_then(Value::as_str) {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        Some("ServiceAccount") => 2,
        _ => 3,
    };
    objects.sort_by_key(rank);
    let n = objects.len();
    for v in objects {
        if v.get("kind").and_then(Value::as_str) == Some("ServiceAccount")
            && v.pointer("/metadata/name").and_then(Value::as_str) == Some("default")
            && let Some(def) = st.registry.get("serviceaccounts").cloned()
        {
            let ns = v.pointer("/metadata/namespace").and_then(Value::as_str);
            let _ = write::delete(
                st,
                &def,
                Some(ns.unwrap_or("default")),
                "default",
                &Default::default(),
            );
        }
        create_with_status(st, v).map_err(|e| anyhow::anyhow!("seed: {}", e.message))?;
    }
    Ok(n)
}

/// Create an object from its manifest, then set its status if it has one.
pub fn create_with_status(st: &mut State, mut v: Value) -> Result<Value, ApiError> {
    let api_version = v
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    let def = st
        .registry
        .by_kind(&api_version, &kind)
        .ok_or_else(|| ApiError::bad_request(format!("no resource serves {api_version} {kind}")))?;
    let ns = def.namespaced.then(|| {
        v.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string()
    });
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    let status = v.get("status").cloned();
    let o = write::create(st, &def, ns.as_deref(), &api_version, v)?;
    match status {
        Some(s) if def.has_status && def.crd.is_none() || status_for_crs(&def, &s) => {
            let mut n = o.value.clone();
            n["status"] = s;
            Ok(write::update(st, &def, ns.as_deref(), o.name(), n, true)?
                .value
                .clone())
        }
        _ => Ok(o.value.clone()),
    }
}

fn status_for_crs(def: &super::resources::ResourceDef, _s: &Value) -> bool {
    def.crd.is_some() && def.has_status
}

/// Start seeding from the configured directory, if any.
pub fn seed_from_config(st: &mut State, dir: Option<&Path>) -> anyhow::Result<()> {
    if let Some(dir) = dir {
        let objects = read_manifests(dir)?;
        seed(st, objects)?;
    }
    Ok(())
}

const APPS: [&str; 3] = ["web", "api", "db"];

fn tier(app: &str) -> &'static str {
    if app == "db" { "data" } else { "front" }
}

/// A standalone demo pod; with the control plane on, the scheduler and a
/// kubelet place and run it.
fn demo_pod(app: &str, control_plane: bool) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": format!("{app}-"), "namespace": "default",
            "labels": {"app": app, "tier": tier(app), "wink.dev/demo": "true"}},
        "spec": {"containers": [{"name": app, "image": format!("example.com/{app}:1.0")}]},
    });
    if !control_plane {
        pod["spec"]["nodeName"] = json!(format!("node-{}", rand::random_range(1..=3)));
        pod["status"] = json!({"phase": "Running",
            "podIP": format!("10.244.{}.{}", rand::random_range(0..4), rand::random_range(2..250))});
    }
    pod
}

fn demo_deployment(app: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": app, "namespace": "default", "labels": {"app": app, "wink.dev/demo": "true"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app, "tier": tier(app)}},
                "spec": {"containers": [{"name": app, "image": format!("example.com/{app}:1.0")}]}}}
    })
}

/// One churn step: create, update or delete a demo pod, or scale a deployment.
pub fn churn_step(st: &mut State) -> Result<(), ApiError> {
    let pods = st.registry.get("pods").cloned().expect("pods");
    let deps = st.registry.get("deployments.apps").cloned().expect("deployments");
    if !st.namespace_exists("default") {
        return Ok(());
    }
    for app in APPS {
        if !st
            .table("deployments.apps")
            .is_some_and(|t| t.objects.contains_key(format!("default/{app}").as_str()))
        {
            create_with_status(st, demo_deployment(app))?;
        }
    }
    let demo: Vec<Value> = st
        .table("pods")
        .map(|t| {
            t.objects
                .range::<str, _>((std::ops::Bound::Included("default/"), std::ops::Bound::Unbounded))
                .take_while(|(k, _)| k.starts_with("default/"))
                .filter(|(_, o)| o.value.pointer("/metadata/labels/wink.dev~1demo").is_some())
                .filter(|(_, o)| o.value.pointer("/metadata/ownerReferences").is_none())
                .map(|(_, o)| o.value.clone())
                .collect()
        })
        .unwrap_or_default();
    let roll: u32 = rand::random_range(0..100);
    let app = APPS[rand::random_range(0..APPS.len())];
    let name = |v: &Value| v["metadata"]["name"].as_str().unwrap_or("").to_string();
    let cp = st.control_plane;
    // With the controllers' pods around, fewer standalone ones do.
    let (few, many) = if cp { (3, 12) } else { (5, 30) };
    if demo.len() < few || (roll < 30 && demo.len() < many) {
        create_with_status(st, demo_pod(app, cp))?;
    } else if roll < 70 || demo.len() >= many && roll < 80 {
        let mut p = demo[rand::random_range(0..demo.len())].clone();
        let n: u64 = p
            .pointer("/metadata/annotations/wink.dev~1tick")
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        p["metadata"]["annotations"]["wink.dev/tick"] = json!((n + 1).to_string());
        p["metadata"]["labels"]["version"] = json!(format!("v{}", rand::random_range(1..4)));
        if cp && roll < 50 {
            // The pod moves to another app: app-index sees it change hands.
            p["metadata"]["labels"]["app"] = json!(app);
            p["metadata"]["labels"]["tier"] = json!(tier(app));
        }
        write::update(st, &pods, Some("default"), &name(&p), p.clone(), false)?;
    } else if roll < if cp { 80 } else { 90 } {
        let p = &demo[rand::random_range(0..demo.len())];
        write::delete(st, &pods, Some("default"), &name(p), &Default::default())?;
    } else if let Some(d) = st
        .table("deployments.apps")
        .and_then(|t| t.objects.get(format!("default/{app}").as_str()))
        .cloned()
    {
        let mut v = d.value.clone();
        if cp && roll >= 95 {
            // A new image: a rolling update to a new ReplicaSet.
            let image = format!("example.com/{app}:1.{}", rand::random_range(0..3));
            v["spec"]["template"]["spec"]["containers"][0]["image"] = json!(image);
        } else {
            v["spec"]["replicas"] = json!(rand::random_range(1..6));
        }
        write::update(st, &deps, Some("default"), app, v, false)?;
    }
    Ok(())
}

/// The churn loop: `rate` steps per second until the task is aborted.
pub async fn churn(shared: Arc<Shared>, rate: f64) {
    if rate <= 0.0 || !rate.is_finite() {
        return;
    }
    let period = Duration::from_secs_f64(1.0 / rate).max(Duration::from_micros(100));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = churn_step(&mut shared.store.lock()) {
            tracing::debug!("sim churn: {}", e.message);
        }
    }
}

/// Check a seed directory without a server (for the CLI's early errors).
pub fn check_dir(dir: &Path) -> anyhow::Result<()> {
    if !dir.is_dir() {
        bail!("seed directory {} does not exist", dir.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_lists_and_multi_docs_and_churns() {
        let dir = std::env::temp_dir().join(format!("wink-sim-seed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: demo}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n").unwrap();
        std::fs::write(dir.join("b.json"), r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running"}}]}"#).unwrap();
        let mut st = State::new(1000, 0);
        let ns = st.registry.get("namespaces").unwrap().clone();
        write::create(&mut st, &ns, None, "v1", json!({"metadata":{"name":"default"}})).unwrap();
        seed_from_config(&mut st, Some(&dir)).unwrap();
        assert!(st.table("configmaps").unwrap().objects.contains_key("demo/a"));
        assert_eq!(
            st.table("pods").unwrap().objects["default/p"].value["status"]["phase"],
            "Running"
        );
        let rv = st.rv;
        for _ in 0..50 {
            churn_step(&mut st).unwrap();
        }
        assert!(st.rv > rv);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// With the control plane on, the demo gives every example plugin
    /// something to see: pods owned through ReplicaSets of the demo
    /// Deployments (replica-checker), Deployments that change
    /// (deployment-lister), standalone pods whose `app` label moves (app-index).
    #[test]
    fn churn_with_the_control_plane_owns_moves_and_rolls() {
        let mut st = crate::control::testing::state();
        let mut apps_seen = std::collections::HashMap::<String, std::collections::HashSet<String>>::new();
        let generation = |st: &State| -> i64 {
            st.table("deployments.apps")
                .unwrap()
                .objects
                .values()
                .map(|o| o.value["metadata"]["generation"].as_i64().unwrap_or(0))
                .sum()
        };
        let mut first_generation = None;
        for _ in 0..300 {
            churn_step(&mut st).unwrap();
            crate::control::testing::settle(&mut st);
            first_generation.get_or_insert(generation(&st));
            for o in st.table("pods").unwrap().objects.values() {
                if o.value.pointer("/metadata/ownerReferences").is_none() {
                    let app = o.value["metadata"]["labels"]["app"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    apps_seen
                        .entry(o.value["metadata"]["uid"].to_string())
                        .or_default()
                        .insert(app);
                }
            }
        }
        let deployments = crate::control::testing::all(&st, "deployments.apps");
        assert_eq!(deployments.len(), 3);
        for d in &deployments {
            let want = d["spec"]["replicas"].as_i64().unwrap();
            let owned = crate::control::testing::all(&st, "pods")
                .into_iter()
                .filter(|p| p["metadata"]["labels"]["app"] == d["metadata"]["name"])
                .filter(|p| p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet")
                .count() as i64;
            assert_eq!(owned, want, "{}", d["metadata"]["name"]);
            assert_eq!(d["status"]["availableReplicas"].as_i64(), Some(want));
        }
        assert!(generation(&st) > first_generation.unwrap(), "deployments changed");
        assert!(
            apps_seen.values().any(|apps| apps.len() > 1),
            "a standalone pod changed apps"
        );
        let pods = crate::control::testing::all(&st, "pods");
        assert!(pods.iter().all(|p| p["status"]["phase"] == "Running"));
    }
}
