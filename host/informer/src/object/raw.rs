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

use super::meta::{Found, Meta, Span};
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
    /// Where the cache's metadata strings and `managedFields` are in
    /// `json`, found by the same pass that read `metadata` (none when that
    /// pass could not slice them).
    pub(super) found: Option<Found>,
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
        if let Some(l) = Meta::locate_with_head(&json) {
            let owned = |s: Option<&str>| s.map(str::to_string);
            let types = match (l.api_version, l.kind) {
                (Some(api_version), Some(kind)) => Some(TypeMeta {
                    api_version: api_version.to_string(),
                    kind: kind.to_string(),
                }),
                _ => None,
            };
            let untyped = l.api_version.is_none() && l.kind.is_none();
            let metadata = ObjectMeta {
                name: owned(l.name),
                namespace: owned(l.namespace),
                resource_version: owned(l.resource_version),
                uid: owned(l.uid),
                ..ObjectMeta::default()
            };
            return Ok(RawObject {
                types,
                metadata,
                untyped,
                found: Some(l.found),
                json,
            });
        }
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
            found: None,
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
/// (values copied as text). `Err` when the text is not an object with
/// plain keys (the caller then goes through a `Value`).
pub(super) fn cached_text(
    json: Box<str>,
    types: Option<&TypeMeta>,
    untyped: bool,
    managed_fields: Option<Span>,
    type_name: &TypeName,
    policy: CachePolicy,
) -> Result<Cached, Box<str>> {
    // The common cases, told by a substring search instead of a parse: the
    // server's text already is what the cache holds, or lacks only its
    // apiVersion and kind (a list's item), which go in front, or only its
    // managedFields (every object a real server sends has them), where the
    // decoding found them.
    let found = |f: &memchr::memmem::Finder| f.find(json.as_bytes()).is_some();
    let managed = policy.managed_fields && found(&finders().managed_fields);
    let last_applied = policy.last_applied && found(&finders().last_applied);
    let keeps = !managed && !last_applied;
    let typed = types.is_some_and(|t| t.api_version == type_name.api_version && t.kind == type_name.kind);
    if typed && keeps {
        return Ok(Cached::AsSent(json.into_string()));
    }
    if typed
        && managed
        && !last_applied
        && let Some(cut) = managed_fields
    {
        let (start, end) = (cut.start as usize, cut.end as usize);
        let mut out = String::with_capacity(json.len() - (end - start));
        out.push_str(&json[..start]);
        out.push_str(&json[end..]);
        return Ok(Cached::Cut(out, cut));
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
        return Ok(Cached::Rewritten(out));
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
        return Ok(Cached::AsSent(json.into_string()));
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
    Ok(Cached::Rewritten(out))
}

/// The text the cache holds: the server's own (so what was located in it
/// still holds), the server's with one span cut out (what was located after
/// it moved back by the cut's length), or a rewrite of it.
pub(super) enum Cached {
    AsSent(String),
    Cut(String, Span),
    Rewritten(String),
}

#[cfg(test)]
impl Cached {
    /// The text.
    pub(super) fn into_string(self) -> String {
        match self {
            Cached::AsSent(s) | Cached::Cut(s, _) | Cached::Rewritten(s) => s,
        }
    }
}

#[cfg(test)]
mod tests;
