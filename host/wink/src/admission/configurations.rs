//! The cluster's webhook configurations, kept in step with the plugins by
//! the leader: one `ValidatingWebhookConfiguration` and one
//! `MutatingWebhookConfiguration` named `wink` (labelled
//! `app.kubernetes.io/managed-by: wink`), with one webhook per plugin and
//! hook (`<plugin>.<hook>.wink.dev`; validating webhooks of equal settings
//! shared, see [`super::shared`]), pointing at the webhook URL or the
//! Service, trusting the CA bundle. Written when their content changes (a
//! plugin loaded, reloaded or unloaded, the CA replaced), by a replace
//! conditioned on the resourceVersion; deleted when no plugin serves a
//! webhook of their kind.
//!
//! No webhook can lock the cluster: each one's namespaceSelector excludes
//! wink's own namespace, `kube-system` and `kube-node-lease` (merged with
//! the plugin's selector on `kubernetes.io/metadata.name`), and rules that
//! would match Leases (`coordination.k8s.io`) are dropped, with a log line.
//!
//! Owns rendering and writing the configurations; the webhooks come from
//! the plugin manager, the CA bundle from [`super::certs`].

use base64::Engine;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use wink_informer::repeated::{RepeatedFailure, short_anyhow};
use wink_runtime::PluginManager;
use wink_runtime::bindings::types::{FailurePolicy, Hook, MatchPolicy, Operation, Scope, Webhook};
use wink_runtime::leadership::Leadership;
use wink_selector::{LabelSelector, Requirement};

/// One plugin's webhooks: (plugin, webhooks).
pub type PluginWebhooks = (String, Vec<Webhook>);

/// The configurations' name.
pub const NAME: &str = "wink";
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "wink");
/// The annotation holding a digest of what wink wrote.
pub const DIGEST: &str = "wink.dev/content-digest";
/// Namespaces no webhook ever sees, besides wink's own.
pub const EXCLUDED: [&str; 2] = ["kube-system", "kube-node-lease"];
/// How often the plugins' webhooks are looked at.
const POLL: Duration = Duration::from_secs(2);
/// How often a configuration unchanged here is read back anyway (someone
/// may have edited or deleted it).
const RECHECK: Duration = Duration::from_secs(60);

/// Where the API server reaches the webhook server.
#[derive(Debug, Clone)]
pub enum Target {
    /// `https://host[:port]` (a path prefix allowed); `/admission/...` is appended.
    Url(String),
    /// The Service `name` in `namespace`, port 443.
    Service { namespace: String, name: String },
}

/// What the configurations need besides the webhooks.
#[derive(Debug, Clone)]
pub struct Context {
    pub target: Target,
    /// wink's own namespace (excluded).
    pub namespace: String,
}

fn hook_name(hook: Hook) -> &'static str {
    match hook {
        Hook::Validate => "validate",
        Hook::Mutate => "mutate",
    }
}

/// `selector` (label selector text) as a `metav1.LabelSelector`'s
/// (matchLabels, matchExpressions).
pub fn selector(text: Option<&str>) -> Result<(serde_json::Map<String, Value>, Vec<Value>), String> {
    let mut labels = serde_json::Map::new();
    let mut expressions = Vec::new();
    let parsed = match text.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => LabelSelector::parse(t)?,
        None => LabelSelector::default(),
    };
    let expr = |key: &str, op: &str, values: Option<&[String]>| match values {
        Some(v) => json!({"key": key, "operator": op, "values": v}),
        None => json!({"key": key, "operator": op}),
    };
    for r in &parsed.requirements {
        match r {
            Requirement::Equals(k, v) if !labels.contains_key(k) => {
                labels.insert(k.clone(), json!(v));
            }
            Requirement::Equals(k, v) => expressions.push(expr(k, "In", Some(std::slice::from_ref(v)))),
            Requirement::NotEquals(k, v) => expressions.push(expr(k, "NotIn", Some(std::slice::from_ref(v)))),
            Requirement::In(k, vs) => expressions.push(expr(k, "In", Some(vs))),
            Requirement::NotIn(k, vs) => expressions.push(expr(k, "NotIn", Some(vs))),
            Requirement::Exists(k) => expressions.push(expr(k, "Exists", None)),
            Requirement::DoesNotExist(k) => expressions.push(expr(k, "DoesNotExist", None)),
            Requirement::GreaterThan(k, _) | Requirement::LessThan(k, _) => {
                return Err(format!(
                    "`{k}` with > or < cannot be said in a webhook's label selector"
                ));
            }
        }
    }
    Ok((labels, expressions))
}

