//! The `events` import: `events.k8s.io/v1` Events about objects, recorded as
//! client-go's event recorder records them. An Event identical to one this
//! plugin recorded in the last [`SERIES_WINDOW`] (same object, type, reason,
//! action and note) is not a new object: the first one's `series` counts it
//! (a merge patch of `series.count` and `series.lastObservedTime`). A
//! per-object spam filter (a token bucket of [`SPAM_BURST`], refilled one
//! every five minutes, as client-go's) drops the excess. Events need the
//! plugin's declaration and the operator's grant; in audit mode they are
//! still recorded (they are the audit's output), not as dry runs, but marked:
//! the annotation [`AUDIT_ANNOTATION`]` = audit` and the note prefixed
//! [`AUDIT_NOTE_PREFIX`], and the plugin is told (`recorded::audit`), so an
//! Event saying something changed can be told from one where nothing did.
//! Their URLs are built as every write's ([`super::request`]).

use super::HostState;
use super::cluster::{Request, TokenBucket};
use super::request::{Query, Target};
use crate::bindings::types::WriteError;
use crate::bindings::wink::plugin::events::{self, EventType, Recorded};
use http::Method;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wasmtime::component::Resource;

/// How long an Event collects repeats into its series.
pub const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// Events one object may get at once before the spam filter drops them.
pub const SPAM_BURST: u32 = 25;

/// Objects the spam filter remembers before it forgets the quiet ones.
const SPAM_OBJECTS: usize = 4096;

/// How long an emptied spam bucket takes to fill again (25 at one per 5 minutes).
const SPAM_REFILL: Duration = Duration::from_secs(300 * SPAM_BURST as u64);

/// The longest note in bytes (the API server refuses longer ones).
const MAX_NOTE: usize = 1024;

/// One recorded Event and how often it was seen.
struct Series {
    namespace: String,
    name: String,
    count: u32,
    started: Instant,
}

/// One plugin's recorded Events, for aggregation and the spam filter.
#[derive(Default)]
pub struct Recorder {
    series: Mutex<HashMap<String, Series>>,
    /// Per object: its bucket and when it was last used.
    spam: Mutex<HashMap<String, (TokenBucket, Instant)>>,
    dropped: Mutex<u64>,
}

/// An RFC 3339 time with microseconds, as `MicroTime` is written.
fn micro_time() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

/// `events.k8s.io/v1` Events, as discovery would resolve them.
fn events_resource() -> kube::api::ApiResource {
    let gvk = kube::core::GroupVersionKind::gvk("events.k8s.io", "v1", "Event");
    kube::api::ApiResource::from_gvk_with_plural(&gvk, "events")
}

impl Recorder {
    /// Whether the spam filter lets one more Event about `uid` through.
    /// Objects not heard of for longer than a bucket takes to refill are
    /// forgotten (their bucket would be full again), so the map stays small.
    fn admit(&self, uid: &str) -> bool {
        let mut spam = self.spam.lock().unwrap();
        let now = Instant::now();
        if spam.len() >= SPAM_OBJECTS {
            spam.retain(|_, (_, used)| now.duration_since(*used) < SPAM_REFILL);
        }
        let (bucket, used) = spam
            .entry(uid.to_string())
            .or_insert_with(|| (TokenBucket::new(1.0 / 300.0, SPAM_BURST), now));
        *used = now;
        // Dropped, not queued: a spamming object runs up no debt.
        bucket.try_take()
    }
}

