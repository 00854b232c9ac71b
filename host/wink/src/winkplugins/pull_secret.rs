//! A WinkPlugin's pull Secret: read in wink's namespace, taken only when
//! it is of an image pull Secret's type (`kubernetes.io/dockerconfigjson`,
//! or the older `kubernetes.io/dockercfg`), capped, and turned into
//! registry credentials. What a WinkPlugin's status says of it never tells
//! its editor which Secret names exist: a Secret that is missing and one
//! wink may not read read the same (the API server's answer goes to
//! wink's log alone).

use anyhow::Context;
use k8s_openapi::api::core::v1::Secret;
use wink_oci::auth::Auths;

/// The largest pull Secret read.
pub const MAX_SECRET_BYTES: usize = 64 << 10;
/// The type of a pull Secret holding a dockerconfigjson.
pub const DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";
/// The older type, holding `.dockercfg` (the `auths` object alone).
pub const DOCKER_CFG: &str = "kubernetes.io/dockercfg";

/// The credentials of the pull Secret `name` in `namespace`.
pub async fn read(client: &kube::Client, namespace: &str, name: &str) -> anyhow::Result<Auths> {
    let api: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
    answer(api.get_opt(name).await, namespace, name)
}

/// The credentials of what the API server answered for the pull Secret
/// `name`.
fn answer(got: Result<Option<Secret>, kube::Error>, namespace: &str, name: &str) -> anyhow::Result<Auths> {
    match got {
        Ok(Some(secret)) => auths(&secret, namespace, name),
        Ok(None) => Err(unreadable(namespace, name)),
        Err(kube::Error::Api(s)) if matches!(s.code, 401 | 403 | 404) => {
            tracing::warn!(secret = %format!("{namespace}/{name}"), "a WinkPlugin's pull Secret cannot be read: {} {}", s.code, s.message);
            Err(unreadable(namespace, name))
        }
        Err(e) => Err(e).with_context(|| format!("reading the pull Secret {namespace}/{name}")),
    }
}

/// What a missing Secret and a forbidden one both say.
fn unreadable(namespace: &str, name: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "the pull Secret {namespace}/{name} cannot be read: it does not exist or wink may not read it"
    )
}

/// The credentials `secret` holds, when it is of a pull Secret's type.
pub fn auths(secret: &Secret, namespace: &str, name: &str) -> anyhow::Result<Auths> {
    let kind = secret.type_.as_deref().unwrap_or("Opaque");
    let key = match kind {
        DOCKER_CONFIG_JSON => ".dockerconfigjson",
        DOCKER_CFG => ".dockercfg",
        other => anyhow::bail!(
            "the pull Secret {namespace}/{name} is of type {other:?}: a pull Secret is of type {DOCKER_CONFIG_JSON} (or {DOCKER_CFG})"
        ),
    };
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .ok_or_else(|| anyhow::anyhow!("the pull Secret {namespace}/{name} has no {key}"))?;
    anyhow::ensure!(
        data.0.len() <= MAX_SECRET_BYTES,
        "the pull Secret {namespace}/{name}: {} bytes (at most {MAX_SECRET_BYTES})",
        data.0.len()
    );
    let text = std::str::from_utf8(&data.0)
        .map_err(|_| anyhow::anyhow!("the pull Secret {namespace}/{name}: {key} is not UTF-8"))?;
    let text = match kind {
        DOCKER_CFG => format!("{{\"auths\": {text}}}"),
        _ => text.to_string(),
    };
    Auths::parse(&text).with_context(|| format!("the pull Secret {namespace}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wink_oci::auth::RegistryAuth;

    fn secret(kind: &str, key: &str, value: &str) -> Secret {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(value);
        serde_json::from_value(json!({"metadata": {"name": "s"}, "type": kind, "data": {key: b64}})).unwrap()
    }

    #[test]
    fn only_pull_secret_types_are_taken() {
        let config = r#"{"auths": {"r.io": {"username": "u", "password": "p"}}}"#;
        let a = auths(
            &secret(DOCKER_CONFIG_JSON, ".dockerconfigjson", config),
            "wink",
            "s",
        )
        .unwrap();
        assert!(matches!(a.for_registry("r.io"), RegistryAuth::Basic(u, _) if u == "u"));
        let cfg = r#"{"r.io": {"username": "v", "password": "p"}}"#;
        let a = auths(&secret(DOCKER_CFG, ".dockercfg", cfg), "wink", "s").unwrap();
        assert!(matches!(a.for_registry("r.io"), RegistryAuth::Basic(u, _) if u == "v"));
        for kind in ["Opaque", "kubernetes.io/service-account-token"] {
            let e = auths(&secret(kind, ".dockerconfigjson", config), "wink", "s").unwrap_err();
            assert!(
                e.to_string().contains(&format!("is of type {kind:?}"))
                    && e.to_string().contains(DOCKER_CONFIG_JSON),
                "{e}"
            );
        }
    }

    #[test]
    fn a_missing_and_a_forbidden_secret_read_the_same() {
        let status = |code: u16, reason: &str| {
            kube::Error::Api(Box::new(
                serde_json::from_value(json!({"code": code, "reason": reason,
                    "message": format!("secrets \"s\" is {reason}")}))
                .unwrap(),
            ))
        };
        let said = |got| answer(got, "wink", "s").unwrap_err().to_string();
        let absent = said(Ok(None));
        assert_eq!(said(Err(status(404, "NotFound"))), absent);
        assert_eq!(said(Err(status(403, "Forbidden"))), absent);
        assert!(
            absent.contains("does not exist or wink may not read it"),
            "{absent}"
        );
        assert!(!absent.contains("Forbidden"), "{absent}");
    }
}