fn label_selector(labels: serde_json::Map<String, Value>, expressions: Vec<Value>) -> Value {
    let mut s = serde_json::Map::new();
    if !labels.is_empty() {
        s.insert("matchLabels".into(), Value::Object(labels));
    }
    if !expressions.is_empty() {
        s.insert("matchExpressions".into(), Value::Array(expressions));
    }
    Value::Object(s)
}

/// Whether a rule's resources take in Leases.
fn covers_leases(resources: &[String]) -> bool {
    resources
        .iter()
        .any(|r| matches!(r.split('/').next(), Some("*" | "leases")))
}

/// A webhook's rules as JSON, without any that match Leases; the second
/// value says what was dropped.
fn rules(webhook: &Webhook) -> (Vec<Value>, Vec<String>) {
    let mut out = Vec::new();
    let mut dropped = Vec::new();
    for rule in &webhook.rules {
        let mut groups = rule.api_groups.clone();
        if covers_leases(&rule.resources) {
            if groups.iter().any(|g| g == "*") {
                dropped.push(format!(
                    "a rule on {:?} of every API group (it would match Leases, and a rule cannot exclude them)",
                    rule.resources
                ));
                continue;
            }
            if groups.iter().any(|g| g == "coordination.k8s.io") {
                groups.retain(|g| g != "coordination.k8s.io");
                dropped.push(format!(
                    "the group coordination.k8s.io from a rule on {:?}",
                    rule.resources
                ));
                if groups.is_empty() {
                    continue;
                }
            }
        }
        let operations: Vec<&str> = rule
            .operations
            .iter()
            .map(|o| match o {
                Operation::Create => "CREATE",
                Operation::Update => "UPDATE",
                Operation::Delete => "DELETE",
                Operation::Connect => "CONNECT",
            })
            .collect();
        let scope = match rule.scope {
            Scope::Cluster => "Cluster",
            Scope::Namespaced => "Namespaced",
            Scope::Any => "*",
        };
        out.push(json!({
            "operations": operations,
            "apiGroups": groups,
            "apiVersions": rule.api_versions,
            "resources": rule.resources,
            "scope": scope,
        }));
    }
    (out, dropped)
}

/// How the API server reaches the webhook server's `path`, trusting
/// `ca_bundle`.
pub fn client_config(cx: &Context, path: &str, ca_bundle: &str) -> Value {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_bundle.as_bytes());
    match &cx.target {
        Target::Url(url) => json!({"url": format!("{}{path}", url.trim_end_matches('/')), "caBundle": ca}),
        Target::Service { namespace, name } => json!({
            "service": {"namespace": namespace, "name": name, "path": path, "port": 443},
            "caBundle": ca,
        }),
    }
}

