//! The simulated API server refuses, over HTTP, what a real kube-apiserver
//! refuses: `timeoutSeconds` that is not a non-negative integer (and bounds
//! huge ones), request bodies over 3 MiB, bodies nested too deeply, and
//! deleting the namespaces `default`, `kube-system` and `kube-public`.

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wink_sim::{Sim, SimConfig};

const MIB: usize = 1 << 20;

/// One raw HTTP/1.1 exchange (bounded to 20 s): the status code and the body as JSON.
async fn raw(sim: &Sim, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, Value) {
    let exchange = async {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", sim.port()))
            .await
            .unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: sim\r\nContent-Type: {content_type}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        out
    };
    let out = tokio::time::timeout(Duration::from_secs(20), exchange)
        .await
        .unwrap_or_else(|_| panic!("{method} {path}: no complete answer in 20 s"));
    let out = String::from_utf8_lossy(&out);
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    let code = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (code, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn assert_status(got: &(u16, Value), code: u16, reason: &str, message: &str) {
    let (status, body) = got;
    assert_eq!(*status, code, "{body}");
    assert_eq!(
        (&body["kind"], &body["status"], &body["code"], &body["reason"]),
        (&json!("Status"), &json!("Failure"), &json!(code), &json!(reason)),
        "{body}"
    );
    assert_eq!(body["message"], message, "{body}");
}

fn api_error(r: Result<impl std::fmt::Debug, kube::Error>) -> (u16, String, String) {
    match r {
        Err(kube::Error::Api(s)) => (s.code, s.reason, s.message),
        other => {
            let got: String = format!("{other:?}").chars().take(300).collect();
            panic!("expected an API Status error, got {got}")
        }
    }
}

fn configmap(name: &str, data: BTreeMap<String, String>) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.data = Some(data);
    c
}

#[tokio::test]
async fn timeout_seconds_must_be_a_non_negative_integer() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let cms = "/api/v1/namespaces/default/configmaps";
    for (value, message) in [
        ("abc", "strconv.ParseInt: parsing \"abc\": invalid syntax"),
        ("", "strconv.ParseInt: parsing \"\": invalid syntax"),
        ("1.5", "strconv.ParseInt: parsing \"1.5\": invalid syntax"),
        (
            "9223372036854775808",
            "strconv.ParseInt: parsing \"9223372036854775808\": value out of range",
        ),
        (
            "18446744073709551616",
            "strconv.ParseInt: parsing \"18446744073709551616\": value out of range",
        ),
        (
            "-5",
            "timeoutSeconds: Invalid value: -5: must be greater than or equal to 0",
        ),
    ] {
        for query in ["", "watch=true&", "watch=1&allowWatchBookmarks=true&"] {
            let path = format!("{cms}?{query}timeoutSeconds={value}");
            assert_status(
                &raw(&sim, "GET", &path, "application/json", b"").await,
                400,
                "BadRequest",
                message,
            );
        }
        let path = format!("/api/v1/namespaces?timeoutSeconds={value}");
        assert_status(
            &raw(&sim, "GET", &path, "application/json", b"").await,
            400,
            "BadRequest",
            message,
        );
        let path = format!("{cms}?timeoutSeconds={value}");
        assert_status(
            &raw(&sim, "DELETE", &path, "application/json", b"").await,
            400,
            "BadRequest",
            message,
        );
    }
    // Valid values still work: a list answers, a watch ends after its timeout.
    let (code, list) = raw(
        &sim,
        "GET",
        &format!("{cms}?timeoutSeconds=30"),
        "application/json",
        b"",
    )
    .await;
    assert_eq!((code, &list["kind"]), (200, &json!("ConfigMapList")));
    let started = Instant::now();
    let (code, _) = raw(
        &sim,
        "GET",
        &format!("{cms}?watch=true&timeoutSeconds=1"),
        "application/json",
        b"",
    )
    .await;
    assert_eq!(code, 200);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn huge_timeout_seconds_is_clamped_and_the_watch_serves_events() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let client = sim.client();
    let req = axum::http::Request::get(
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&timeoutSeconds=9223372036854775807",
    )
    .body(Vec::new())
    .unwrap();
    let events = client.request_events::<ConfigMap>(req).await.unwrap();
    futures::pin_mut!(events);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &configmap("after-watch", BTreeMap::new()))
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .expect("an event within 10 s")
        .unwrap();
    match first {
        Some(WatchEvent::Added(cm)) => assert_eq!(cm.metadata.name.as_deref(), Some("after-watch")),
        other => panic!("expected ADDED, got {other:?}"),
    }
    assert_eq!(sim.open_watches("configmaps"), 1);
}

