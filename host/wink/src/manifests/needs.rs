//! What `wink manifests` renders from: each plugin's declarations read from
//! its component, and what `wink run` would allow it under the operator's
//! grants, decided by the one function `run` resolves registrations with
//! ([`crate::runtime::manager::allowed`]). Whatever `run`
//! would refuse is left out of the RBAC and said on stderr, one line each.
//! Owns that reading and those warnings; the rendering is
//! [`super::render`]'s.

use super::{Deployment, PluginNeeds, render};
use crate::runtime::bindings::types::Registration;
use crate::runtime::grants::Grants;
use std::path::Path;

/// The deployment's documents for the plugins of `plugins` under the grants of
/// `grants`. What `wink run` would not allow is said on stderr and left
/// out of the RBAC. The admission webhook server runs on
/// `admission_port`, or on [`super::admission::DEFAULT_PORT`] when a
/// plugin declares a webhook and no port is given. Reports are written in
/// `report_api`.
pub fn read(
    plugins: &Path,
    grants: Option<&Path>,
    namespace: String,
    image: String,
    admission_port: Option<u16>,
    report_api: crate::reports::ReportApi,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let (grant_text, parsed) = match grants {
        Some(path) => {
            let (text, grants) = Grants::read(path)?;
            (Some(text), grants)
        }
        None => (None, Grants::default()),
    };
    let mut needs = Vec::new();
    let mut webhooks = false;
    for plugin in crate::runtime::offline::registrations(plugins)? {
        webhooks |= !plugin.registration.admission.is_empty();
        let (allowed, warnings) = allowed(&parsed, &plugin.name, &plugin.registration, plugin.reports);
        for w in warnings {
            eprintln!("wink manifests: {w}");
        }
        needs.extend(allowed);
    }
    let deployment = Deployment {
        namespace,
        image,
        grants: grant_text,
        admission: admission_port.or(webhooks.then_some(super::admission::DEFAULT_PORT)),
        report_api,
    };
    Ok(render(&needs, &deployment))
}

