//! Admission webhooks called by the simulated API server as kube-apiserver
//! calls them, seen through real `kubectl` (v1.32): a native HTTPS webhook
//! (`support`: wink-sim's test server, tokio + hyper + rustls, certificates
//! by rcgen) registered through the API. Denials, mutations, warnings, dry
//! runs, failure policies, timeouts, rules and selectors, TLS, equivalents;
//! the ReplicaSet controller's Pods admitted as a client's (`replicasets`).

mod matching;
mod replicasets;
mod support;

use crate::kubectl_support::have_kubectl;
use serde_json::{Value, json};
use std::time::Duration;
use support::{hook, setup};
use wink_sim::webhook_testing::WebhookCerts;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_shows_denials_mutations_and_warnings() {
    if !have_kubectl() {
        return;
    }
    let s = setup("denials").await;
    let ca = s.certs.ca_bundle();
    s.configure(
        "ValidatingWebhookConfiguration",
        "deny-forbidden",
        vec![hook("deny.wink.test", &s.server.url("/validate"), &ca, json!({}))],
    )
    .await;
    s.configure(
        "MutatingWebhookConfiguration",
        "label-everything",
        vec![hook("mutate.wink.test", &s.server.url("/mutate"), &ca, json!({}))],
    )
    .await;

    // The defaults the real server gives a webhook.
    let cfg = s
        .env
        .json(&[
            "get",
            "validatingwebhookconfiguration",
            "deny-forbidden",
            "-o",
            "json",
        ])
        .await;
    let h = &cfg["webhooks"][0];
    assert_eq!(h["failurePolicy"], "Fail");
    assert_eq!(h["matchPolicy"], "Equivalent");
    assert_eq!(h["timeoutSeconds"], 10);
    assert_eq!(h["namespaceSelector"], json!({}));
    assert_eq!(h["objectSelector"], json!({}));
    assert_eq!(h["rules"][0]["scope"], "*");
    let m = s
        .env
        .json(&[
            "get",
            "mutatingwebhookconfiguration",
            "label-everything",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(m["webhooks"][0]["reinvocationPolicy"], "Never");
    let table = s.env.ok(&["get", "validatingwebhookconfigurations"]).await;
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.lines().next().unwrap().contains("WEBHOOKS"), "{table}");
    assert!(table.contains("deny-forbidden"), "{table}");

    // A violating object is refused with the webhook's message, and not stored.
    let bad = s.configmap("bad", "default", json!({"forbidden": "x"}));
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &bad]).await;
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "Error from server (Forbidden): error when creating \"{bad}\": admission webhook \"deny.wink.test\" denied the request: data key forbidden is not allowed"
        )),
        "{stderr}"
    );
    let (found, _, _) = s.env.run(&["get", "configmap", "bad"]).await;
    assert!(!found, "a denied object is not stored");

    // An allowed one carries the mutation, and kubectl prints the warning.
    let good = s.configmap("good", "default", json!({"a": "1"}));
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &good]).await;
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("Warning: configmap checked by the test webhook"),
        "{stderr}"
    );
    let yaml = s.env.ok(&["get", "configmap", "good", "-o", "yaml"]).await;
    assert!(yaml.contains("mutated: \"yes\""), "{yaml}");

    // The mutating webhook ran first: the validating one saw its label.
    let validated = s
        .reviews_of("good")
        .into_iter()
        .find(|r| r.pointer("/request/object/metadata/labels/mutated").is_some())
        .expect("the validating webhook saw the mutated object");
    let req = &validated["request"];
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(
        req["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(req["requestKind"], req["kind"]);
    assert_eq!(req["namespace"], "default");
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["userInfo"]["username"], "system:anonymous");
    assert_eq!(req["options"]["kind"], "CreateOptions");
    assert!(
        s.seen_paths().iter().all(|p| p.ends_with("?timeout=10s")),
        "{:?}",
        s.seen_paths()
    );

    // An update (kubectl apply patches) is an UPDATE with the old object.
    let good2 = s.configmap("good", "default", json!({"a": "2"}));
    s.env.ok(&["apply", "-f", &good2]).await;
    let update = s
        .reviews_of("good")
        .into_iter()
        .find(|r| r["request"]["operation"] == "UPDATE")
        .expect("an UPDATE review");
    assert_eq!(update["request"]["oldObject"]["data"]["a"], "1");
    assert_eq!(update["request"]["options"]["kind"], "PatchOptions");
    let denied_update = s.configmap("good", "default", json!({"a": "3", "forbidden": "y"}));
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &denied_update]).await;
    assert!(!ok);
    assert!(
        stderr.contains(
            "admission webhook \"deny.wink.test\" denied the request: data key forbidden is not allowed"
        ),
        "{stderr}"
    );
    let data = s.env.json(&["get", "configmap", "good", "-o", "json"]).await;
    assert_eq!(data["data"], json!({"a": "2"}), "a denied update changes nothing");
    assert!(s.env.sim.webhook_calls("deny.wink.test") >= 4);
    assert!(s.env.sim.webhook_calls("mutate.wink.test") >= 4);

    // Configurations themselves are never sent to webhooks.
    let before = s.seen_paths().len();
    s.configure(
        "ValidatingWebhookConfiguration",
        "deny-forbidden",
        vec![hook(
            "deny.wink.test",
            &s.server.url("/validate"),
            &ca,
            json!({"timeoutSeconds": 5}),
        )],
    )
    .await;
    assert_eq!(s.seen_paths().len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_dry_run_reaches_the_webhook_and_stores_nothing() {
    if !have_kubectl() {
        return;
    }
    let s = setup("dryrun").await;
    let ca = s.certs.ca_bundle();
    s.configure(
        "MutatingWebhookConfiguration",
        "label",
        vec![hook(
            "mutate.wink.test",
            &s.server.url("/mutate"),
            &ca,
            json!({"sideEffects": "NoneOnDryRun"}),
        )],
    )
    .await;
    let f = s.configmap("dry", "default", json!({"a": "1"}));
    let out = s
        .env
        .ok(&["apply", "--dry-run=server", "-f", &f, "-o", "json"])
        .await;
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["metadata"]["labels"]["mutated"], "yes",
        "the dry run's answer is mutated"
    );
    let reviews = s.reviews_of("dry");
    assert!(!reviews.is_empty());
    assert!(reviews.iter().all(|r| r["request"]["dryRun"] == true));
    assert_eq!(reviews[0]["request"]["options"]["dryRun"], json!(["All"]));
    let (found, _, _) = s.env.run(&["get", "configmap", "dry"]).await;
    assert!(!found, "a dry run stores nothing");

    // A webhook with side effects is refused in a dry run, as the real server
    // does; v1 allows only None and NoneOnDryRun, so that is checked on create.
    let bad = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "side-effects"},
        "webhooks": [hook("side.wink.test", &s.server.url("/validate"), &ca, json!({"sideEffects": "Some"}))]});
    let f = s.file("side-effects.json", &bad);
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &f]).await;
    assert!(!ok);
    assert!(
        stderr.contains("webhooks[0].sideEffects: Unsupported value: \"Some\""),
        "{stderr}"
    );
    let no_v1 = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "v1beta2"},
        "webhooks": [hook("v.wink.test", &s.server.url("/validate"), &ca, json!({"admissionReviewVersions": ["v2"]}))]});
    let f = s.file("no-v1.json", &no_v1);
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &f]).await;
    assert!(!ok);
    assert!(
        stderr.contains("webhooks[0].admissionReviewVersions: Invalid value"),
        "{stderr}"
    );
    let twice = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "twice"},
        "webhooks": [hook("a.wink.test", &s.server.url("/x"), &ca, json!({})), hook("a.wink.test", &s.server.url("/x"), &ca, json!({}))]});
    let f = s.file("twice.json", &twice);
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &f]).await;
    assert!(!ok);
    assert!(
        stderr.contains("webhooks[1].name: Duplicate value: \"a.wink.test\""),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_policy_timeouts_and_tls() {
    if !have_kubectl() {
        return;
    }
    let s = setup("failures").await;
    let ca = s.certs.ca_bundle();
    // A port nobody listens on.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let down_url = format!("https://127.0.0.1:{down}/validate");
    s.configure(
        "ValidatingWebhookConfiguration",
        "down",
        vec![hook("down.wink.test", &down_url, &ca, json!({}))],
    )
    .await;
    let f = s.configmap("one", "default", json!({"a": "1"}));
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &f]).await;
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "Error from server (InternalError): error when creating \"{f}\": Internal error occurred: failed calling webhook \"down.wink.test\": failed to call webhook: Post \"https://127.0.0.1:{down}/validate?timeout=10s\": dial tcp 127.0.0.1:{down}: connect: connection refused"
        )),
        "{stderr}"
    );
    assert_eq!(s.env.sim.webhook_calls("down.wink.test"), 1);
    s.configure(
        "ValidatingWebhookConfiguration",
        "down",
        vec![hook(
            "down.wink.test",
            &down_url,
            &ca,
            json!({"failurePolicy": "Ignore"}),
        )],
    )
    .await;
    s.env.ok(&["apply", "-f", &f]).await;
    s.env.ok(&["get", "configmap", "one"]).await;
    s.env
        .ok(&["delete", "validatingwebhookconfiguration", "down"])
        .await;

    // Slower than timeoutSeconds: a failure.
    s.configure(
        "ValidatingWebhookConfiguration",
        "slow",
        vec![hook(
            "slow.wink.test",
            &s.server.url("/slow"),
            &ca,
            json!({"timeoutSeconds": 1}),
        )],
    )
    .await;
    let f = s.configmap("two", "default", json!({"a": "1"}));
    let started = std::time::Instant::now();
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &f]).await;
    assert!(!ok);
    assert!(started.elapsed() < Duration::from_secs(3) + Duration::from_millis(2500));
    let url = s.server.url("/slow?timeout=1s");
    assert!(
        stderr.contains(&format!(
            "Internal error occurred: failed calling webhook \"slow.wink.test\": failed to call webhook: Post \"{url}\": context deadline exceeded"
        )),
        "{stderr}"
    );
    s.env
        .ok(&["delete", "validatingwebhookconfiguration", "slow"])
        .await;

    // A caBundle that did not sign the server's certificate: a TLS failure.
    let other = WebhookCerts::generate(&[]).unwrap();
    s.configure(
        "ValidatingWebhookConfiguration",
        "wrong-ca",
        vec![hook(
            "tls.wink.test",
            &s.server.url("/validate"),
            &other.ca_bundle(),
            json!({}),
        )],
    )
    .await;
    let f = s.configmap("three", "default", json!({"a": "1"}));
    let (ok, _, stderr) = s.env.run(&["apply", "-f", &f]).await;
    assert!(!ok);
    assert!(
        stderr.contains("failed calling webhook \"tls.wink.test\": failed to call webhook: Post")
            && stderr
                .contains("tls: failed to verify certificate: x509: certificate signed by unknown authority"),
        "{stderr}"
    );
    assert!(
        !s.seen_paths().iter().any(|p| p.starts_with("/validate")),
        "no request went past the failed handshake"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutations_chain_in_order_and_deletecollection_admits_each_object() {
    if !have_kubectl() {
        return;
    }
    let s = setup("chain").await;
    let ca = s.certs.ca_bundle();
    let resources = s
        .env
        .ok(&["api-resources", "--api-group=admissionregistration.k8s.io"])
        .await;
    assert!(
        resources.contains("validatingwebhookconfigurations"),
        "{resources}"
    );
    assert!(resources.contains("mutatingwebhookconfigurations"), "{resources}");
    // Configurations run in name order: "b-second" after "a-first", whatever the order they were made in.
    s.configure(
        "MutatingWebhookConfiguration",
        "b-second",
        vec![hook("second.wink.test", &s.server.url("/second"), &ca, json!({}))],
    )
    .await;
    s.configure(
        "MutatingWebhookConfiguration",
        "a-first",
        vec![hook(
            "first.wink.test",
            &s.server.url("/mutate"),
            &ca,
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    let f = s.configmap("chained", "default", json!({"a": "1"}));
    s.env.ok(&["apply", "-f", &f]).await;
    let cm = s.env.json(&["get", "configmap", "chained", "-o", "json"]).await;
    assert_eq!(cm["metadata"]["labels"]["mutated"], "yes");
    assert_eq!(
        cm["metadata"]["labels"]["second-saw"], "yes",
        "the second webhook saw the first one's patch"
    );
    // The second webhook changed the object after the first (IfNeeded) ran: it is called once more.
    assert_eq!(s.env.sim.webhook_calls("first.wink.test"), 2);
    assert_eq!(s.env.sim.webhook_calls("second.wink.test"), 1);

    // deletecollection: each object is admitted as a DELETE; a refused one stays.
    s.configure(
        "ValidatingWebhookConfiguration",
        "keep",
        vec![hook(
            "keep.wink.test",
            &s.server.url("/keep"),
            &ca,
            json!({"rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}),
        )],
    )
    .await;
    let kept = s.configmap("kept", "default", json!({"keep": "1"}));
    s.env.ok(&["apply", "-f", &kept]).await;
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(s.env.sim.client(), "default");
    let err = api
        .delete_collection(&Default::default(), &Default::default())
        .await
        .expect_err("one object is refused");
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 400);
            assert_eq!(
                status.message,
                "admission webhook \"keep.wink.test\" denied the request: this one is kept"
            );
        }
        other => panic!("{other:?}"),
    }
    let left: Vec<String> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(left, vec!["kept".to_string()], "the others went");
    assert_eq!(s.env.sim.webhook_calls("keep.wink.test"), 2);
    let stats = s.env.json(&["get", "--raw", "/_sim/stats"]).await;
    assert_eq!(stats["webhookCalls"]["keep.wink.test"], 2);
}