impl events::Host for HostState {
    fn record_event(
        &mut self,
        regarding: Resource<super::ObjectHandle>,
        type_: EventType,
        reason: String,
        action: String,
        note: String,
    ) -> wasmtime::Result<Result<Recorded, WriteError>> {
        let obj = self.object(&regarding)?.clone();
        let Some(access) = self.writes.get() else {
            return Ok(Err(WriteError::NotPermitted(
                "this plugin may not record Events".into(),
            )));
        };
        if !access.permissions.events {
            let why = "recording Events is not declared and granted".to_string();
            return Ok(Err(access.refuse("record", "events.k8s.io/v1 Event", why)));
        }
        if !self.cache.scope().admits(&obj) {
            let why = format!(
                "{} {} is outside this plugin's scope (set by the operator)",
                obj.kind(),
                obj.key()
            );
            return Ok(Err(access.refuse("record", "events.k8s.io/v1 Event", why)));
        }
        if !access.cluster.leadership.is_leading() {
            return Ok(Err(WriteError::NotPermitted(
                "this replica is not the leader: it records nothing while it stands by".into(),
            )));
        }
        if reason.is_empty() || action.is_empty() {
            return Ok(Err(WriteError::InvalidArgument(
                "an Event needs a reason and an action".into(),
            )));
        }
        let type_ = match type_ {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        let audit = access.audit();
        let prefix = if audit { AUDIT_NOTE_PREFIX } else { "" };
        // The API server takes notes of at most 1 kB, the prefix included.
        let mut bytes = 0;
        let note: String = prefix
            .chars()
            .chain(note.chars())
            .take_while(|c| {
                bytes += c.len_utf8();
                bytes <= MAX_NOTE
            })
            .collect();
        let identity = format!("{}\n{type_}\n{reason}\n{action}\n{note}", obj.uid());
        let recorder = &self.recorder;
        if !recorder.admit(obj.uid()) {
            let mut dropped = recorder.dropped.lock().unwrap();
            *dropped += 1;
            if dropped.is_power_of_two() {
                tracing::warn!(plugin = %self.plugin, dropped = *dropped, "Events dropped by the spam filter");
            }
            return Ok(Ok(Recorded::Dropped));
        }
        let now = micro_time();
        let started = Instant::now();
        let repeat = {
            let mut series = recorder.series.lock().unwrap();
            series.retain(|_, s| s.started.elapsed() < SERIES_WINDOW);
            series.get_mut(&identity).map(|s| {
                s.count += 1;
                (s.namespace.clone(), s.name.clone(), s.count)
            })
        };
        let cluster = &access.cluster;
        let events = events_resource();
        let uri = |ns: &str, name: Option<&str>| {
            let target = Target {
                ar: &events,
                namespace: Some(ns),
                name,
                subresource: None,
            };
            target.uri(&Query::default())
        };
        access.pace();
        let result = match repeat {
            Some((ns, name, count)) => {
                let patch = serde_json::json!({"series": {"count": count, "lastObservedTime": now}});
                uri(&ns, Some(&name)).and_then(|uri| {
                    let request = Request {
                        method: Method::PATCH,
                        uri,
                        content_type: "application/merge-patch+json",
                        body: patch.to_string().into_bytes(),
                    };
                    cluster.send(request, &access.user_agent).map(drop)
                })
            }
            None => {
                let ns = obj.namespace().unwrap_or("default").to_string();
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let name = format!("{}.{nanos:x}", obj.name());
                let mut metadata = serde_json::json!({"name": name, "namespace": ns});
                if audit {
                    metadata["annotations"] = serde_json::json!({AUDIT_ANNOTATION: "audit"});
                }
                let event = serde_json::json!({
                    "apiVersion": "events.k8s.io/v1",
                    "kind": "Event",
                    "metadata": metadata,
                    "eventTime": now,
                    "reportingController": format!("wink.dev/{}", self.plugin),
                    "reportingInstance": format!("wink-{}", self.plugin),
                    "action": action,
                    "reason": reason,
                    "note": note,
                    "type": type_,
                    "regarding": {
                        "apiVersion": obj.api_version(),
                        "kind": obj.kind(),
                        "namespace": obj.namespace(),
                        "name": obj.name(),
                        "uid": obj.uid(),
                        "resourceVersion": obj.resource_version(),
                    },
                });
                let sent = uri(&ns, None).and_then(|uri| {
                    let request = Request {
                        method: Method::POST,
                        uri,
                        content_type: "application/json",
                        body: event.to_string().into_bytes(),
                    };
                    cluster.send(request, &access.user_agent).map(drop)
                });
                if sent.is_ok() {
                    recorder.series.lock().unwrap().insert(
                        identity,
                        Series {
                            namespace: ns,
                            name,
                            count: 1,
                            started: Instant::now(),
                        },
                    );
                }
                sent
            }
        };
        self.clock.io += started.elapsed();
        let recorded = if audit { Recorded::Audit } else { Recorded::Sent };
        Ok(result.map(|()| recorded))
    }
}

/// The annotation marking an Event recorded by a plugin in audit mode.
pub const AUDIT_ANNOTATION: &str = "wink.dev/mode";

/// The start of the note of an Event recorded in audit mode.
pub const AUDIT_NOTE_PREFIX: &str = "[audit] ";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_has_six_fractional_digits() {
        let t = micro_time();
        let (_, fraction) = t.split_once('.').unwrap();
        assert_eq!(fraction.len(), 7, "{t}");
        assert!(fraction.ends_with('Z'));
    }

    #[test]
    fn the_spam_filter_admits_a_burst_per_object() {
        let r = Recorder::default();
        for _ in 0..SPAM_BURST {
            assert!(r.admit("a"));
        }
        assert!(!r.admit("a"));
        assert!(r.admit("b"), "per object");
    }
}
