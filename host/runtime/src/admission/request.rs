//! [`AdmissionRequest`]: an `admission.k8s.io/v1` AdmissionRequest as the
//! runtime holds it. Its members are JSON, but for its objects (`object`,
//! `oldObject`), which are kept as the text the API server sent: that text
//! becomes the guest's cache object with one copy, and is parsed into a
//! tree only where one is needed (a mutation's patch, an audit result's
//! subject). Owns reading a request; the guest's view of it is
//! [`super::review`]'s.

use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::OnceLock;
use wink_informer::ObjRef;

/// An AdmissionRequest: its members but the objects, and the objects' text.
#[derive(Debug, Clone)]
pub struct AdmissionRequest {
    /// Every member of the request but `object` and `oldObject`.
    fields: Value,
    /// `object`, when it is a JSON object.
    object: Option<Box<str>>,
    /// `oldObject`, when it is a JSON object.
    old_object: Option<Box<str>>,
    /// The objects as the guests' cache objects (or why they are none),
    /// made by the first plugin asked: a shared webhook's plugins all read
    /// the same ones.
    typed: OnceLock<Result<Typed, String>>,
}

/// `object` and `oldObject` as cache objects.
pub(crate) type Typed = (Option<ObjRef>, Option<ObjRef>);

/// An object member's text, when it is a JSON object (`null`, or anything
/// else, is no object).
fn object_text(raw: &RawValue) -> Option<Box<str>> {
    let text = raw.get();
    text.starts_with('{').then(|| text.into())
}

impl AdmissionRequest {
    /// Read the text of a review's `request` member; the error says why it
    /// is not a JSON object.
    pub fn parse(text: &str) -> Result<AdmissionRequest, String> {
        // One pass over the text; a request it refuses is read again the
        // slow way, for the error's words.
        if text.trim_start().starts_with('{')
            && let Ok(OnePass(request)) = serde_json::from_str::<OnePass>(text)
        {
            return Ok(request);
        }
        Self::parse_by_member(text)
    }

    /// [`AdmissionRequest::parse`], member by member: each one's text
    /// found, then read.
    fn parse_by_member(text: &str) -> Result<AdmissionRequest, String> {
        let members: HashMap<String, &RawValue> =
            serde_json::from_str(text).map_err(|e| format!("the request is not a JSON object: {e}"))?;
        let mut fields = serde_json::Map::new();
        let (mut object, mut old_object) = (None, None);
        for (key, raw) in members {
            match key.as_str() {
                "object" => object = object_text(raw),
                "oldObject" => old_object = object_text(raw),
                _ => {
                    let value =
                        serde_json::from_str(raw.get()).map_err(|e| format!("the request's {key}: {e}"))?;
                    fields.insert(key, value);
                }
            }
        }
        Ok(AdmissionRequest {
            fields: Value::Object(fields),
            object,
            old_object,
            typed: OnceLock::new(),
        })
    }

    /// A request given as a JSON tree (a `wink test` case's).
    pub fn from_value(mut request: Value) -> AdmissionRequest {
        let mut take = |key: &str| {
            request
                .as_object_mut()
                .and_then(|m| m.remove(key))
                .filter(Value::is_object)
                .map(|o| o.to_string().into_boxed_str())
        };
        let (object, old_object) = (take("object"), take("oldObject"));
        AdmissionRequest {
            fields: request,
            object,
            old_object,
            typed: OnceLock::new(),
        }
    }

    /// The objects as cache objects: `make`'s, the first time.
    pub(crate) fn typed(&self, make: impl FnOnce() -> Result<Typed, String>) -> Result<Typed, String> {
        self.typed.get_or_init(make).clone()
    }

    /// Every member but the objects.
    pub fn fields(&self) -> &Value {
        &self.fields
    }

    /// `object`'s text, when the request carries one.
    pub fn object(&self) -> Option<&str> {
        self.object.as_deref()
    }

    /// `oldObject`'s text, when the request carries one.
    pub fn old_object(&self) -> Option<&str> {
        self.old_object.as_deref()
    }

    /// Whether the request will not be persisted (`dryRun`, as
    /// `kubectl --dry-run=server` asks).
    pub fn dry_run(&self) -> bool {
        self.fields
            .get("dryRun")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `object` as a tree (`null` when there is none).
    pub fn object_value(&self) -> Value {
        self.object()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null)
    }

