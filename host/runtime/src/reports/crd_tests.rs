use super::super::aggregate::{Held, Outcome, PolicyResult, Severity, Subject};
use super::super::layout::{self, Timestamps};
use super::*;
use std::collections::BTreeMap;

fn version(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]
}

fn root(crd: &Value) -> &Value {
    &version(crd)["schema"]["openAPIV3Schema"]
}

#[test]
fn the_definitions_name_what_the_writer_writes() {
    for api in ReportApi::ALL {
        let [ns, cluster] = definitions(api);
        let names = api.crd_names();
        assert_eq!(ns["metadata"]["name"], names[0]);
        assert_eq!(cluster["metadata"]["name"], names[1]);
        assert_eq!(ns["spec"]["group"], api.group());
        assert_eq!(ns["spec"]["scope"], "Namespaced");
        assert_eq!(cluster["spec"]["scope"], "Cluster");
        assert_eq!(ns["spec"]["names"]["kind"], api.kind(true));
        assert_eq!(cluster["spec"]["names"]["plural"], api.plural(false));
        let v = version(&ns);
        assert_eq!(v["name"], api.version());
        assert_eq!(
            (v["served"].as_bool(), v["storage"].as_bool()),
            (Some(true), Some(true))
        );
        let cols: Vec<&str> = v["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            cols,
            ["Kind", "Name", "Pass", "Fail", "Warn", "Error", "Skip", "Age"]
        );
    }
}

#[test]
fn openreports_definitions_are_the_published_ones() {
    let [report, cluster] = definitions(ReportApi::OpenReports);
    assert_eq!(report["metadata"]["name"], "reports.openreports.io");
    assert_eq!(
        report["spec"]["names"],
        json!({"kind": "Report", "listKind": "ReportList", "plural": "reports",
               "singular": "report", "shortNames": ["reps"]})
    );
    assert_eq!(
        cluster["spec"]["names"],
        json!({"kind": "ClusterReport", "listKind": "ClusterReportList", "plural": "clusterreports",
               "singular": "clusterreport", "shortNames": ["creps"]})
    );
    assert_eq!(version(&report)["name"], "v1alpha1");
    let s = root(&report);
    let mut top: Vec<&str> = s["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    top.sort();
    assert_eq!(
        top,
        [
            "apiVersion",
            "configuration",
            "kind",
            "metadata",
            "results",
            "scope",
            "scopeSelector",
            "source",
            "summary"
        ]
    );
    assert!(s.get("required").is_none(), "no top-level field is required");
    assert_eq!(s["properties"]["configuration"]["required"], json!(["limits"]));
    let result = &s["properties"]["results"]["items"];
    assert_eq!(
        result["required"],
        json!(["policy"]),
        "a result needs only its policy: source is optional and overrides the report's"
    );
    let mut fields: Vec<&str> = result["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "category",
            "message",
            "policy",
            "properties",
            "resourceSelector",
            "resources",
            "result",
            "rule",
            "scored",
            "severity",
            "source",
            "timestamp"
        ]
    );
    let p = &result["properties"];
    assert_eq!(
        p["result"]["enum"],
        json!(["pass", "fail", "warn", "error", "skip"])
    );
    assert_eq!(
        p["severity"]["enum"],
        json!(["critical", "high", "low", "medium", "info"])
    );
    assert_eq!(p["timestamp"]["required"], json!(["nanos", "seconds"]));
    assert_eq!(p["resourceSelector"]["x-kubernetes-map-type"], "atomic");
    assert_eq!(p["resources"]["items"]["x-kubernetes-map-type"], "atomic");
    assert_eq!(root(&cluster), s, "both kinds share the schema");
}

/// What of `value` the structural `schema` would refuse or prune: a
/// missing required field, a wrong type, a value outside an enum, a field
/// it does not declare.
fn violations(value: &Value, schema: &Value, at: &str, out: &mut Vec<String>) {
    let ty = schema["type"].as_str().unwrap_or("");
    let fits = match (ty, value) {
        ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_))
        | ("boolean", Value::Bool(_)) => true,
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
        _ => false,
    };
    if !fits {
        out.push(format!("{at}: {value} is not of type {ty}"));
        return;
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        out.push(format!("{at}: {value} is not one of {allowed:?}"));
    }
    match value {
        Value::Object(m) => {
            for r in schema["required"].as_array().into_iter().flatten() {
                if !m.contains_key(r.as_str().unwrap()) {
                    out.push(format!("{at}.{r}: required"));
                }
            }
            if at == ".metadata" {
                return;
            }
            for (k, v) in m {
                let declared = &schema["properties"][k];
                let extra = &schema["additionalProperties"];
                let field = if !declared.is_null() {
                    declared
                } else if !extra.is_null() {
                    extra
                } else {
                    out.push(format!("{at}.{k}: not in the schema (pruned)"));
                    continue;
                };
                violations(v, field, &format!("{at}.{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                violations(v, &schema["items"], &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn held(namespace: Option<&str>, outcome: Outcome) -> Held {
    Held {
        subject: Subject {
            api_version: "v1".into(),
            kind: if namespace.is_some() { "Pod" } else { "Namespace" }.into(),
            namespace: namespace.map(str::to_string),
            name: "x".into(),
            uid: "u-x".into(),
        },
        result: PolicyResult {
            policy: "pod-security".into(),
            rule: "host-ports".into(),
            outcome,
            severity: Some(Severity::Medium),
            category: Some("Pod Security Standards (Baseline)".into()),
            message: "a host port".into(),
            properties: BTreeMap::from([("port".to_string(), "8080".to_string())]),
        },
    }
}

#[test]
fn what_the_layout_writes_fits_each_apis_schema() {
    for api in ReportApi::ALL {
        let [ns_crd, cluster_crd] = definitions(api);
        let in_team = [
            held(Some("team"), Outcome::Fail),
            held(Some("team"), Outcome::Pass),
        ];
        let scope = Some("team".to_string());
        let (id, report) = layout::reports(api, &scope, &in_team, &Timestamps::default(), 1 << 20).remove(0);
        assert_eq!(report["kind"], ns_crd["spec"]["names"]["kind"]);
        assert_eq!(report["apiVersion"], api.api_version());
        assert_eq!(id.collection(), layout::collection(api, Some("team")));
        let mut out = Vec::new();
        violations(&report, root(&ns_crd), "", &mut out);
        assert!(out.is_empty(), "{api}: {out:?}");
        let cluster = [held(None, Outcome::Error)];
        let (_, report) = layout::reports(api, &None, &cluster, &Timestamps::default(), 1 << 20).remove(0);
        assert_eq!(report["kind"], cluster_crd["spec"]["names"]["kind"]);
        violations(&report, root(&cluster_crd), "", &mut out);
        assert!(out.is_empty(), "{api}: {out:?}");
    }
    // The checker itself refuses what a server would.
    let [crd, _] = definitions(ReportApi::OpenReports);
    let bad = json!({"source": 1, "results": [{"rule": "r", "result": "maybe", "extra": true,
                      "timestamp": {"seconds": 1}}]});
    let mut out = Vec::new();
    violations(&bad, root(&crd), "", &mut out);
    assert_eq!(out.len(), 5, "{out:?}");
}
