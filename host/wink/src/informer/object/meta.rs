//! Where a cached object's metadata strings are: located once in its JSON
//! (by a borrowed parse), held as byte ranges of that text, moved into a text
//! of their own when the JSON is compressed, or kept as owned strings when
//! one was escaped in the JSON. Owns only that representation; the accessors
//! are on [`CachedObject`](super::CachedObject).

use std::collections::BTreeMap;

/// A byte range of an object's JSON text that holds one string value.
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    pub(super) start: u32,
    pub(super) end: u32,
}

/// Where the metadata strings are: byte ranges of the JSON text (always, for
/// valid Kubernetes objects), or their own strings when one was escaped in
/// the JSON and so cannot be sliced out of it.
#[derive(Debug)]
pub(super) enum Meta {
    Spans {
        namespace: Option<Span>,
        name: Span,
        uid: Span,
        resource_version: Span,
        /// Sorted by key.
        labels: Box<[(Span, Span)]>,
    },
    Owned(Box<OwnedMeta>),
}

#[derive(Debug)]
pub(super) struct OwnedMeta {
    pub(super) namespace: Option<String>,
    pub(super) name: String,
    pub(super) uid: String,
    pub(super) resource_version: String,
    /// Sorted by key.
    pub(super) labels: Vec<(String, String)>,
}

/// The metadata strings as slices of the JSON text; deserializing fails if
/// one of them was escaped there.
#[derive(serde::Deserialize)]
struct SlicedMeta<'a> {
    #[serde(borrow, default)]
    namespace: Option<&'a str>,
    #[serde(borrow, default)]
    name: Option<&'a str>,
    #[serde(borrow, default)]
    uid: Option<&'a str>,
    #[serde(borrow, default, rename = "resourceVersion")]
    resource_version: Option<&'a str>,
    #[serde(borrow, default)]
    labels: Option<BTreeMap<&'a str, &'a str>>,
}

/// The same metadata, unescaped into owned strings.
#[derive(serde::Deserialize)]
struct UnescapedMeta {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(serde::Deserialize)]
struct Top<M> {
    metadata: M,
}

impl Meta {
    /// Locate the metadata in `json`.
    pub(super) fn locate(json: &str) -> Meta {
        let base = json.as_ptr() as usize;
        let span = |v: &str| {
            let start = (v.as_ptr() as usize - base) as u32;
            Span {
                start,
                end: start + v.len() as u32,
            }
        };
        let empty = Span { start: 0, end: 0 };
        if let Ok(Top { metadata: m }) = serde_json::from_str::<Top<SlicedMeta<'_>>>(json) {
            return Meta::Spans {
                namespace: m.namespace.map(span),
                name: m.name.map_or(empty, span),
                uid: m.uid.map_or(empty, span),
                resource_version: m.resource_version.map_or(empty, span),
                labels: m
                    .labels
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (span(k), span(v)))
                    .collect(),
            };
        }
        let m = serde_json::from_str::<Top<UnescapedMeta>>(json)
            .expect("the JSON was just serialized from an object with metadata")
            .metadata;
        Meta::Owned(Box::new(OwnedMeta {
            namespace: m.namespace,
            name: m.name.unwrap_or_default(),
            uid: m.uid.unwrap_or_default(),
            resource_version: m.resource_version.unwrap_or_default(),
            labels: m.labels.unwrap_or_default().into_iter().collect(),
        }))
    }

    /// Copy the strings the spans point at in `json` into one text, and point
    /// the spans at it instead.
    pub(super) fn relocate(&mut self, json: &str) -> Box<str> {
        let Meta::Spans {
            namespace,
            name,
            uid,
            resource_version,
            labels,
        } = self
        else {
            return Box::from("");
        };
        let len = |s: &Span| (s.end - s.start) as usize;
        let size = namespace.as_ref().map_or(0, len)
            + len(name)
            + len(uid)
            + len(resource_version)
            + labels.iter().map(|(k, v)| len(k) + len(v)).sum::<usize>();
        let mut text = String::with_capacity(size);
        let mut move_span = |span: &mut Span| {
            let start = text.len() as u32;
            text.push_str(&json[span.start as usize..span.end as usize]);
            *span = Span {
                start,
                end: text.len() as u32,
            };
        };
        if let Some(ns) = namespace {
            move_span(ns);
        }
        move_span(name);
        move_span(uid);
        move_span(resource_version);
        for (k, v) in labels.iter_mut() {
            move_span(k);
            move_span(v);
        }
        text.into_boxed_str()
    }
}
