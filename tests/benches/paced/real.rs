//! The paced stream from a real kube-apiserver (`PACED_SERVER=real`): a
//! kube-apiserver and etcd started by the `envtest` harness
//! (`KUBEBUILDER_ASSETS`), the ConfigMaps created and every update written
//! through its API (at most 16 in flight), so the consumers watch the real
//! server's stream. It answers `pace` as the simulated server's process
//! does; the relist of the memory part needs the simulator's faults and is
//! not offered.

use crate::envtest::{ControlPlane, Options};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A ConfigMap as the API takes it: the server records its writers itself.
fn body(mut o: Value) -> ConfigMap {
    o["metadata"].as_object_mut().unwrap().remove("managedFields");
    serde_json::from_value(o).unwrap()
}

/// The real server's process: `n` ConfigMaps made by `config_map`, then
/// `pace <events/s> <seconds> [stamp]` from stdin.
pub fn role(rt: &tokio::runtime::Runtime, n: usize, config_map: fn(usize) -> Value) {
    let cp = ControlPlane::start(&Options {
        rbac: false,
        ..Default::default()
    })
    .expect("PACED_SERVER=real needs KUBEBUILDER_ASSETS (kube-apiserver and etcd)");
    let client = rt.block_on(cp.client());
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let in_flight = Arc::new(tokio::sync::Semaphore::new(16));
    let mut json_bytes = 0usize;
    rt.block_on(async {
        for i in 0..n {
            let o = config_map(i);
            json_bytes += o.to_string().len();
            let (api, permit) = (api.clone(), in_flight.clone().acquire_owned().await.unwrap());
            tokio::spawn(async move {
                api.create(&PostParams::default(), &body(o)).await.unwrap();
                drop(permit);
            });
        }
        drop(in_flight.acquire_many(16).await.unwrap());
    });
    println!("ready {} {}", cp.kubeconfig.display(), json_bytes / n.max(1));
    std::io::stdout().flush().unwrap();
    let mut next = 0usize;
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["pace", rate, secs, stamp @ ..] => {
                let rate: f64 = rate.parse().unwrap();
                let total = (rate * secs.parse::<f64>().unwrap()) as usize;
                let started = Instant::now();
                rt.block_on(async {
                    let t0 = tokio::time::Instant::now();
                    for k in 0..total {
                        tokio::time::sleep_until(t0 + Duration::from_secs_f64(k as f64 / rate)).await;
                        let mut o = config_map(next % n);
                        o["metadata"]["labels"]["version"] = json!(format!("v{k}"));
                        if stamp == ["stamp"] {
                            o["metadata"]["labels"]["sent"] = json!(crate::latency::stamp());
                        }
                        next += 1;
                        let name = o["metadata"]["name"].as_str().unwrap().to_string();
                        let (api, permit) = (api.clone(), in_flight.clone().acquire_owned().await.unwrap());
                        tokio::spawn(async move {
                            if let Err(e) = api.replace(&name, &PostParams::default(), &body(o)).await {
                                eprintln!("a paced write failed: {e}");
                            }
                            drop(permit);
                        });
                    }
                    drop(in_flight.acquire_many(16).await.unwrap());
                });
                println!("paced {total} {:.3}", started.elapsed().as_secs_f64());
            }
            _ => println!("unknown {line}"),
        }
        std::io::stdout().flush().unwrap();
    }
    drop(cp);
}
