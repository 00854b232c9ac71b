//! The `admissionregistration.k8s.io/v1` webhook configurations as objects:
//! the defaults the API server gives a `ValidatingWebhookConfiguration` or
//! `MutatingWebhookConfiguration` (failurePolicy Fail, matchPolicy
//! Equivalent, timeoutSeconds 10, empty selectors, rule scope `*`,
//! reinvocationPolicy Never), the checks the API server makes (webhook
//! names fully qualified and unique, sideEffects, admissionReviewVersions,
//! url xor service, rules' operations and scope, failurePolicy,
//! matchPolicy, timeoutSeconds 1 to 30), and reading the
//! stored objects into [`Hook`]s in the order the API server calls them.
//!
//! Owns: defaulting, validation and parsing of the configurations. Must not
//! touch: matching requests (`matching`), calling webhooks (`call`).

use super::super::resources::ResourceDef;
use super::super::store::State;
use serde_json::{Value, json};

pub const GROUP: &str = "admissionregistration.k8s.io";
pub const VALIDATING: &str = "validatingwebhookconfigurations";
pub const MUTATING: &str = "mutatingwebhookconfigurations";

/// The configuration types: served as built-ins, never sent to webhooks.
pub fn is_configuration(def: &ResourceDef) -> bool {
    def.group == GROUP
}

fn mutating(def: &ResourceDef) -> Option<bool> {
    match (def.group.as_str(), def.plural.as_str()) {
        (GROUP, VALIDATING) => Some(false),
        (GROUP, MUTATING) => Some(true),
        _ => None,
    }
}

/// Apply the API server's defaults (`SetDefaults_*Webhook`, `SetDefaults_Rule`).
pub fn default(def: &ResourceDef, body: &mut Value) {
    let Some(mutating) = mutating(def) else { return };
    let Some(hooks) = body.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return;
    };
    for h in hooks.iter_mut().filter_map(Value::as_object_mut) {
        let mut set = |k: &str, v: Value| {
            if h.get(k).is_none_or(Value::is_null) {
                h.insert(k.into(), v);
            }
        };
        set("failurePolicy", json!("Fail"));
        set("matchPolicy", json!("Equivalent"));
        set("namespaceSelector", json!({}));
        set("objectSelector", json!({}));
        set("timeoutSeconds", json!(10));
        if mutating {
            set("reinvocationPolicy", json!("Never"));
        }
        if let Some(svc) = h
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
            && svc.get("port").is_none_or(Value::is_null)
        {
            svc.insert("port".into(), json!(443));
        }
        for r in h
            .get_mut("rules")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            if r.get("scope").is_none_or(Value::is_null) {
                r.insert("scope".into(), json!("*"));
            }
        }
    }
}

/// The `field: detail` causes of a 422 Invalid (`ValidateValidatingWebhookConfiguration`).
pub fn validate(def: &ResourceDef, body: &Value) -> Vec<String> {
    if mutating(def).is_none() {
        return Vec::new();
    }
    let mut errs = Vec::new();
    let hooks = body
        .get("webhooks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    for (i, h) in hooks.iter().enumerate() {
        let f = |k: &str| format!("webhooks[{i}].{k}");
        let name = h.get("name").and_then(Value::as_str).unwrap_or("");
        errs.extend(fully_qualified_name(&f("name"), name));
        if !name.is_empty() && !seen.insert(name.to_string()) {
            errs.push(format!("{}: Duplicate value: {name:?}", f("name")));
        }
        for (j, r) in h
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            errs.extend(rule(&f(&format!("rules[{j}]")), r));
        }
        match h.get("sideEffects").and_then(Value::as_str) {
            None => errs.push(format!(
                "{}: Required value: must specify one of None, NoneOnDryRun",
                f("sideEffects")
            )),
            Some("None" | "NoneOnDryRun") => {}
            Some(s) => errs.push(format!(
                "{}: Unsupported value: {s:?}: supported values: \"None\", \"NoneOnDryRun\"",
                f("sideEffects")
            )),
        }
        let versions: Vec<&str> = h
            .get("admissionReviewVersions")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if versions.is_empty() {
            errs.push(format!(
                "{}: Required value: must specify one of v1, v1beta1",
                f("admissionReviewVersions")
            ));
        } else if !versions.iter().any(|v| *v == "v1" || *v == "v1beta1") {
            errs.push(format!(
                "{}: Invalid value: {}: must include at least one of v1, v1beta1",
                f("admissionReviewVersions"),
                json!(versions)
            ));
        }
        let cc = h.get("clientConfig");
        let url = cc.and_then(|c| c.get("url")).and_then(Value::as_str);
        let svc = cc.and_then(|c| c.get("service")).filter(|s| !s.is_null());
        match (url, svc) {
            (Some(_), Some(_)) => errs.push(format!(
                "{}: Required value: exactly one of url or service is required",
                f("clientConfig")
            )),
            (None, None) => errs.push(format!(
                "{}: Required value: exactly one of url or service is required",
                f("clientConfig")
            )),
            (Some(u), None) if !u.starts_with("https://") => errs.push(format!(
                "{}: Invalid value: {:?}: 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                f("clientConfig.url"),
                u.split_once("://").map_or("", |(scheme, _)| scheme)
            )),
            (None, Some(svc)) => {
                if let Some(path) = svc.get("path").and_then(Value::as_str) {
                    errs.extend(service_path(&f("clientConfig.service.path"), path));
                }
            }
            _ => {}
        }
        for k in ["failurePolicy"] {
            if let Some(p) = h
                .get(k)
                .and_then(Value::as_str)
                .filter(|p| !matches!(*p, "Fail" | "Ignore"))
            {
                errs.push(format!(
                    "{}: Unsupported value: {p:?}: supported values: \"Fail\", \"Ignore\"",
                    f(k)
                ));
            }
        }
        if let Some(p) = h
            .get("matchPolicy")
            .and_then(Value::as_str)
            .filter(|p| !matches!(*p, "Exact" | "Equivalent"))
        {
            errs.push(format!(
                "{}: Unsupported value: {p:?}: supported values: \"Equivalent\", \"Exact\"",
                f("matchPolicy")
            ));
        }
        if let Some(t) = h
            .get("timeoutSeconds")
            .and_then(Value::as_i64)
            .filter(|t| !(1..=30).contains(t))
        {
            errs.push(format!(
                "{}: Invalid value: {t}: the timeout value must be between 1 and 30 seconds",
                f("timeoutSeconds")
            ));
        }
    }
    errs
}

