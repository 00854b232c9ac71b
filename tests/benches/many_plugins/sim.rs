//! The API server's process and the streams it writes: a burst of
//! ConfigMap updates from concurrent writers, and paced Pod churn that is
//! mostly status-only, as a real cluster's is. The server is the simulated
//! one (its writes may go straight into its store) or a real kube-apiserver
//! and etcd started by the `envtest` harness (every write through the API).
//! Also the spinner, the process that keeps a core busy as an API server on
//! the node would.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use rand::Rng;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use wink_sim::{Sim, SimConfig};

pub const CONFIG_MAPS: usize = 10_000;
pub const PODS: usize = 2_000;

fn payload(rng: &mut impl Rng, bytes: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..bytes)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// What kube-apiserver records of a writer in `managedFields`.
fn managed_fields(manager: &str, fields: Value) -> Value {
    json!([{"manager": manager, "operation": "Update", "apiVersion": "v1",
        "time": "2026-11-24T06:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields}])
}

fn config_map(i: usize, version: usize, rng: &mut impl Rng) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i:06}"), "namespace": "default",
            "labels": {"app": "bench", "shard": format!("s{}", i % 16), "version": format!("v{version}")},
            "managedFields": managed_fields("burst-writer", json!({"f:data": {"f:payload": {}},
                "f:metadata": {"f:labels": {"f:app": {}, "f:shard": {}, "f:version": {}}}}))},
        "data": {"payload": payload(rng, 1024)}})
}

/// A ReplicaSet's Pod as a real server sends it (two containers, owner,
/// tolerations, projected token, status with conditions).
fn pod(i: usize) -> Value {
    let containers: Vec<Value> = (0..2)
        .map(|c| json!({
            "name": format!("c{c}"), "image": format!("registry.example.com/team/app-{c}:v1.{}", i % 7),
            "args": ["--port=8080", "--log-level=info"],
            "env": (0..6).map(|e| json!({"name": format!("ENV_{e}"), "value": format!("value-{e}-{i}")})).collect::<Vec<_>>(),
            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
            "ports": [{"containerPort": 8080 + c, "protocol": "TCP"}],
            "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"}))
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("web-7d9f8b6c5d-{i:06}"), "namespace": "default",
            "labels": {"app": "web", "tier": "frontend", "pod-template-hash": "7d9f8b6c5d"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8b6c5d",
                "uid": "3c0b8f5e-1f7a-4c7e-9a5e-2f6f1b7c9d10", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": managed_fields("kubelet", json!({"f:status": {"f:conditions": {}, "f:containerStatuses": {}}}))},
        "spec": {"nodeName": format!("node-{}", i % 50), "containers": containers, "serviceAccountName": "default",
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]},
        "status": {"phase": "Running", "podIP": format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256), "hostIP": "172.18.0.2",
            "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null}, {"type": "ContainersReady", "status": "True"}],
            "containerStatuses": [{"name": "c0", "ready": true, "restartCount": 0, "image": "app-0", "imageID": "sha256:abc",
                "containerID": "containerd://0123456789abcdef", "started": true}]}})
}

fn deployment(i: usize) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": format!("deploy-{i:03}"), "namespace": "default", "labels": {"app": format!("d{i}")}},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": format!("d{i}")}},
            "template": {"metadata": {"labels": {"app": format!("d{i}")}},
                "spec": {"containers": [{"name": "c", "image": "registry.example.com/app:v1"}]}}}})
}

fn service(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("svc-{i:03}"), "namespace": "default"},
        "spec": {"selector": {"app": format!("d{i}")}, "ports": [{"port": 80, "targetPort": 8080}]}})
}

/// Where the objects live: the simulated server (written directly) or a
/// real kube-apiserver (written through its API).
pub enum Server {
    Sim(Arc<Sim>),
    Real(kube::Client),
}

impl Server {
    fn client(&self) -> kube::Client {
        match self {
            Server::Sim(sim) => sim.client(),
            Server::Real(client) => client.clone(),
        }
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client(), "default")
    }

    /// Store `pod` (a create).
    async fn create_pod(&self, pod: Value) {
        match self {
            Server::Sim(sim) => drop(sim.insert(pod).unwrap()),
            Server::Real(_) => {
                let pod: Pod = serde_json::from_value(pod).unwrap();
                self.pods().create(&PostParams::default(), &pod).await.unwrap();
            }
        }
    }

    /// Replace `pod` (unconditionally: it holds no resourceVersion).
    async fn update_pod(&self, pod: &Value) {
        match self {
            Server::Sim(sim) => drop(sim.update("pods", pod.clone()).unwrap()),
            Server::Real(_) => {
                let name = pod["metadata"]["name"].as_str().unwrap();
                let body: Pod = serde_json::from_value(pod.clone()).unwrap();
                self.pods()
                    .replace(name, &PostParams::default(), &body)
                    .await
                    .unwrap();
            }
        }
    }

    async fn delete_pod(&self, name: &str) {
        match self {
            Server::Sim(sim) => sim.delete("pods", Some("default"), name).unwrap(),
            Server::Real(_) => drop(self.pods().delete(name, &DeleteParams::default()).await.unwrap()),
        }
    }
}

