//! Protobuf bodies: reading the Kubernetes protobuf envelope
//! (`application/vnd.kubernetes.protobuf`: the `k8s\0` prefix and a
//! `runtime.Unknown` around the object) of any built-in type into its JSON
//! form, and writing length-delimited fields (the OpenAPI v2 document).
//!
//! Messages are decoded with `prost-reflect` against the Kubernetes API's
//! published descriptors (`proto/k8s.fds`, the `generated.proto` files as
//! k8s.io/api registers them, extracted from kubectl by
//! `proto/extract.py`); no message is described by hand. The JSON follows
//! the API's JSON form: field names as declared (they are the JSON names),
//! `Time`/`MicroTime` as RFC 3339, `IntOrString`, `Quantity`,
//! `RawExtension` and the `[]string` wrappers as their JSON values, bytes
//! as base64. Fields Go marshals although empty (strings, lists, maps,
//! messages) are left out, as `omitempty` leaves them out of JSON. Go
//! marshals every non-pointer number and boolean, zero or not: the zeros
//! of those the Go types tag `omitempty` (`proto/omitzero.txt`, listed by
//! `proto/omitzero.py`) are left out as the real server's JSON leaves them
//! out; other zeros that were sent (a pointer's `replicas: 0`) are kept.
//! The structs Go embeds (`json:",inline"`: a Volume's `volumeSource`, an
//! IngressRule's `ingressRuleValue`, [`INLINE`]) are a field of their own
//! in protobuf and their fields are the parent's in JSON.
//!
//! Owns: the wire format and the descriptor pool. Must not touch: HTTP or
//! the store (callers decide what to do with the object).

use super::status::ApiError;
use base64::Engine;
use prost_reflect::{DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, ReflectMessage, Value as Pv};
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::sync::LazyLock;

/// The Kubernetes API's descriptors (see `proto/extract.py`).
static POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
    DescriptorPool::decode(&include_bytes!("../proto/k8s.fds")[..]).expect("the embedded descriptors decode")
});

/// `package.Message.field` of the non-pointer `omitempty` scalars (see
/// `proto/omitzero.py`): their zero is not in the JSON.
static OMIT_ZERO: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| include_str!("../proto/omitzero.txt").lines().collect());

/// `Message.field` (the message's name in any package) of the structs the
/// Go types embed: their fields are the message's own in JSON.
pub const INLINE: &[(&str, &str)] = &[
    ("IngressRule", "ingressRuleValue"),
    ("Volume", "volumeSource"),
    ("PersistentVolumeSpec", "persistentVolumeSource"),
    ("Probe", "handler"),
    ("EphemeralContainer", "ephemeralContainerCommon"),
    ("ConfigMapEnvSource", "localObjectReference"),
    ("ConfigMapKeySelector", "localObjectReference"),
    ("ConfigMapProjection", "localObjectReference"),
    ("ConfigMapVolumeSource", "localObjectReference"),
    ("SecretEnvSource", "localObjectReference"),
    ("SecretKeySelector", "localObjectReference"),
    ("SecretProjection", "localObjectReference"),
    ("NamedRuleWithOperations", "ruleWithOperations"),
    ("RuleWithOperations", "rule"),
    ("DeviceAllocationConfiguration", "deviceConfiguration"),
    ("DeviceClaimConfiguration", "deviceConfiguration"),
    ("DeviceClassConfiguration", "deviceConfiguration"),
];

const MAGIC: &[u8] = b"k8s\0";
const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

fn bad(why: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("unable to decode protobuf: {why}"))
}

/// The 415 of a type that has no protobuf form (custom resources, types
/// the descriptors lack).
fn unsupported(api_version: &str, kind: &str) -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: \
             application/json, application/yaml; got application/vnd.kubernetes.protobuf \
             (no protobuf form for {api_version}, Kind={kind})"
        ),
    )
}

