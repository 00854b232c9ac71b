//! The native baseline of the admission benchmark, run as a child process:
//! a kube-runtime reflector of Pods and hyper's HTTP/1.1 server on wink's
//! own TLS configuration, answering service-selector-guard's rule from the
//! store (scanning it, as kube's store has no index) or from a per-namespace
//! index kept from the reflector's events.

use super::NATIVE_CA;
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{reflector, watcher};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The Pods of each namespace by name, kept from the reflector's events:
/// the index a kube-runtime webhook adds, its store having none.
type Index = Arc<std::sync::RwLock<HashMap<String, HashMap<String, Arc<Pod>>>>>;

fn keep(index: &Index, relist: &mut HashMap<String, HashMap<String, Arc<Pod>>>, event: &watcher::Event<Pod>) {
    let key = |p: &Pod| {
        (
            p.metadata.namespace.clone().unwrap_or_default(),
            p.metadata.name.clone().unwrap_or_default(),
        )
    };
    match event {
        watcher::Event::Init => relist.clear(),
        watcher::Event::InitApply(p) => {
            let (ns, name) = key(p);
            relist.entry(ns).or_default().insert(name, Arc::new(p.clone()));
        }
        watcher::Event::InitDone => *index.write().unwrap() = std::mem::take(relist),
        watcher::Event::Apply(p) => {
            let (ns, name) = key(p);
            index
                .write()
                .unwrap()
                .entry(ns)
                .or_default()
                .insert(name, Arc::new(p.clone()));
        }
        watcher::Event::Delete(p) => {
            let (ns, name) = key(p);
            if let Some(m) = index.write().unwrap().get_mut(&ns) {
                m.remove(&name);
            }
        }
    }
}

pub async fn native(kubeconfig: &str, port: u16, indexed: bool) {
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(kubeconfig).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let (store, writer) = reflector::store::<Pod>();
    let index: Index = Default::default();
    let stream = reflector(
        writer,
        watcher(Api::<Pod>::all(client.clone()), watcher::Config::default()),
    );
    tokio::spawn({
        let index = index.clone();
        let mut relist = HashMap::new();
        stream.for_each(move |event| {
            if let (true, Ok(event)) = (indexed, &event) {
                keep(&index, &mut relist, event);
            }
            async {}
        })
    });
    store.wait_until_ready().await.unwrap();
    while indexed && index.read().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let index = indexed.then_some(index);
    let certs = wink::admission::certs::start(wink::admission::certs::Source::Own {
        client,
        namespace: "default".into(),
        secret: NATIVE_CA.into(),
        names: vec!["127.0.0.1".into()],
        validity: wink::admission::certs::SERVING_VALIDITY,
    })
    .await
    .unwrap();
    let tls = Arc::new(wink::admission::server::tls_config(certs.resolver.clone(), None).unwrap());
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    println!("ready {}", store.len());
    loop {
        let (tcp, _) = listener.accept().await.unwrap();
        let _ = tcp.set_nodelay(true);
        let (acceptor, store, index) = (acceptor.clone(), store.clone(), index.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service =
                hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let (store, index) = (store.clone(), index.clone());
                    async move {
                        let body = request.into_body().collect().await?.to_bytes();
                        let answer = answer(&store, index.as_ref(), &body);
                        Ok::<_, hyper::Error>(
                            hyper::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(answer)))
                                .unwrap(),
                        )
                    }
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
        });
    }
}

/// The native webhook's answer: service-selector-guard's rule, from the store.
fn answer(store: &reflector::Store<Pod>, index: Option<&Index>, body: &[u8]) -> Vec<u8> {
    let review: Value = serde_json::from_slice(body).unwrap_or_default();
    let request = &review["request"];
    let uid = request["uid"].clone();
    let namespace = request["namespace"].as_str().unwrap_or("");
    let selector: Vec<(&str, &str)> = request["object"]["spec"]["selector"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
                .collect()
        })
        .unwrap_or_default();
    let selects = |pod: &Pod| {
        pod.metadata.labels.as_ref().is_some_and(|l| {
            selector
                .iter()
                .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
    };
    let allowed = selector.is_empty()
        || match index {
            Some(index) => index
                .read()
                .unwrap()
                .get(namespace)
                .is_some_and(|pods| pods.values().any(|p| selects(p))),
            None => store
                .find(|pod| pod.metadata.namespace.as_deref() == Some(namespace) && selects(pod))
                .is_some(),
        };
    let response = if allowed {
        json!({"uid": uid, "allowed": true})
    } else {
        let text: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        json!({"uid": uid, "allowed": false, "status": {"code": 403, "message":
            format!("native: the selector {} matches no Pod in namespace {namespace}", text.join(","))}})
    };
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
    )
    .unwrap()
}
