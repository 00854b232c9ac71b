use super::*;
use crate::runtime::capabilities::cluster::ClusterAccess;
use axum::http::HeaderValue;
use std::sync::Arc;

fn request(method: Method, uri: &str, content_type: &'static str, body: Value) -> Request {
    Request {
        method,
        uri: uri.to_string(),
        content_type,
        body: body.to_string().into_bytes(),
    }
}

fn web() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "u-web", "labels": {"app": "web"}}})
}

/// A capture behind the cluster access plugins use, as `wink test` sets it up.
fn access(objects: &[Value]) -> (Arc<Capture>, ClusterAccess) {
    let capture = Arc::new(Capture::new(objects));
    (capture.clone(), ClusterAccess::local(capture))
}

fn send(access: &ClusterAccess, r: Request) -> Result<Value, WriteError> {
    let (_, body) = access.send(r, &HeaderValue::from_static("test"))?;
    Ok(serde_json::from_slice(&body).unwrap())
}

#[test]
fn discovery_is_offline_for_built_in_kinds_and_the_cases_own() {
    let crd = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "a"}});
    let (_, access) = access(&[crd]);
    let deploy = access.resolve("apps/v1", "Deployment").unwrap();
    assert_eq!(
        (deploy.ar.plural.as_str(), deploy.namespaced),
        ("deployments", true)
    );
    let ns = access.resolve("v1", "Namespace").unwrap();
    assert_eq!((ns.ar.plural.as_str(), ns.namespaced), ("namespaces", false));
    let widget = access.resolve("example.com/v1", "Widget").unwrap();
    assert_eq!((widget.ar.plural.as_str(), widget.namespaced), ("widgets", true));
    assert!(matches!(
        access.resolve("example.com/v1", "Gadget"),
        Err(WriteError::InvalidArgument(_))
    ));
}

#[test]
fn a_create_answers_with_the_object_and_what_the_server_adds() {
    let (capture, access) = access(&[]);
    let r = access.resolve("v1", "ConfigMap").unwrap();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "defaults"}, "data": {"a": "b"}});
    let uri = format!("{}?fieldManager=wink-x", r.collection(Some("team-a")));
    let got = send(
        &access,
        request(Method::POST, &uri, "application/json", cm.clone()),
    )
    .unwrap();
    assert_eq!(got["metadata"]["namespace"], "team-a");
    assert_eq!(got["data"], json!({"a": "b"}));
    for generated in ["uid", "resourceVersion", "creationTimestamp"] {
        assert!(got["metadata"][generated].is_string(), "{generated}: {got}");
    }
    assert_eq!(capture.writes(), ["create v1 ConfigMap team-a/defaults"]);
    match send(&access, request(Method::POST, &uri, "application/json", cm)) {
        Err(WriteError::AlreadyExists(st)) => assert_eq!(st.code, 409),
        other => panic!("{other:?}"),
    }
    assert_eq!(capture.writes().len(), 1, "a refused write is not one made");
}

#[test]
fn patches_apply_to_the_cases_object_and_to_earlier_writes() {
    let (capture, access) = access(&[web()]);
    let r = access.resolve("apps/v1", "Deployment").unwrap();
    let uri = format!("{}/web?fieldManager=wink-x", r.collection(Some("default")));
    let merge = json!({"metadata": {"labels": {"team": "unassigned"}}});
    let got = send(
        &access,
        request(Method::PATCH, &uri, "application/merge-patch+json", merge),
    )
    .unwrap();
    assert_eq!(
        got["metadata"]["labels"],
        json!({"app": "web", "team": "unassigned"})
    );
    assert_eq!(
        got["metadata"]["uid"], "u-web",
        "the object patched keeps its uid"
    );
    let ops = json!([{"op": "remove", "path": "/metadata/labels/app"}]);
    let got = send(
        &access,
        request(Method::PATCH, &uri, "application/json-patch+json", ops),
    )
    .unwrap();
    assert_eq!(
        got["metadata"]["labels"],
        json!({"team": "unassigned"}),
        "on the earlier write"
    );
    let strategic = json!({"spec": {"replicas": 2}});
    let got = send(
        &access,
        request(
            Method::PATCH,
            &uri,
            "application/strategic-merge-patch+json",
            strategic,
        ),
    )
    .unwrap();
    assert_eq!(got["spec"]["replicas"], 2);
    assert_eq!(
        capture.writes(),
        [
            r#"patch apps/v1 Deployment default/web merge {"metadata":{"labels":{"team":"unassigned"}}}"#,
            r#"patch apps/v1 Deployment default/web json [{"op":"remove","path":"/metadata/labels/app"}]"#,
            r#"patch apps/v1 Deployment default/web strategic {"spec":{"replicas":2}}"#,
        ]
    );
}