/// The message of a kind: in the package of its API group version (the
/// group's first label, `apps`, `rbac` of `rbac.authorization.k8s.io`,
/// `core` for the core group), else meta.k8s.io/v1's (`DeleteOptions`).
pub fn message_for(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let pkg = match group.split('.').next().unwrap_or("") {
        "" => "core",
        g => g,
    };
    POOL.get_message_by_name(&format!("k8s.io.api.{pkg}.{version}.{kind}"))
        // Options sent to any group (DeleteOptions) are meta.k8s.io's.
        .or_else(|| POOL.get_message_by_name(&format!("{META}.{kind}")))
}

/// A message of meta.k8s.io/v1 (`ObjectMeta`).
pub fn meta_message(name: &str) -> Option<MessageDescriptor> {
    POOL.get_message_by_name(&format!("{META}.{name}"))
}

/// An object in the Kubernetes envelope, as JSON, with the envelope's
/// apiVersion and kind.
pub fn object(b: &[u8]) -> Result<Value, ApiError> {
    let inner = b.strip_prefix(MAGIC).ok_or_else(|| {
        ApiError::bad_request(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        )
    })?;
    let unknown = POOL
        .get_message_by_name("k8s.io.apimachinery.pkg.runtime.Unknown")
        .expect("runtime.Unknown is described");
    let envelope = DynamicMessage::decode(unknown, inner).map_err(bad)?;
    let text = |field: u32, inner: u32| {
        envelope
            .get_field_by_number(field)
            .and_then(|m| {
                m.as_message()?
                    .get_field_by_number(inner)?
                    .as_str()
                    .map(String::from)
            })
            .unwrap_or_default()
    };
    let (api_version, kind) = (text(1, 1), text(1, 2));
    let raw = envelope
        .get_field_by_number(2)
        .and_then(|v| v.as_bytes().cloned())
        .unwrap_or_default();
    let desc = message_for(&api_version, &kind).ok_or_else(|| unsupported(&api_version, &kind))?;
    let msg = DynamicMessage::decode(desc, raw).map_err(bad)?;
    let mut obj = match message(&msg) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    Ok(Value::Object(obj))
}

/// Go's `time.Time.IsZero` seconds since the Unix epoch.
const GO_ZERO_TIME: i64 = -62_135_596_800;

