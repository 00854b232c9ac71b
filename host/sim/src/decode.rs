//! What the API server's JSON decoder refuses in an object: a value of the
//! wrong JSON type for its field (`"leaseDurationSeconds": "abc"`, `data:
//! {"a": 5}`), a time that does not parse, a quantity or base64 value that
//! does not parse, an object that is not an object. Built-in kinds are
//! checked field by field against the Kubernetes API's protobuf
//! descriptors (`proto`, whose field names are the JSON names and whose
//! messages are the Go structs); custom resources only in what every
//! object has (`apiVersion`, `kind`, `metadata`). The object itself is
//! stored as sent: this only says whether the real server would decode it.
//!
//! Messages follow Go's `encoding/json` wording (`json: cannot unmarshal
//! string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type
//! int32`); [`bad_request`] wraps one as the create and update handlers do
//! (400), [`super::patch::undecodable`] as the patch handler does (422).
//!
//! Owns: type checks of request bodies. Must not touch: validation of
//! values (422 Invalid, in `meta` and `write`), the store, HTTP.

use super::proto;
use super::resources::ResourceDef;
use super::status::ApiError;
use base64::Engine;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::Value;

const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";
const QUANTITY_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const TYPE_META: &str = "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }";

/// The 400 of the create and update handlers for an object of `def` (at
/// `version`) that does not decode; one whose kind cannot even be read is
/// shown by its first 30 bytes.
pub fn bad_request(def: &ResourceDef, version: &str, body: &Value, why: &str) -> ApiError {
    let kind = &def.kind;
    if why.starts_with("couldn't get version/kind") {
        let text = body.to_string();
        let summary = match text.char_indices().nth(30) {
            Some((at, _)) => format!("{} ...", &text[..at]),
            None => text,
        };
        return ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): {why} ({summary})"
        ));
    }
    ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: {why}"
    ))
}

/// Why an object of `def` at `version` would not decode, if it would not.
pub fn check(def: &ResourceDef, version: &str, body: &Value) -> Result<(), String> {
    let desc = match def.crd {
        None => proto::message_for(&def.api_version(version), &def.kind),
        Some(_) => None,
    };
    match desc {
        Some(desc) => {
            check_type_meta(body)?;
            message(&desc, body, &mut Vec::new())
        }
        None => check_object(&def.kind, body),
    }
}

/// What any object of `kind` must be, whatever its type: a JSON object
/// whose `apiVersion` and `kind` are strings and whose `metadata` is an
/// `ObjectMeta`.
pub fn check_object(kind: &str, body: &Value) -> Result<(), String> {
    check_type_meta(body)?;
    let meta = proto::meta_message("ObjectMeta").expect("ObjectMeta is described");
    match body.get("metadata") {
        None => Ok(()),
        Some(m) => field_value(kind, &Kind::Message(meta), m, &mut vec!["metadata".into()]),
    }
}

/// A JSON object whose `apiVersion` and `kind` are strings (the server
/// reads them first, to know what it decodes).
fn check_type_meta(body: &Value) -> Result<(), String> {
    let why = |v: &Value, field: &str| {
        let into = match field {
            "" => format!("Go value of type {TYPE_META}"),
            f => format!("Go struct field .{f} of type string"),
        };
        format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into {into}",
            json_type(v)
        )
    };
    let Some(o) = body.as_object() else {
        return Err(why(body, ""));
    };
    for f in ["apiVersion", "kind"] {
        if let Some(v) = o.get(f).filter(|v| !v.is_string() && !v.is_null()) {
            return Err(why(v, f));
        }
    }
    Ok(())
}

/// Go's name of a JSON value's type in its errors.
pub fn json_type(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn type_error(value: &str, structure: &str, path: &[String], go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {value} into Go struct field {structure}.{} of type {go_type}",
        path.join(".")
    )
}

/// Go's name of a message's struct type: `v1.LeaseSpec`, `intstr.IntOrString`.
fn go_message(m: &MessageDescriptor) -> String {
    let pkg = m.package_name().rsplit('.').next().unwrap_or("");
    format!("{pkg}.{}", m.name())
}

fn go_kind(k: &Kind) -> String {
    match k {
        Kind::Double => "float64".into(),
        Kind::Float => "float32".into(),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 | Kind::Enum(_) => "int32".into(),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => "int64".into(),
        Kind::Uint32 | Kind::Fixed32 => "uint32".into(),
        Kind::Uint64 | Kind::Fixed64 => "uint64".into(),
        Kind::Bool => "bool".into(),
        Kind::String => "string".into(),
        Kind::Bytes => "[]uint8".into(),
        Kind::Message(m) => match m.full_name() {
            n if is_string_list(n) => "[]string".into(),
            _ => go_message(m),
        },
    }
}