/// What `wink run` would allow plugin `name` with `registration` under
/// `grants`, and a warning for each thing left out. None when `run` would
/// not load the plugin at all (a watch or read it may not have, such as
/// Secrets without a grant, or a spelling the API server would refuse):
/// then none of its rules are rendered.
pub fn allowed(
    grants: &Grants,
    name: &str,
    registration: &Registration,
    reports: bool,
) -> (Option<PluginNeeds>, Vec<String>) {
    let refused = |why: String| {
        let w = format!(
            "{why}: `wink run` would not load plugin {name}, so it is left out of the RBAC (no ClusterRole or Role rule of its own)"
        );
        (None, vec![w])
    };
    let crate::runtime::manager::Allowed {
        sources,
        permissions,
        missing,
        ..
    } = match crate::runtime::manager::allowed(grants, name, registration) {
        Ok(allowed) => allowed,
        Err(why) => return refused(why),
    };
    let mut reads: Vec<_> = sources
        .into_iter()
        .map(|(gvk, source)| (gvk.api_version(), gvk.kind, source.namespace.clone()))
        .collect();
    // A scope with a namespace selector reads the Namespace informer.
    match grants.scope(name) {
        Err(why) => return refused(why),
        Ok(Some(scope)) if scope.needs_namespaces() => reads.push(("v1".into(), "Namespace".into(), None)),
        Ok(_) => {}
    }
    let mut warnings = Vec::new();
    if !missing.is_empty() {
        warnings.push(format!(
            "{name} declares what is not granted (not in the RBAC): {}",
            missing.snippet(name)
        ));
    }
    let needs = PluginNeeds {
        name: name.to_string(),
        reads,
        permissions,
        reports,
    };
    (Some(needs), warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::bindings::types::{ResourceType, Watch};

    fn watching(api_version: &str, kind: &str, namespace: Option<&str>) -> Registration {
        Registration {
            watches: vec![Watch {
                resource: ResourceType {
                    api_version: api_version.into(),
                    kind: kind.into(),
                },
                namespace: namespace.map(Into::into),
                label_selector: None,
                field_selector: None,
                resync_seconds: 0,
                indexes: vec![],
                updates_when: vec![],
                enqueue: crate::runtime::bindings::types::Enqueue::None,
            }],
            reads: vec![],
            writes: vec![],
            records_events: false,
            name: None,
            wait_for_sync: false,
            admission: vec![],
            queue: None,
        }
    }

    fn rendered(
        grants: &Grants,
        registrations: &[(&str, Registration)],
    ) -> (Vec<serde_json::Value>, Vec<String>) {
        let mut needs = Vec::new();
        let mut warnings = Vec::new();
        for (name, r) in registrations {
            let (n, w) = allowed(grants, name, r, false);
            needs.extend(n);
            warnings.extend(w);
        }
        let d = Deployment {
            namespace: "wink-system".into(),
            image: "wink".into(),
            grants: None,
            admission: None,
            report_api: crate::reports::ReportApi::default(),
        };
        (render(&needs, &d), warnings)
    }

    fn mentions_secrets(docs: &[serde_json::Value]) -> bool {
        docs.iter()
            .filter(|d| d["kind"] == "ClusterRole" || d["kind"] == "Role")
            .any(|d| d["rules"].to_string().contains("secrets"))
    }

    #[test]
    fn secrets_without_a_grant_are_left_out_and_said() {
        let plugins = [
            ("watcher", watching("v1", "Secret", Some("kube-system"))),
            ("everywhere", watching("v1", "Secret", None)),
            ("slash", watching("/v1", "Secret", None)),
            ("pods", watching("v1", "Pod", None)),
        ];
        let (docs, warnings) = rendered(&Grants::default(), &plugins);
        assert!(!mentions_secrets(&docs), "{docs:#?}");
        assert!(
            !docs.iter().any(|d| d["metadata"]["namespace"] == "kube-system"),
            "no Role in kube-system"
        );
        assert_eq!(warnings.len(), 3, "{warnings:#?}");
        for (w, name) in warnings.iter().zip(["watcher", "everywhere", "slash"]) {
            assert!(
                w.contains(&format!(
                    "would not load plugin {name}, so it is left out of the RBAC"
                )),
                "{w}"
            );
        }
        assert!(
            warnings[0].contains("asks for Secrets, which the operator has not granted"),
            "{}",
            warnings[0]
        );
        let cluster = docs.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
        assert!(
            cluster["rules"].to_string().contains("pods"),
            "the others keep theirs"
        );

        // Granted, the same plugins get their rules, as `wink run` would load them.
        let granted = Grants::parse(b"plugins: {'*': {secrets: true}}").unwrap();
        let (docs, warnings) = rendered(&granted, &plugins[..2]);
        assert!(warnings.is_empty(), "{warnings:#?}");
        let role = docs
            .iter()
            .find(|d| d["kind"] == "Role" && d["metadata"]["namespace"] == "kube-system")
            .expect("a Role in kube-system");
        assert!(role["rules"].to_string().contains("secrets"));
        assert!(mentions_secrets(&docs));
    }

    #[test]
    fn a_scope_reading_namespace_labels_gets_the_namespaces_read() {
        let scoped =
            Grants::parse(b"plugins: {pods: {match: {namespaceSelector: {matchLabels: {enforce: 'yes'}}}}}")
                .unwrap();
        let names = Grants::parse(b"plugins: {pods: {match: {namespaces: [a]}}}").unwrap();
        let reads_namespaces = |grants: &Grants| {
            let (docs, warnings) = rendered(grants, &[("pods", watching("v1", "Pod", None))]);
            assert!(warnings.is_empty(), "{warnings:#?}");
            let cluster = docs.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
            cluster["rules"].to_string().contains("\"namespaces\"")
        };
        assert!(reads_namespaces(&scoped));
        assert!(!reads_namespaces(&names), "names need no Namespace informer");
    }
}
