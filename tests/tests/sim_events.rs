//! Events in both API groups from one store: an Event written through
//! `events.k8s.io/v1` (as wink's recorder writes it) is the core `v1` Event
//! that `kubectl get events` and `kubectl describe` read, and the other way
//! round, with kube-apiserver's field mapping (note ↔ message, regarding ↔
//! involvedObject, ...), one name, uid and resourceVersion, one watch
//! history, and each group's field selectors. Real `kubectl` (v1.32) where
//! it reads; skipped (with a message) only when kubectl is not installed.

use crate::cache_support;
use crate::kubectl_support;

use cache_support::{REQUIRE_LABELS_GRANT, Setup, WAIT, deployment};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kubectl_support::{Env, have_kubectl};
use serde_json::{Value, json};
use std::time::Duration;
use wink_sim::SimConfig;

const NS: &str = "team";
const CORE: &str = "/api/v1/namespaces/team/events";
const GROUP: &str = "/apis/events.k8s.io/v1/namespaces/team/events";

/// A request through kube's client: the answer, or the Status's code and message.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    ct: &str,
    body: &Value,
) -> Result<Value, (u16, String)> {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", ct)
        .header("Accept", "application/json")
        .body(if body.is_null() {
            vec![]
        } else {
            body.to_string().into_bytes()
        })
        .unwrap();
    match client.request_text(req).await {
        Ok(text) => Ok(serde_json::from_str(&text).unwrap()),
        Err(kube::Error::Api(s)) => Err((s.code, s.message.clone())),
        Err(e) => panic!("{method} {path}: {e:?}"),
    }
}

async fn ok(client: &kube::Client, method: &str, path: &str, body: &Value) -> Value {
    send(client, method, path, "application/json", body)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e:?}"))
}

/// A server with namespace `team` and Deployment `team/web`.
async fn setup(name: &str) -> (Env, Deployment) {
    let e = kubectl_support::env(name, SimConfig::default()).await;
    e.sim
        .insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}))
        .unwrap();
    let web = Api::<Deployment>::namespaced(e.sim.client(), NS)
        .create(&PostParams::default(), &deployment(NS, "web", 1))
        .await
        .unwrap();
    (e, web)
}

/// Now as a MicroTime, as wink's recorder writes it.
fn now_micro() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

/// The body wink's recorder sends (host/runtime/src/capabilities/events.rs).
fn recorded(name: &str, about: &Deployment, reason: &str, note: &str) -> Value {
    let m = &about.metadata;
    json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NS},
        "eventTime": now_micro(),
        "reportingController": "wink.dev/require-labels",
        "reportingInstance": "wink-require-labels",
        "action": "Check",
        "reason": reason,
        "note": note,
        "type": "Warning",
        "regarding": {
            "apiVersion": "apps/v1", "kind": "Deployment", "namespace": NS,
            "name": m.name, "uid": m.uid, "resourceVersion": m.resource_version,
        },
    })
}

/// A core v1 Event as kube-controller-manager's recorder writes one.
fn core_event(name: &str, kind: &str, about: &str, uid: &str, reason: &str, message: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": NS},
        "involvedObject": {"apiVersion": "apps/v1", "kind": kind, "namespace": NS, "name": about, "uid": uid},
        "reason": reason, "message": message, "type": "Normal", "count": 2,
        "source": {"component": "deployment-controller"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:05:00Z",
    })
}