    /// `oldObject` as a tree (`null` when there is none).
    pub fn old_object_value(&self) -> Value {
        self.old_object()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null)
    }
}

/// A request read in one pass: the objects' text kept, every other member
/// read as JSON (a later member of the same name replacing an earlier
/// one, as [`AdmissionRequest::parse_by_member`] reads them).
struct OnePass(AdmissionRequest);

impl<'de> serde::Deserialize<'de> for OnePass {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(OnePassVisitor)
    }
}

struct OnePassVisitor;

impl<'de> serde::de::Visitor<'de> for OnePassVisitor {
    type Value = OnePass;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an AdmissionRequest object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<OnePass, A::Error> {
        let mut fields = serde_json::Map::new();
        let (mut object, mut old_object) = (None, None);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "object" => object = object_text(map.next_value::<&'de RawValue>()?),
                "oldObject" => old_object = object_text(map.next_value::<&'de RawValue>()?),
                _ => {
                    let value: Value = map.next_value()?;
                    fields.insert(key.into_owned(), value);
                }
            }
        }
        Ok(OnePass(AdmissionRequest {
            fields: Value::Object(fields),
            object,
            old_object,
            typed: OnceLock::new(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_cache_objects_are_made_once_for_every_plugin_asked() {
        let r = AdmissionRequest::parse(r#"{"operation":"CREATE","object":{"kind":"Pod"}}"#).unwrap();
        let made = std::sync::atomic::AtomicUsize::new(0);
        let make = || {
            made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok((None, None))
        };
        for _ in 0..3 {
            assert!(r.typed(make).unwrap().0.is_none());
        }
        assert_eq!(made.into_inner(), 1);
    }

    #[test]
    fn the_objects_are_kept_as_sent_and_the_rest_as_json() {
        let text = r#"{"uid":"u","operation":"UPDATE","object":{"metadata":{"name":"a"},  "x":1},
                       "oldObject":null,"dryRun":true,"options":{"kind":"UpdateOptions"}}"#;
        let r = AdmissionRequest::parse(text).unwrap();
        assert_eq!(r.object(), Some(r#"{"metadata":{"name":"a"},  "x":1}"#));
        assert_eq!(r.old_object(), None);
        assert_eq!(
            r.fields(),
            &json!({"uid": "u", "operation": "UPDATE", "dryRun": true, "options": {"kind": "UpdateOptions"}})
        );
        assert_eq!(r.object_value(), json!({"metadata": {"name": "a"}, "x": 1}));
        assert_eq!(r.old_object_value(), Value::Null);
        for bad in ["[1]", "{", r#"{"uid": }"#] {
            assert!(AdmissionRequest::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn one_pass_reads_what_member_by_member_does() {
        let text = r#"{"uid":"u","name":"a","name":"b","object":{"k":"\u00e9"},"oldObject":{"o":1},
                       "userInfo":{"username":"x","groups":["g"]},"options":null}"#;
        let fast = AdmissionRequest::parse(text).unwrap();
        let slow = AdmissionRequest::parse_by_member(text).unwrap();
        assert_eq!(fast.fields(), slow.fields());
        assert_eq!(fast.fields()["name"], "b", "the later member");
        assert_eq!(fast.object(), slow.object());
        assert_eq!(fast.object(), Some(r#"{"k":"\u00e9"}"#), "kept as sent");
        assert_eq!(fast.old_object(), slow.old_object());
        let err = AdmissionRequest::parse(r#"{"uid": 1, "kind": }"#).unwrap_err();
        assert!(err.contains("not a JSON object"), "{err}");
    }

    #[test]
    fn a_tree_is_split_the_same_way() {
        let tree = json!({"uid": "u", "object": {"a": 1}, "oldObject": {"b": 2}, "name": "n"});
        let r = AdmissionRequest::from_value(tree.clone());
        assert_eq!(r.fields(), &json!({"uid": "u", "name": "n"}));
        assert_eq!(r.object_value(), json!({"a": 1}));
        assert_eq!(r.old_object_value(), json!({"b": 2}));
        let parsed = AdmissionRequest::parse(&tree.to_string()).unwrap();
        assert_eq!(parsed.fields(), r.fields());
        assert_eq!(parsed.object_value(), r.object_value());
    }
}
