//! Levels and policy versions as PodSecurity admission reads them from a
//! namespace's labels (`pod-security.kubernetes.io/enforce: baseline`,
//! `pod-security.kubernetes.io/enforce-version: v1.29`): a level is
//! `privileged`, `baseline` or `restricted`; a version is `latest` or
//! `v1.N`. A version newer than the newest one any check knows is that
//! newest one, as `latest` is. Pure: no SDK call here.

use std::fmt;

/// The newest policy version a check of this plugin has a revision for.
pub const MAX_MINOR: u32 = 35;

/// A Pod Security Standards level, least to most restrictive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    pub fn parse(text: &str) -> Result<Level, String> {
        match text {
            "privileged" => Ok(Level::Privileged),
            "baseline" => Ok(Level::Baseline),
            "restricted" => Ok(Level::Restricted),
            other => Err(format!(
                "{other:?} is not a level (privileged, baseline or restricted)"
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A policy version: `v1.N`, or `latest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Minor(u32),
    Latest,
}

impl Version {
    pub fn parse(text: &str) -> Result<Version, String> {
        if text == "latest" {
            return Ok(Version::Latest);
        }
        let bad = || format!("{text:?} is not a version (latest, or v1.N)");
        let minor = text.strip_prefix("v1.").ok_or_else(bad)?;
        let well_formed = !minor.is_empty()
            && minor.len() <= 4
            && minor.bytes().all(|b| b.is_ascii_digit())
            && (minor == "0" || !minor.starts_with('0'));
        if !well_formed {
            return Err(bad());
        }
        minor.parse().map(Version::Minor).map_err(|_| bad())
    }

    /// The minor version whose checks apply: `latest` and anything newer
    /// than [`MAX_MINOR`] are [`MAX_MINOR`].
    pub fn effective_minor(self) -> u32 {
        match self {
            Version::Minor(m) => m.min(MAX_MINOR),
            Version::Latest => MAX_MINOR,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Minor(m) => write!(f, "v1.{m}"),
            Version::Latest => f.write_str("latest"),
        }
    }
}

/// A level at a version: what one mode (enforce, audit, warn) applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelVersion {
    pub level: Level,
    pub version: Version,
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level.as_str(), self.version)
    }
}

/// The three modes a namespace's labels set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Enforce,
    Audit,
    Warn,
}

impl Mode {
    #[cfg(test)]
    pub const ALL: [Mode; 3] = [Mode::Enforce, Mode::Audit, Mode::Warn];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Audit => "audit",
            Mode::Warn => "warn",
        }
    }
}

/// The label that sets `mode`'s level; its version label adds `-version`.
pub fn label(mode: Mode) -> String {
    format!("pod-security.kubernetes.io/{}", mode.as_str())
}

/// `mode`'s level and version from a namespace's labels (`label` looks one
/// up), each falling back to `default`. A label that does not parse gives
/// the most restrictive value (`restricted`, `latest`), as PodSecurity
/// admission does, and an error to report.
pub fn from_labels<'a>(
    mode: Mode,
    label_of: impl Fn(&str) -> Option<&'a str>,
    default: LevelVersion,
) -> (LevelVersion, Vec<String>) {
    let mut errors = Vec::new();
    let key = label(mode);
    let level = match label_of(&key) {
        None => default.level,
        Some(text) => Level::parse(text).unwrap_or_else(|e| {
            errors.push(format!("{key}: {e}"));
            Level::Restricted
        }),
    };
    let version_key = format!("{key}-version");
    let version = match label_of(&version_key) {
        None => default.version,
        Some(text) => Version::parse(text).unwrap_or_else(|e| {
            errors.push(format!("{version_key}: {e}"));
            Version::Latest
        }),
    };
    (LevelVersion { level, version }, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_podsecurity_writes_them() {
        assert_eq!(Version::parse("latest"), Ok(Version::Latest));
        assert_eq!(Version::parse("v1.0"), Ok(Version::Minor(0)));
        assert_eq!(Version::parse("v1.29"), Ok(Version::Minor(29)));
        for bad in ["1.29", "v1.", "v1.029", "v2.1", "v1.x", "", "v1.99999", "Latest"] {
            assert!(Version::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Version::Minor(99).effective_minor(), MAX_MINOR);
        assert_eq!(Version::Latest.effective_minor(), MAX_MINOR);
        assert_eq!(Version::Minor(7).effective_minor(), 7);
        assert_eq!(Version::Minor(7).to_string(), "v1.7");
    }

    #[test]
    fn labels_set_a_mode_and_fall_back_to_the_default() {
        let default = LevelVersion {
            level: Level::Baseline,
            version: Version::Latest,
        };
        let labels = [
            ("pod-security.kubernetes.io/enforce", "restricted"),
            ("pod-security.kubernetes.io/enforce-version", "v1.24"),
            ("pod-security.kubernetes.io/warn", "strict"),
            ("pod-security.kubernetes.io/audit-version", "v1.3"),
        ];
        let look = |k: &str| labels.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let (enforce, errors) = from_labels(Mode::Enforce, look, default);
        assert_eq!(enforce.to_string(), "restricted:v1.24");
        assert!(errors.is_empty());
        let (audit, _) = from_labels(Mode::Audit, look, default);
        assert_eq!(audit.to_string(), "baseline:v1.3");
        let (warn, errors) = from_labels(Mode::Warn, look, default);
        assert_eq!(warn.to_string(), "restricted:latest");
        assert_eq!(errors.len(), 1, "{errors:?}");
    }
}