/// Create `objects` through the API, 16 at a time.
async fn create_all(client: &kube::Client, objects: Vec<Value>) {
    use futures::StreamExt;
    futures::stream::iter(objects)
        .for_each_concurrent(16, |o| {
            let client = client.clone();
            async move {
                let mut o = o;
                if let Some(m) = o["metadata"].as_object_mut() {
                    m.remove("managedFields");
                }
                let (api_version, kind) = (o["apiVersion"].as_str().unwrap(), o["kind"].as_str().unwrap());
                let gvk = kube::api::GroupVersionKind::try_from(&kube::api::TypeMeta {
                    api_version: api_version.into(),
                    kind: kind.into(),
                })
                .unwrap();
                let ar = kube::api::ApiResource::from_gvk(&gvk);
                let api: Api<kube::api::DynamicObject> = Api::namespaced_with(client, "default", &ar);
                let obj: kube::api::DynamicObject = serde_json::from_value(o).unwrap();
                api.create(&PostParams::default(), &obj).await.unwrap();
            }
        })
        .await;
}

/// Load every object into `server`; the Pods as the server holds them
/// (a real server adds a token volume and tolerations), with no
/// resourceVersion, so later writes replace them unconditionally.
fn load(rt: &tokio::runtime::Runtime, server: &Server) -> Vec<Value> {
    let mut rng = rand::rng();
    let config_maps: Vec<Value> = (0..CONFIG_MAPS).map(|i| config_map(i, 0, &mut rng)).collect();
    let pods: Vec<Value> = (0..PODS).map(pod).collect();
    let rest: Vec<Value> = (0..50).flat_map(|i| [deployment(i), service(i)]).collect();
    match server {
        Server::Sim(sim) => {
            for o in config_maps.into_iter().chain(pods.iter().cloned()).chain(rest) {
                sim.insert(o).unwrap();
            }
            pods
        }
        Server::Real(client) => rt.block_on(async {
            let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
            create_all(client, vec![sa]).await;
            create_all(client, config_maps).await;
            create_all(client, pods.clone()).await;
            create_all(client, rest).await;
            let mut held = Vec::with_capacity(PODS);
            for p in &pods {
                let name = p["metadata"]["name"].as_str().unwrap();
                let mut stored = serde_json::to_value(server.pods().get(name).await.unwrap()).unwrap();
                stored["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("resourceVersion");
                stored["status"] = p["status"].clone();
                held.push(stored);
            }
            held
        }),
    }
}

/// The server's process: loads every object, says `ready <kubeconfig>`,
/// then writes the streams stdin asks for (`burst <updates> <writers>`,
/// `pace <events/s> <seconds>`), answering each with `done <events>`.
/// With `real`, the server is a real kube-apiserver (`KUBEBUILDER_ASSETS`).
pub fn role(rt: &tokio::runtime::Runtime, scratch: &std::path::Path, real: bool) {
    let kubeconfig = scratch.join("kubeconfig");
    let mut control_plane = None;
    let server = if real {
        let options = crate::envtest::Options {
            rbac: false,
            ..Default::default()
        };
        let cp = crate::envtest::ControlPlane::start(&options)
            .expect("MANY_SERVER=real needs KUBEBUILDER_ASSETS (kube-apiserver and etcd)");
        std::fs::copy(&cp.kubeconfig, &kubeconfig).unwrap();
        let client = rt.block_on(cp.client());
        control_plane = Some(cp);
        Server::Real(client)
    } else {
        let sim = rt
            .block_on(Sim::start(SimConfig {
                history: 200_000,
                ..SimConfig::default()
            }))
            .unwrap();
        sim.write_kubeconfig(&kubeconfig).unwrap();
        Server::Sim(Arc::new(sim))
    };
    let mut pods = load(rt, &server);
    println!("ready {}", kubeconfig.display());
    std::io::stdout().flush().unwrap();
    let mut burst_version = 1;
    // Each ConfigMap's `version` label as last written.
    let labels: Arc<Vec<AtomicUsize>> = Arc::new((0..CONFIG_MAPS).map(|_| AtomicUsize::new(0)).collect());
    let mut churn = Churn::default();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["burst", updates, writers] => {
                let (updates, writers): (usize, usize) = (updates.parse().unwrap(), writers.parse().unwrap());
                let started = Instant::now();
                match &server {
                    Server::Sim(sim) if std::env::var("MANY_BURST_DIRECT").is_ok_and(|v| v == "1") => {
                        burst(sim, &labels, updates, writers, burst_version)
                    }
                    _ => rt.block_on(burst_http(
                        &server.client(),
                        &labels,
                        updates,
                        writers,
                        burst_version,
                    )),
                }
                burst_version += 1;
                println!("done {updates} {:.3}", started.elapsed().as_secs_f64());
            }
            ["pace", rate, secs] => {
                let rate: f64 = rate.parse().unwrap();
                let total = (rate * secs.parse::<f64>().unwrap()) as usize;
                let started = Instant::now();
                rt.block_on(churn.pace(&server, &mut pods, rate, total));
                println!("done {total} {:.3}", started.elapsed().as_secs_f64());
            }
            _ => println!("unknown {line}"),
        }
        std::io::stdout().flush().unwrap();
    }
    drop(control_plane);
}

