//! Benchmark plugin. Counts every pod event; with `{"decode": true}` it also
//! decodes each object into `k8s_openapi::api::core::v1::Pod` (or, with
//! `"kind"`, into another workload type: Deployment, StatefulSet, DaemonSet,
//! ReplicaSet, Job, CronJob, Service, Node, PersistentVolumeClaim, Ingress,
//! NetworkPolicy, HorizontalPodAutoscaler; they make
//! this the largest example component, ~1.7 MB, which the reload benchmark
//! compiles). When it sees a
//! pod named `bench-end` it prints `bench-done <events>`. With
//! `{"read_name": false}` it reads nothing at all (only counts), which
//! measures the bare cost of a delivery.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use wink_sdk::{Handler, Object, Registration, Watch};

struct Counter {
    decode: bool,
    kind: String,
    read_name: bool,
    events: u64,
    containers: u64,
}

impl Counter {
    fn seen(&mut self, obj: &Object) {
        self.events += 1;
        if self.decode {
            self.containers += match self.kind.as_str() {
                "Pod" => containers(obj.decode::<Pod>().map(|p| p.spec.map(|s| s.containers))),
                "Deployment" => containers(obj.decode::<Deployment>().map(|d| Some(d.spec.template))),
                "StatefulSet" => containers(obj.decode::<StatefulSet>().map(|d| Some(d.spec.template))),
                "DaemonSet" => containers(obj.decode::<DaemonSet>().map(|d| Some(d.spec.template))),
                "ReplicaSet" => containers(obj.decode::<ReplicaSet>().map(|d| d.spec.template)),
                "Job" => containers(obj.decode::<Job>().map(|j| j.spec.map(|s| s.template))),
                "CronJob" => containers(obj.decode::<CronJob>().map(|c| Some(c.spec.job_template))),
                "Service" => obj
                    .decode::<Service>()
                    .map_or(0, |s| s.spec.map_or(0, |s| s.ports.map_or(0, |p| p.len() as u64))),
                "Node" => obj.decode::<Node>().map_or(0, |n| {
                    n.status.map_or(0, |s| s.images.map_or(0, |i| i.len() as u64))
                }),
                "PersistentVolumeClaim" => obj
                    .decode::<PersistentVolumeClaim>()
                    .map_or(0, |c| c.spec.is_some() as u64),
                "Ingress" => obj
                    .decode::<Ingress>()
                    .map_or(0, |i| i.spec.map_or(0, |s| s.rules.map_or(0, |r| r.len() as u64))),
                "NetworkPolicy" => obj.decode::<NetworkPolicy>().map_or(0, |n| {
                    n.spec.map_or(0, |s| s.ingress.map_or(0, |r| r.len() as u64))
                }),
                "HorizontalPodAutoscaler" => obj
                    .decode::<HorizontalPodAutoscaler>()
                    .map_or(0, |h| h.spec.max_replicas as u64),
                other => panic!("bench-counter cannot decode {other}"),
            };
        }
        if self.read_name && obj.name() == "bench-end" {
            println!("bench-done {} {}", self.events, self.containers);
        }
    }
}

/// How many containers a decoded object's pod spec (or template) has.
fn containers<S: Containers>(decoded: Result<Option<S>, serde_json::Error>) -> u64 {
    decoded.expect("the object decodes").map_or(0, |s| s.count())
}

trait Containers {
    fn count(&self) -> u64;
}

impl Containers for Vec<k8s_openapi::api::core::v1::Container> {
    fn count(&self) -> u64 {
        self.len() as u64
    }
}

impl Containers for k8s_openapi::api::core::v1::PodSpec {
    fn count(&self) -> u64 {
        self.containers.len() as u64
    }
}

impl Containers for Option<k8s_openapi::api::core::v1::PodSpec> {
    fn count(&self) -> u64 {
        self.as_ref().map_or(0, |s| s.containers.len() as u64)
    }
}

impl Containers for k8s_openapi::api::core::v1::PodTemplateSpec {
    fn count(&self) -> u64 {
        self.spec.count()
    }
}

impl Containers for k8s_openapi::api::batch::v1::JobTemplateSpec {
    fn count(&self) -> u64 {
        self.spec.as_ref().map_or(0, |s| s.template.spec.count())
    }
}

impl Handler for Counter {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config = match config.trim() {
            "" => serde_json::Value::Null,
            text => serde_json::from_str::<serde_json::Value>(text).map_err(|e| e.to_string())?,
        };
        let flag = |key: &str, default: bool| config.get(key).and_then(|d| d.as_bool()).unwrap_or(default);
        let me = Counter {
            decode: flag("decode", false),
            kind: config
                .get("kind")
                .and_then(|k| k.as_str())
                .unwrap_or("Pod")
                .to_string(),
            read_name: flag("read_name", true),
            events: 0,
            containers: 0,
        };
        Ok((me, Registration::new().watch(Watch::new("v1", "Pod"))))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.seen(obj)
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        self.seen(new)
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        self.seen(obj)
    }
}

wink_sdk::export_plugin!(Counter);