#[tokio::test]
async fn a_recorded_event_is_listed_by_kubectl_and_described_with_its_deployment() {
    if !have_kubectl() {
        return;
    }
    let (e, web) = setup("events-kubectl").await;
    let client = e.sim.client();
    let note = "web has no team label; add metadata.labels.team";
    let created = ok(
        &client,
        "POST",
        &format!("{GROUP}?fieldManager=wink-require-labels"),
        &recorded("web.1", &web, "MissingLabels", note),
    )
    .await;
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["note"], note);

    let table = e.ok(&["get", "events", "-n", NS]).await;
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{table}"
    );
    let row = lines.next().expect("one row");
    for cell in ["Warning", "MissingLabels", "deployment/web", note] {
        assert!(row.contains(cell), "{cell:?} in {table}");
    }
    assert!(!row.contains("web.1"), "the name is a wide column: {table}");
    let wide = e.ok(&["get", "events", "-n", NS, "-o", "wide"]).await;
    assert!(
        wide.contains("wink.dev/require-labels, wink-require-labels"),
        "source: {wide}"
    );
    assert!(wide.contains("web.1"), "{wide}");
    let group = e.ok(&["get", "events.events.k8s.io", "-n", NS]).await;
    assert!(group.starts_with("LAST SEEN"), "{group}");
    assert!(group.contains("MissingLabels") && group.contains(note), "{group}");

    let described = e.ok(&["describe", "deployment", "web", "-n", NS]).await;
    let events = described.split("Events:").nth(1).expect("an Events section");
    assert!(!events.trim_start().starts_with("<none>"), "{described}");
    for cell in ["Warning", "MissingLabels", "wink.dev/require-labels", note] {
        assert!(events.contains(cell), "{cell:?} in {described}");
    }

    // One object, two views: the same name, uid and resourceVersion.
    let core = e.json(&["get", "events", "web.1", "-n", NS, "-o", "json"]).await;
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["message"], note);
    assert_eq!(core["involvedObject"]["uid"], json!(web.metadata.uid));
    assert_eq!(core["reportingComponent"], "wink.dev/require-labels");
    assert_eq!(core["source"], json!({}));
    assert_eq!(core["firstTimestamp"], Value::Null);
    // (kubectl hides managedFields: read them with the client.)
    let raw = ok(&client, "GET", &format!("{CORE}/web.1"), &Value::Null).await;
    let managed = &raw["metadata"]["managedFields"][0];
    assert_eq!(
        (&managed["manager"], &managed["apiVersion"]),
        (&json!("wink-require-labels"), &json!("events.k8s.io/v1")),
        "the write's own version"
    );
    for k in ["uid", "resourceVersion", "creationTimestamp"] {
        assert_eq!(core["metadata"][k], created["metadata"][k], "{k}");
    }
}