/// `updates` writes to the ConfigMaps from `writers` threads at once, as
/// fast as the server takes them: each a new 1 KiB payload, one in four
/// also a new `version` label.
fn burst(sim: &Sim, labels: &[AtomicUsize], updates: usize, writers: usize, version: usize) {
    std::thread::scope(|s| {
        for w in 0..writers {
            s.spawn(move || {
                let mut rng = rand::rng();
                for k in (w..updates).step_by(writers) {
                    let i = k % CONFIG_MAPS;
                    if k % 4 == 0 {
                        labels[i].store(version * 1_000_000 + k, Ordering::Relaxed);
                    }
                    let v = labels[i].load(Ordering::Relaxed);
                    sim.update("configmaps", config_map(i, v, &mut rng)).unwrap();
                }
            });
        }
    });
}

/// [`burst`] through the server's API, as clients write: each writer its
/// own task, one request at a time.
async fn burst_http(
    client: &kube::Client,
    labels: &Arc<Vec<AtomicUsize>>,
    updates: usize,
    writers: usize,
    version: usize,
) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let (api, labels) = (api.clone(), labels.clone());
            tokio::spawn(async move {
                for k in (w..updates).step_by(writers) {
                    let i = k % CONFIG_MAPS;
                    if k % 4 == 0 {
                        labels[i].store(version * 1_000_000 + k, Ordering::Relaxed);
                    }
                    let v = labels[i].load(Ordering::Relaxed);
                    let cm: ConfigMap = serde_json::from_value(config_map(i, v, &mut rand::rng())).unwrap();
                    api.replace(&format!("cm-{i:06}"), &PostParams::default(), &cm)
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

/// Pod churn: of every 100 events, 86 status-only updates (a restart
/// count, a probe time: what kubelets write most), 5 label changes, 5 spec
/// changes (an image: generation moves), 2 creates and 2 deletes.
#[derive(Default)]
pub struct Churn {
    step: usize,
    created: std::collections::VecDeque<usize>,
    next_new: usize,
}

impl Churn {
    async fn pace(&mut self, server: &Server, pods: &mut [Value], rate: f64, total: usize) {
        let api = server.pods();
        let in_flight = Arc::new(tokio::sync::Semaphore::new(16));
        let started = tokio::time::Instant::now();
        for k in 0..total {
            tokio::time::sleep_until(started + Duration::from_secs_f64(k as f64 / rate)).await;
            let step = self.step;
            self.step += 1;
            let i = step.wrapping_mul(7919) % PODS;
            let p = &mut pods[i];
            match step % 100 {
                0..86 => {
                    p["status"]["containerStatuses"][0]["restartCount"] = json!(step);
                    p["status"]["conditions"][0]["lastProbeTime"] =
                        json!(format!("2026-11-26T00:00:{:02}Z", step % 60));
                    let body: Pod = serde_json::from_value(p.clone()).unwrap();
                    let name = p["metadata"]["name"].as_str().unwrap().to_string();
                    let (api, permit) = (api.clone(), in_flight.clone().acquire_owned().await.unwrap());
                    tokio::spawn(async move {
                        if let Err(e) = api.replace_status(&name, &PostParams::default(), &body).await {
                            eprintln!("a status write failed: {e}");
                        }
                        drop(permit);
                    });
                }
                86..91 => {
                    p["metadata"]["labels"]["rollout"] = json!(format!("r{step}"));
                    server.update_pod(p).await;
                }
                91..96 => {
                    p["spec"]["containers"][0]["image"] =
                        json!(format!("registry.example.com/team/app-0:v2.{step}"));
                    server.update_pod(p).await;
                }
                96..98 => match self.created.pop_front() {
                    Some(j) => server.delete_pod(&pod_name(j)).await,
                    None => self.create(server).await,
                },
                _ => self.create(server).await,
            }
        }
        // Every status write answered.
        let _ = in_flight.acquire_many(16).await.unwrap();
    }

    async fn create(&mut self, server: &Server) {
        let j = PODS + self.next_new;
        self.next_new += 1;
        server.create_pod(pod(j)).await;
        self.created.push_back(j);
    }
}

fn pod_name(i: usize) -> String {
    format!("web-7d9f8b6c5d-{i:06}")
}

/// Keeps one core busy until killed.
pub fn spin() {
    let mut x = 1u64;
    loop {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}