/// One webhook of a configuration, or why the plugin's cannot be one.
pub fn webhook(
    plugin: &str,
    w: &Webhook,
    cx: &Context,
    ca_bundle: &str,
) -> Result<(Value, Vec<String>), String> {
    let hook = hook_name(w.hook);
    let client_config = client_config(cx, &format!("/admission/{plugin}/{hook}"), ca_bundle);
    let (ns_labels, mut ns_expressions) =
        selector(w.namespace_selector.as_deref()).map_err(|e| format!("namespace selector: {e}"))?;
    let mut excluded = vec![cx.namespace.clone()];
    excluded.extend(
        EXCLUDED
            .iter()
            .map(|s| s.to_string())
            .filter(|s| *s != cx.namespace),
    );
    ns_expressions
        .push(json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": excluded}));
    let (obj_labels, obj_expressions) =
        selector(w.object_selector.as_deref()).map_err(|e| format!("object selector: {e}"))?;
    let (rules, dropped) = rules(w);
    let mut out = json!({
        "name": format!("{plugin}.{hook}.wink.dev"),
        "clientConfig": client_config,
        "rules": rules,
        "namespaceSelector": label_selector(ns_labels, ns_expressions),
        "objectSelector": label_selector(obj_labels, obj_expressions),
        "failurePolicy": match w.failure_policy { FailurePolicy::Fail => "Fail", FailurePolicy::Ignore => "Ignore" },
        "matchPolicy": match w.match_policy { MatchPolicy::Exact => "Exact", MatchPolicy::Equivalent => "Equivalent" },
        "sideEffects": "None",
        "timeoutSeconds": w.timeout_seconds.clamp(1, 30),
        "admissionReviewVersions": ["v1"],
    });
    if w.hook == Hook::Mutate {
        out["reinvocationPolicy"] = json!("Never");
    }
    Ok((out, dropped))
}

/// The webhooks of one kind for every plugin, sorted by name, validating
/// ones of equal settings shared ([`super::shared`]); what was left out or
/// dropped is logged.
pub fn webhooks(
    plugins: &[PluginWebhooks],
    hook: Hook,
    cx: &Context,
    ca_bundle: &str,
    log: bool,
) -> Vec<Value> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for (plugin, hooks) in plugins {
        for w in hooks.iter().filter(|w| w.hook == hook) {
            match webhook(plugin, w, cx, ca_bundle) {
                Ok((v, dropped)) => {
                    if log {
                        for d in &dropped {
                            tracing::warn!(plugin = %plugin, "webhook: Leases are never matched: dropped {d}");
                        }
                    }
                    out.push((plugin.clone(), v));
                }
                Err(e) if log => tracing::error!(plugin = %plugin, "webhook not registered: {e}"),
                Err(_) => {}
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    match hook {
        Hook::Validate => super::shared::group(out, |path| client_config(cx, path, ca_bundle)),
        Hook::Mutate => {
            let mut out: Vec<Value> = out.into_iter().map(|(_, v)| v).collect();
            out.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
            out
        }
    }
}

fn resource(hook: Hook) -> ApiResource {
    let kind = match hook {
        Hook::Validate => "ValidatingWebhookConfiguration",
        Hook::Mutate => "MutatingWebhookConfiguration",
    };
    ApiResource::from_gvk(&GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind))
}

/// FNV-1a of `text`, in hex: the digest wink writes beside its content.
fn digest(text: &str) -> String {
    let h = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    format!("{h:016x}")
}

/// The configuration of `hook` with `webhooks`, as JSON.
pub fn configuration(hook: Hook, webhooks: &[Value]) -> Value {
    let ar = resource(hook);
    let content = Value::Array(webhooks.to_vec()).to_string();
    json!({
        "apiVersion": ar.api_version,
        "kind": ar.kind,
        "metadata": {
            "name": NAME,
            "labels": {MANAGED_BY.0: MANAGED_BY.1},
            "annotations": {DIGEST: digest(&content)},
        },
        "webhooks": webhooks,
    })
}

/// Make the configuration of `hook` on the server say `webhooks` (none:
/// delete it). Whether the server now says so.
async fn sync(client: &kube::Client, hook: Hook, webhooks: &[Value]) -> anyhow::Result<()> {
    let ar = resource(hook);
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let current = api.get_opt(NAME).await?;
    if webhooks.is_empty() {
        if let Some(current) = current {
            let ours = current
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(MANAGED_BY.0))
                .map(String::as_str)
                == Some(MANAGED_BY.1);
            if ours {
                api.delete(NAME, &DeleteParams::default()).await?;
                tracing::info!(kind = %ar.kind, "webhook configuration deleted: no plugin serves one");
            }
        }
        return Ok(());
    }
    let desired = configuration(hook, webhooks);
    let want = desired["metadata"]["annotations"][DIGEST]
        .as_str()
        .map(str::to_string);
    let mut object: DynamicObject = serde_json::from_value(desired)?;
    match current {
        None => {
            api.create(&PostParams::default(), &object).await?;
            tracing::info!(kind = %ar.kind, webhooks = webhooks.len(), "webhook configuration created");
        }
        Some(current) => {
            let has = current
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(DIGEST))
                .cloned();
            if has == want {
                return Ok(());
            }
            object.metadata.resource_version = current.metadata.resource_version.clone();
            api.replace(NAME, &PostParams::default(), &object).await?;
            tracing::info!(kind = %ar.kind, webhooks = webhooks.len(), "webhook configuration updated");
        }
    }
    Ok(())
}

