//! Bodies the simulated API server refuses as a real one does, with a
//! Status and the connection kept: fields of the wrong JSON type (400 on
//! create and update, 422 on patch), values its validation refuses (422),
//! patches that are no patch (400) or leave no object (422),
//! CRD printer columns the API server's validation refuses (422), and a
//! printer column whose path does not parse (the Table falls back to the
//! columns before it).

use serde_json::{Value, json};
use wink_sim::{Sim, SimConfig};

/// A raw request through kube's client: the answer, or the Status of a
/// failure as (code, reason, message).
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> Result<Value, (u16, String, String)> {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", content_type)
        .header("Accept", "application/json")
        .body(body.as_bytes().to_vec())
        .unwrap();
    match client.request_text(req).await {
        Ok(text) => Ok(serde_json::from_str(&text).unwrap()),
        Err(kube::Error::Api(s)) => Err((s.code, s.reason.clone(), s.message.clone())),
        Err(e) => panic!("{method} {path}: expected an answer or a Status, got {e:?}"),
    }
}

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

#[tokio::test]
async fn mistyped_fields_are_refused_as_the_api_server_refuses_them() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let c = sim.client();
    for (spec, why) in [
        (
            json!({"leaseDurationSeconds": "abc"}),
            "json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32",
        ),
        (
            json!({"holderIdentity": 5}),
            "json: cannot unmarshal number into Go struct field LeaseSpec.spec.holderIdentity of type string",
        ),
        (json!({"renewTime": "garbage"}), "parsing time \"garbage\""),
    ] {
        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l"}, "spec": spec});
        let (code, reason, msg) = send(&c, "POST", LEASES, JSON, &lease.to_string())
            .await
            .unwrap_err();
        assert_eq!((code, reason.as_str()), (400, "BadRequest"), "{spec}: {msg}");
        assert!(
            msg.starts_with("Lease in version \"v1\" cannot be handled as a Lease: ") && msg.contains(why),
            "{spec}: {msg}"
        );
    }
    let cm = json!({"metadata": {"name": "c"}, "data": {"a": 5}});
    let (code, _, msg) = send(
        &c,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        JSON,
        &cm.to_string(),
    )
    .await
    .unwrap_err();
    assert_eq!(code, 400);
    assert!(
        msg.ends_with("json: cannot unmarshal number into Go struct field ConfigMap.data of type string"),
        "{msg}"
    );
    let zero = json!({"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 0}});
    let (code, reason, msg) = send(&c, "POST", LEASES, JSON, &zero.to_string())
        .await
        .unwrap_err();
    assert_eq!((code, reason.as_str()), (422, "Invalid"), "{msg}");
    assert!(
        msg.ends_with("spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"),
        "{msg}"
    );
    // Nothing was stored; a well-typed Lease is, and a mistyped update or patch of it is refused.
    let gone = send(&c, "GET", &format!("{LEASES}/l"), JSON, "")
        .await
        .unwrap_err();
    assert_eq!(gone.0, 404);
    let good = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
        "renewTime": "2024-01-02T03:04:05.000000Z"}});
    let created = send(&c, "POST", LEASES, JSON, &good.to_string()).await.unwrap();
    let mut bad = created.clone();
    bad["spec"]["leaseDurationSeconds"] = json!("abc");
    let (code, ..) = send(&c, "PUT", &format!("{LEASES}/l"), JSON, &bad.to_string())
        .await
        .unwrap_err();
    assert_eq!(code, 400);
    let (code, reason, msg) = send(
        &c,
        "PATCH",
        &format!("{LEASES}/l"),
        MERGE,
        r#"{"spec":{"leaseDurationSeconds":"abc"}}"#,
    )
    .await
    .unwrap_err();
    assert_eq!((code, reason.as_str()), (422, "Invalid"), "{msg}");
    assert!(
        msg.contains("LeaseSpec.spec.leaseDurationSeconds of type int32"),
        "{msg}"
    );
    let now = send(&c, "GET", &format!("{LEASES}/l"), JSON, "").await.unwrap();
    assert_eq!(now["spec"], created["spec"]);
}

