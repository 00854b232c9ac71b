//! The ReplicaSet controller: keeps `spec.replicas` Pods owned by each
//! ReplicaSet (created from its template with `generateName: <rs>-` and a
//! controller ownerReference; the extra ones deleted, not-ready and newest
//! first) and writes its status (replicas, fullyLabeledReplicas,
//! readyReplicas, availableReplicas, observedGeneration).
//!
//! While any admission webhook configuration exists, the Pods it wants are
//! queued for admission (`admit`: written after the webhooks admit them,
//! a refusal holding the ReplicaSet's creates back for a while) rather
//! than written in the round; with none they are written at once.
//!
//! Owns: the Pods a ReplicaSet controls and its status. Must not touch:
//! ReplicaSet specs (`deployment` scales them), Pods it does not control
//! (no adoption of matching orphans), Pod status (`kubelet`).

use super::super::write;
use super::admit;
use super::{
    Ctx, controller_ref, controller_uid, count, def, deleting, name, namespace, pod_ready, replicas,
    set_status, uid,
};
use serde_json::{Value, json};

/// The Pods a ReplicaSet controls that are not being deleted, found
/// through the owner index.
fn owned(cx: &mut Ctx, rs: &Value) -> Vec<Value> {
    cx.dependents(uid(rs), "pods")
        .into_iter()
        .filter(|p| controller_uid(p) == Some(uid(rs)) && !deleting(p))
        .collect()
}

fn new_pod(rs: &Value) -> Value {
    let template = rs.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut meta = template.get("metadata").cloned().unwrap_or(json!({}));
    meta["generateName"] = json!(format!("{}-", name(rs)));
    meta["ownerReferences"] = json!([controller_ref(rs)]);
    if let Some(m) = meta.as_object_mut() {
        m.remove("name");
        m.remove("creationTimestamp");
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": template.get("spec").cloned().unwrap_or(json!({}))})
}

/// Bring the ReplicaSet at `key` to its replica count and report it. Its
/// status waits for the Pods it creates or deletes: their events bring it
/// back.
pub fn sync(cx: &mut Ctx, key: &str) {
    let Some(rs) = cx.get("replicasets.apps", key).filter(|rs| !deleting(rs)) else {
        return;
    };
    let pod_def = def(cx.st, "pods");
    let ns = namespace(&rs);
    let mine = owned(cx, &rs);
    let want = replicas(&rs).max(0) as usize;
    if mine.len() < want {
        if cx.webhooks {
            // Through admission, after the round (`admit`).
            if cx.admit.may_create(key, cx.now) {
                for _ in mine.len()..want {
                    cx.admit.queue(admit::Create {
                        rs: key.into(),
                        rs_uid: uid(&rs).to_string(),
                        ns: ns.map(String::from),
                        pod: new_pod(&rs),
                    });
                }
            }
            return;
        }
        cx.admit.succeeded(key);
        for _ in mine.len()..want {
            if let Err(e) = write::create(cx.st, &pod_def, ns, "v1", new_pod(&rs)) {
                tracing::debug!("control: pod of {}: {}", name(&rs), e.message);
                break;
            }
        }
        return;
    }
    if mine.len() > want {
        let mut doomed: Vec<&Value> = mine.iter().collect();
        // Not ready first, then the newest.
        doomed.sort_by(|a, b| {
            (pod_ready(a), super::s(b, "/metadata/creationTimestamp"))
                .cmp(&(pod_ready(b), super::s(a, "/metadata/creationTimestamp")))
        });
        for p in doomed.iter().take(mine.len() - want) {
            let _ = write::delete(cx.st, &pod_def, ns, name(p), &Default::default());
        }
        return;
    }
    let ready = mine.iter().filter(|p| pod_ready(p)).count();
    let mut status = rs.get("status").cloned().unwrap_or(json!({}));
    for (k, v) in [
        ("replicas", mine.len()),
        ("fullyLabeledReplicas", mine.len()),
        ("readyReplicas", ready),
        ("availableReplicas", ready),
    ] {
        status[k] = json!(v);
    }
    status["observedGeneration"] = json!(count(&rs, "/metadata/generation"));
    // Nothing left to create: no failure to report.
    cx.admit.succeeded(key);
    admit::without_failure(&mut status);
    set_status(cx.st, "replicasets.apps", &rs, status);
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use serde_json::{Value, json};

    fn rs(n: i64) -> Value {
        json!({"metadata": {"name": "web-1"}, "spec": {"replicas": n,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}})
    }

    #[test]
    fn keeps_the_replica_count_and_reports_it() {
        let mut st = state();
        let r = create(&mut st, "replicasets.apps", Some("default"), "apps/v1", rs(3));
        settle(&mut st);
        let pods = all(&st, "pods");
        assert_eq!(pods.len(), 3);
        for p in &pods {
            assert!(p["metadata"]["name"].as_str().unwrap().starts_with("web-1-"));
            assert_eq!(p["metadata"]["labels"]["app"], "web");
            let owner = &p["metadata"]["ownerReferences"][0];
            assert_eq!(
                (owner["kind"].as_str(), owner["uid"].as_str()),
                (Some("ReplicaSet"), r["metadata"]["uid"].as_str())
            );
            assert_eq!(owner["controller"], true);
        }
        let status = &all(&st, "replicasets.apps")[0]["status"];
        assert_eq!(
            (status["replicas"].as_i64(), status["readyReplicas"].as_i64()),
            (Some(3), Some(3))
        );
        let mut scaled = all(&st, "replicasets.apps")[0].clone();
        scaled["spec"]["replicas"] = json!(1);
        let def = st.registry.get("replicasets.apps").cloned().unwrap();
        super::write::update(&mut st, &def, Some("default"), "web-1", scaled, false).unwrap();
        settle(&mut st);
        assert_eq!(all(&st, "pods").len(), 1);
        assert_eq!(all(&st, "replicasets.apps")[0]["status"]["replicas"], 1);
    }
}
