//! Object metadata as the simulated API server manages it: names checked as
//! RFC 1123, uids and generated-name suffixes, timestamps, resourceVersions
//! parsed from clients, and the identity of a request body (kind, namespace,
//! name) checked against the URL. Pure functions over JSON values; the write
//! path (`write`) decides when to apply them. Must not touch the store or HTTP.

use super::resources::ResourceDef;
use super::status::ApiError;
use base64::Engine;
use serde_json::{Map, Value, json};

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub(super) fn uid() -> String {
    let b: u128 = rand::random();
    let h = format!(
        "{:032x}",
        (b & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62)
    );
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

pub(super) fn suffix() -> String {
    const A: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| A[rand::random_range(0..A.len())] as char)
        .collect()
}

pub(super) fn meta(v: &mut Value) -> &mut Map<String, Value> {
    if !v.get("metadata").is_some_and(Value::is_object) {
        v["metadata"] = json!({});
    }
    v["metadata"].as_object_mut().expect("object")
}

pub(super) fn mstr<'a>(v: &'a Value, f: &str) -> Option<&'a str> {
    v.get("metadata")?.get(f)?.as_str().filter(|s| !s.is_empty())
}

/// `IsDNS1123Subdomain` (or, `label`, `IsDNS1123Label`) of an object's
/// name: the `metadata.name: Invalid value` causes, as many as it breaks.
pub(super) fn valid_name(name: &str, label: bool) -> Vec<String> {
    dns1123(name, label)
        .iter()
        .map(|why| format!("metadata.name: Invalid value: {name:?}: {why}"))
        .collect()
}

/// A `generateName` checked as the name it prefixes (a trailing `-`
/// allowed): the `metadata.generateName: Invalid value` causes.
pub(super) fn valid_generate_name(prefix: &str, label: bool) -> Vec<String> {
    let masked = match prefix.strip_suffix('-') {
        Some(p) => format!("{p}a"),
        None => prefix.to_string(),
    };
    dns1123(&masked, label)
        .iter()
        .map(|why| format!("metadata.generateName: Invalid value: {prefix:?}: {why}"))
        .collect()
}

/// What `IsDNS1123Subdomain` (`label`: `IsDNS1123Label`) says of `name`.
pub(super) fn dns1123(name: &str, label: bool) -> Vec<String> {
    let max = if label { 63 } else { 253 };
    let mut errs = Vec::new();
    if name.len() > max {
        errs.push(format!("must be no more than {max} characters"));
    }
    let part = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && p.starts_with(|c: char| c.is_ascii_alphanumeric())
            && p.ends_with(|c: char| c.is_ascii_alphanumeric())
    };
    let ok = match label {
        true => part(name),
        false => name.split('.').all(part),
    };
    if !ok {
        let why = match label {
            true => {
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and \
                 must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex \
                 used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            }
            false => {
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
                 '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used \
                 for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            }
        };
        errs.push(why.to_string());
    }
    errs
}

/// Parse a resourceVersion given by a client.
pub fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}")))
}

/// Everything but metadata and status: a change here bumps generation.
pub(super) fn spec_part(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
        m.remove("apiVersion");
        m.remove("kind");
    }
    v
}

pub(super) fn fold_string_data(v: &mut Value) {
    let Some(sd) = v.as_object_mut().and_then(|m| m.remove("stringData")) else {
        return;
    };
    if let Value::Object(sd) = sd {
        let data = v
            .as_object_mut()
            .expect("object")
            .entry("data")
            .or_insert_with(|| json!({}));
        for (k, s) in sd {
            let enc = base64::engine::general_purpose::STANDARD.encode(s.as_str().unwrap_or(""));
            data[k] = Value::String(enc);
        }
    }
}

/// Check the body's namespace and name against the URL and the scope.
pub(super) fn check_identity(
    def: &ResourceDef,
    ns: Option<&str>,
    body: &mut Value,
    name: Option<&str>,
) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request("the request body must be an object"));
    }
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && kind != def.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind of the object ({kind}) does not match the expected kind ({})",
            def.kind
        )));
    }
    if let (Some(want), Some(got)) = (ns, mstr(body, "namespace"))
        && want != got
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if let (Some(want), Some(got)) = (name, mstr(body, "name"))
        && want != got
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({got}) does not match the name on the URL ({want})"
        )));
    }
    let m = meta(body);
    match ns {
        Some(ns) if def.namespaced => {
            m.insert("namespace".into(), json!(ns));
        }
        _ => {
            m.remove("namespace");
        }
    }
    if let Some(name) = name {
        m.insert("name".into(), json!(name));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_generated_name_prefixes() {
        assert!(valid_name("a.b-c", false).is_empty());
        assert_eq!(valid_name("a.b", true).len(), 1);
        assert_eq!(
            valid_name(&"a".repeat(254), false),
            [format!(
                "metadata.name: Invalid value: {:?}: must be no more than 253 characters",
                "a".repeat(254)
            )]
        );
        assert!(
            valid_name("Bad", false)[0]
                .starts_with("metadata.name: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain")
        );
        assert!(valid_generate_name("gen-", false).is_empty());
        assert!(
            valid_generate_name("Bad-", false)[0]
                .starts_with("metadata.generateName: Invalid value: \"Bad-\"")
        );
    }
}
