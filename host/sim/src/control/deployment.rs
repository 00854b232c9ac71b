//! The Deployment controller: each Deployment's template gets a ReplicaSet
//! named `<deployment>-<pod-template-hash>` (the hash also as the
//! `pod-template-hash` label of its selector and template, a controller
//! ownerReference to the Deployment, the `deployment.kubernetes.io/revision`
//! annotation); scaling sets the new ReplicaSet's replicas; a template
//! change rolls out: `Recreate` scales the old ReplicaSets to 0 and then the
//! new one up, `RollingUpdate` brings the new one up within `maxSurge` and
//! the old ones down within `maxUnavailable` (25% each by default). The
//! Deployment's status (replicas, updatedReplicas, readyReplicas,
//! availableReplicas, unavailableReplicas, observedGeneration, the
//! Available and Progressing conditions) follows its ReplicaSets', so
//! `kubectl rollout status` completes.
//!
//! Owns: ReplicaSets a Deployment controls (their spec and annotations),
//! the Deployment's status and revision annotation. Must not touch: Pods
//! (`replicaset`), ReplicaSet status, ReplicaSets it does not control.

use super::super::meta::now;
use super::super::write;
use super::{
    Ctx, controller_ref, controller_uid, count, def, deleting, name, namespace, replicas, s, set_status, uid,
    update,
};
use serde_json::{Value, json};

const REVISION: &str = "deployment.kubernetes.io/revision";
const HASH_LABEL: &str = "pod-template-hash";

/// The pod-template-hash of a template: FNV-1a (32 bit) of its JSON, its
/// decimal digits spelled in the alphabet of apimachinery's SafeEncodeString.
pub fn template_hash(template: &Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u32 = 0x811c_9dc5;
    for b in template.to_string().bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h.to_string()
        .bytes()
        .map(|b| ALPHABET[usize::from(b) % ALPHABET.len()] as char)
        .collect()
}

/// `maxSurge`/`maxUnavailable`: an integer, or a percentage of `desired`
/// rounded up (surge) or down (unavailable).
fn resolve(v: Option<&Value>, desired: i64, round_up: bool) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(p)) => {
            let pct: i64 = p.trim_end_matches('%').parse().unwrap_or(25);
            let scaled = desired * pct;
            if round_up {
                (scaled + 99) / 100
            } else {
                scaled / 100
            }
        }
        _ => {
            let scaled = desired * 25;
            if round_up {
                (scaled + 99) / 100
            } else {
                scaled / 100
            }
        }
    }
}

/// An annotation's value ("" when absent).
fn annotation<'a>(v: &'a Value, key: &str) -> &'a str {
    v.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn revision(rs: &Value) -> i64 {
    annotation(rs, REVISION).parse().unwrap_or(0)
}

fn new_replicaset(d: &Value, hash: &str, replicas: i64, revision: i64, max_surge: i64) -> Value {
    let mut template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    template["metadata"]["labels"][HASH_LABEL] = json!(hash);
    let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    selector["matchLabels"][HASH_LABEL] = json!(hash);
    let desired = super::replicas(d);
    json!({
        "metadata": {
            "name": format!("{}-{hash}", name(d)),
            "labels": template["metadata"]["labels"],
            "annotations": {
                REVISION: revision.to_string(),
                "deployment.kubernetes.io/desired-replicas": desired.to_string(),
                "deployment.kubernetes.io/max-replicas": (desired + max_surge).to_string(),
            },
            "ownerReferences": [controller_ref(d)],
        },
        "spec": {"replicas": replicas, "minReadySeconds": d.pointer("/spec/minReadySeconds").cloned().unwrap_or(json!(0)),
                 "selector": selector, "template": template},
    })
}