/// Named `[]string` types: a message of one repeated `items` in protobuf,
/// a plain list in JSON.
fn is_string_list(full_name: &str) -> bool {
    full_name == "k8s.io.apimachinery.pkg.apis.meta.v1.Verbs" || full_name.ends_with(".ExtraValue")
}

/// The fields of a message (`v` is an object); unknown fields are left alone.
fn message(desc: &MessageDescriptor, v: &Value, path: &mut Vec<String>) -> Result<(), String> {
    let Some(o) = v.as_object() else { return Ok(()) };
    for (k, val) in o {
        let Some(f) = desc.get_field_by_name(k) else {
            continue;
        };
        path.push(k.clone());
        field(desc.name(), &f, val, path)?;
        path.pop();
    }
    Ok(())
}

fn field(structure: &str, f: &FieldDescriptor, v: &Value, path: &mut Vec<String>) -> Result<(), String> {
    if v.is_null() {
        return Ok(());
    }
    if f.is_map() {
        let Kind::Message(entry) = f.kind() else {
            return Ok(());
        };
        let value_kind = entry.map_entry_value_field().kind();
        let Some(o) = v.as_object() else {
            let go = format!("map[string]{}", go_kind(&value_kind));
            return Err(type_error(&json_type(v), structure, path, &go));
        };
        return o
            .values()
            .try_for_each(|x| field_value(structure, &value_kind, x, path));
    }
    if f.is_list() {
        let Some(a) = v.as_array() else {
            let go = format!("[]{}", go_kind(&f.kind()));
            return Err(type_error(&json_type(v), structure, path, &go));
        };
        return a
            .iter()
            .try_for_each(|x| field_value(structure, &f.kind(), x, path));
    }
    field_value(structure, &f.kind(), v, path)
}

/// A number's text as Go quotes it (`number 1.5`) when it does not fit.
fn number_error(v: &Value, structure: &str, path: &[String], go: &str) -> String {
    type_error(&format!("number {v}"), structure, path, go)
}

fn integer(v: &Value, structure: &str, path: &[String], k: &Kind) -> Result<(), String> {
    let go = go_kind(k);
    if !v.is_number() {
        return Err(type_error(&json_type(v), structure, path, &go));
    }
    let fits = match go.as_str() {
        "int32" => v.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        "int64" => v.as_i64().is_some(),
        "uint32" => v.as_u64().is_some_and(|n| u32::try_from(n).is_ok()),
        _ => v.as_u64().is_some(),
    };
    match fits {
        true => Ok(()),
        false => Err(number_error(v, structure, path, &go)),
    }
}

/// One value of a field (an element of a list or map, or the field itself).
fn field_value(structure: &str, k: &Kind, v: &Value, path: &mut Vec<String>) -> Result<(), String> {
    let wrong = |go: &str| Err(type_error(&json_type(v), structure, path, go));
    if v.is_null() {
        return Ok(());
    }
    match k {
        Kind::String if !v.is_string() => wrong("string"),
        Kind::Bool if !v.is_boolean() => wrong("bool"),
        Kind::Double | Kind::Float if !v.is_number() => wrong(&go_kind(k)),
        Kind::Bytes => match v.as_str() {
            None => wrong("[]uint8"),
            Some(s) => base64(s),
        },
        Kind::Message(m) => special(structure, m, v, path),
        Kind::String | Kind::Bool | Kind::Double | Kind::Float => Ok(()),
        _ => integer(v, structure, path, k),
    }
}

/// Messages whose JSON form is not an object, then ordinary messages.
fn special(structure: &str, m: &MessageDescriptor, v: &Value, path: &mut Vec<String>) -> Result<(), String> {
    let wrong = |go: &str| Err(type_error(&json_type(v), structure, path, go));
    let name = m.full_name();
    match name.strip_prefix("k8s.io.apimachinery.pkg.") {
        Some("apis.meta.v1.Time") => match v.as_str() {
            None => wrong("string"),
            Some(s) => time(s, false),
        },
        Some("apis.meta.v1.MicroTime") => match v.as_str() {
            None => wrong("string"),
            Some(s) => time(s, true),
        },
        Some("apis.meta.v1.Duration") if !v.is_string() => wrong("string"),
        Some("apis.meta.v1.Duration") => Ok(()),
        Some("util.intstr.IntOrString") if v.is_string() => Ok(()),
        Some("util.intstr.IntOrString") => integer(v, structure, path, &Kind::Int32),
        Some("api.resource.Quantity") => match v {
            Value::String(s) => quantity(s.trim()),
            other => quantity(&other.to_string()),
        },
        Some("runtime.RawExtension" | "apis.meta.v1.FieldsV1") => Ok(()),
        _ if is_string_list(name) => match v.as_array() {
            None => wrong("[]string"),
            Some(a) => a
                .iter()
                .try_for_each(|x| field_value(structure, &Kind::String, x, path)),
        },
        _ if !v.is_object() => wrong(&go_message(m)),
        _ => message(m, v, path),
    }
}

