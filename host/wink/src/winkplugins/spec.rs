//! A WinkPlugin's spec, read and checked: the source of its component, its
//! config text, its grant with its scope (`match`, `exclude`; parsed by the grants file's own types, strict:
//! an unknown field is an error, so the two never drift), its admission
//! failure policy, its pull Secret and the cosign key its OCI source must
//! be signed by. A spec that does not read is an error with the field it
//! is about; nothing is loaded from it.

use serde::Deserialize;
use serde_json::Value;
use wink_oci::cosign::{MAX_KEY_BYTES, PublicKey};
use wink_runtime::grants::PluginGrant;
use wink_runtime::scope::Selection;

/// The largest config handed to a plugin (as a config file's cap).
pub const MAX_CONFIG_BYTES: usize = 1 << 20;
/// The longest https URL.
pub const MAX_URL: usize = 2048;

/// Where a component comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// An OCI reference: a tag (resolved once and pinned) or a digest.
    Oci(String),
    /// An https URL and the component's sha256 (`sha256:<hex>`).
    Https { url: String, sha256: String },
}

impl Source {
    /// The host it is fetched from (`registry[:port]`, the URL's
    /// authority); empty when it names none.
    pub fn host(&self) -> String {
        match self {
            Source::Oci(r) => wink_oci::fetch::parse_reference(r)
                .map(|r| r.resolve_registry().to_string())
                .unwrap_or_default(),
            Source::Https { url, .. } => url
                .strip_prefix("https://")
                .and_then(|rest| rest.split('/').next())
                .unwrap_or("")
                .to_string(),
        }
    }

    /// As the SOURCE column shows it.
    pub fn describe(&self) -> String {
        match self {
            Source::Oci(r) => r.clone(),
            Source::Https { url, .. } => url.clone(),
        }
    }
}