/// `ValidateWebhookService`'s path: `/` or empty, or `/` and segments
/// (a final `/` aside), each a DNS-1123 subdomain.
fn service_path(field: &str, path: &str) -> Vec<String> {
    if path.is_empty() || path == "/" {
        return Vec::new();
    }
    let invalid = |why: String| format!("{field}: Invalid value: {path:?}: {why}");
    if path == "//" {
        return vec![invalid("segment[0] may not be empty".into())];
    }
    let mut errs = Vec::new();
    if !path.starts_with('/') {
        errs.push(invalid("must start with a '/'".into()));
    }
    let rest = &path[1..];
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            errs.push(invalid(format!("segment[{i}] may not be empty")));
            continue;
        }
        for why in super::super::meta::dns1123(step, false) {
            errs.push(invalid(format!("segment[{i}]: {why}")));
        }
    }
    errs
}

/// `IsFullyQualifiedName`: a DNS-1123 subdomain (a final `.` aside) of at
/// least three segments.
fn fully_qualified_name(field: &str, name: &str) -> Vec<String> {
    if name.is_empty() {
        return vec![format!("{field}: Required value")];
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let why = super::super::meta::dns1123(name, false);
    if !why.is_empty() {
        return vec![format!("{field}: Invalid value: {name:?}: {}", why.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![format!(
            "{field}: Invalid value: {name:?}: should be a domain with at least three segments separated by dots"
        )];
    }
    Vec::new()
}

/// `ValidateRuleWithOperations`: operations, groups, versions and
/// resources required, `*` alone, known operations and scope.
fn rule(at: &str, r: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let list = |k: &str| -> Vec<&str> {
        r.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    for k in ["operations", "apiGroups", "apiVersions", "resources"] {
        let v = list(k);
        if v.is_empty() {
            errs.push(format!("{at}.{k}: Required value"));
        } else if k != "resources" && v.len() > 1 && v.contains(&"*") {
            let what = if k == "operations" { "operations" } else { "other" };
            errs.push(format!(
                "{at}.{k}: Invalid value: {}: if '*' is present, must not specify {what}",
                json!(v)
            ));
        }
    }
    const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (i, op) in list("operations").iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(format!(
                "{at}.operations[{i}]: Unsupported value: {op:?}: supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\""
            ));
        }
    }
    if let Some(scope) = r
        .get("scope")
        .and_then(Value::as_str)
        .filter(|s| !matches!(*s, "*" | "Cluster" | "Namespaced"))
    {
        errs.push(format!(
            "{at}.scope: Unsupported value: {scope:?}: supported values: \"*\", \"Cluster\", \"Namespaced\""
        ));
    }
    errs
}

/// One webhook of a stored configuration, as the dispatcher reads it.
#[derive(Debug, Clone)]
pub struct Hook {
    pub name: String,
    pub mutating: bool,
    pub spec: Value,
}

impl Hook {
    pub fn str(&self, k: &str) -> &str {
        self.spec.get(k).and_then(Value::as_str).unwrap_or("")
    }
    pub fn ignore_failures(&self) -> bool {
        self.str("failurePolicy") == "Ignore"
    }
    pub fn timeout(&self) -> std::time::Duration {
        let s = self
            .spec
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(10);
        std::time::Duration::from_secs(s.clamp(1, 30))
    }
}

/// Every webhook of one kind, configurations in name order, each's webhooks in order.
pub fn hooks(st: &State, mutating: bool) -> Vec<Hook> {
    let table = format!("{}.{GROUP}", if mutating { MUTATING } else { VALIDATING });
    let Some(t) = st.table(&table) else {
        return Vec::new();
    };
    let mut configs: Vec<&Value> = t.objects.values().map(|o| &o.value).collect();
    let name = |v: &Value| {
        v.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    configs.sort_by_key(|v| name(v));
    configs
        .into_iter()
        .flat_map(|c| {
            c.get("webhooks")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |spec| Hook {
                    name: spec.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                    mutating,
                    spec,
                })
        })
        .collect()
}

/// Whether any webhook configuration is stored (otherwise admission is skipped).
pub fn any(st: &State) -> bool {
    [MUTATING, VALIDATING].iter().any(|p| {
        st.table(&format!("{p}.{GROUP}"))
            .is_some_and(|t| !t.objects.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::super::super::resources::builtins;
    use super::*;

    fn def(plural: &str) -> ResourceDef {
        builtins()
            .into_iter()
            .find(|d| d.plural == plural)
            .expect("built-in")
    }

    #[test]
    fn defaults_and_checks_as_the_api_server_has_them() {
        let mutating = def(MUTATING);
        let mut cfg = json!({"webhooks": [{"name": "a.b.c", "clientConfig": {"service": {"namespace": "n", "name": "s"}},
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
        default(&mutating, &mut cfg);
        let h = &cfg["webhooks"][0];
        assert_eq!(h["failurePolicy"], "Fail");
        assert_eq!(h["matchPolicy"], "Equivalent");
        assert_eq!(h["timeoutSeconds"], 10);
        assert_eq!(h["reinvocationPolicy"], "Never");
        assert_eq!(h["namespaceSelector"], json!({}));
        assert_eq!(h["clientConfig"]["service"]["port"], 443);
        assert_eq!(h["rules"][0]["scope"], "*");
        assert!(validate(&mutating, &cfg).is_empty());
        for (name, why) in [
            ("pod_security.validate.wink.dev", "a lowercase RFC 1123 subdomain"),
            ("pod.security", "should be a domain with at least three segments"),
            ("Pod.validate.wink.dev", "a lowercase RFC 1123 subdomain"),
        ] {
            let mut c = cfg.clone();
            c["webhooks"][0]["name"] = json!(name);
            let e = validate(&mutating, &c);
            assert_eq!(e.len(), 1, "{name}: {e:?}");
            assert!(
                e[0].starts_with(&format!("webhooks[0].name: Invalid value: {name:?}: {why}")),
                "{e:?}"
            );
        }
        let mut c = cfg.clone();
        c["webhooks"][0]["name"] = json!("pod-security.validate.wink.dev.");
        assert!(validate(&mutating, &c).is_empty());
        c["webhooks"][0]["rules"] = json!([{"operations": ["CREAT"], "apiGroups": [], "apiVersions": ["*", "v1"],
            "resources": ["pods"], "scope": "Bad"}]);
        assert_eq!(
            validate(&mutating, &c),
            vec![
                "webhooks[0].rules[0].apiGroups: Required value",
                "webhooks[0].rules[0].apiVersions: Invalid value: [\"*\",\"v1\"]: if '*' is present, must not specify other",
                "webhooks[0].rules[0].operations[0]: Unsupported value: \"CREAT\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
                "webhooks[0].rules[0].scope: Unsupported value: \"Bad\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
            ]
        );

        let bad = json!({"webhooks": [
            {"name": "a.b.c", "clientConfig": {"url": "http://x"}, "sideEffects": "Some", "admissionReviewVersions": ["v2"]},
            {"name": "a.b.c", "clientConfig": {}, "admissionReviewVersions": ["v1"], "sideEffects": "None", "timeoutSeconds": 31},
        ]});
        assert_eq!(
            validate(&def(VALIDATING), &bad),
            vec![
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
                "webhooks[0].admissionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "webhooks[1].name: Duplicate value: \"a.b.c\"",
                "webhooks[1].clientConfig: Required value: exactly one of url or service is required",
                "webhooks[1].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            ]
        );
    }
}
