//! [`RawObject`]: what kube-runtime's watcher decodes for wink. It keeps the
//! object's JSON text as the API server sent it, plus the few metadata
//! fields the watcher itself reads (name, namespace, resourceVersion, uid),
//! instead of a `serde_json::Value` tree: the cache holds text anyway, so an
//! event is scanned, not rebuilt.
//!
//! Owns the decoding and the one rewrite the cache policy needs (stripping
//! `managedFields` and the last-applied annotation, adding apiVersion and
//! kind to list items), done on the text's top-level members without
//! parsing their values.

use super::{CachePolicy, LAST_APPLIED, TypeName};
use kube::api::ApiResource;
use kube::core::{ObjectMeta, TypeMeta};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// The name under which serde_json hands out a value's raw text (the way
/// its own `RawValue` asks for it). Any other deserializer gets an ordinary
/// map, which is transcoded member by member (kube's paged lists go through
/// serde's buffering because of a flattened field).
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// One watched object: its JSON text and the metadata the watcher reads.
#[derive(Clone, Debug)]
pub struct RawObject {
    /// apiVersion and kind, when the object carried them (list items may not).
    pub types: Option<TypeMeta>,
    /// name, namespace, resourceVersion and uid only.
    pub metadata: ObjectMeta,
    /// The object as the server sent it.
    pub json: Box<str>,
    /// Neither apiVersion nor kind was in the text (a list's item).
    pub untyped: bool,
}

impl kube::Resource for RawObject {
    type DynamicType = ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Gets an object's text: raw from serde_json, re-serialized otherwise.
struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Box<str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Box<str>, A::Error> {
        let Some(first) = map.next_key::<Cow<'de, str>>()? else {
            return Ok("{}".into());
        };
        if first == RAW_TOKEN {
            let text: Cow<'de, str> = map.next_value()?;
            return Ok(text.into());
        }
        // Any other deserializer (serde's buffering, for kube's paged
        // lists) hands out the members: each is transcoded to JSON text as
        // it is visited, with no tree built in between.
        let mut out = Vec::with_capacity(1024);
        out.push(b'{');
        let mut key = first;
        loop {
            serde_json::to_writer(&mut out, key.as_ref()).map_err(de::Error::custom)?;
            out.push(b':');
            map.next_value_seed(WriteJson(&mut out))?;
            match map.next_key::<Cow<'de, str>>()? {
                Some(next) => {
                    out.push(b',');
                    key = next;
                }
                None => break,
            }
        }
        out.push(b'}');
        let text = String::from_utf8(out).map_err(de::Error::custom)?;
        Ok(text.into_boxed_str())
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Box<str>, D::Error> {
        d.deserialize_map(self)
    }
}

/// Writes the value it is given as JSON text onto a buffer.
struct WriteJson<'a>(&'a mut Vec<u8>);

impl<'de> de::DeserializeSeed<'de> for WriteJson<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let mut ser = serde_json::Serializer::new(&mut *self.0);
        serde_transcode::transcode(d, &mut ser).map_err(de::Error::custom)
    }
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default, rename = "apiVersion")]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    metadata: HeadMeta,
}

#[derive(Deserialize, Default)]
struct HeadMeta {
    name: Option<String>,
    namespace: Option<String>,
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
    uid: Option<String>,
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let json = d.deserialize_newtype_struct(RAW_TOKEN, TextVisitor)?;
        let head: Head = serde_json::from_str(&json).map_err(de::Error::custom)?;
        let untyped = head.api_version.is_none() && head.kind.is_none();
        let types = match (head.api_version, head.kind) {
            (Some(api_version), Some(kind)) => Some(TypeMeta {
                api_version: api_version.into_owned(),
                kind: kind.into_owned(),
            }),
            _ => None,
        };
        let m = head.metadata;
        Ok(RawObject {
            types,
            metadata: ObjectMeta {
                name: m.name,
                namespace: m.namespace,
                resource_version: m.resource_version,
                uid: m.uid,
                ..ObjectMeta::default()
            },
            json,
            untyped,
        })
    }
}

impl Serialize for RawObject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(&self.json).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

/// `{"apiVersion":...,"kind":...` (the object's opening, its types).
fn push_types(out: &mut String, type_name: &TypeName) {
    out.push_str("{\"apiVersion\":");
    out.push_str(&quoted(&type_name.api_version));
    out.push_str(",\"kind\":");
    out.push_str(&quoted(&type_name.kind));
}