#[tokio::test]
async fn patches_that_are_none_or_leave_no_object_are_refused_not_dropped() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let c = sim.client();
    let cms = "/api/v1/namespaces/default/configmaps";
    send(
        &c,
        "POST",
        cms,
        JSON,
        r#"{"metadata":{"name":"a"},"data":{"k":"v"}}"#,
    )
    .await
    .unwrap();
    let target = format!("{cms}/a");
    for (ct, patch, why) in [
        (MERGE, r#""x""#, "Invalid JSON Patch"),
        (MERGE, "5", "Invalid JSON Patch"),
        (
            "application/strategic-merge-patch+json",
            "[1,2]",
            "invalid JSON document",
        ),
    ] {
        let (code, reason, msg) = send(&c, "PATCH", &target, ct, patch).await.unwrap_err();
        assert_eq!(
            (code, reason.as_str(), msg.as_str()),
            (400, "BadRequest", why),
            "{ct} {patch}"
        );
    }
    for (ct, patch) in [
        (MERGE, "[1,2]"),
        (MERGE, r#"{"metadata":"x"}"#),
        ("application/strategic-merge-patch+json", r#"{"metadata":"x"}"#),
        (
            "application/json-patch+json",
            r#"[{"op":"replace","path":"","value":5}]"#,
        ),
        (
            "application/json-patch+json",
            r#"[{"op":"add","path":"","value":5}]"#,
        ),
        (
            "application/json-patch+json",
            r#"[{"op":"replace","path":"/metadata","value":"x"}]"#,
        ),
    ] {
        let (code, reason, msg) = send(&c, "PATCH", &target, ct, patch).await.unwrap_err();
        assert_eq!((code, reason.as_str()), (422, "Invalid"), "{ct} {patch}: {msg}");
    }
    let scale = "/apis/apps/v1/namespaces/default/deployments/web/scale";
    let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}}}});
    send(
        &c,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        JSON,
        &d.to_string(),
    )
    .await
    .unwrap();
    let (code, ..) = send(&c, "PATCH", scale, MERGE, r#"{"metadata":"x"}"#)
        .await
        .unwrap_err();
    assert_eq!(code, 422);
    let a = send(&c, "GET", &target, JSON, "").await.unwrap();
    assert_eq!(a["data"], json!({"k": "v"}), "the object is as it was");
}

fn crd(json_path: &str) -> String {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gizmos", "kind": "Gizmo"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "additionalPrinterColumns": [{"name": "A", "type": "string", "jsonPath": json_path}]}]}})
    .to_string()
}

#[tokio::test]
async fn printer_columns_are_checked_and_a_bad_path_never_breaks_tables() {
    let sim = Sim::start(SimConfig::default()).await.unwrap();
    let c = sim.client();
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (code, reason, msg) = send(&c, "POST", crds, JSON, &crd("spec.a")).await.unwrap_err();
    assert_eq!((code, reason.as_str()), (422, "Invalid"), "{msg}");
    assert!(
        msg.contains(
            "spec.versions[0].additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.a\": must be a simple json path starting with ."
        ),
        "{msg}"
    );
    // The API server's validation accepts this one; its Table falls back to the Name column.
    send(&c, "POST", crds, JSON, &crd(".spec.a[0]]")).await.unwrap();
    let gizmos = "/apis/example.com/v1/namespaces/default/gizmos";
    send(
        &c,
        "POST",
        gizmos,
        JSON,
        r#"{"metadata":{"name":"g"},"spec":{"a":["x"]}}"#,
    )
    .await
    .unwrap();
    for path in [gizmos.to_string(), format!("{gizmos}/g")] {
        let req = http::Request::builder()
            .uri(&path)
            .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
            .body(Vec::new())
            .unwrap();
        let table: Value = serde_json::from_str(&c.request_text(req).await.unwrap()).unwrap();
        assert_eq!(table["kind"], "Table", "{path}");
        let names: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, ["Name"], "{path}");
        assert_eq!(table["rows"][0]["cells"], json!(["g"]), "{path}");
    }
}
