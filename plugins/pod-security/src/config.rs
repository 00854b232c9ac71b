//! The plugin's config, in the shape of PodSecurity admission's
//! `PodSecurityConfiguration`: the level and version of each mode for
//! namespaces without the labels, and the exemptions.
//!
//! ```json
//! {"defaults": {"enforce": "baseline", "enforce-version": "latest",
//!               "audit": "restricted", "warn": "restricted"},
//!  "exemptions": {"usernames": ["system:serviceaccount:kube-system:ci"],
//!                 "runtimeClasses": ["kata"], "namespaces": ["kube-system"]}}
//! ```
//!
//! Every default that is not given is `baseline` at `latest` (PodSecurity
//! admission's own default is `privileged`: this plugin refuses what
//! Baseline forbids unless a namespace's labels say otherwise). Pure: no
//! SDK call here.

use crate::version::{Level, LevelVersion, Mode, Version};
use wink_sdk::serde::Deserialize;

/// At most this many names in each exemption list.
const MAX_EXEMPTIONS: usize = 1000;

#[derive(Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    defaults: RawDefaults,
    #[serde(default)]
    exemptions: Exemptions,
}

#[derive(Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", deny_unknown_fields)]
struct RawDefaults {
    enforce: Option<String>,
    #[serde(rename = "enforce-version")]
    enforce_version: Option<String>,
    audit: Option<String>,
    #[serde(rename = "audit-version")]
    audit_version: Option<String>,
    warn: Option<String>,
    #[serde(rename = "warn-version")]
    warn_version: Option<String>,
}

/// Who and what PodSecurity does not judge.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(crate = "wink_sdk::serde", deny_unknown_fields, rename_all = "camelCase")]
pub struct Exemptions {
    /// Requests by these users are allowed without a look.
    #[serde(default)]
    pub usernames: Vec<String>,
    /// Pods with these `runtimeClassName`s are neither judged nor reported.
    #[serde(default)]
    pub runtime_classes: Vec<String>,
    /// Pods in these namespaces are neither judged nor reported.
    #[serde(default)]
    pub namespaces: Vec<String>,
}

/// The parsed config.
#[derive(Debug, Clone)]
pub struct Config {
    pub enforce: LevelVersion,
    pub audit: LevelVersion,
    pub warn: LevelVersion,
    pub exemptions: Exemptions,
}

impl Config {
    /// The default of `mode`.
    pub fn default_of(&self, mode: Mode) -> LevelVersion {
        match mode {
            Mode::Enforce => self.enforce,
            Mode::Audit => self.audit,
            Mode::Warn => self.warn,
        }
    }
}

fn level_version(mode: &str, level: Option<String>, version: Option<String>) -> Result<LevelVersion, String> {
    let level = match level {
        None => Level::Baseline,
        Some(text) => Level::parse(&text).map_err(|e| format!("bad config: defaults.{mode}: {e}"))?,
    };
    let version = match version {
        None => Version::Latest,
        Some(text) => {
            Version::parse(&text).map_err(|e| format!("bad config: defaults.{mode}-version: {e}"))?
        }
    };
    Ok(LevelVersion { level, version })
}

/// Parse the config text (empty: every default).
pub fn parse(text: &str) -> Result<Config, String> {
    let raw: Raw = wink_sdk::config(text)?;
    let d = raw.defaults;
    let e = raw.exemptions;
    for (what, list) in [
        ("usernames", &e.usernames),
        ("runtimeClasses", &e.runtime_classes),
        ("namespaces", &e.namespaces),
    ] {
        if list.len() > MAX_EXEMPTIONS {
            return Err(format!(
                "bad config: exemptions.{what} has {} names, more than {MAX_EXEMPTIONS}",
                list.len()
            ));
        }
    }
    Ok(Config {
        enforce: level_version("enforce", d.enforce, d.enforce_version)?,
        audit: level_version("audit", d.audit, d.audit_version)?,
        warn: level_version("warn", d.warn, d.warn_version)?,
        exemptions: e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_config_is_baseline_latest_everywhere() {
        let c = parse("").unwrap();
        for mode in Mode::ALL {
            assert_eq!(c.default_of(mode).to_string(), "baseline:latest");
        }
        assert!(c.exemptions.namespaces.is_empty());
    }

    #[test]
    fn defaults_and_exemptions_are_read() {
        let c = parse(
            r#"{"defaults": {"enforce": "restricted", "enforce-version": "v1.24", "warn": "privileged"},
                "exemptions": {"usernames": ["ci"], "runtimeClasses": ["kata"], "namespaces": ["kube-system"]}}"#,
        )
        .unwrap();
        assert_eq!(c.enforce.to_string(), "restricted:v1.24");
        assert_eq!(c.warn.to_string(), "privileged:latest");
        assert_eq!(c.audit.to_string(), "baseline:latest");
        assert_eq!(c.exemptions.usernames, ["ci"]);
        assert_eq!(c.exemptions.runtime_classes, ["kata"]);
        assert_eq!(c.exemptions.namespaces, ["kube-system"]);
    }

    #[test]
    fn bad_configs_are_refused_with_the_field_named() {
        let e = parse(r#"{"defaults": {"enforce": "strict"}}"#).unwrap_err();
        assert!(e.contains("defaults.enforce"), "{e}");
        let e = parse(r#"{"defaults": {"audit-version": "1.2"}}"#).unwrap_err();
        assert!(e.contains("defaults.audit-version"), "{e}");
        assert!(parse(r#"{"level": "baseline"}"#).is_err());
        let many: Vec<String> = (0..1001).map(|i| format!("\"n{i}\"")).collect();
        let e = parse(&format!(
            r#"{{"exemptions": {{"namespaces": [{}]}}}}"#,
            many.join(",")
        ))
        .unwrap_err();
        assert!(e.contains("more than 1000"), "{e}");
    }
}
