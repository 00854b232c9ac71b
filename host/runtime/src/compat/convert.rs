//! Conversions between `wink:plugin@0.3.0`'s types and the current ones:
//! the same records and variants field by field; what 0.3.0 lacks gets the
//! value that keeps its meaning.

use crate::bindings::types as t4;
use crate::bindings::v3;
use crate::bindings::v3::wink::plugin::{events as e3, report as r3, write as w3};
use crate::bindings::wink::plugin::{events as e4, report as r4, write as w4};
use v3::types as t3;

/// Same-named unit variants of two enums.
macro_rules! same_enum {
    ($from:ty => $to:ty { $($v:ident),* $(,)? }) => {
        impl From<$from> for $to {
            fn from(x: $from) -> $to {
                match x { $(<$from>::$v => <$to>::$v),* }
            }
        }
    };
}

same_enum!(t3::Level => t4::Level { Trace, Debug, Info, Warn, Error });
same_enum!(t3::Verb => t4::Verb { Create, Update, Patch, Delete });
same_enum!(w3::Propagation => w4::Propagation { Orphan, Background, Foreground });
same_enum!(e3::EventType => e4::EventType { Normal, Warning });
same_enum!(r3::Outcome => r4::Outcome { Pass, Fail, Warn, Error, Skip });
same_enum!(r3::Severity => r4::Severity { Info, Low, Medium, High, Critical });

impl From<t3::ResourceType> for t4::ResourceType {
    fn from(r: t3::ResourceType) -> Self {
        t4::ResourceType {
            api_version: r.api_version,
            kind: r.kind,
        }
    }
}

impl From<t4::ObjectMeta> for t3::ObjectMeta {
    fn from(m: t4::ObjectMeta) -> Self {
        t3::ObjectMeta {
            api_version: m.api_version,
            kind: m.kind,
            namespace: m.namespace,
            name: m.name,
            uid: m.uid,
            resource_version: m.resource_version,
            labels: m.labels,
        }
    }
}

impl From<t4::Answer> for t3::Answer {
    fn from(a: t4::Answer) -> Self {
        t3::Answer {
            keys: a.keys,
            objects: a.objects,
        }
    }
}

impl From<t4::CacheError> for t3::CacheError {
    fn from(e: t4::CacheError) -> Self {
        match e {
            t4::CacheError::NotPermitted(s) => t3::CacheError::NotPermitted(s),
            t4::CacheError::UnknownIndex(s) => t3::CacheError::UnknownIndex(s),
            t4::CacheError::InvalidArgument(s) => t3::CacheError::InvalidArgument(s),
        }
    }
}

fn status(s: t4::ApiStatus) -> t3::ApiStatus {
    t3::ApiStatus {
        code: s.code,
        reason: s.reason,
        message: s.message,
        causes: s
            .causes
            .into_iter()
            .map(|c| t3::StatusCause {
                reason: c.reason,
                message: c.message,
                field: c.field,
            })
            .collect(),
        retry_after_seconds: s.retry_after_seconds,
    }
}

impl From<t4::WriteError> for t3::WriteError {
    fn from(e: t4::WriteError) -> Self {
        use t3::WriteError as O;
        use t4::WriteError as N;
        match e {
            N::AlreadyExists(s) => O::AlreadyExists(status(s)),
            N::Conflict(s) => O::Conflict(status(s)),
            N::NotFound(s) => O::NotFound(status(s)),
            N::Invalid(s) => O::Invalid(status(s)),
            N::Forbidden(s) => O::Forbidden(status(s)),
            N::TooManyRequests(s) => O::TooManyRequests(status(s)),
            N::Timeout(s) => O::Timeout(status(s)),
            N::InternalError(s) => O::InternalError(status(s)),
            N::Other(s) => O::Other(status(s)),
            N::NotPermitted(s) => O::NotPermitted(s),
            N::InvalidArgument(s) => O::InvalidArgument(s),
            N::Unavailable(s) => O::Unavailable(s),
        }
    }
}

impl From<w3::PatchType> for w4::PatchType {
    fn from(p: w3::PatchType) -> Self {
        match p {
            w3::PatchType::Merge => w4::PatchType::Merge,
            w3::PatchType::Json => w4::PatchType::Json,
            w3::PatchType::StrategicMerge => w4::PatchType::StrategicMerge,
            w3::PatchType::Apply(force) => w4::PatchType::Apply(force),
        }
    }
}

impl From<w3::DeleteOptions> for w4::DeleteOptions {
    fn from(o: w3::DeleteOptions) -> Self {
        w4::DeleteOptions {
            uid: o.uid,
            resource_version: o.resource_version,
            propagation: o.propagation.map(Into::into),
        }
    }
}

impl From<r3::PolicyResult> for r4::PolicyResult {
    fn from(r: r3::PolicyResult) -> Self {
        r4::PolicyResult {
            policy: r.policy,
            rule: r.rule,
            outcome: r.outcome.into(),
            severity: r.severity.map(Into::into),
            category: r.category,
            message: r.message,
            properties: r.properties,
        }
    }
}

fn index(i: t3::Index) -> t4::Index {
    t4::Index {
        name: i.name,
        by: match i.by {
            t3::IndexBy::Label(k) => t4::IndexBy::Label(k),
            t3::IndexBy::Annotation(k) => t4::IndexBy::Annotation(k),
            t3::IndexBy::OwnerUid => t4::IndexBy::OwnerUid,
            t3::IndexBy::OwnerKindName => t4::IndexBy::OwnerKindName,
            t3::IndexBy::Field(p) => t4::IndexBy::Field(p),
        },
    }
}

/// A 0.3.0 registration as the current one that means the same: every
/// update delivered, no queue, no admission, initial lists as they arrive,
/// the plugin named after its file.
pub fn registration(r: t3::Registration) -> t4::Registration {
    t4::Registration {
        name: None,
        watches: r
            .watches
            .into_iter()
            .map(|w| t4::Watch {
                resource: w.resource.into(),
                namespace: w.namespace,
                label_selector: w.label_selector,
                field_selector: w.field_selector,
                resync_seconds: w.resync_seconds,
                indexes: w.indexes.into_iter().map(index).collect(),
                updates_when: Vec::new(),
                enqueue: t4::Enqueue::None,
            })
            .collect(),
        reads: r
            .reads
            .into_iter()
            .map(|d| t4::Read {
                resource: d.resource.into(),
                namespace: d.namespace,
                label_selector: d.label_selector,
                field_selector: d.field_selector,
                indexes: d.indexes.into_iter().map(index).collect(),
            })
            .collect(),
        writes: r
            .writes
            .into_iter()
            .map(|w| t4::WriteDecl {
                resource: w.resource.into(),
                verbs: w.verbs.into_iter().map(Into::into).collect(),
            })
            .collect(),
        records_events: r.records_events,
        wait_for_sync: false,
        admission: Vec::new(),
        queue: None,
    }
}