/// Keep both configurations in step while this replica leads (every
/// replica runs this; a standby only waits).
pub async fn keep(
    client: kube::Client,
    manager: Arc<PluginManager>,
    leadership: Leadership,
    mut ca_bundle: watch::Receiver<String>,
    cx: Context,
) {
    // Per hook: the content last made true on the server, and when.
    let mut done: [Option<(Vec<Value>, Instant)>; 2] = [None, None];
    let mut logged: Option<Vec<PluginWebhooks>> = None;
    // Per hook: its write's failures, said once a minute while they last.
    let mut failures = [RepeatedFailure::default(), RepeatedFailure::default()];
    loop {
        if !leadership.is_leading() {
            done = [None, None];
        } else {
            let mut sorted: Vec<PluginWebhooks> = manager
                .webhooks()
                .await
                .into_iter()
                .map(|p| (p.plugin, p.webhooks))
                .collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            let changed = logged
                .as_ref()
                .is_none_or(|l| format!("{l:?}") != format!("{sorted:?}"));
            let bundle = ca_bundle.borrow_and_update().clone();
            for (i, hook) in [Hook::Validate, Hook::Mutate].into_iter().enumerate() {
                let want = webhooks(&sorted, hook, &cx, &bundle, changed);
                let fresh = done[i]
                    .as_ref()
                    .is_some_and(|(had, at)| *had == want && at.elapsed() < RECHECK);
                if fresh {
                    continue;
                }
                let kind = resource(hook).kind;
                match sync(&client, hook, &want).await {
                    Ok(()) => {
                        done[i] = Some((want, Instant::now()));
                        if let Some(said) = failures[i].succeeded() {
                            tracing::info!(%kind, "webhook configuration written: {said}");
                        }
                    }
                    Err(e) => {
                        if let Some(said) = failures[i].failed(&short_anyhow(&e)) {
                            tracing::warn!(%kind, "webhook configuration not written (tried again every {POLL:?}): {said}");
                        }
                        done[i] = None;
                    }
                }
            }
            logged = Some(sorted);
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            changed = ca_bundle.changed() => {
                if changed.is_err() {
                    // No more bundles: the last one stays; poll as usual.
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wink_runtime::bindings::types::AdmissionRule;

    fn hook(rules: Vec<AdmissionRule>) -> Webhook {
        Webhook {
            hook: Hook::Validate,
            rules,
            namespace_selector: Some("team in (a,b),env=prod".into()),
            object_selector: None,
            failure_policy: FailurePolicy::Ignore,
            timeout_seconds: 5,
            match_policy: MatchPolicy::Exact,
        }
    }

    fn rule(groups: &[&str], resources: &[&str]) -> AdmissionRule {
        AdmissionRule {
            operations: vec![Operation::Create],
            api_groups: groups.iter().map(|s| s.to_string()).collect(),
            api_versions: vec!["*".into()],
            resources: resources.iter().map(|s| s.to_string()).collect(),
            scope: Scope::Any,
        }
    }

    fn cx() -> Context {
        Context {
            target: Target::Service {
                namespace: "wink-system".into(),
                name: "wink".into(),
            },
            namespace: "wink-system".into(),
        }
    }

    #[test]
    fn a_webhook_has_its_plugins_settings_and_the_exclusions() {
        let w = hook(vec![rule(&[""], &["pods"])]);
        let (v, dropped) = webhook("p", &w, &cx(), "PEM").unwrap();
        assert!(dropped.is_empty());
        assert_eq!(v["name"], "p.validate.wink.dev");
        assert_eq!(v["failurePolicy"], "Ignore");
        assert_eq!(v["matchPolicy"], "Exact");
        assert_eq!(v["sideEffects"], "None");
        assert_eq!(v["timeoutSeconds"], 5);
        assert_eq!(v["admissionReviewVersions"], json!(["v1"]));
        assert_eq!(
            v["clientConfig"]["service"],
            json!({"namespace": "wink-system", "name": "wink", "path": "/admission/p/validate", "port": 443})
        );
        assert_eq!(v["clientConfig"]["caBundle"], "UEVN");
        assert_eq!(v["rules"][0]["resources"], json!(["pods"]));
        assert_eq!(v["namespaceSelector"]["matchLabels"], json!({"env": "prod"}));
        let exprs = v["namespaceSelector"]["matchExpressions"].as_array().unwrap();
        assert_eq!(
            exprs[0],
            json!({"key": "team", "operator": "In", "values": ["a", "b"]})
        );
        assert_eq!(
            exprs[1],
            json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["wink-system", "kube-system", "kube-node-lease"]})
        );
        let url = Context {
            target: Target::Url("https://127.0.0.1:8443/".into()),
            ..cx()
        };
        let (v, _) = webhook("p", &w, &url, "PEM").unwrap();
        assert_eq!(
            v["clientConfig"]["url"],
            "https://127.0.0.1:8443/admission/p/validate"
        );
    }

    #[test]
    fn rules_that_would_match_leases_are_dropped() {
        let w = hook(vec![
            rule(&["*"], &["*"]),
            rule(&["coordination.k8s.io"], &["leases"]),
            rule(&["coordination.k8s.io", "apps"], &["*"]),
            rule(&["*"], &["pods"]),
        ]);
        let (v, dropped) = webhook("p", &w, &cx(), "").unwrap();
        assert_eq!(dropped.len(), 3, "{dropped:?}");
        let rules = v["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0]["apiGroups"], json!(["apps"]));
        assert_eq!(rules[1]["resources"], json!(["pods"]));
    }

    #[test]
    fn a_configuration_carries_its_label_and_a_digest_of_its_content() {
        let w = hook(vec![rule(&[""], &["pods"])]);
        let plugins: Vec<PluginWebhooks> = vec![("p".into(), vec![w])];
        let hooks = webhooks(&plugins, Hook::Validate, &cx(), "PEM", false);
        let c = configuration(Hook::Validate, &hooks);
        assert_eq!(c["kind"], "ValidatingWebhookConfiguration");
        assert_eq!(c["metadata"]["labels"][MANAGED_BY.0], "wink");
        let other = configuration(
            Hook::Validate,
            &webhooks(&plugins, Hook::Validate, &cx(), "PEM2", false),
        );
        assert_ne!(
            c["metadata"]["annotations"][DIGEST],
            other["metadata"]["annotations"][DIGEST]
        );
        assert!(webhooks(&plugins, Hook::Mutate, &cx(), "PEM", false).is_empty());
        assert!(selector(Some("a>1")).is_err());
    }
}
