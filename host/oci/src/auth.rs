//! Registry credentials from a dockerconfigjson file (what `docker login`
//! writes and what a `kubernetes.io/dockerconfigjson` Secret holds):
//! `{"auths": {"<registry>": {"auth": base64("user:password")}}}` or
//! `username`/`password`, or an `identitytoken` used as a bearer token.
//! Owns parsing it (capped) and choosing the entry for a registry.

use anyhow::Context;
use base64::Engine;
pub use oci_client::secrets::RegistryAuth;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// A credentials file larger than this is refused.
pub const MAX_AUTH_BYTES: u64 = 1 << 20;

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
struct Entry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    identitytoken: Option<String>,
}

/// Credentials per registry host (`host[:port]`).
#[derive(Default, Clone)]
pub struct Auths(BTreeMap<String, RegistryAuth>);

/// Credentials are never printed.
impl std::fmt::Debug for Auths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Auths({} registries)", self.0.len())
    }
}

impl Auths {
    /// Read a dockerconfigjson file.
    pub fn read(path: &Path) -> anyhow::Result<Auths> {
        let text = wink_input::read_text(path, MAX_AUTH_BYTES, "registry credentials")?;
        Self::parse(&text).with_context(|| format!("{}: not a dockerconfigjson file", path.display()))
    }

    /// Parse the text of a dockerconfigjson.
    pub fn parse(text: &str) -> anyhow::Result<Auths> {
        let file: File = serde_json::from_str(text)?;
        let mut auths = BTreeMap::new();
        for (key, entry) in file.auths {
            let host = host_of(&key);
            let auth = match entry {
                Entry {
                    identitytoken: Some(token),
                    ..
                } if !token.is_empty() => RegistryAuth::Bearer(token),
                Entry {
                    username: Some(u),
                    password: Some(p),
                    ..
                } => RegistryAuth::Basic(u, p),
                Entry {
                    auth: Some(encoded), ..
                } => {
                    let decoded = base64::engine::general_purpose::STANDARD
                        .decode(encoded.trim())
                        .with_context(|| format!("{key}: `auth` is not base64"))?;
                    let decoded =
                        String::from_utf8(decoded).with_context(|| format!("{key}: `auth` is not text"))?;
                    let (u, p) = decoded
                        .split_once(':')
                        .with_context(|| format!("{key}: `auth` is not base64 of user:password"))?;
                    RegistryAuth::Basic(u.to_string(), p.to_string())
                }
                _ => anyhow::bail!("{key}: no `auth`, `username`/`password` or `identitytoken`"),
            };
            auths.insert(host, auth);
        }
        Ok(Auths(auths))
    }

    /// The credentials for `registry` (anonymous when none are given).
    pub fn for_registry(&self, registry: &str) -> RegistryAuth {
        let docker_hub = ["docker.io", "index.docker.io", "registry-1.docker.io"];
        let found = self.0.get(registry).or_else(|| {
            docker_hub
                .contains(&registry)
                .then(|| docker_hub.iter().find_map(|h| self.0.get(*h)))
                .flatten()
        });
        found.cloned().unwrap_or(RegistryAuth::Anonymous)
    }
}

/// `https://index.docker.io/v1/` -> `index.docker.io`; `host:5000` as is.
fn host_of(key: &str) -> String {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_form_of_entry() {
        let auths = Auths::parse(
            r#"{"auths": {
                "https://index.docker.io/v1/": {"auth": "dTpw"},
                "127.0.0.1:5000": {"username": "a", "password": "b"},
                "ghcr.io": {"identitytoken": "t"}}}"#,
        )
        .unwrap();
        assert!(matches!(auths.for_registry("docker.io"), RegistryAuth::Basic(u, p) if u == "u" && p == "p"));
        assert!(matches!(auths.for_registry("127.0.0.1:5000"), RegistryAuth::Basic(u, _) if u == "a"));
        assert!(matches!(auths.for_registry("ghcr.io"), RegistryAuth::Bearer(t) if t == "t"));
        assert!(matches!(auths.for_registry("quay.io"), RegistryAuth::Anonymous));
    }

    #[test]
    fn malformed_entries_are_named() {
        let e = Auths::parse(r#"{"auths": {"r.io": {"auth": "!!"}}}"#)
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("r.io"), "{e:#}");
        assert!(Auths::parse("42").is_err());
    }
}
