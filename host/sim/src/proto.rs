//! The little protobuf the simulator speaks: reading the Kubernetes protobuf
//! envelope (`application/vnd.kubernetes.protobuf`: the `k8s\0` prefix and a
//! `runtime.Unknown` around the object) of the types listed here into their
//! JSON form, and writing length-delimited fields (the OpenAPI v2 document).
//! Fields not named in a message's table are skipped, as a proto2 reader
//! skips unknown fields.
//!
//! Owns: the wire format and the message tables. Must not touch: HTTP or
//! the store (callers pick the table and answer).

use super::status::ApiError;
use serde_json::{Map, Value};

/// A field's JSON name and type, by field number.
pub type Message = &'static [(u64, &'static str, Ty)];

#[derive(Debug, Clone, Copy)]
pub enum Ty {
    Str,
    Msg(Message),
}

const TYPE_META: Message = &[(1, "apiVersion", Ty::Str), (2, "kind", Ty::Str)];
const OBJECT_META: Message = &[
    (1, "name", Ty::Str),
    (2, "generateName", Ty::Str),
    (3, "namespace", Ty::Str),
];
const SELECTOR: Message = &[(1, "rawSelector", Ty::Str)];
const RESOURCE_ATTRIBUTES: Message = &[
    (1, "namespace", Ty::Str),
    (2, "verb", Ty::Str),
    (3, "group", Ty::Str),
    (4, "version", Ty::Str),
    (5, "resource", Ty::Str),
    (6, "subresource", Ty::Str),
    (7, "name", Ty::Str),
    (8, "fieldSelector", Ty::Msg(SELECTOR)),
    (9, "labelSelector", Ty::Msg(SELECTOR)),
];
const NON_RESOURCE_ATTRIBUTES: Message = &[(1, "path", Ty::Str), (2, "verb", Ty::Str)];

/// authorization.k8s.io/v1 SelfSubjectAccessReview (status is not read).
pub const SELF_SUBJECT_ACCESS_REVIEW: Message = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (
        2,
        "spec",
        Ty::Msg(&[
            (1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES)),
            (2, "nonResourceAttributes", Ty::Msg(NON_RESOURCE_ATTRIBUTES)),
        ]),
    ),
];

/// authorization.k8s.io/v1 SelfSubjectRulesReview (status is not read).
pub const SELF_SUBJECT_RULES_REVIEW: Message = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "spec", Ty::Msg(&[(1, "namespace", Ty::Str)])),
];

const MAGIC: &[u8] = b"k8s\0";

fn bad(why: &str) -> ApiError {
    ApiError::bad_request(format!("unable to decode protobuf: {why}"))
}

fn varint(b: &[u8], i: &mut usize) -> Result<u64, ApiError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i).ok_or_else(|| bad("unexpected EOF"))?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(bad("varint overflow"))
}

/// One field of a message: number, wire type, and the bytes of a
/// length-delimited field (empty for the others).
type Field<'a> = (u64, u64, &'a [u8]);

/// The fields of one message.
fn fields(b: &[u8]) -> Result<Vec<Field<'_>>, ApiError> {
    let (mut i, mut out) = (0, Vec::new());
    while i < b.len() {
        let tag = varint(b, &mut i)?;
        let (num, wire) = (tag >> 3, tag & 7);
        let value: &[u8] = match wire {
            0 => {
                varint(b, &mut i)?;
                &[]
            }
            1 | 5 => {
                i += if wire == 1 { 8 } else { 4 };
                &[]
            }
            2 => {
                let n = usize::try_from(varint(b, &mut i)?).map_err(|_| bad("length overflow"))?;
                let end = i
                    .checked_add(n)
                    .filter(|e| *e <= b.len())
                    .ok_or_else(|| bad("unexpected EOF"))?;
                let v = &b[i..end];
                i = end;
                v
            }
            _ => return Err(bad(&format!("illegal wireType {wire}"))),
        };
        out.push((num, wire, value));
    }
    if i > b.len() {
        return Err(bad("unexpected EOF"));
    }
    Ok(out)
}

/// One message as a JSON object.
pub fn message(b: &[u8], table: Message) -> Result<Value, ApiError> {
    let mut out = Map::new();
    for (num, wire, v) in fields(b)? {
        let Some((_, name, ty)) = table.iter().find(|(n, _, _)| *n == num) else {
            continue;
        };
        if wire != 2 {
            return Err(bad(&format!("wrong wireType {wire} for field {name}")));
        }
        let value = match ty {
            Ty::Str => Value::String(String::from_utf8(v.to_vec()).map_err(|_| bad("invalid UTF-8"))?),
            Ty::Msg(t) => message(v, t)?,
        };
        out.insert(name.to_string(), value);
    }
    Ok(Value::Object(out))
}

/// An object in the Kubernetes envelope, read with `table`, with the
/// envelope's apiVersion and kind.
pub fn object(b: &[u8], table: Message) -> Result<Value, ApiError> {
    let inner = b.strip_prefix(MAGIC).ok_or_else(|| {
        ApiError::bad_request(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        )
    })?;
    let (mut type_meta, mut raw) = (Value::Object(Map::new()), &[][..]);
    for (num, _, v) in fields(inner)? {
        match num {
            1 => type_meta = message(v, TYPE_META)?,
            2 => raw = v,
            _ => {}
        }
    }
    let mut obj = message(raw, table)?;
    for k in ["apiVersion", "kind"] {
        if let Some(v) = type_meta.get(k) {
            obj[k] = v.clone();
        }
    }
    Ok(obj)
}

/// Append a length-delimited field (string, bytes or message).
pub fn put(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    let mut put_varint = |mut v: u64| {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    };
    put_varint((field << 3) | 2);
    put_varint(bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A SelfSubjectAccessReview as client-go encodes it.
    fn ssar() -> Vec<u8> {
        let mut attrs = Vec::new();
        put(&mut attrs, 1, b"default");
        put(&mut attrs, 2, b"create");
        put(&mut attrs, 5, b"pods");
        let mut spec = Vec::new();
        put(&mut spec, 1, &attrs);
        let mut raw = Vec::new();
        put(&mut raw, 1, &[0x42, 0x00]); // metadata: a null creationTimestamp
        put(&mut raw, 2, &spec);
        put(&mut raw, 3, &[0x08, 0x00]); // status: allowed false (a varint)
        let mut tm = Vec::new();
        put(&mut tm, 1, b"authorization.k8s.io/v1");
        put(&mut tm, 2, b"SelfSubjectAccessReview");
        let mut out = MAGIC.to_vec();
        put(&mut out, 1, &tm);
        put(&mut out, 2, &raw);
        put(&mut out, 3, b"");
        put(&mut out, 4, b"");
        out
    }

    #[test]
    fn reads_an_enveloped_review() {
        let v = object(&ssar(), SELF_SUBJECT_ACCESS_REVIEW).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "metadata": {}, "spec": {"resourceAttributes":
                    {"namespace": "default", "verb": "create", "resource": "pods"}}})
        );
        assert_eq!(object(b"{}", SELF_SUBJECT_ACCESS_REVIEW).unwrap_err().code, 400);
        let truncated = ssar();
        let e = object(&truncated[..truncated.len() - 20], SELF_SUBJECT_ACCESS_REVIEW).unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[test]
    fn writes_long_fields() {
        let mut out = Vec::new();
        put(&mut out, 2, &[7u8; 300]);
        assert_eq!(&out[..3], &[0x12, 0xac, 0x02]);
        assert_eq!(fields(&out).unwrap()[0].2.len(), 300);
    }
}