/// `metav1.Time` (RFC 3339) and `metav1.MicroTime` (RFC 3339 with exactly
/// six fractional digits), as Go's `time.Parse` reads their layouts.
fn time(s: &str, micro: bool) -> Result<(), String> {
    let layout = if micro { RFC3339_MICRO } else { RFC3339 };
    let fail = || {
        Err(format!(
            "parsing time {s:?} as {layout:?}: cannot parse {s:?} as {layout:?}"
        ))
    };
    let b = s.as_bytes();
    if b.get(10) != Some(&b'T') || chrono::DateTime::parse_from_rfc3339(s).is_err() {
        return fail();
    }
    if micro {
        let digits = b
            .get(20..)
            .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count());
        if b.get(19) != Some(&b'.') || digits != 6 {
            return fail();
        }
    }
    Ok(())
}

/// `resource.ParseQuantity`: a decimal number and one known suffix (binary
/// `Ki`..`Ei`, decimal `n`..`E`, or an exponent `e3`).
fn quantity(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if !b[start..i].iter().any(u8::is_ascii_digit) {
        return Err(QUANTITY_FORMAT.into());
    }
    let suffix = &s[i..];
    let letters = suffix
        .find(|c: char| !"eEinumkKMGTP".contains(c))
        .unwrap_or(suffix.len());
    let rest = suffix[letters..].trim_start_matches(['+', '-']);
    if !rest.bytes().all(|c| c.is_ascii_digit()) || suffix[letters..].len() - rest.len() > 1 {
        return Err(QUANTITY_FORMAT.into());
    }
    let exponent = suffix.len() > 1
        && suffix.starts_with(['e', 'E'])
        && suffix[1..].trim_start_matches(['+', '-']).parse::<i32>().is_ok();
    let known = matches!(
        suffix,
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E"
    );
    match known || exponent {
        true => Ok(()),
        false => Err("unable to parse quantity's suffix".into()),
    }
}

