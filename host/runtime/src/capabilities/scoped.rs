//! Writes outside the plugin's scope ([`crate::scope`]) are refused before
//! anything is sent. An object is judged as the plugin's cache has it when
//! it has it, and as the body it sends when it sends one (a create, a
//! replace): both must be in scope. A patch or delete of an object the
//! cache does not hold is judged on its namespace and kind, and refused
//! when the scope reads object labels it cannot see. Owns only that
//! decision; `write.rs` and `events.rs` ask it.

use super::HostState;
use crate::bindings::types::WriteError;
use kube::api::ApiResource;
use serde_json::Value;

impl HostState {
    /// Why a write of `ar`'s `namespace`/`name` (with `body`) is outside
    /// the plugin's scope, if it is.
    pub(super) fn out_of_scope(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: Option<&str>,
        body: Option<&Value>,
    ) -> Option<WriteError> {
        let scope = self.cache.scope().get()?;
        let key = match (namespace, name) {
            (Some(ns), Some(n)) => format!("{ns}/{n}"),
            (None, Some(n)) => n.to_string(),
            (Some(ns), None) => format!("{ns}/(new)"),
            (None, None) => "(new)".to_string(),
        };
        let cached = name.and_then(|_| self.cache.granted(&ar.api_version, &ar.kind)?.get(&key));
        let in_scope = match (&cached, body) {
            (Some(obj), _) if !scope.admits(obj) => false,
            (_, Some(body)) => {
                let labels = body.pointer("/metadata/labels").and_then(Value::as_object);
                let own_name = (ar.kind == "Namespace").then_some(name).flatten();
                scope.admits_parts(&ar.api_version, &ar.kind, namespace, |k| match k {
                    crate::scope::NAME_LABEL if own_name.is_some() => own_name,
                    k => labels.and_then(|l| l.get(k)).and_then(Value::as_str),
                })
            }
            (Some(_), None) => true,
            (None, None) => {
                let reads_labels = std::iter::once(scope.include())
                    .chain(scope.exclude())
                    .any(|s| s.object_selector.is_some());
                if reads_labels {
                    return Some(WriteError::NotPermitted(format!(
                        "{} {key}: not in this plugin's cache, and its scope (set by the operator) selects by labels",
                        ar.kind
                    )));
                }
                match namespace {
                    Some(ns) => scope.admits_namespace(&ar.api_version, &ar.kind, ns),
                    None => scope.admits_parts(&ar.api_version, &ar.kind, None, |_| None),
                }
            }
        };
        (!in_scope).then(|| {
            WriteError::NotPermitted(format!(
                "{} {key} is outside this plugin's scope (set by the operator)",
                ar.kind
            ))
        })
    }
}
