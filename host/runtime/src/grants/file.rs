//! The grants file: read with the one safe-file reader, its nesting depth
//! checked before a parser sees it, and parsed strictly. Unknown fields are
//! errors at every level (`deny_unknown_fields` on every struct; none of
//! them uses `flatten`, which that attribute does not work with), and so
//! are duplicate keys: serde fills a map with the last of two equal keys,
//! so the text is first read as a YAML tree, whose mappings refuse equal
//! keys, and its keys compared again as the strings the grants read them
//! as (`1` and `"1"` are one plugin name).
//!
//! Owns [`Grants::load`], [`Grants::read`] and [`Grants::parse`], and
//! [`GrantsFile`]: where `wink run`'s grants come from, read again when the
//! file changes. What the grants mean is the parent module's.

use super::Grants;
use serde_norway::Value;
use std::path::{Path, PathBuf};

/// Where the grants come from: the file, and the plugins `--allow-secrets`
/// grants Secrets to on top of it. Read at start and again when the file
/// changes.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantsFile {
    pub path: PathBuf,
    pub allow_secrets: Vec<String>,
}

impl GrantsFile {
    /// The grants as the file says now, `--allow-secrets` folded in.
    pub fn load(&self) -> anyhow::Result<Grants> {
        let mut grants = Grants::load(&self.path)?;
        grants.allow_secrets(&self.allow_secrets);
        Ok(grants)
    }
}

/// The largest grants file read.
pub const MAX_GRANTS_BYTES: u64 = 1 << 20;

impl Grants {
    /// Read and parse a grants file (YAML or JSON).
    pub fn load(path: &Path) -> anyhow::Result<Grants> {
        Ok(Self::read(path)?.1)
    }

    /// Read a grants file: its text (as read, once) and the grants parsed
    /// from it.
    pub fn read(path: &Path) -> anyhow::Result<(String, Grants)> {
        let text = wink_input::read_text(path, MAX_GRANTS_BYTES, "grants file")?;
        let grants = Self::parse(text.as_bytes()).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok((text, grants))
    }

    /// Grant Secrets to `plugins` (`--allow-secrets`; `*` for all), each
    /// on top of its own entry, else of the `*` entry.
    pub fn allow_secrets(&mut self, plugins: &[String]) {
        for plugin in plugins {
            let base = self.plugins.get("*").cloned().unwrap_or_default();
            self.plugins.entry(plugin.clone()).or_insert(base).secrets = true;
        }
    }

    /// Parse grants from YAML (or JSON) text.
    pub fn parse(text: &[u8]) -> Result<Grants, String> {
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(Grants::default());
        }
        wink_input::depth::check_yaml(text).map_err(|e| e.to_string())?;
        let tree: Value = serde_norway::from_slice(text).map_err(|e| e.to_string())?;
        no_equal_keys(&tree, &mut Vec::new())?;
        let grants: Grants = serde_norway::from_slice(text).map_err(|e| e.to_string())?;
        for (name, grant) in &grants.plugins {
            grants.scope(name)?;
            grant
                .caps()
                .map_err(|e| format!("the grant of plugin {name}: {e}"))?;
        }
        if let Some(teams) = &grants.teams {
            teams.check()?;
        }
        Ok(grants)
    }
}

/// A mapping key as a string field or map key reads it.
fn key_text(key: &Value) -> Option<String> {
    match key {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Refuse two keys of one mapping that read as the same string, at any depth.
fn no_equal_keys(v: &Value, at: &mut Vec<String>) -> Result<(), String> {
    match v {
        Value::Mapping(m) => {
            let mut seen = std::collections::HashSet::new();
            for (k, v) in m {
                let text = key_text(k);
                if let Some(t) = &text
                    && !seen.insert(t.clone())
                {
                    let path = match at.is_empty() {
                        true => "the top level".to_string(),
                        false => at.join("."),
                    };
                    return Err(format!("duplicate key {t:?} in {path}"));
                }
                at.push(text.unwrap_or_else(|| "?".into()));
                no_equal_keys(v, at)?;
                at.pop();
            }
        }
        Value::Sequence(s) => {
            for (i, v) in s.iter().enumerate() {
                at.push(format!("[{i}]"));
                no_equal_keys(v, at)?;
                at.pop();
            }
        }
        Value::Tagged(t) => no_equal_keys(&t.value, at)?,
        _ => {}
    }
    Ok(())
}