#[tokio::test]
async fn a_core_event_is_served_by_events_k8s_io_with_its_fields_mapped() {
    let (e, web) = setup("events-core").await;
    let client = e.sim.client();
    let uid = web.metadata.uid.clone().unwrap();
    let body = core_event(
        "web.scaled",
        "Deployment",
        "web",
        &uid,
        "ScalingReplicaSet",
        "Scaled up to 1",
    );
    let created = ok(&client, "POST", CORE, &body).await;
    assert_eq!(
        created["eventTime"],
        Value::Null,
        "serialized as the real server does"
    );
    assert_eq!(created["reportingComponent"], "");

    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let ev = events.get("web.scaled").await.unwrap();
    assert_eq!(ev.note.as_deref(), Some("Scaled up to 1"));
    let regarding = ev.regarding.clone().unwrap();
    assert_eq!(
        (regarding.kind.as_deref(), regarding.uid.as_deref()),
        (Some("Deployment"), Some(uid.as_str()))
    );
    assert_eq!(ev.deprecated_count, Some(2));
    assert_eq!(
        ev.deprecated_source.as_ref().unwrap().component.as_deref(),
        Some("deployment-controller")
    );
    assert!(ev.deprecated_first_timestamp.is_some() && ev.deprecated_last_timestamp.is_some());
    assert_eq!(
        ev.metadata.uid,
        created["metadata"]["uid"].as_str().map(String::from)
    );
    assert_eq!(
        ev.metadata.resource_version,
        created["metadata"]["resourceVersion"].as_str().map(String::from)
    );
    let raw = ok(&client, "GET", &format!("{GROUP}/web.scaled"), &Value::Null).await;
    for core_only in [
        "message",
        "involvedObject",
        "source",
        "count",
        "reportingComponent",
    ] {
        assert!(raw.get(core_only).is_none(), "{core_only} in {raw}");
    }
    assert_eq!(raw["eventTime"], Value::Null);

    // Written through events.k8s.io (merge patch, update), read through
    // core: as on a real server, its updates may change the series and the
    // metadata only; core v1 updates are not held to that.
    let patched = send(
        &client,
        "PATCH",
        &format!("{GROUP}/web.scaled"),
        "application/merge-patch+json",
        &json!({"series": {"count": 3, "lastObservedTime": now_micro()}}),
    )
    .await
    .unwrap();
    assert_eq!(patched["series"]["count"], 3);
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), NS);
    let c = core.get("web.scaled").await.unwrap();
    assert_eq!(c.series.as_ref().and_then(|s| s.count), Some(3));
    let (code, message) = send(
        &client,
        "PATCH",
        &format!("{GROUP}/web.scaled"),
        "application/merge-patch+json",
        &json!({"note": "patched"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (code, message.as_str()),
        (
            422,
            "Event \"web.scaled\" is invalid: message: Invalid value: \"patched\": field is immutable"
        )
    );
    let through_core = send(
        &client,
        "PATCH",
        &format!("{CORE}/web.scaled"),
        "application/merge-patch+json",
        &json!({"message": "patched"}),
    )
    .await
    .unwrap();
    assert_eq!(through_core["message"], "patched");
    assert_eq!(
        events.get("web.scaled").await.unwrap().note.as_deref(),
        Some("patched")
    );
    let mut put = ok(&client, "GET", &format!("{GROUP}/web.scaled"), &Value::Null).await;
    put["metadata"]["labels"] = json!({"rollout": "1"});
    let updated = ok(&client, "PUT", &format!("{GROUP}/web.scaled"), &put).await;
    assert_ne!(
        updated["metadata"]["resourceVersion"],
        through_core["metadata"]["resourceVersion"]
    );
    let c = core.get("web.scaled").await.unwrap();
    assert_eq!(c.metadata.labels.unwrap()["rollout"], "1");
    let same = ok(&client, "PUT", &format!("{GROUP}/web.scaled"), &updated).await;
    assert_eq!(
        same["metadata"]["resourceVersion"], updated["metadata"]["resourceVersion"],
        "a no-op write"
    );

    // Events may be created by an update (PUT to a missing name).
    let fresh = recorded("web.put", &web, "Put", "made by PUT");
    let made = ok(&client, "PUT", &format!("{GROUP}/web.put"), &fresh).await;
    assert_eq!(made["note"], "made by PUT");
    assert_eq!(
        core.get("web.put").await.unwrap().message.as_deref(),
        Some("made by PUT")
    );

    // Deleted through one group, gone from the other.
    send(
        &client,
        "DELETE",
        &format!("{GROUP}/web.put"),
        "application/json",
        &Value::Null,
    )
    .await
    .unwrap();
    let (code, message) = send(
        &client,
        "GET",
        &format!("{CORE}/web.put"),
        "application/json",
        &Value::Null,
    )
    .await
    .unwrap_err();
    assert_eq!((code, message.as_str()), (404, "events \"web.put\" not found"));
    let (code, message) = send(
        &client,
        "GET",
        &format!("{GROUP}/web.put"),
        "application/json",
        &Value::Null,
    )
    .await
    .unwrap_err();
    assert_eq!(
        (code, message.as_str()),
        (404, "events.events.k8s.io \"web.put\" not found")
    );
    let gone = ok(
        &client,
        "DELETE",
        &format!("{CORE}?labelSelector=rollout%3D1"),
        &Value::Null,
    )
    .await;
    assert_eq!(gone["items"].as_array().map(Vec::len), Some(1), "{gone}");
    assert!(
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn a_watch_through_one_group_sees_writes_through_the_other() {
    let (e, web) = setup("events-watch").await;
    let client = e.sim.client();
    let group: Api<Event> = Api::namespaced(client.clone(), NS);
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), NS);
    let rv = e.sim.current_resource_version().to_string();
    let mut through_group = group.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let mut through_core = core.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let uid = web.metadata.uid.clone().unwrap();
    let a = ok(
        &client,
        "POST",
        CORE,
        &core_event("a", "Deployment", "web", &uid, "Core", "written as v1"),
    )
    .await;
    let b = ok(
        &client,
        "POST",
        GROUP,
        &recorded("b", &web, "Group", "written as events.k8s.io"),
    )
    .await;
    let next = Duration::from_secs(10);
    for (name, rv, note) in [
        ("a", &a["metadata"]["resourceVersion"], "written as v1"),
        ("b", &b["metadata"]["resourceVersion"], "written as events.k8s.io"),
    ] {
        let Ok(Some(WatchEvent::Added(ev))) = tokio::time::timeout(next, through_group.try_next())
            .await
            .unwrap()
        else {
            panic!("no ADDED of {name} through events.k8s.io");
        };
        assert_eq!(ev.metadata.name.as_deref(), Some(name));
        assert_eq!(ev.note.as_deref(), Some(note));
        assert_eq!(ev.regarding.and_then(|r| r.name).as_deref(), Some("web"));
        assert_eq!(ev.metadata.resource_version.as_deref(), rv.as_str());
        let Ok(Some(WatchEvent::Added(ev))) =
            tokio::time::timeout(next, through_core.try_next()).await.unwrap()
        else {
            panic!("no ADDED of {name} through v1");
        };
        assert_eq!(ev.metadata.name.as_deref(), Some(name));
        assert_eq!(ev.message.as_deref(), Some(note));
        assert_eq!(ev.involved_object.name.as_deref(), Some("web"));
        assert_eq!(ev.metadata.resource_version.as_deref(), rv.as_str());
    }
    // A field selector on a watch: only the matching Event, and in either naming.
    let wp = WatchParams::default().fields("regarding.name=web,reportingController=wink.dev/require-labels");
    let mut selected = group.watch(&wp, "0").await.unwrap().boxed();
    let Ok(Some(WatchEvent::Added(ev))) = tokio::time::timeout(next, selected.try_next()).await.unwrap()
    else {
        panic!("no ADDED through the selector");
    };
    assert_eq!(ev.metadata.name.as_deref(), Some("b"));
    ok(
        &client,
        "POST",
        CORE,
        &core_event("c", "Deployment", "web", &uid, "Core", "not selected"),
    )
    .await;
    ok(&client, "POST", GROUP, &recorded("d", &web, "Group", "selected")).await;
    let Ok(Some(WatchEvent::Added(ev))) = tokio::time::timeout(next, selected.try_next()).await.unwrap()
    else {
        panic!("no ADDED of d through the selector");
    };
    assert_eq!(
        ev.metadata.name.as_deref(),
        Some("d"),
        "c is not the controller's"
    );
}

#[tokio::test]
async fn field_selectors_filter_as_kube_apiserver_does() {
    if !have_kubectl() {
        return;
    }
    let (e, web) = setup("events-fields").await;
    let client = e.sim.client();
    let uid = web.metadata.uid.clone().unwrap();
    ok(
        &client,
        "POST",
        GROUP,
        &recorded("web.1", &web, "MissingLabels", "needs team"),
    )
    .await;
    ok(
        &client,
        "POST",
        CORE,
        &core_event("web.2", "Deployment", "web", &uid, "ScalingReplicaSet", "scaled"),
    )
    .await;
    ok(
        &client,
        "POST",
        CORE,
        &core_event(
            "api.1",
            "Deployment",
            "api",
            "u-api",
            "ScalingReplicaSet",
            "scaled",
        ),
    )
    .await;
    ok(
        &client,
        "POST",
        CORE,
        &core_event("pod.1", "Pod", "web-abc", "u-pod", "Scheduled", "assigned"),
    )
    .await;

    let names = |items: Vec<Value>| -> Vec<String> {
        let mut n: Vec<String> = items
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    // What kubectl describe asks for.
    let about_web = format!(
        "involvedObject.name=web,involvedObject.namespace={NS},involvedObject.kind=Deployment,involvedObject.uid={uid}"
    );
    let cases: [(&str, &str, &[&str]); 8] = [
        ("events", &about_web, &["web.1", "web.2"]),
        ("events", "involvedObject.kind=Pod", &["pod.1"]),
        (
            "events",
            "reason=ScalingReplicaSet,involvedObject.name!=web",
            &["api.1"],
        ),
        ("events", "source=wink.dev/require-labels", &["web.1"]),
        ("events", "reportingComponent=wink.dev/require-labels", &["web.1"]),
        (
            "events",
            "source=deployment-controller,type=Normal",
            &["api.1", "pod.1", "web.2"],
        ),
        (
            "events.events.k8s.io",
            "regarding.name=web,regarding.kind=Deployment",
            &["web.1", "web.2"],
        ),
        (
            "events.events.k8s.io",
            "reportingController=wink.dev/require-labels,type=Warning",
            &["web.1"],
        ),
    ];
    for (resource, selector, want) in cases {
        let got = names(
            e.items(&["get", resource, "-n", NS, "--field-selector", selector])
                .await,
        );
        assert_eq!(got, want, "{resource} --field-selector {selector}");
    }
    let group: Api<Event> = Api::namespaced(client.clone(), NS);
    let listed = group
        .list(&ListParams::default().fields("source=deployment-controller,metadata.name=web.2"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    // Each group accepts its own labels only.
    let (ok_, _, stderr) = e
        .run(&[
            "get",
            "events.events.k8s.io",
            "-n",
            NS,
            "--field-selector",
            "involvedObject.name=web",
        ])
        .await;
    assert!(
        !ok_ && stderr.contains("field label not supported: involvedObject.name"),
        "{stderr}"
    );
    let (code, message) = send(
        &client,
        "GET",
        &format!("{CORE}?fieldSelector=regarding.name%3Dweb"),
        "application/json",
        &Value::Null,
    )
    .await
    .unwrap_err();
    assert_eq!(
        (code, message.as_str()),
        (400, "field label not supported: regarding.name")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_describe_shows_the_event_the_daemon_recorded() {
    if !have_kubectl() {
        return;
    }
    let e = kubectl_support::env("events-daemon", SimConfig::default()).await;
    let s = Setup::new("sim_events_daemon", &e.sim);
    s.install("require_labels", "require-labels", None);
    Api::<Deployment>::namespaced(e.sim.client(), "default")
        .create(&PostParams::default(), &deployment("default", "web", 1))
        .await
        .unwrap();
    let grants = s.plugins.parent().unwrap().join("grants.yaml");
    let audit = REQUIRE_LABELS_GRANT.replace("    events: true", "    events: true\n    mode: audit");
    std::fs::write(&grants, audit).unwrap();
    let wink = s.run(&["--grants", grants.to_str().unwrap()]);
    wink.wait_for_line("require-labels: default/web: missing label team", WAIT);
    let deadline = std::time::Instant::now() + WAIT;
    let described = loop {
        let out = e.ok(&["describe", "deployment", "web"]).await;
        if out.contains("MissingLabel") {
            break out;
        }
        assert!(std::time::Instant::now() < deadline, "no Event in {out}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let events = described.split("Events:").nth(1).unwrap();
    assert!(
        events.contains("Warning") && events.contains("wink.dev/require-labels"),
        "{described}"
    );
    let listed = e.ok(&["get", "events"]).await;
    assert!(
        listed.contains("MissingLabel") && listed.contains("deployment/web"),
        "{listed}"
    );
}
