//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and a
//! schemaless approximation of strategic merge patch.
//!
//! Owns: turning (current object, patch body, content type) into the new
//! object. Must not touch: storage, preconditions, metadata stamping.

use super::status::ApiError;
use serde_json::Value;

/// The patch flavours, by request `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(ct: &str) -> Option<PatchType> {
        let base = ct.split(';').next().unwrap_or("").trim();
        match base {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// A parsed PATCH body (parsed once, before the store is locked).
#[derive(Debug)]
pub struct Patch {
    doc: PatchDoc,
    resource_version: Option<String>,
}

#[derive(Debug)]
enum PatchDoc {
    Json(json_patch::Patch),
    Merge(Value),
    Strategic(Value),
}

impl Patch {
    pub fn parse(body: &[u8], ty: PatchType) -> Result<Patch, ApiError> {
        let bad = |e: String| ApiError::bad_request(e);
        let v: Value = if ty == PatchType::Apply {
            serde_norway::from_slice(body).map_err(|e| bad(e.to_string()))?
        } else {
            serde_json::from_slice(body).map_err(|e| bad(e.to_string()))?
        };
        let resource_version = if ty == PatchType::Json {
            v.as_array().and_then(|ops| {
                ops.iter().find_map(|op| {
                    (op.get("path")?.as_str()? == "/metadata/resourceVersion")
                        .then(|| op.get("value")?.as_str().map(String::from))
                        .flatten()
                })
            })
        } else {
            v.pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(String::from)
        };
        // What the API server's patchers refuse before applying: a merge
        // patch neither object nor list, a strategic or apply patch that
        // is not an object (a list merge patch leaves a list: 422 on apply).
        let doc = match ty {
            PatchType::Json => PatchDoc::Json(serde_json::from_value(v).map_err(|e| bad(e.to_string()))?),
            PatchType::Merge if !v.is_object() && !v.is_array() => {
                return Err(bad("Invalid JSON Patch".into()));
            }
            PatchType::Strategic if !v.is_object() => return Err(bad("invalid JSON document".into())),
            PatchType::Apply if !v.is_object() => {
                return Err(bad(format!(
                    "error decoding YAML: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    super::decode::json_type(&v)
                )));
            }
            PatchType::Merge | PatchType::Apply => PatchDoc::Merge(v),
            PatchType::Strategic => PatchDoc::Strategic(v),
        };
        Ok(Patch {
            doc,
            resource_version,
        })
    }

    /// The `metadata.resourceVersion` the patch sets, if any (a precondition).
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// Apply the patch to `current`.
    pub fn apply(&self, current: &Value) -> Result<Value, ApiError> {
        let mut out = current.clone();
        match &self.doc {
            PatchDoc::Json(p) => {
                json_patch::patch(&mut out, p).map_err(|_| ApiError {
                    details: Some(serde_json::json!({})),
                    ..ApiError::new(
                        422,
                        "Invalid",
                        "the server rejected our request due to an error in our request",
                    )
                })?;
            }
            PatchDoc::Merge(p) => json_patch::merge(&mut out, p),
            PatchDoc::Strategic(p) => strategic_merge(&mut out, p),
        }
        // What every object must still be; the caller checks the rest of its type.
        let kind = current.get("kind").and_then(Value::as_str).unwrap_or("");
        super::decode::check_object(kind, &out).map_err(|why| undecodable(&out, &why))?;
        Ok(out)
    }
}

/// The API server's answer when the patched object does not decode: 422
/// Invalid on the field `patch`, against no kind (` "" is invalid: patch:
/// Invalid value: "<the patched object>": <why>`).
pub fn undecodable(patched: &Value, why: &str) -> ApiError {
    let shown = Value::String(patched.to_string());
    ApiError::invalid_field("", "", "", "patch", &format!("Invalid value: {shown}: {why}"))
}

fn named(v: &Value) -> Option<&str> {
    v.get("name").and_then(Value::as_str)
}

/// Strategic merge without schemas: maps merge (null deletes, `$patch:
/// replace|delete` honoured), lists of objects that all carry a `name` merge
/// by that key (`$patch: delete` on an element removes it), other lists are
/// replaced; `$setElementOrder/...` and `$retainKeys` directives are ignored.
pub fn strategic_merge(target: &mut Value, patch: &Value) {
    let Value::Object(pm) = patch else {
        *target = patch.clone();
        return;
    };
    match pm.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut p = pm.clone();
            p.remove("$patch");
            *target = Value::Object(p);
            return;
        }
        Some("delete") => {
            *target = Value::Null;
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let tm = target.as_object_mut().expect("object");
    for (k, pv) in pm {
        if k.starts_with("$setElementOrder/")
            || k.starts_with("$deleteFromPrimitiveList/")
            || k == "$retainKeys"
            || k == "$patch"
        {
            continue;
        }
        if pv.is_null() {
            tm.remove(k);
            continue;
        }
        match (tm.get_mut(k), pv) {
            (Some(tv @ Value::Object(_)), Value::Object(_)) => strategic_merge(tv, pv),
            (Some(Value::Array(ta)), Value::Array(pa))
                if !pa.is_empty()
                    && pa.iter().all(|e| named(e).is_some())
                    && ta.iter().all(|e| named(e).is_some()) =>
            {
                for pe in pa {
                    let name = named(pe).expect("named");
                    let delete = pe.get("$patch").and_then(Value::as_str) == Some("delete");
                    let pos = ta.iter().position(|e| named(e) == Some(name));
                    match (pos, delete) {
                        (Some(i), true) => {
                            ta.remove(i);
                        }
                        (Some(i), false) => strategic_merge(&mut ta[i], pe),
                        (None, false) => {
                            let mut e = Value::Object(Default::default());
                            strategic_merge(&mut e, pe);
                            ta.push(e);
                        }
                        (None, true) => {}
                    }
                }
            }
            _ => {
                let mut v = Value::Null;
                if pv.is_object() {
                    strategic_merge(&mut v, pv);
                } else {
                    v = pv.clone();
                }
                tm.insert(k.clone(), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(current: &Value, body: &[u8], ty: PatchType) -> Result<Value, ApiError> {
        Patch::parse(body, ty)?.apply(current)
    }

    #[test]
    fn merge_json_and_strategic() {
        let cur = json!({"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"name":"c","image":"x"},{"name":"d","image":"y"}]}});
        let m = apply(
            &cur,
            br#"{"metadata":{"labels":{"a":null,"c":"3"}}}"#,
            PatchType::Merge,
        )
        .unwrap();
        assert_eq!(m["metadata"]["labels"], json!({"b":"2","c":"3"}));
        let j = apply(
            &cur,
            br#"[{"op":"replace","path":"/metadata/labels/a","value":"9"}]"#,
            PatchType::Json,
        )
        .unwrap();
        assert_eq!(j["metadata"]["labels"]["a"], "9");
        assert_eq!(
            apply(&cur, br#"[{"op":"test","path":"/x","value":1}]"#, PatchType::Json)
                .unwrap_err()
                .code,
            422
        );
        let s = apply(
            &cur,
            br#"{"spec":{"containers":[{"name":"d","image":"z"},{"name":"c","$patch":"delete"}]}}"#,
            PatchType::Strategic,
        )
        .unwrap();
        assert_eq!(s["spec"]["containers"], json!([{"name":"d","image":"z"}]));
        assert_eq!(
            PatchType::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchType::Merge)
        );
    }

    #[test]
    fn a_patch_that_is_no_patch_or_leaves_no_object_is_refused() {
        let cur = json!({"kind": "ConfigMap", "metadata": {"name": "a"}});
        for (body, ty, why) in [
            (&br#""x""#[..], PatchType::Merge, "Invalid JSON Patch"),
            (b"5", PatchType::Merge, "Invalid JSON Patch"),
            (b"null", PatchType::Merge, "Invalid JSON Patch"),
            (b"[1,2]", PatchType::Strategic, "invalid JSON document"),
            (
                b"x",
                PatchType::Apply,
                "error decoding YAML: json: cannot unmarshal string into Go value",
            ),
        ] {
            let e = apply(&cur, body, ty).unwrap_err();
            assert_eq!((e.code, e.reason), (400, "BadRequest"), "{ty:?}");
            assert!(e.message.starts_with(why), "{ty:?}: {}", e.message);
        }
        let cases: [(&[u8], PatchType); 5] = [
            (b"[1,2]", PatchType::Merge),
            (br#"{"metadata":"x"}"#, PatchType::Merge),
            (br#"{"metadata":"x"}"#, PatchType::Strategic),
            (br#"[{"op":"replace","path":"","value":5}]"#, PatchType::Json),
            (b"metadata: [1]", PatchType::Apply),
        ];
        for (body, ty) in cases {
            let e = apply(&cur, body, ty).unwrap_err();
            let what = String::from_utf8_lossy(body);
            assert_eq!((e.code, e.reason), (422, "Invalid"), "{what}");
            assert!(
                e.message.starts_with(" \"\" is invalid: patch: Invalid value: "),
                "{what}: {}",
                e.message
            );
            assert_eq!(e.details.as_ref().unwrap()["causes"][0]["field"], "patch");
        }
        let e = apply(&cur, b"[1,2]", PatchType::Merge).unwrap_err();
        assert!(e.message.ends_with("couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"), "{}", e.message);
        let e = apply(&cur, br#"{"metadata":"x"}"#, PatchType::Merge).unwrap_err();
        assert!(
            e.message.ends_with(
                "json: cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta"
            ),
            "{}",
            e.message
        );
        apply(&cur, br#"{"metadata":null}"#, PatchType::Merge).unwrap();
    }
}