/// A JSON string literal.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// Searchers for what the cache strips, built once (SIMD substring search
/// with its tables made up front, not per object).
struct Finders {
    managed_fields: memchr::memmem::Finder<'static>,
    last_applied: memchr::memmem::Finder<'static>,
}

fn finders() -> &'static Finders {
    static FINDERS: std::sync::OnceLock<Finders> = std::sync::OnceLock::new();
    FINDERS.get_or_init(|| Finders {
        managed_fields: memchr::memmem::Finder::new("\"managedFields\""),
        last_applied: memchr::memmem::Finder::new(LAST_APPLIED),
    })
}

/// The text the cache holds for `obj`: the server's text when it already
/// is that (typed, nothing to strip), else its top-level members rewritten
/// (values copied as text). `None` when the text is not an object with
/// plain keys (the caller then goes through a `Value`).
pub(super) fn cached_text(
    json: Box<str>,
    types: Option<&TypeMeta>,
    untyped: bool,
    type_name: &TypeName,
    policy: CachePolicy,
) -> Result<String, Box<str>> {
    // The common cases, told by a substring search instead of a parse: the
    // server's text already is what the cache holds, or lacks only its
    // apiVersion and kind (a list's item), which go in front.
    let found = |f: &memchr::memmem::Finder| f.find(json.as_bytes()).is_some();
    let strips = (policy.managed_fields && found(&finders().managed_fields))
        || (policy.last_applied && found(&finders().last_applied));
    let keeps = !strips;
    let typed = types.is_some_and(|t| t.api_version == type_name.api_version && t.kind == type_name.kind);
    if typed && keeps {
        return Ok(json.into_string());
    }
    if untyped
        && keeps
        && let Some(members) = json.strip_prefix('{').map(str::trim_start)
    {
        let mut out = String::with_capacity(json.len() + 64);
        push_types(&mut out, type_name);
        if !members.starts_with('}') {
            out.push(',');
        }
        out.push_str(members);
        return Ok(out);
    }
    let Ok(top) = serde_json::from_str::<BTreeMap<&str, &RawValue>>(&json) else {
        return Err(json);
    };
    let meta: BTreeMap<&str, &RawValue> = match top.get("metadata") {
        Some(m) => match serde_json::from_str(m.get()) {
            Ok(m) => m,
            Err(_) => return Err(json),
        },
        None => BTreeMap::new(),
    };
    let same = |key: &str, want: &str| top.get(key).is_some_and(|v| v.get().trim_matches('"') == want);
    let typed = same("apiVersion", &type_name.api_version) && same("kind", &type_name.kind);
    let managed = policy.managed_fields && meta.contains_key("managedFields");
    let mut annotations: Option<BTreeMap<&str, &RawValue>> = None;
    if policy.last_applied
        && let Some(a) = meta.get("annotations")
        && a.get().contains(LAST_APPLIED)
    {
        match serde_json::from_str::<BTreeMap<&str, &RawValue>>(a.get()) {
            Ok(mut a) => {
                a.remove(LAST_APPLIED);
                annotations = Some(a);
            }
            Err(_) => return Err(json),
        }
    }
    if typed && !managed && annotations.is_none() {
        return Ok(json.into_string());
    }
    let mut out = String::with_capacity(json.len() + 64);
    push_types(&mut out, type_name);
    out.push_str(",\"metadata\":{");
    let mut first = true;
    for (k, v) in &meta {
        if *k == "managedFields" && policy.managed_fields {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&quoted(k));
        out.push(':');
        match (*k, &annotations) {
            ("annotations", Some(a)) => {
                out.push('{');
                for (i, (ak, av)) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&quoted(ak));
                    out.push(':');
                    out.push_str(av.get());
                }
                out.push('}');
            }
            _ => out.push_str(v.get()),
        }
    }
    out.push('}');
    for (k, v) in &top {
        if matches!(*k, "apiVersion" | "kind" | "metadata") {
            continue;
        }
        out.push(',');
        out.push_str(&quoted(k));
        out.push(':');
        out.push_str(v.get());
    }
    out.push('}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::WatchEvent;

    fn type_name() -> TypeName {
        TypeName {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        }
    }

    #[test]
    fn a_watch_event_keeps_the_servers_text_and_the_watchers_metadata() {
        let line = r#"{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"7","uid":"u"},"data":{"k":"v \u00e9"}}}"#;
        let WatchEvent::Modified(o) =
            serde_json::from_slice::<WatchEvent<RawObject>>(line.as_bytes()).unwrap()
        else {
            panic!("a MODIFIED event")
        };
        // The raw path: the text is exactly the server's, escapes included.
        assert!(o.json.contains(r#""k":"v \u00e9""#), "{}", o.json);
        assert_eq!(o.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(o.types.as_ref().unwrap().kind, "ConfigMap");
        assert!(!o.untyped);
        let text = cached_text(
            o.json.clone(),
            o.types.as_ref(),
            o.untyped,
            &type_name(),
            CachePolicy::default(),
        )
        .unwrap();
        assert_eq!(text, &*o.json, "typed and nothing to strip: used as it is");
    }

    #[test]
    fn a_list_item_decodes_through_serdes_buffering_too() {
        let list = r#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"3"},"data":{"k":"v"}}]}"#;
        let list: kube::core::ObjectList<RawObject> = serde_json::from_str(list).unwrap();
        let item = &list.items[0];
        assert!(item.types.is_none() && item.untyped);
        assert_eq!(item.metadata.name.as_deref(), Some("a"));
        let text = cached_text(
            item.json.clone(),
            None,
            true,
            &type_name(),
            CachePolicy::default(),
        )
        .unwrap();
        // Its types go in front of the members as they came.
        assert_eq!(
            text,
            format!(r#"{{"apiVersion":"v1","kind":"ConfigMap",{}"#, &item.json[1..])
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["data"]["k"], "v");
        // An item with something to strip is rewritten instead.
        let json = r#"{"metadata":{"name":"a","managedFields":[{}]},"data":{"k":"v"}}"#;
        let text = cached_text(json.into(), None, true, &type_name(), CachePolicy::default()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (v["kind"].as_str(), v["metadata"].get("managedFields")),
            (Some("ConfigMap"), None)
        );
        // An empty object gets its types alone.
        let text = cached_text("{ }".into(), None, true, &type_name(), CachePolicy::default()).unwrap();
        assert_eq!(text, r#"{"apiVersion":"v1","kind":"ConfigMap"}"#);
    }

    #[test]
    fn buffered_items_are_transcoded_exactly_and_in_order() {
        let item = r#"{"metadata":{"name":"b","namespace":"ns","resourceVersion":"4","labels":{"z":"1","a":"2"}},"spec":{"n":-3,"big":18446744073709551615,"f":1.5,"ok":true,"none":null,"list":[1,[2,{"x":"q\"uote\u00e9\n"}],[]],"empty":{}}}"#;
        let list = format!(r#"{{"apiVersion":"v1","kind":"PodList","metadata":{{}},"items":[{item}]}}"#);
        let list: kube::core::ObjectList<RawObject> = serde_json::from_str(&list).unwrap();
        let text = &*list.items[0].json;
        let want: serde_json::Value = serde_json::from_str(item).unwrap();
        let got: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(got, want);
        // Members keep the server's order (labels z before a).
        assert!(
            text.find("\"z\"").unwrap() < text.find("\"a\"").unwrap(),
            "{text}"
        );
        assert!(text.starts_with(r#"{"metadata":"#), "{text}");
    }

    #[test]
    fn managed_fields_and_last_applied_are_cut_from_the_text() {
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a","managedFields":[{{"manager":"kubectl"}}],"annotations":{{"{LAST_APPLIED}":"{{}}","keep":"x"}}}},"data":{{"k":"v"}}}}"#
        );
        let typed = TypeMeta {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        };
        let text = cached_text(
            json.clone().into(),
            Some(&typed),
            false,
            &type_name(),
            CachePolicy::default(),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v["metadata"].get("managedFields").is_none());
        assert_eq!(v["metadata"]["annotations"], serde_json::json!({"keep": "x"}));
        assert_eq!(v["data"]["k"], "v");
        let keep = CachePolicy {
            managed_fields: false,
            last_applied: false,
            compress: false,
        };
        assert_eq!(
            cached_text(json.clone().into(), Some(&typed), false, &type_name(), keep).unwrap(),
            json
        );
    }
}