#[test]
fn a_delete_answers_success_then_the_object_is_not_found() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "old", "namespace": "default", "uid": "u1"}});
    let (capture, access) = access(&[pod]);
    let r = access.resolve("v1", "Pod").unwrap();
    let uri = format!("{}/old", r.collection(Some("default")));
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1"});
    let wrong = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "u2", "resourceVersion": null}});
    assert!(matches!(
        send(&access, request(Method::DELETE, &uri, "application/json", wrong)),
        Err(WriteError::Conflict(_))
    ));
    let got = send(
        &access,
        request(Method::DELETE, &uri, "application/json", options.clone()),
    )
    .unwrap();
    assert_eq!(
        (got["kind"].as_str(), got["status"].as_str()),
        (Some("Status"), Some("Success"))
    );
    assert_eq!(capture.writes(), ["delete v1 Pod default/old"]);
    match send(
        &access,
        request(Method::DELETE, &uri, "application/json", options),
    ) {
        Err(WriteError::NotFound(st)) => assert_eq!(st.code, 404),
        other => panic!("{other:?}"),
    }
    let merge = json!({"metadata": {"labels": {"a": "b"}}});
    assert!(matches!(
        send(
            &access,
            request(Method::PATCH, &uri, "application/merge-patch+json", merge)
        ),
        Err(WriteError::NotFound(_))
    ));
    let missing = format!("{}/nobody", r.collection(Some("default")));
    let put =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nobody", "namespace": "default"}});
    assert!(matches!(
        send(&access, request(Method::PUT, &missing, "application/json", put)),
        Err(WriteError::NotFound(_))
    ));
}

#[test]
fn events_are_recorded_and_a_repeat_is_recorded_again() {
    let (capture, access) = access(&[]);
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "type": "Warning", "reason": "MissingLabel", "action": "Label", "note": "no team label",
        "regarding": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"}});
    let uri = "/apis/events.k8s.io/v1/namespaces/default/events";
    send(&access, request(Method::POST, uri, "application/json", event)).unwrap();
    let series = json!({"series": {"count": 2}});
    send(
        &access,
        request(
            Method::PATCH,
            &format!("{uri}/web.1"),
            "application/merge-patch+json",
            series,
        ),
    )
    .unwrap();
    let line = "Warning MissingLabel default/web: no team label";
    assert_eq!(capture.events(), [line, line]);
    assert!(capture.writes().is_empty(), "Events are not writes");
}

/// Bodies no API server would apply are answered as it answers them (400
/// for a body that is no object, 422 for a patch that leaves none), the
/// object unchanged, and the capture goes on answering.
#[test]
fn writes_that_leave_no_object_are_refused_as_the_server_refuses_them() {
    let (capture, access) = access(&[web()]);
    let r = access.resolve("apps/v1", "Deployment").unwrap();
    let uri = format!("{}/web", r.collection(Some("default")));
    let refused = [
        (Method::PATCH, "application/merge-patch+json", json!("x"), 422),
        (Method::PATCH, "application/merge-patch+json", json!([1, 2]), 422),
        (
            Method::PATCH,
            "application/merge-patch+json",
            json!({"metadata": "x"}),
            422,
        ),
        (
            Method::PATCH,
            "application/strategic-merge-patch+json",
            json!(7),
            422,
        ),
        (Method::PATCH, "application/apply-patch+yaml", json!("x"), 422),
        (
            Method::PATCH,
            "application/json-patch+json",
            json!([{"op": "add", "path": "", "value": 5}]),
            422,
        ),
        (
            Method::PATCH,
            "application/json-patch+json",
            json!([{"op": "replace", "path": "", "value": "x"}]),
            422,
        ),
        (Method::PUT, "application/json", json!("x"), 400),
        (Method::PUT, "application/json", json!({"metadata": 5}), 400),
    ];
    for (method, content_type, body, code) in refused {
        let what = format!("{method} {content_type} {body}");
        match send(&access, request(method, &uri, content_type, body)) {
            Err(WriteError::Invalid(s)) if code == 422 => assert_eq!(s.code, 422, "{what}"),
            Err(WriteError::Other(s)) if code == 400 => assert_eq!(s.code, 400, "{what}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    let create = r.collection(Some("default"));
    let got = send(
        &access,
        request(Method::POST, &create, "application/json", json!("x")),
    );
    assert!(
        matches!(got, Err(WriteError::Other(ref s)) if s.code == 400),
        "{got:?}"
    );
    assert!(capture.writes().is_empty(), "{:?}", capture.writes());
    assert!(capture.faults.take().is_empty());
    let fine = json!({"metadata": {"labels": {"ok": "yes"}}});
    let got = send(
        &access,
        request(Method::PATCH, &uri, "application/merge-patch+json", fine),
    )
    .unwrap();
    assert_eq!(
        got["metadata"]["labels"]["app"], "web",
        "the object was left as it was"
    );
}

#[test]
fn injected_statuses_answer_the_first_writes_and_apply_nothing() {
    let (capture, access) = access(&[]);
    capture.inject(&[409, 500]);
    let r = access.resolve("v1", "ConfigMap").unwrap();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "defaults"}});
    let create = || {
        request(
            Method::POST,
            &r.collection(Some("team-a")),
            "application/json",
            cm.clone(),
        )
    };
    assert!(matches!(send(&access, create()), Err(WriteError::Conflict(s)) if s.code == 409));
    assert!(matches!(send(&access, create()), Err(WriteError::InternalError(s)) if s.code == 500));
    send(&access, create()).expect("the third is answered as usual");
    assert_eq!(
        capture.writes(),
        [
            "create v1 ConfigMap team-a/defaults -> 409",
            "create v1 ConfigMap team-a/defaults -> 500",
            "create v1 ConfigMap team-a/defaults",
        ]
    );
}