/// `[]byte` fields: standard base64 with padding (line breaks skipped).
fn base64(s: &str) -> Result<(), String> {
    let kept: String = s.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    base64::engine::general_purpose::STANDARD
        .decode(&kept)
        .map(drop)
        .map_err(|e| {
            let at = match e {
                base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => at,
                _ => kept.len().saturating_sub(kept.len() % 4),
            };
            format!("illegal base64 data at input byte {at}")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use serde_json::json;

    fn check_kind(qualified: &str, body: Value) -> Result<(), String> {
        let r = Registry::with_builtins();
        let def = r.get(qualified).unwrap();
        check(def, &def.versions[0], &body)
    }

    #[test]
    fn refuses_wrong_types_in_a_lease_as_go_does() {
        let lease = |spec: Value| {
            check_kind(
                "leases.coordination.k8s.io",
                json!({"metadata": {"name": "l"}, "spec": spec}),
            )
        };
        assert_eq!(
            lease(json!({"leaseDurationSeconds": "abc"})).unwrap_err(),
            "json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32"
        );
        assert_eq!(
            lease(json!({"holderIdentity": 5})).unwrap_err(),
            "json: cannot unmarshal number into Go struct field LeaseSpec.spec.holderIdentity of type string"
        );
        let e = lease(json!({"renewTime": "garbage"})).unwrap_err();
        assert!(
            e.starts_with("parsing time \"garbage\" as \"2006-01-02T15:04:05.000000Z07:00\""),
            "{e}"
        );
        assert!(
            lease(json!({"renewTime": "2024-01-02T03:04:05Z"})).is_err(),
            "MicroTime wants microseconds"
        );
        assert_eq!(
            lease(json!({"leaseDurationSeconds": 1.5})).unwrap_err(),
            "json: cannot unmarshal number 1.5 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32"
        );
        assert_eq!(
            check_kind("leases.coordination.k8s.io", json!({"spec": "x"})).unwrap_err(),
            "json: cannot unmarshal string into Go struct field Lease.spec of type v1.LeaseSpec"
        );
        lease(json!({"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2024-01-02T03:04:05.123456Z",
            "acquireTime": null, "leaseTransitions": 0}))
        .unwrap();
    }

    #[test]
    fn configmaps_secrets_and_metadata() {
        assert_eq!(
            check_kind("configmaps", json!({"data": {"a": 5}})).unwrap_err(),
            "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
        );
        assert_eq!(
            check_kind("configmaps", json!({"data": ["a"]})).unwrap_err(),
            "json: cannot unmarshal array into Go struct field ConfigMap.data of type map[string]string"
        );
        assert_eq!(
            check_kind("secrets", json!({"data": {"a": "!!"}})).unwrap_err(),
            "illegal base64 data at input byte 0"
        );
        check_kind(
            "secrets",
            json!({"data": {"a": "YWJj"}, "stringData": {"b": "x"}}),
        )
        .unwrap();
        assert_eq!(
            check_kind("configmaps", json!({"metadata": {"labels": {"a": 1}}})).unwrap_err(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
        );
        assert!(check_kind("configmaps", json!({"metadata": "x"})).is_err());
        assert!(
            check_kind("configmaps", json!({"kind": 5}))
                .unwrap_err()
                .contains("Go struct field .kind of type string")
        );
        assert!(
            check_kind("configmaps", json!("x"))
                .unwrap_err()
                .starts_with("couldn't get version/kind")
        );
        check_kind(
            "configmaps",
            json!({"metadata": {"creationTimestamp": null, "name": "a"}, "unknown": 5}),
        )
        .unwrap();
    }

    #[test]
    fn pods_deployments_and_special_types() {
        let pod = json!({"spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "100m", "memory": 128}}}]},
            "status": {"startTime": "2024-01-02T03:04:05Z", "phase": "Running"}});
        check_kind("pods", pod).unwrap();
        assert_eq!(
            check_kind("pods", json!({"spec": {"containers": [{"name": 5}]}})).unwrap_err(),
            "json: cannot unmarshal number into Go struct field Container.spec.containers.name of type string"
        );
        assert_eq!(
            check_kind("pods", json!({"spec": {"containers": {"name": "c"}}})).unwrap_err(),
            "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"
        );
        assert_eq!(
            check_kind(
                "pods",
                json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "lots"}}}]}})
            )
            .unwrap_err(),
            QUANTITY_FORMAT
        );
        let d = json!({"spec": {"replicas": 2, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"creationTimestamp": null}}}});
        check_kind("deployments.apps", d).unwrap();
        assert_eq!(
            check_kind("deployments.apps", json!({"spec": {"replicas": "2"}})).unwrap_err(),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
        assert!(
            check_kind(
                "deployments.apps",
                json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": true}}}})
            )
            .is_err()
        );
        assert!(check_kind("namespaces", json!({"spec": {"finalizers": "kubernetes"}})).is_err());
        assert!(check_kind("events", json!({"count": "1"})).is_err());
        assert!(check_kind("events.events.k8s.io", json!({"eventTime": "yesterday"})).is_err());
        assert!(
            check_kind(
                "clusterroles.rbac.authorization.k8s.io",
                json!({"rules": [{"verbs": "get"}]})
            )
            .is_err()
        );
    }

    #[test]
    fn custom_resources_only_in_what_every_object_has() {
        let mut r = Registry::with_builtins();
        let crd = json!({"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
            "names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true}]}});
        let def = r.insert(crate::resources::from_crd(&crd).unwrap());
        check(&def, "v1", &json!({"spec": {"anything": [1, "x"]}})).unwrap();
        assert_eq!(
            check(&def, "v1", &json!({"metadata": "x"})).unwrap_err(),
            "json: cannot unmarshal string into Go struct field Widget.metadata of type v1.ObjectMeta"
        );
    }

    #[test]
    fn the_400s_say_what_could_not_be_handled() {
        let r = Registry::with_builtins();
        let lease = r.get("leases.coordination.k8s.io").unwrap();
        let body = json!({"spec": {"holderIdentity": 5}});
        let e = bad_request(lease, "v1", &body, &check(lease, "v1", &body).unwrap_err());
        assert_eq!((e.code, e.reason), (400, "BadRequest"));
        assert!(
            e.message
                .starts_with("Lease in version \"v1\" cannot be handled as a Lease: json: "),
            "{}",
            e.message
        );
        let body = json!({"kind": 5, "metadata": {"name": "a-rather-long-name-indeed"}});
        let e = bad_request(lease, "v1", &body, &check(lease, "v1", &body).unwrap_err());
        assert!(
            e.message.starts_with(
                "the object provided is unrecognized (must be of type Lease): couldn't get version/kind"
            ),
            "{}",
            e.message
        );
        assert!(e.message.ends_with(" ...)"), "{}", e.message);
    }

    #[test]
    fn quantities() {
        for ok in ["1", "0", "100m", "1.5Gi", "+2k", "1e3", "5E-2", ".5"] {
            quantity(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in ["", "lots", "1Q", "1..", "true", "1e", "1Kib"] {
            assert!(quantity(bad).is_err(), "{bad}");
        }
    }
}