#[tokio::test]
async fn bodies_over_3_mib_are_refused_with_413() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(sim.client(), "default");
    let big = BTreeMap::from([("k".to_string(), "x".repeat(3 * MIB + MIB / 2))]);
    let (code, reason, message) = api_error(api.create(&PostParams::default(), &configmap("big", big)).await);
    assert_eq!(
        (code, reason.as_str(), message.as_str()),
        (
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728"
        )
    );
    assert_eq!(api_error(api.get("big").await).0, 404);
    // The limit is exact: 3 MiB is read, one byte more is not.
    let padded = |name: &str, len: usize| {
        let mut b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
            .to_string()
            .into_bytes();
        b.resize(len, b' ');
        b
    };
    let cms = "/api/v1/namespaces/default/configmaps";
    let (code, created) = raw(
        &sim,
        "POST",
        cms,
        "application/json",
        &padded("at-limit", 3 * MIB),
    )
    .await;
    assert_eq!((code, &created["metadata"]["name"]), (201, &json!("at-limit")));
    let over = raw(
        &sim,
        "POST",
        cms,
        "application/json",
        &padded("over-limit", 3 * MIB + 1),
    )
    .await;
    assert_status(
        &over,
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
    );
    assert_eq!(api_error(api.get("over-limit").await).0, 404);
    // The server carries on.
    assert!(api.get("at-limit").await.is_ok());
}

#[tokio::test]
async fn deeply_nested_bodies_are_refused_before_parsing() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let cms = "/api/v1/namespaces/default/configmaps";
    let yaml_msg = "error converting YAML to JSON: yaml: exceeded max depth of 1000";
    let json_msg = "json parse error: exceeded max depth of 1000";
    let started = Instant::now();
    let deep_yaml = "{a: ".repeat(60_000);
    let deep_block = format!("metadata:\n  name: x\ndata:\n{}x\n", "- ".repeat(60_000));
    for (ct, body, msg) in [
        ("application/yaml", deep_yaml.as_bytes(), yaml_msg),
        ("application/yaml", deep_block.as_bytes(), yaml_msg),
        ("application/json", &"[".repeat(60_000).into_bytes()[..], json_msg),
        (
            "application/json",
            &"{\"a\":".repeat(60_000).into_bytes()[..],
            json_msg,
        ),
    ] {
        assert_status(&raw(&sim, "POST", cms, ct, body).await, 400, "BadRequest", msg);
    }
    let cm = format!("{cms}/deep");
    let apply = raw(
        &sim,
        "PATCH",
        &cm,
        "application/apply-patch+yaml",
        deep_yaml.as_bytes(),
    )
    .await;
    assert_status(&apply, 400, "BadRequest", yaml_msg);
    let merge = raw(&sim, "PATCH", &cm, "application/merge-patch+json", &[b'['; 5000]).await;
    assert_status(&merge, 400, "BadRequest", json_msg);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refusing took {:?}",
        started.elapsed()
    );
    // Ordinary nesting, with brackets and quotes in its text, is served.
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n  labels: {app: web}\n\
                    data:\n  script: |\n    echo '[[[{{{' \"\n  list: \"[1, [2, [3]]]\"\n";
    let (code, created) = raw(&sim, "POST", cms, "application/yaml", manifest.as_bytes()).await;
    assert_eq!(
        (code, &created["data"]["list"]),
        (201, &json!("[1, [2, [3]]]")),
        "{created}"
    );
}

#[tokio::test]
async fn immortal_namespaces_cannot_be_deleted() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let api: Api<Namespace> = Api::all(sim.client());
    for name in ["default", "kube-system", "kube-public"] {
        let (code, reason, message) = api_error(api.delete(name, &DeleteParams::default()).await);
        assert_eq!(
            (code, reason.as_str(), message),
            (
                403,
                "Forbidden",
                format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
            )
        );
        let ns = api.get(name).await.unwrap();
        assert!(ns.metadata.deletion_timestamp.is_none());
    }
    let (code, body) = raw(
        &sim,
        "DELETE",
        "/api/v1/namespaces/default",
        "application/json",
        b"",
    )
    .await;
    assert_eq!(
        (code, &body["details"]),
        (403, &json!({"name": "default", "kind": "namespaces"}))
    );
    // Other namespaces go, and a collection delete leaves the immortal ones.
    api.delete("kube-node-lease", &DeleteParams::default())
        .await
        .unwrap();
    api.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap(),
    )
    .await
    .unwrap();
    let _ = api
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    let mut left: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    left.sort();
    assert_eq!(left, ["default", "kube-public", "kube-system"]);
}
