//! ServiceAccounts as a cluster has them: the ServiceAccount controller's
//! `default` ServiceAccount in every namespace (made when the namespace is
//! created, the initial ones included), and the ServiceAccount admission
//! plugin's refusal of a Pod whose ServiceAccount (`default` when it names
//! none) does not exist in its namespace.
//!
//! Owns: these two. Must not touch: HTTP; writes go through `write`.

use super::status::ApiError;
use super::store::{State, key};
use serde_json::{Value, json};

/// The ServiceAccount of a Pod that names none.
const DEFAULT: &str = "default";

/// Create namespace `ns`'s `default` ServiceAccount, unless it exists.
pub fn create_default(st: &mut State, ns: &str) {
    let Some(def) = st.registry.get("serviceaccounts").cloned() else {
        return;
    };
    if exists(st, ns, DEFAULT) {
        return;
    }
    // Only a namespace being deleted refuses it, and then none is wanted.
    let _ = super::write::create(st, &def, Some(ns), "v1", json!({"metadata": {"name": DEFAULT}}));
}

fn exists(st: &State, ns: &str, name: &str) -> bool {
    st.table("serviceaccounts")
        .is_some_and(|t| t.objects.contains_key(&key(Some(ns), name)))
}

/// The ServiceAccount admission plugin's check of a new Pod (`body`) in
/// `ns`: 403 Forbidden when its ServiceAccount does not exist.
pub fn admit_pod(st: &State, ns: &str, body: &Value) -> Result<(), ApiError> {
    let named = |f: &str| {
        body.pointer(&format!("/spec/{f}"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let account = named("serviceAccountName")
        .or_else(|| named("serviceAccount"))
        .unwrap_or(DEFAULT);
    if exists(st, ns, account) {
        return Ok(());
    }
    let name = body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(ApiError::forbidden(
        "pods",
        name,
        &format!("error looking up service account {ns}/{account}: serviceaccount \"{account}\" not found"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write;

    #[test]
    fn namespaces_get_a_default_account_and_pods_need_theirs() {
        let mut st = State::new(100, 0);
        let ns = st.registry.get("namespaces").cloned().unwrap();
        write::create(&mut st, &ns, None, "v1", json!({"metadata": {"name": "team"}})).unwrap();
        assert!(exists(&st, "team", DEFAULT), "the namespace's default account");
        let pod = |sa: &str| {
            json!({"metadata": {"name": "q"}, "spec": {"serviceAccountName": sa,
                "containers": [{"name": "c", "image": "nginx"}]}})
        };
        assert!(admit_pod(&st, "team", &pod("")).is_ok());
        assert!(admit_pod(&st, "team", &pod("default")).is_ok());
        let e = admit_pod(&st, "team", &pod("nosuch")).unwrap_err();
        assert_eq!((e.code, e.reason), (403, "Forbidden"));
        assert_eq!(
            e.message,
            "pods \"q\" is forbidden: error looking up service account team/nosuch: \
             serviceaccount \"nosuch\" not found"
        );
        let pods = st.registry.get("pods").cloned().unwrap();
        let e = write::create(&mut st, &pods, Some("team"), "v1", pod("nosuch")).unwrap_err();
        assert_eq!(e.code, 403, "creates are admitted");
        write::create(&mut st, &pods, Some("team"), "v1", pod("")).unwrap();
    }
}
