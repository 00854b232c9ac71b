//! The simulated API server judged by the real one (see `envtest`): the same requests, in the same
//! order, to both, each in a namespace of the same name; their answers must agree on the status
//! code, the Status reason and its causes (field and reason), the kind, and the shape of the object
//! answered (its top-level and metadata keys). The requests are what wink, kubectl and client-go
//! send: valid and invalid names and labels, webhook configurations, CRDs, Leases, Events in both
//! groups, each patch type, selectors, dry runs, a watch from an expired resource version. A
//! difference fails the test, listing every one; the simulator changes, never the case.

mod cases;

use crate::envtest;
use cases::{Case, cases};
use http::Request;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// What is compared of an answer.
#[derive(Debug, PartialEq)]
struct Answer {
    code: u16,
    kind: String,
    reason: String,
    causes: BTreeSet<(String, String)>,
    keys: BTreeSet<String>,
}

fn answer(code: u16, body: &[u8], watch: bool) -> Answer {
    // A watch answers a stream of events: compare the first one's type and
    // its object's kind, reason and code.
    let text = String::from_utf8_lossy(body);
    let first = match watch {
        true => text.lines().next().unwrap_or_default().to_string(),
        false => text.to_string(),
    };
    let v: Value = serde_json::from_str(&first).unwrap_or(Value::Null);
    let object = match watch {
        true => v["object"].clone(),
        false => v.clone(),
    };
    let causes = object["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let mut keys: BTreeSet<String> = object
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k.clone())
        .collect();
    if object["kind"] != "Status" {
        keys.extend(
            object["metadata"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| format!("metadata.{k}")),
        );
    }
    if watch {
        keys.insert(format!("type={}", v["type"].as_str().unwrap_or_default()));
        keys.insert(format!("code={}", object["code"]));
    }
    Answer {
        code,
        kind: object["kind"].as_str().unwrap_or_default().to_string(),
        reason: object["reason"].as_str().unwrap_or_default().to_string(),
        causes,
        keys,
    }
}

async fn send(client: &kube::Client, case: &Case, ns: &str) -> Answer {
    let path = case.path.replace("{ns}", ns);
    let body = case
        .body
        .as_ref()
        .map(|b| match b {
            Value::String(s) => s.clone().into_bytes(),
            b => b.to_string().replace("{ns}", ns).into_bytes(),
        })
        .unwrap_or_default();
    let request = Request::builder()
        .method(case.method.clone())
        .uri(&path)
        .header(http::header::CONTENT_TYPE, case.content_type)
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::from(body))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let code = response.status().as_u16();
    let body = response.into_body().collect_bytes().await.unwrap();
    answer(code, &body, path.contains("watch=true"))
}

/// A namespace `name` with its ServiceAccount `default`, on one server (the
/// simulator's ServiceAccount controller may have made that first).
async fn namespace(client: &kube::Client, name: &str) {
    let namespace = json!({"metadata": {"name": name}}).to_string();
    let request = Request::post("/api/v1/namespaces").body(namespace.into_bytes());
    client.request_text(request.unwrap()).await.unwrap();
    let account = json!({"metadata": {"name": "default"}}).to_string();
    let request = Request::post(format!("/api/v1/namespaces/{name}/serviceaccounts"));
    if let Err(e) = client
        .request_text(request.body(account.into_bytes()).unwrap())
        .await
    {
        assert!(e.to_string().contains("AlreadyExists"), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_answers_as_the_real_api_server_does() {
    let Some(real) = envtest::shared() else { return };
    let real = real.client().await;
    let sim = wink_sim::Sim::start(wink_sim::SimConfig::default())
        .await
        .unwrap();
    let ns = "diff"; // the same name on both
    namespace(&real, ns).await;
    namespace(&sim.client(), ns).await;
    let (mut differences, cases) = (Vec::new(), cases());
    for case in &cases {
        let want = send(&real, case, ns).await;
        let got = send(&sim.client(), case, ns).await;
        if want != got {
            differences.push(format!(
                "{}: {} {}\n  real: {want:?}\n  sim:  {got:?}",
                case.name, case.method, case.path
            ));
        }
    }
    println!("{} requests compared, {} differ", cases.len(), differences.len());
    assert!(
        differences.is_empty(),
        "the simulator differs:\n{}",
        differences.join("\n")
    );
}