fn time(m: &DynamicMessage, micros: bool) -> Value {
    let secs = m.get_field_by_number(1).and_then(|v| v.as_i64()).unwrap_or(0);
    let nanos = m.get_field_by_number(2).and_then(|v| v.as_i32()).unwrap_or(0);
    if (secs == 0 && nanos == 0 && m.fields().next().is_none()) || secs == GO_ZERO_TIME {
        return Value::Null;
    }
    let Some(t) = chrono::DateTime::from_timestamp(secs, nanos.max(0) as u32) else {
        return Value::Null;
    };
    let format = if micros {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    json!(t.format(format).to_string())
}

/// A message as the API's JSON.
fn message(m: &DynamicMessage) -> Value {
    let name = m.descriptor().full_name().to_string();
    let field = |n: u32| m.get_field_by_number(n).map(|v| v.into_owned());
    match name.strip_prefix("k8s.io.apimachinery.pkg.") {
        Some("apis.meta.v1.Time") => return time(m, false),
        Some("apis.meta.v1.MicroTime") => return time(m, true),
        Some("util.intstr.IntOrString") => {
            let is_string = field(1).and_then(|v| v.as_i64()) == Some(1);
            return match is_string {
                true => json!(
                    field(3)
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default()
                ),
                false => json!(field(2).and_then(|v| v.as_i32()).unwrap_or(0)),
            };
        }
        Some("api.resource.Quantity") => {
            return json!(
                field(1)
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            );
        }
        Some("runtime.RawExtension" | "apis.meta.v1.FieldsV1") => {
            let raw = field(1).and_then(|v| v.as_bytes().cloned()).unwrap_or_default();
            return serde_json::from_slice(&raw).unwrap_or(Value::Null);
        }
        Some("apis.meta.v1.Duration") => {
            let ns = field(1).and_then(|v| v.as_i64()).unwrap_or(0);
            return json!(format!("{}s", ns as f64 / 1e9));
        }
        _ => {}
    }
    // Named `[]string` types (`Verbs`, `ExtraValue`) are a message of one
    // repeated `items` in protobuf and a plain list in JSON.
    if name == format!("{META}.Verbs") || name.ends_with(".ExtraValue") {
        return field(1).map(|v| value(&v)).unwrap_or(json!([]));
    }
    let simple = m.descriptor().name().to_string();
    let mut out = Map::new();
    for (f, v) in m.fields() {
        let j = value(v);
        let zero = matches!(&j, Value::Bool(false)) || j.as_i64() == Some(0) || j.as_u64() == Some(0);
        let empty = match &j {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty() && !f.is_map(),
            _ => zero && OMIT_ZERO.contains(format!("{name}.{}", f.name()).as_str()),
        };
        match j {
            _ if empty => {}
            Value::Object(inner) if INLINE.contains(&(simple.as_str(), f.name())) => out.extend(inner),
            j => {
                out.insert(f.name().to_string(), j);
            }
        }
    }
    Value::Object(out)
}

fn key(k: &MapKey) -> String {
    match k {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
        MapKey::String(s) => s.clone(),
    }
}

fn value(v: &Pv) -> Value {
    match v {
        Pv::Bool(b) => json!(b),
        Pv::I32(n) | Pv::EnumNumber(n) => json!(n),
        Pv::I64(n) => json!(n),
        Pv::U32(n) => json!(n),
        Pv::U64(n) => json!(n),
        Pv::F32(n) => json!(n),
        Pv::F64(n) => json!(n),
        Pv::String(s) => json!(s),
        Pv::Bytes(b) => json!(base64::engine::general_purpose::STANDARD.encode(b)),
        Pv::Message(m) => message(m),
        Pv::List(items) => Value::Array(items.iter().map(value).collect()),
        Pv::Map(entries) => {
            // Sorted keys, as Go's encoding/json writes maps.
            let mut sorted: Vec<(String, Value)> = entries.iter().map(|(k, v)| (key(k), value(v))).collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(sorted.into_iter().collect())
        }
    }
}

/// Append a length-delimited field (string, bytes or message).
pub fn put(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    prost::encoding::bytes::encode(field, &bytes.to_vec(), out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object in the envelope, as client-go writes it.
    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut tm = Vec::new();
        put(&mut tm, 1, api_version.as_bytes());
        put(&mut tm, 2, kind.as_bytes());
        let mut out = MAGIC.to_vec();
        put(&mut out, 1, &tm);
        put(&mut out, 2, raw);
        put(&mut out, 3, b"");
        put(&mut out, 4, b"");
        out
    }

    /// `raw` encoded through the descriptors from a JSON-like description:
    /// the test builds messages with prost-reflect rather than by hand.
    fn encode(full_name: &str, build: impl FnOnce(&mut DynamicMessage)) -> Vec<u8> {
        use prost::Message;
        let mut m = DynamicMessage::new(POOL.get_message_by_name(full_name).unwrap());
        build(&mut m);
        m.encode_to_vec()
    }

    fn msg(full_name: &str, build: impl FnOnce(&mut DynamicMessage)) -> Pv {
        let mut m = DynamicMessage::new(POOL.get_message_by_name(full_name).unwrap());
        build(&mut m);
        Pv::Message(m)
    }

    fn meta(name: &str) -> Pv {
        msg(&format!("{META}.ObjectMeta"), |m| {
            m.set_field_by_name("name", Pv::String(name.into()));
            m.set_field_by_name("namespace", Pv::String(String::new()));
            m.set_field_by_name("generateName", Pv::String(String::new()));
            m.set_field_by_name("creationTimestamp", msg(&format!("{META}.Time"), |_| {}));
            let labels = [(MapKey::String("app".into()), Pv::String("web".into()))];
            m.set_field_by_name("labels", Pv::Map(labels.into_iter().collect()));
        })
    }

    #[test]
    fn reads_a_namespace_and_a_secret() {
        let ns = encode("k8s.io.api.core.v1.Namespace", |m| {
            m.set_field_by_name("metadata", meta("x"));
            m.set_field_by_name("spec", msg("k8s.io.api.core.v1.NamespaceSpec", |_| {}));
        });
        let v = object(&envelope("v1", "Namespace", &ns)).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "x", "labels": {"app": "web"}}})
        );
        let secret = encode("k8s.io.api.core.v1.Secret", |m| {
            m.set_field_by_name("metadata", meta("s"));
            let data = [(MapKey::String("a".into()), Pv::Bytes(b"b".to_vec().into()))];
            m.set_field_by_name("data", Pv::Map(data.into_iter().collect()));
            m.set_field_by_name("type", Pv::String("Opaque".into()));
        });
        let v = object(&envelope("v1", "Secret", &secret)).unwrap();
        assert_eq!(v["data"], json!({"a": "Yg=="}));
        assert_eq!(v["type"], "Opaque");
    }

    #[test]
    fn reads_a_deployment_with_special_types() {
        let d = encode("k8s.io.api.apps.v1.Deployment", |m| {
            m.set_field_by_name("metadata", meta("web"));
            m.set_field_by_name(
                "spec",
                msg("k8s.io.api.apps.v1.DeploymentSpec", |s| {
                    s.set_field_by_name("replicas", Pv::I32(0));
                    s.set_field_by_name(
                        "strategy",
                        msg("k8s.io.api.apps.v1.DeploymentStrategy", |st| {
                            st.set_field_by_name(
                                "rollingUpdate",
                                msg("k8s.io.api.apps.v1.RollingUpdateDeployment", |r| {
                                    r.set_field_by_name(
                                        "maxSurge",
                                        msg("k8s.io.apimachinery.pkg.util.intstr.IntOrString", |i| {
                                            i.set_field_by_name("type", Pv::I64(1));
                                            i.set_field_by_name("strVal", Pv::String("25%".into()));
                                        }),
                                    );
                                }),
                            );
                        }),
                    );
                }),
            );
        });
        let v = object(&envelope("apps/v1", "Deployment", &d)).unwrap();
        assert_eq!(v["spec"]["replicas"], 0, "a zero that was sent is kept");
        assert_eq!(v["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert!(v["metadata"].get("creationTimestamp").is_none());
    }

    #[test]
    fn embedded_structs_are_inlined() {
        let ing = encode("k8s.io.api.networking.v1.Ingress", |m| {
            m.set_field_by_name("metadata", meta("ing"));
            let rule = msg("k8s.io.api.networking.v1.IngressRule", |r| {
                r.set_field_by_name("host", Pv::String("a.example.com".into()));
                let value = msg("k8s.io.api.networking.v1.IngressRuleValue", |v| {
                    let http = msg("k8s.io.api.networking.v1.HTTPIngressRuleValue", |h| {
                        let path = msg("k8s.io.api.networking.v1.HTTPIngressPath", |p| {
                            p.set_field_by_name("path", Pv::String("/".into()));
                        });
                        h.set_field_by_name("paths", Pv::List(vec![path]));
                    });
                    v.set_field_by_name("http", http);
                });
                r.set_field_by_name("ingressRuleValue", value);
            });
            let spec = msg("k8s.io.api.networking.v1.IngressSpec", |s| {
                s.set_field_by_name("rules", Pv::List(vec![rule]));
            });
            m.set_field_by_name("spec", spec);
        });
        let v = object(&envelope("networking.k8s.io/v1", "Ingress", &ing)).unwrap();
        assert_eq!(
            v["spec"]["rules"],
            json!([{"host": "a.example.com", "http": {"paths": [{"path": "/"}]}}])
        );
        let pod = encode("k8s.io.api.core.v1.Pod", |m| {
            let volume = msg("k8s.io.api.core.v1.Volume", |vol| {
                vol.set_field_by_name("name", Pv::String("cfg".into()));
                let source = msg("k8s.io.api.core.v1.VolumeSource", |src| {
                    let cm = msg("k8s.io.api.core.v1.ConfigMapVolumeSource", |c| {
                        let r = msg("k8s.io.api.core.v1.LocalObjectReference", |r| {
                            r.set_field_by_name("name", Pv::String("settings".into()));
                        });
                        c.set_field_by_name("localObjectReference", r);
                    });
                    src.set_field_by_name("configMap", cm);
                });
                vol.set_field_by_name("volumeSource", source);
            });
            let spec = msg("k8s.io.api.core.v1.PodSpec", |s| {
                s.set_field_by_name("volumes", Pv::List(vec![volume]));
            });
            m.set_field_by_name("spec", spec);
        });
        let v = object(&envelope("v1", "Pod", &pod)).unwrap();
        assert_eq!(
            v["spec"]["volumes"],
            json!([{"name": "cfg", "configMap": {"name": "settings"}}])
        );
    }

    #[test]
    fn zeros_go_marshals_are_left_out_where_json_omits_them() {
        let d = encode("k8s.io.api.apps.v1.Deployment", |m| {
            let container = msg("k8s.io.api.core.v1.Container", |c| {
                c.set_field_by_name("name", Pv::String("web".into()));
                c.set_field_by_name("stdin", Pv::Bool(false));
                c.set_field_by_name("tty", Pv::Bool(true));
            });
            let template = msg("k8s.io.api.core.v1.PodTemplateSpec", |t| {
                let tm = msg(&format!("{META}.ObjectMeta"), |om| {
                    om.set_field_by_name("generation", Pv::I64(0));
                });
                t.set_field_by_name("metadata", tm);
                let spec = msg("k8s.io.api.core.v1.PodSpec", |s| {
                    s.set_field_by_name("hostNetwork", Pv::Bool(false));
                    s.set_field_by_name("terminationGracePeriodSeconds", Pv::I64(0));
                    s.set_field_by_name("containers", Pv::List(vec![container]));
                });
                t.set_field_by_name("spec", spec);
            });
            let spec = msg("k8s.io.api.apps.v1.DeploymentSpec", |s| {
                s.set_field_by_name("replicas", Pv::I32(0));
                s.set_field_by_name("minReadySeconds", Pv::I32(0));
                s.set_field_by_name("paused", Pv::Bool(false));
                s.set_field_by_name("template", template);
            });
            m.set_field_by_name("spec", spec);
        });
        let v = object(&envelope("apps/v1", "Deployment", &d)).unwrap();
        assert_eq!(
            v["spec"],
            json!({"replicas": 0, "template": {"spec": {"terminationGracePeriodSeconds": 0,
                "containers": [{"name": "web", "tty": true}]}}}),
            "pointers' zeros are kept, omitempty scalars' zeros are not"
        );
    }

    #[test]
    fn times_and_quantities() {
        let t = msg(&format!("{META}.Time"), |m| {
            m.set_field_by_name("seconds", Pv::I64(1_700_000_000));
        });
        assert_eq!(value(&t), json!("2023-11-14T22:13:20Z"));
        let q = msg("k8s.io.apimachinery.pkg.api.resource.Quantity", |m| {
            m.set_field_by_name("string", Pv::String("100m".into()));
        });
        assert_eq!(value(&q), json!("100m"));
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        let e = object(&envelope("example.com/v1", "Widget", b"")).unwrap_err();
        assert_eq!((e.code, e.reason), (415, "UnsupportedMediaType"));
        assert!(e.message.contains("example.com/v1, Kind=Widget"), "{}", e.message);
        assert_eq!(object(b"{}").unwrap_err().code, 400);
        let ns = encode("k8s.io.api.core.v1.Namespace", |m| {
            m.set_field_by_name("metadata", meta("x"));
        });
        let e = object(&envelope("v1", "Namespace", &ns[..ns.len() - 3])).unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[test]
    fn reads_delete_options_sent_to_any_group() {
        let opts = encode(&format!("{META}.DeleteOptions"), |m| {
            m.set_field_by_name("propagationPolicy", Pv::String("Foreground".into()));
        });
        let v = object(&envelope("apps/v1", "DeleteOptions", &opts)).unwrap();
        assert_eq!(v["propagationPolicy"], "Foreground");
    }

    #[test]
    fn writes_long_fields() {
        let mut out = Vec::new();
        put(&mut out, 2, &[7u8; 300]);
        assert_eq!(&out[..3], &[0x12, 0xac, 0x02]);
    }
}
