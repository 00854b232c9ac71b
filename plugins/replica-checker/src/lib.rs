//! Seed 000's motivating example: on a pod or deployment change, count the
//! pods each deployment owns (pod -> ReplicaSet -> Deployment, through owner
//! indexes in the host's indexer) and log when the count differs from
//! `spec.replicas`. ReplicaSets are only read (`reads`), never handled.

use wink_sdk::cache;
use wink_sdk::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use wink_sdk::k8s_openapi::api::core::v1::Pod;
use wink_sdk::{Handler, IndexBy, Object, Registration, Watch};

struct ReplicaChecker;

/// Count the pods owned by a deployment through its replica sets.
fn owned_pods(deployment_uid: &str) -> Result<usize, cache::Error> {
    let sets: Vec<ReplicaSet> = cache::by_index("owner", deployment_uid)?;
    let mut pods = 0;
    for rs in sets {
        let uid = rs.metadata.uid.unwrap_or_default();
        pods += cache::by_index_objects(&wink_sdk::Resource::of::<Pod>(), "owner", &uid)?.len();
    }
    Ok(pods)
}

fn check(deployment: &Deployment) {
    let name = deployment.metadata.name.as_deref().unwrap_or_default();
    let uid = deployment.metadata.uid.as_deref().unwrap_or_default();
    let want = deployment.spec.replicas.unwrap_or(1) as usize;
    match owned_pods(uid) {
        Ok(have) if have != want => wink_sdk::warn!("deployment {name}: {have} pods, spec.replicas {want}"),
        Ok(have) => wink_sdk::info!("deployment {name}: {have} pods, as specified"),
        Err(e) => wink_sdk::error!("deployment {name}: {e}"),
    }
}

/// The deployment that owns a pod through its replica set, if cached.
fn deployment_of_pod(pod: &Object) -> Option<Deployment> {
    let pod: Pod = pod.decode().ok()?;
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let rs_ref = pod
        .metadata
        .owner_references?
        .into_iter()
        .find(|o| o.kind == "ReplicaSet")?;
    let rs: ReplicaSet = cache::get(&format!("{ns}/{}", rs_ref.name)).ok()??;
    let d_ref = rs
        .metadata
        .owner_references?
        .into_iter()
        .find(|o| o.kind == "Deployment")?;
    cache::get(&format!("{ns}/{}", d_ref.name)).ok()?
}

fn changed(obj: &Object) {
    match obj.kind() {
        "Deployment" => {
            if let Ok(d) = obj.decode::<Deployment>() {
                check(&d)
            }
        }
        "Pod" => {
            if let Some(d) = deployment_of_pod(obj) {
                check(&d)
            }
        }
        _ => {}
    }
}

impl Handler for ReplicaChecker {
    fn init(_config: &str) -> Result<(Self, Registration), String> {
        let owner = || IndexBy::OwnerUid;
        let registration = Registration::new()
            .watch(Watch::of::<Deployment>())
            .watch(Watch::of::<Pod>().index("owner", owner()))
            .read(Watch::of::<ReplicaSet>().index("owner", owner()));
        Ok((ReplicaChecker, registration))
    }

    fn on_add(&mut self, obj: &Object, in_initial_list: bool) {
        if !in_initial_list {
            changed(obj)
        }
    }

    fn on_update(&mut self, old: &Object, new: &Object) {
        if !wink_sdk::is_resync(old, new) {
            changed(new)
        }
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        changed(obj)
    }
}

wink_sdk::export_plugin!(ReplicaChecker);
