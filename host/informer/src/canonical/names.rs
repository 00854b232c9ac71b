//! Namespaces and object names as the API server validates them, checked
//! before either goes into a URL, and the escaping of a URL path segment.
//!
//! A namespace is a lowercase RFC 1123 label (at most 63 bytes). An object
//! name is a lowercase RFC 1123 subdomain (at most 253 bytes), except in
//! the groups whose names the API server checks only as path segments (RBAC:
//! `system:controller:x`), where it may be any text of at most 253 bytes
//! but `.`, `..`, or text holding `/`, `%`, `?`, `#` or a control character.

use super::{MAX_GROUP, MAX_LABEL, Refused, is_dns1123_label, is_dns1123_subdomain, quoted};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

/// The longest object name.
pub const MAX_NAME: usize = MAX_GROUP;

/// Groups whose object names the API server validates as path segments only.
const PATH_SEGMENT_GROUPS: &[&str] = &["rbac.authorization.k8s.io"];

/// Check a namespace.
pub fn namespace(ns: &str) -> Result<(), Refused> {
    if is_dns1123_label(ns) {
        return Ok(());
    }
    Err(Refused(format!(
        "invalid namespace {}: a namespace is a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a letter or digit, at most {MAX_LABEL})",
        quoted(ns)
    )))
}

/// Check the name of an object of `group`.
pub fn object_name(group: &str, name: &str) -> Result<(), Refused> {
    let refuse = |why: &str| Err(Refused(format!("invalid name {}: {why}", quoted(name))));
    if name.is_empty() {
        return refuse("a name is needed");
    }
    if name.len() > MAX_NAME {
        return refuse(&format!("longer than {MAX_NAME} bytes"));
    }
    if PATH_SEGMENT_GROUPS.contains(&group) {
        if name == "." || name == ".." {
            return refuse("not a path segment");
        }
        if let Some(c) = name
            .chars()
            .find(|c| matches!(c, '/' | '%' | '?' | '#') || c.is_control())
        {
            return refuse(&format!("{c:?} is not allowed in a name"));
        }
        return Ok(());
    }
    if is_dns1123_subdomain(name) {
        return Ok(());
    }
    refuse(&format!(
        "a name is a lowercase RFC 1123 subdomain (a-z, 0-9, '-' and '.', starting and ending with a letter or digit, at most {MAX_NAME})"
    ))
}

/// What a path segment escapes: everything RFC 3986 does not allow in one
/// (`pchar`), and `%` itself.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// `segment` escaped for a URL path.
pub fn escape_segment(segment: &str) -> String {
    utf8_percent_encode(segment, SEGMENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_rfc1123_labels() {
        for ok in ["default", "kube-system", "a", "0", &"a".repeat(63)] {
            assert!(namespace(ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(64);
        for bad in [
            "", "Default", "-a", "a-", "a.b", "a/b", "a b", " a", "a\0", "a%2f", "a#", "a?x", "..", ".", "é",
            &long,
        ] {
            let e = namespace(bad).unwrap_err();
            assert!(e.0.starts_with("invalid namespace"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn names_are_rfc1123_subdomains_but_in_rbac() {
        for ok in ["victim", "a.b-c", "0", &"a".repeat(253)] {
            assert!(object_name("", ok).is_ok(), "{ok}");
            assert!(object_name("apps", ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(254);
        for bad in [
            "",
            "victim#",
            "victim3?fieldManager=kube-controller-manager&x=",
            "a/b",
            "..",
            ".",
            "a..b",
            "a%2Fb",
            "a\0",
            "A",
            " a",
            "a\n",
            "system:x",
            long.as_str(),
        ] {
            assert!(object_name("", bad).is_err(), "{bad:?}");
        }
        assert!(object_name("rbac.authorization.k8s.io", "system:controller:x").is_ok());
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a%b",
            "a?b",
            "a#b",
            "a\0b",
            "a\tb",
            long.as_str(),
        ] {
            assert!(object_name("rbac.authorization.k8s.io", bad).is_err(), "{bad:?}");
        }
        let e = object_name("", "victim#").unwrap_err();
        assert!(e.0.contains("\"victim#\"") && e.0.contains("RFC 1123"), "{e}");
    }

    #[test]
    fn segments_escape_what_a_path_may_not_hold() {
        assert_eq!(escape_segment("system:x"), "system:x");
        assert_eq!(escape_segment("a b/c?d#e%f"), "a%20b%2Fc%3Fd%23e%25f");
        assert_eq!(escape_segment("é\0"), "%C3%A9%00");
    }
}