/// Set a ReplicaSet's replicas (and the desired-replicas annotation).
fn scale(st: &mut super::State, rs: &Value, to: i64, desired: i64) {
    let mut new = rs.clone();
    new["spec"]["replicas"] = json!(to);
    new["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] = json!(desired.to_string());
    update(st, "replicasets.apps", rs, new);
}

/// Bring the Deployment at `key` and its ReplicaSets to what it asks for.
pub fn sync(cx: &mut Ctx, key: &str) {
    match cx.get("deployments.apps", key) {
        Some(d) if !deleting(&d) => sync_one(cx, &d),
        _ => {}
    }
}

/// The ReplicaSets a Deployment controls, found through the owner index.
fn owned(cx: &mut Ctx, d: &Value) -> Vec<Value> {
    cx.dependents(uid(d), "replicasets.apps")
        .into_iter()
        .filter(|rs| namespace(rs) == namespace(d) && controller_uid(rs) == Some(uid(d)) && !deleting(rs))
        .collect()
}

fn sync_one(cx: &mut Ctx, d: &Value) {
    let desired = replicas(d).max(0);
    let template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let hash = template_hash(&template);
    let rs_name = format!("{}-{hash}", name(d));
    let all = owned(cx, d);
    let max_revision = all.iter().map(revision).max().unwrap_or(0);
    let strategy = d.pointer("/spec/strategy/rollingUpdate");
    let recreate = s(d, "/spec/strategy/type") == "Recreate";
    let surge = if recreate {
        0
    } else {
        resolve(strategy.and_then(|r| r.get("maxSurge")), desired, true)
    };
    let mut unavailable = if recreate {
        desired
    } else {
        resolve(strategy.and_then(|r| r.get("maxUnavailable")), desired, false)
    };
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    let Some(new_rs) = all.iter().find(|rs| name(rs) == rs_name).cloned() else {
        let olds_up = all.iter().any(|rs| replicas(rs) > 0);
        let initial = if olds_up { 0 } else { desired };
        let rs = new_replicaset(d, &hash, initial, max_revision + 1, surge);
        let rs_def = def(cx.st, "replicasets.apps");
        if let Err(e) = write::create(cx.st, &rs_def, namespace(d), "apps/v1", rs) {
            tracing::debug!("control: replicaset of {}: {}", name(d), e.message);
        }
        return;
    };
    if revision(&new_rs) < max_revision {
        // Back to an older template: its ReplicaSet becomes the newest revision.
        let mut bumped = new_rs.clone();
        bumped["metadata"]["annotations"][REVISION] = json!((max_revision + 1).to_string());
        update(cx.st, "replicasets.apps", &new_rs, bumped);
        return;
    }
    let olds: Vec<&Value> = all.iter().filter(|rs| name(rs) != rs_name).collect();
    let old_spec: i64 = olds.iter().map(|rs| replicas(rs)).sum();
    let new_spec = replicas(&new_rs);
    if old_spec == 0 {
        if recreate && olds.iter().any(|rs| count(rs, "/status/replicas") > 0) {
            return; // Recreate: wait for the old pods to go
        }
        scale(cx.st, &new_rs, desired, desired);
    } else if recreate {
        for rs in &olds {
            scale(cx.st, rs, 0, desired);
        }
    } else {
        let total = new_spec + old_spec;
        if new_spec < desired && total < desired + surge {
            scale(
                cx.st,
                &new_rs,
                desired.min(new_spec + desired + surge - total),
                desired,
            );
        } else if new_spec > desired {
            scale(cx.st, &new_rs, desired, desired);
        }
        let available: i64 = all.iter().map(|rs| count(rs, "/status/availableReplicas")).sum();
        let mut removable = (available - (desired - unavailable)).max(0);
        // Old pods that are not available can go at once.
        for rs in &olds {
            let r = replicas(rs);
            let unready = (r - count(rs, "/status/availableReplicas")).max(0);
            let cut = r.min(unready + removable);
            removable -= (cut - unready).max(0);
            if cut > 0 {
                scale(cx.st, rs, r - cut, desired);
            }
        }
    }
    write_status(cx, d, &rs_name, desired, unavailable);
}

/// A condition, keeping its times when nothing about it changed.
fn condition(old: &[Value], ty: &str, status: &str, reason: &str, message: &str) -> Value {
    let t = now();
    let prev = old.iter().find(|c| c["type"] == ty);
    let same =
        prev.is_some_and(|c| c["status"] == status && c["reason"] == reason && c["message"] == message);
    if same {
        return prev.cloned().expect("found");
    }
    let transition = prev
        .filter(|c| c["status"] == status)
        .map(|c| c["lastTransitionTime"].clone())
        .unwrap_or(json!(t));
    json!({"type": ty, "status": status, "lastUpdateTime": t, "lastTransitionTime": transition,
        "reason": reason, "message": message})
}

fn write_status(cx: &mut Ctx, d: &Value, rs_name: &str, desired: i64, unavailable: i64) {
    let all = owned(cx, d);
    let sum = |k: &str| -> i64 { all.iter().map(|rs| count(rs, &format!("/status/{k}"))).sum() };
    let (total, ready, available) = (sum("replicas"), sum("readyReplicas"), sum("availableReplicas"));
    let new_rs = all.iter().find(|rs| name(rs) == rs_name);
    let updated = new_rs.map_or(0, |rs| count(rs, "/status/replicas"));
    let old_conditions: Vec<Value> = d
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let available_cond = if available >= desired - unavailable {
        condition(
            &old_conditions,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        condition(
            &old_conditions,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    let complete = updated == desired && total == desired && available == desired;
    let progressing = if complete {
        let m = format!("ReplicaSet \"{rs_name}\" has successfully progressed.");
        condition(
            &old_conditions,
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            &m,
        )
    } else {
        let m = format!("ReplicaSet \"{rs_name}\" is progressing.");
        condition(&old_conditions, "Progressing", "True", "ReplicaSetUpdated", &m)
    };
    let mut status = json!({
        "observedGeneration": count(d, "/metadata/generation"),
        "replicas": total,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": available,
        "conditions": [available_cond, progressing],
    });
    if total - available > 0 {
        status["unavailableReplicas"] = json!(total - available);
    }
    set_status(cx.st, "deployments.apps", d, status);
    // The Deployment carries its newest revision.
    if let Some(rs) = new_rs {
        let rev = revision(rs).to_string();
        if annotation(d, REVISION) == rev {
            return;
        }
        let cur = cx.get("deployments.apps", &super::store_key(namespace(d), name(d)));
        if let Some(cur) = cur.filter(|c| annotation(c, REVISION) != rev) {
            let mut new = cur.clone();
            new["metadata"]["annotations"][REVISION] = json!(rev);
            update(cx.st, "deployments.apps", &cur, new);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::template_hash;
    use serde_json::{Value, json};

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({"metadata": {"name": "web"}, "spec": {"replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image}]}}}})
    }

    fn set(st: &mut super::super::State, f: impl FnOnce(&mut Value)) {
        let mut d = all(st, "deployments.apps")[0].clone();
        f(&mut d);
        let def = st.registry.get("deployments.apps").cloned().unwrap();
        super::write::update(st, &def, Some("default"), "web", d, false).unwrap();
    }

    fn rollout_done(d: &Value) -> bool {
        let s = &d["status"];
        d["metadata"]["generation"] == s["observedGeneration"]
            && s["updatedReplicas"] == d["spec"]["replicas"]
            && s["replicas"] == s["updatedReplicas"]
            && s["availableReplicas"] == s["updatedReplicas"]
    }

    #[test]
    fn creates_a_replicaset_and_reports_a_complete_rollout() {
        let mut st = state();
        create(
            &mut st,
            "deployments.apps",
            Some("default"),
            "apps/v1",
            deployment(3, "nginx"),
        );
        settle(&mut st);
        let rss = all(&st, "replicasets.apps");
        assert_eq!(rss.len(), 1);
        let hash = rss[0]["metadata"]["labels"]["pod-template-hash"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(rss[0]["metadata"]["name"], format!("web-{hash}"));
        assert_eq!(
            rss[0]["spec"]["selector"]["matchLabels"]["pod-template-hash"],
            hash.as_str()
        );
        assert_eq!(rss[0]["metadata"]["ownerReferences"][0]["kind"], "Deployment");
        assert_eq!(
            rss[0]["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            true
        );
        assert_eq!(all(&st, "pods").len(), 3);
        let d = &all(&st, "deployments.apps")[0];
        assert!(rollout_done(d), "{}", d["status"]);
        assert_eq!(d["status"]["conditions"][1]["reason"], "NewReplicaSetAvailable");
        assert_eq!(
            d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
            "1"
        );
        set(&mut st, |d| d["spec"]["replicas"] = json!(5));
        settle(&mut st);
        assert_eq!(all(&st, "pods").len(), 5);
        assert!(rollout_done(&all(&st, "deployments.apps")[0]));
    }

    #[test]
    fn a_template_change_rolls_out_a_second_replicaset() {
        for strategy in [
            json!({}),
            json!({"type": "Recreate"}),
            json!({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}),
        ] {
            let mut st = state();
            let mut d = deployment(4, "nginx:1");
            d["spec"]["strategy"] = strategy.clone();
            create(&mut st, "deployments.apps", Some("default"), "apps/v1", d);
            settle(&mut st);
            set(&mut st, |d| {
                d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2")
            });
            settle(&mut st);
            let rss = all(&st, "replicasets.apps");
            assert_eq!(rss.len(), 2, "{strategy}");
            let by_image = |img: &str| {
                rss.iter()
                    .find(|r| r["spec"]["template"]["spec"]["containers"][0]["image"] == img)
                    .unwrap()
            };
            assert_eq!(by_image("nginx:1")["spec"]["replicas"], 0, "{strategy}");
            assert_eq!(by_image("nginx:2")["spec"]["replicas"], 4, "{strategy}");
            assert_eq!(
                by_image("nginx:2")["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
                "2"
            );
            let pods = all(&st, "pods");
            assert_eq!(pods.len(), 4);
            assert!(
                pods.iter()
                    .all(|p| p["spec"]["containers"][0]["image"] == "nginx:2")
            );
            assert!(rollout_done(&all(&st, "deployments.apps")[0]), "{strategy}");
        }
    }

    #[test]
    fn hashes_are_stable_and_safe() {
        let t = json!({"spec": {"containers": [{"image": "nginx"}]}});
        assert_eq!(template_hash(&t), template_hash(&t.clone()));
        assert_ne!(template_hash(&t), template_hash(&json!({})));
        assert!(
            template_hash(&t)
                .bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
    }
}