/// A WinkPlugin's spec, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub source: Source,
    /// The config text (an object as JSON, a string as is; none: empty).
    pub config: String,
    pub grant: PluginGrant,
    /// `Fail` or `Ignore`, when the spec overrides the plugin's own.
    pub failure_policy: Option<String>,
    pub pull_secret: Option<String>,
    /// The cosign key the OCI source's manifest must be signed by
    /// (`spec.verify.cosign.publicKey`).
    pub cosign_key: Option<PublicKey>,
    /// Where the pull Secret is read: a NamespacedWinkPlugin's namespace
    /// (none: wink's own, for a WinkPlugin).
    pub namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawCosign {
    public_key: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerify {
    cosign: RawCosign,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    oci: Option<String>,
    https: Option<String>,
    sha256: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawAdmission {
    failure_policy: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSpec {
    source: RawSource,
    #[serde(default)]
    config: Option<Value>,
    #[serde(default)]
    grant: Option<Value>,
    #[serde(default)]
    admission: Option<RawAdmission>,
    #[serde(default)]
    pull_secret: Option<String>,
    #[serde(default)]
    verify: Option<RawVerify>,
    #[serde(default, rename = "match")]
    match_: Option<Value>,
    #[serde(default)]
    exclude: Option<Value>,
}

/// Read the spec of a WinkPlugin object.
pub fn parse(object: &Value) -> anyhow::Result<Spec> {
    let spec = object.get("spec").ok_or_else(|| anyhow::anyhow!("no spec"))?;
    let raw: RawSpec = serde_json::from_value(spec.clone()).map_err(|e| anyhow::anyhow!("spec: {e}"))?;
    let source = match (raw.source.oci, raw.source.https, raw.source.sha256) {
        (Some(r), None, None) => {
            wink_oci::fetch::parse_reference(&r).map_err(|e| anyhow::anyhow!("spec.source.oci: {e:#}"))?;
            Source::Oci(r)
        }
        (None, Some(url), Some(sha)) => {
            anyhow::ensure!(
                url.len() <= MAX_URL,
                "spec.source.https: longer than {MAX_URL} characters"
            );
            anyhow::ensure!(
                url.starts_with("https://"),
                "spec.source.https: {url:?} is not an https:// URL"
            );
            let sha256 = match sha.starts_with("sha256:") {
                true => sha,
                false => format!("sha256:{sha}"),
            };
            wink_oci::digest::Digest::parse(&sha256)
                .map_err(|e| anyhow::anyhow!("spec.source.sha256: {e:#}"))?;
            Source::Https { url, sha256 }
        }
        (None, Some(_), None) => anyhow::bail!("spec.source.https needs spec.source.sha256"),
        (Some(_), _, Some(_)) => {
            anyhow::bail!("spec.source.sha256 is for https (an oci source pins with @sha256:)")
        }
        (None, None, _) => anyhow::bail!("spec.source: one of oci and https"),
        (Some(_), Some(_), _) => anyhow::bail!("spec.source: oci or https, not both"),
    };
    let config = match raw.config {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => anyhow::bail!("spec.config: an object or a string"),
    };
    anyhow::ensure!(
        config.len() <= MAX_CONFIG_BYTES,
        "spec.config: {} bytes (at most {MAX_CONFIG_BYTES})",
        config.len()
    );
    let mut grant: PluginGrant = match raw.grant {
        None => PluginGrant::default(),
        Some(g) => serde_json::from_value(g).map_err(|e| anyhow::anyhow!("spec.grant: {e}"))?,
    };
    anyhow::ensure!(
        grant.match_.is_none() && grant.exclude.is_none(),
        "spec.grant: the scope is spec.match and spec.exclude"
    );
    let selection = |v: Option<Value>, at: &str| -> anyhow::Result<Option<Selection>> {
        v.map(|v| serde_json::from_value(v).map_err(|e| anyhow::anyhow!("spec.{at}: {e}")))
            .transpose()
    };
    grant.match_ = selection(raw.match_, "match")?;
    grant.exclude = selection(raw.exclude, "exclude")?;
    grant.scope().map_err(|e| anyhow::anyhow!("spec.{e}"))?;
    let failure_policy = raw.admission.and_then(|a| a.failure_policy);
    if let Some(p) = &failure_policy {
        anyhow::ensure!(
            p == "Fail" || p == "Ignore",
            "spec.admission.failurePolicy: {p:?} (Fail or Ignore)"
        );
    }
    if let Some(s) = &raw.pull_secret {
        anyhow::ensure!(
            !s.is_empty() && s.len() <= 253,
            "spec.pullSecret: {s:?} is not a Secret name"
        );
    }
    let cosign_key = match raw.verify {
        None => None,
        Some(v) => {
            anyhow::ensure!(
                matches!(source, Source::Oci(_)),
                "spec.verify is for an oci source (an https one is pinned by spec.source.sha256)"
            );
            anyhow::ensure!(
                v.cosign.public_key.len() as u64 <= MAX_KEY_BYTES,
                "spec.verify.cosign.publicKey: longer than {MAX_KEY_BYTES} bytes"
            );
            let key = PublicKey::from_pem(&v.cosign.public_key)
                .map_err(|e| anyhow::anyhow!("spec.verify.cosign.publicKey: {e:#}"))?;
            Some(key)
        }
    };
    Ok(Spec {
        source,
        config,
        grant,
        failure_policy,
        pull_secret: raw.pull_secret,
        cosign_key,
        namespace: object["metadata"]["namespace"].as_str().map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_full_spec_reads_and_the_grant_is_the_grants_file_entry() {
        let o = json!({"spec": {
            "source": {"oci": "localhost:5000/wink/x:v1"},
            "config": {"tag": "a"},
            "grant": {"mode": "audit", "events": true, "writes": [{"apiVersion": "v1", "kind": "Pod", "verbs": ["patch"]}]},
            "admission": {"failurePolicy": "Ignore"},
            "pullSecret": "regcred"
        }});
        let s = parse(&o).unwrap();
        assert_eq!(s.source, Source::Oci("localhost:5000/wink/x:v1".into()));
        assert_eq!(s.config, r#"{"tag":"a"}"#);
        assert_eq!(s.grant.mode, wink_runtime::grants::Mode::Audit);
        assert!(s.grant.events);
        assert_eq!(s.grant.writes.len(), 1);
        assert_eq!(s.failure_policy.as_deref(), Some("Ignore"));
        assert_eq!(s.pull_secret.as_deref(), Some("regcred"));
    }

    const PUB: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEMzVQwKLlOw/eDHxjHV9h+LF3hjwm
B4eoQEfMyATbmtm3UPNroM/GUPFlWlwy1XQ1iM4otHteLqNFzlAL0Ag9SQ==
-----END PUBLIC KEY-----";

    #[test]
    fn a_cosign_key_reads_from_verify() {
        let o = json!({"spec": {"source": {"oci": "x:v1"}, "verify": {"cosign": {"publicKey": PUB}}}});
        let key = parse(&o).unwrap().cosign_key.unwrap();
        assert_eq!(key, PublicKey::from_pem(PUB).unwrap());
        let none = json!({"spec": {"source": {"oci": "x:v1"}}});
        assert!(parse(&none).unwrap().cosign_key.is_none());
    }

    #[test]
    fn the_scope_is_the_grants_own() {
        let o = json!({"spec": {"source": {"oci": "x:v1"},
            "match": {"namespaceSelector": {"matchLabels": {"enforce": "yes"}}},
            "exclude": {"namespaces": ["kube-system"]}}});
        let s = parse(&o).unwrap();
        let scope = s.grant.scope().unwrap().expect("a scope");
        assert!(scope.needs_namespaces());
        assert_eq!(s.grant.exclude.unwrap().namespaces.unwrap(), ["kube-system"]);
        let bad = |spec: Value| format!("{:#}", parse(&json!({"spec": spec})).unwrap_err());
        assert!(
            bad(json!({"source": {"oci": "x:v1"}, "grant": {"match": {"namespaces": ["a"]}}}))
                .contains("the scope is spec.match")
        );
        assert!(
            bad(json!({"source": {"oci": "x:v1"}, "exclude": {}}))
                .contains("spec.exclude: name at least one")
        );
        assert!(
            bad(json!({"source": {"oci": "x:v1"}, "match": {"objectSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}}))
                .contains("spec.match.objectSelector.matchExpressions[0]: In needs values")
        );
    }

    #[test]
    fn bad_specs_say_which_field() {
        let bad = |spec: Value| format!("{:#}", parse(&json!({"spec": spec})).unwrap_err());
        assert!(
            bad(json!({"source": {"oci": "x:v1"}, "grant": {"modes": "audit"}}))
                .contains("spec.grant: unknown field `modes`")
        );
        assert!(bad(json!({"source": {"https": "https://e/x.wasm"}})).contains("needs spec.source.sha256"));
        assert!(
            bad(json!({"source": {"https": "http://e/x.wasm", "sha256": "0".repeat(64)}}))
                .contains("not an https")
        );
        assert!(bad(json!({"source": {}})).contains("one of oci and https"));
        assert!(bad(json!({"source": {"oci": "x:v1"}, "config": 3})).contains("an object or a string"));
        assert!(
            bad(json!({"source": {"oci": "x:v1"}, "admission": {"failurePolicy": "Maybe"}}))
                .contains("Fail or Ignore")
        );
        assert!(bad(json!({"source": {"oci": "x:v1"}, "extra": 1})).contains("unknown field `extra`"));
        assert!(
            bad(json!({"source": {"oci": "x:v1"}, "verify": {"cosign": {"publicKey": "x"}}}))
                .contains("spec.verify.cosign.publicKey: not a PEM public key")
        );
        assert!(
            bad(json!({"source": {"oci": "x:v1"}, "verify": {"cosign": {"key": "x"}}}))
                .contains("unknown field `key`")
        );
        let https = json!({"https": "https://e/x.wasm", "sha256": "0".repeat(64)});
        assert!(
            bad(json!({"source": https, "verify": {"cosign": {"publicKey": PUB}}}))
                .contains("spec.verify is for an oci source")
        );
        assert!(
            bad(json!({"source": {"oci": "x:v1"}, "config": "x".repeat(MAX_CONFIG_BYTES + 1)}))
                .contains("at most")
        );
    }
}
