//! The one spelling of a resource type and of an object's key that wink
//! accepts from a plugin: every permission decision (watches, reads, cache
//! queries, writes, Events) and every URL is made from these forms, never
//! from the text a plugin gave.
//!
//! - [`Gvk`]: a group/version/kind, parsed exactly as an API server spells
//!   it (`v1` for the core group, `GROUP/VERSION` for the others): group a
//!   lowercase RFC 1123 subdomain (not `core`), version and kind RFC 1035
//!   labels (a kind in any case). Anything else (`/v1`, `v1/`, `core/v1`,
//!   `V1`, whitespace, `%`-escapes, NUL, overlong text) is refused, never
//!   read as something wider. [`Gvk::of_resource`] gives the form discovery
//!   resolved, which callers compare with what was asked.
//! - [`names`]: namespaces and object names as the API server validates
//!   them, before either reaches a URL.

pub mod names;

use kube::api::ApiResource;
use std::fmt;

/// The longest group (an RFC 1123 subdomain).
pub const MAX_GROUP: usize = 253;

/// The longest version or kind (an RFC 1035 label).
pub const MAX_LABEL: usize = 63;

/// A resource type as the API server spells it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvk {
    /// Empty for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// A spelling the API server would not accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// `text` quoted for a message: escaped, and cut after 64 characters.
pub(crate) fn quoted(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((at, _)) => format!("{:?}... ({} bytes)", &text[..at], text.len()),
        None => format!("{text:?}"),
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, of any length.
fn is_label_text(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty() && inner(&b[0]) && inner(&b[b.len() - 1]) && b.iter().all(|c| inner(c) || *c == b'-')
}

/// A lowercase RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63.
pub(crate) fn is_dns1123_label(s: &str) -> bool {
    s.len() <= MAX_LABEL && is_label_text(s)
}

/// A lowercase RFC 1123 subdomain as apimachinery checks it: dot-separated
/// label texts, at most 253 bytes in all.
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_GROUP && s.split('.').all(is_label_text)
}

/// An RFC 1035 label: `[a-z]([-a-z0-9]*[a-z0-9])?`.
fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

/// Parse an apiVersion: `VERSION` (the core group) or `GROUP/VERSION`.
pub fn parse_api_version(api_version: &str) -> Result<(&str, &str), Refused> {
    let refuse = |why: &str| {
        Err(Refused(format!(
            "invalid apiVersion {}: {why} (an apiVersion is VERSION for the core group, e.g. \"v1\", or GROUP/VERSION, e.g. \"apps/v1\")",
            quoted(api_version)
        )))
    };
    if api_version.len() > MAX_GROUP + 1 + MAX_LABEL {
        return refuse("too long");
    }
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    };
    if api_version.contains('/') {
        if group.is_empty() {
            return refuse("the group is empty (the core group is spelled \"v1\", with no slash)");
        }
        if group == "core" {
            return refuse("the core group is spelled \"v1\", not \"core/v1\"");
        }
        if !is_dns1123_subdomain(group) {
            return refuse("the group must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-' and '.')");
        }
    }
    if version.is_empty() {
        return refuse("the version is empty");
    }
    if !is_dns1035_label(version) {
        return refuse(
            "the version must be a lowercase RFC 1035 label (a-z, 0-9 and '-', starting with a letter)",
        );
    }
    Ok((group, version))
}

impl Gvk {
    /// Parse what a plugin or an operator wrote.
    pub fn parse(api_version: &str, kind: &str) -> Result<Gvk, Refused> {
        let (group, version) = Self::check(api_version, kind)?;
        Ok(Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        })
    }

    /// [`Gvk::parse`] without allocating: the group and the version. Text
    /// that passes is the canonical spelling, so two that pass name the same
    /// type exactly when they are equal.
    pub fn check<'a>(api_version: &'a str, kind: &str) -> Result<(&'a str, &'a str), Refused> {
        let parts = parse_api_version(api_version)?;
        let b = kind.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= MAX_LABEL
            && b[0].is_ascii_alphabetic()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-');
        if !ok {
            return Err(Refused(format!(
                "invalid kind {}: a kind is a letter, then letters, digits and '-', at most {MAX_LABEL}",
                quoted(kind)
            )));
        }
        Ok(parts)
    }

    /// The form discovery resolved a resource type to.
    pub fn of_resource(ar: &ApiResource) -> Gvk {
        Gvk {
            group: ar.group.clone(),
            version: ar.version.clone(),
            kind: ar.kind.clone(),
        }
    }

    /// Check that discovery resolved `self` to itself (the same group,
    /// version and kind, in the same case): anything else is refused.
    pub fn check_resolved(&self, ar: &ApiResource) -> Result<(), Refused> {
        let resolved = Gvk::of_resource(ar);
        if resolved == *self {
            return Ok(());
        }
        Err(Refused(format!(
            "{self} resolved to {resolved} through discovery: spell it as the API server does"
        )))
    }

    /// The apiVersion: `v1`, `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether this is the core group's Secret.
    pub fn is_secret(&self) -> bool {
        self.group.is_empty() && self.kind == "Secret"
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.api_version(), self.kind)
    }
}

/// Whether two spellings name the same resource type; a spelling that does
/// not parse names none.
pub fn same_type(a: (&str, &str), b: (&str, &str)) -> bool {
    match (Gvk::parse(a.0, a.1), Gvk::parse(b.0, b.1)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
