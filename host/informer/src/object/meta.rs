//! Where a cached object's metadata strings are: located once in its JSON
//! (by a borrowed parse; for a watched object, by the same pass that reads
//! its types and the watcher's metadata, which also finds the bytes of
//! `managedFields` for the cache to cut), held as byte ranges of that text,
//! moved back when bytes before them are cut, moved into a text of their own
//! when the JSON is compressed, or kept as owned strings when one was escaped
//! in the JSON. Owns only that representation; the accessors are on
//! [`CachedObject`](super::CachedObject).

use std::collections::BTreeMap;

/// What [`Meta::Spans`] holds for a generation that does not fit in it:
/// the generation is then read from the JSON.
pub(super) const GENERATION_ELSEWHERE: u32 = u32::MAX;

/// A byte range of an object's JSON text that holds one string value.
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    pub(super) start: u32,
    pub(super) end: u32,
}

/// Where the metadata strings are: byte ranges of the JSON text (always, for
/// valid Kubernetes objects), or their own strings when one was escaped in
/// the JSON and so cannot be sliced out of it.
#[derive(Debug, Clone)]
pub(super) enum Meta {
    Spans {
        namespace: Option<Span>,
        name: Span,
        uid: Span,
        resource_version: Span,
        /// Sorted by key.
        labels: Box<[(Span, Span)]>,
        /// `metadata.generation`, 0 when absent, [`GENERATION_ELSEWHERE`]
        /// when it does not fit (held in 4 bytes of what would be padding,
        /// so keeping it costs a cached object nothing).
        generation: u32,
    },
    Owned(Box<OwnedMeta>),
}

#[derive(Debug, Clone)]
pub(super) struct OwnedMeta {
    pub(super) namespace: Option<String>,
    pub(super) name: String,
    pub(super) uid: String,
    pub(super) resource_version: String,
    /// Sorted by key.
    pub(super) labels: Vec<(String, String)>,
    /// `metadata.generation`, 0 when absent.
    pub(super) generation: i64,
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
    #[serde(default)]
    generation: Option<i64>,
    /// Its text only, to cut (never parsed).
    #[serde(borrow, default, rename = "managedFields")]
    managed_fields: Option<&'a serde_json::value::RawValue>,
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
    #[serde(default)]
    generation: Option<i64>,
}

#[derive(serde::Deserialize)]
struct Top<M> {
    metadata: M,
}

/// An object's types and metadata as slices of its JSON text.
#[derive(serde::Deserialize)]
struct SlicedHead<'a> {
    #[serde(borrow, default, rename = "apiVersion")]
    api_version: Option<&'a str>,
    #[serde(borrow, default)]
    kind: Option<&'a str>,
    #[serde(borrow)]
    metadata: SlicedMeta<'a>,
}

/// What one pass over an object's JSON finds: its types, the metadata the
/// watcher reads, and what the cache needs ([`Found`]).
pub(super) struct Located<'a> {
    pub(super) api_version: Option<&'a str>,
    pub(super) kind: Option<&'a str>,
    pub(super) name: Option<&'a str>,
    pub(super) namespace: Option<&'a str>,
    pub(super) resource_version: Option<&'a str>,
    pub(super) uid: Option<&'a str>,
    pub(super) found: Found,
}

/// Where the cache's metadata strings are in an object's text, and the
/// bytes that hold `metadata.managedFields` (key, value and one comma: what
/// cutting them out of the text removes).
#[derive(Debug, Clone)]
pub(super) struct Found {
    pub(super) meta: Meta,
    pub(super) managed_fields: Option<Span>,
}

/// The bytes of `json` to cut to remove the member whose value is `value`
/// (a slice of `json`): from its key's opening quote to the value's end,
/// with the comma before it (or, for a first member, the one after).
fn member_cut(json: &str, value: &str) -> Option<Span> {
    let value_start = value.as_ptr() as usize - json.as_ptr() as usize;
    let value_end = value_start + value.len();
    let key_end = json[..value_start].trim_end().strip_suffix(':')?.trim_end();
    let key_start = key_end.strip_suffix('"')?.rfind('"')?;
    let before = json[..key_start].trim_end();
    let (start, end) = if before.ends_with(',') {
        (before.len() - 1, value_end)
    } else {
        let after = json[value_end..].trim_start();
        let comma = after
            .strip_prefix(',')
            .map_or(0, |rest| json.len() - rest.len() - value_end);
        (key_start, value_end + comma)
    };
    Some(Span {
        start: start as u32,
        end: end as u32,
    })
}

impl Meta {
    /// `json`'s types, metadata and metadata spans in one pass, or `None`
    /// when it has no metadata or one of those strings was escaped (then the
    /// text is read twice: for the watcher, and by [`Meta::locate`]).
    pub(super) fn locate_with_head(json: &str) -> Option<Located<'_>> {
        let head = serde_json::from_str::<SlicedHead<'_>>(json).ok()?;
        let m = head.metadata;
        let managed_fields = match m.managed_fields {
            Some(v) => Some(member_cut(json, v.get())?),
            None => None,
        };
        Some(Located {
            api_version: head.api_version,
            kind: head.kind,
            name: m.name,
            namespace: m.namespace,
            resource_version: m.resource_version,
            uid: m.uid,
            found: Found {
                meta: Meta::spans(json, m),
                managed_fields,
            },
        })
    }

    /// The same strings once `cut` was cut out of the text.
    pub(super) fn after_cut(mut self, cut: Span) -> Meta {
        let len = cut.end - cut.start;
        let shift = |s: &mut Span| {
            if s.start >= cut.end {
                s.start -= len;
                s.end -= len;
            }
        };
        if let Meta::Spans {
            namespace,
            name,
            uid,
            resource_version,
            labels,
            ..
        } = &mut self
        {
            namespace.iter_mut().for_each(shift);
            [name, uid, resource_version].into_iter().for_each(shift);
            for (k, v) in labels.iter_mut() {
                shift(k);
                shift(v);
            }
        }
        self
    }

    /// The spans of `m`'s strings, slices of `json`.
    fn spans(json: &str, m: SlicedMeta<'_>) -> Meta {
        let base = json.as_ptr() as usize;
        let span = |v: &str| {
            let start = (v.as_ptr() as usize - base) as u32;
            Span {
                start,
                end: start + v.len() as u32,
            }
        };
        let empty = Span { start: 0, end: 0 };
        Meta::Spans {
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
            generation: m
                .generation
                .map_or(0, |g| u32::try_from(g).unwrap_or(GENERATION_ELSEWHERE)),
        }
    }

    /// Locate the metadata in `json`.
    pub(super) fn locate(json: &str) -> Meta {
        if let Ok(Top { metadata: m }) = serde_json::from_str::<Top<SlicedMeta<'_>>>(json) {
            return Meta::spans(json, m);
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
            generation: m.generation.unwrap_or(0),
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
            ..
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
