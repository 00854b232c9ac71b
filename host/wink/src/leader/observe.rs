//! What a candidate makes of the Lease it reads, as client-go's
//! `leaderelection` does: the record is read leniently (a field of the
//! wrong type is noted, not an error), and a holder's Lease stays valid
//! while this candidate sees it change, and for the record's lease
//! duration after the last change it saw, timed by its own clock
//! (client-go's observedRecord and observedTime). The Lease's timestamps
//! are never trusted: a `renewTime` in 2100 or a clock far off does not
//! keep a holder that stopped renewing. Owns the record's reading, that
//! timing, and the lines saying why a candidate waits (one per change).

use k8s_openapi::jiff::Timestamp;
use serde_json::{Map, Value};
use std::time::{Duration, Instant};

/// The Lease as read, with its spec's fields read leniently.
#[derive(Debug, Clone)]
pub(super) struct Record {
    /// The whole object, as the server sent it.
    pub object: Value,
    /// The holder; empty when none. A holder that is not a string is its
    /// JSON text (it is still someone else's).
    pub holder: String,
    /// `leaseDurationSeconds`, when it is a positive integer.
    pub duration: Option<Duration>,
    /// `leaseTransitions`, 0 when missing or invalid.
    pub transitions: i64,
    /// `acquireTime`, when it is a time.
    pub acquired: Option<Value>,
    /// The fields that are not what a Lease holds.
    pub invalid: Vec<&'static str>,
}

impl Record {
    /// Read `object` (a Lease as JSON).
    pub fn parse(object: Value) -> Record {
        let spec = &object["spec"];
        let mut invalid = Vec::new();
        if !spec.is_object() && !spec.is_null() {
            invalid.push("spec");
        }
        let holder = match &spec["holderIdentity"] {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => {
                invalid.push("holderIdentity");
                other.to_string()
            }
        };
        let duration = match &spec["leaseDurationSeconds"] {
            Value::Null => None,
            v => match v.as_i64() {
                Some(s) if s > 0 => Some(Duration::from_secs(s as u64)),
                _ => {
                    invalid.push("leaseDurationSeconds");
                    None
                }
            },
        };
        let transitions = match &spec["leaseTransitions"] {
            Value::Null => 0,
            v => v.as_i64().filter(|n| *n >= 0).unwrap_or_else(|| {
                invalid.push("leaseTransitions");
                0
            }),
        };
        let is_time = |v: &Value| v.as_str().is_some_and(|s| s.parse::<Timestamp>().is_ok());
        let mut acquired = None;
        for (field, v) in [
            ("acquireTime", &spec["acquireTime"]),
            ("renewTime", &spec["renewTime"]),
        ] {
            match v {
                Value::Null => {}
                v if is_time(v) => {
                    if field == "acquireTime" {
                        acquired = Some(v.clone());
                    }
                }
                _ => invalid.push(field),
            }
        }
        Record {
            object,
            holder,
            duration,
            transitions,
            acquired,
            invalid,
        }
    }

    /// The record proper (what client-go compares): the spec.
    pub fn spec(&self) -> &Value {
        &self.object["spec"]
    }

    /// A spec held by `holder` (none: released), renewed now, keeping the
    /// fields of this one that are valid and not election state.
    pub fn next_spec(&self, holder: Option<&str>, seconds: i64, acquired: Value, transitions: i64) -> Value {
        let mut spec = Map::new();
        for keep in ["preferredHolder", "strategy"] {
            if let Some(v) = self.spec().get(keep).filter(|v| v.is_string()) {
                spec.insert(keep.into(), v.clone());
            }
        }
        if let Some(holder) = holder {
            spec.insert("holderIdentity".into(), holder.into());
        }
        spec.insert("leaseDurationSeconds".into(), seconds.into());
        spec.insert("acquireTime".into(), acquired);
        spec.insert("renewTime".into(), now());
        spec.insert("leaseTransitions".into(), transitions.into());
        Value::Object(spec)
    }
}

/// Now, as a Lease's `MicroTime` is written.
pub(super) fn now() -> Value {
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(Timestamp::now());
    serde_json::to_value(now).expect("a time serializes")
}

/// How long a holder's record went unchanged, as last said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Less than half its lease duration.
    Held,
    /// Half its lease duration or more.
    Stale,
    /// Its lease duration or more: it is taken over.
    Expired,
}

/// What this candidate saw of the Lease, and since when.
#[derive(Default)]
pub(super) struct Observer {
    /// The record last seen, and when it was first seen as it is.
    seen: Option<(Value, Instant)>,
    /// What was last said: of which holder (and whether its record was
    /// invalid), and how far it was.
    said: Option<((String, bool), Phase)>,
}

/// Why a candidate waits, or that it takes over: a line to log.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Saying {
    pub warn: bool,
    pub text: String,
}

impl Observer {
    /// Whether a candidate `identity` may write `record` as its own at
    /// `now`: it is free, or its own, or it went unchanged for its lease
    /// duration (`default_duration` when the record gives none). Also what
    /// to say about it: once for each holder, and once as its record
    /// stays unchanged for half its lease duration, then all of it.
    pub fn may_take(
        &mut self,
        lease: &str,
        record: &Record,
        identity: &str,
        default_duration: Duration,
        now: Instant,
    ) -> (bool, Option<Saying>) {
        let spec = record.spec();
        let since = match &self.seen {
            Some((seen, at)) if seen == spec => now.saturating_duration_since(*at),
            _ => {
                self.seen = Some((spec.clone(), now));
                Duration::ZERO
            }
        };
        if record.holder.is_empty() || record.holder == identity {
            self.said = None;
            return (true, None);
        }
        let valid_for = record.duration.unwrap_or(default_duration);
        let phase = if since >= valid_for {
            Phase::Expired
        } else if since >= valid_for / 2 {
            Phase::Stale
        } else {
            Phase::Held
        };
        let key = (record.holder.clone(), !record.invalid.is_empty());
        let news = match &self.said {
            Some((k, said)) if *k == key => phase != *said && phase != Phase::Held,
            _ => true,
        };
        self.said = Some((key, phase));
        let saying = news.then(|| say(lease, record, phase, since, valid_for));
        (phase == Phase::Expired, saying)
    }
}

/// The line saying why a candidate waits for `record`'s holder, or that it
/// takes over.
fn say(lease: &str, record: &Record, phase: Phase, since: Duration, valid_for: Duration) -> Saying {
    let holder = &record.holder;
    let secs = |d: Duration| d.as_secs_f64().round();
    let (since, valid_for) = (secs(since), secs(valid_for));
    let (warn, text) = match phase {
        Phase::Held if !record.invalid.is_empty() => (
            true,
            format!(
                "the Lease {lease} has fields that are not what a Lease holds ({}): standing by as if {holder:?} held it, until it goes unchanged for {valid_for} s",
                record.invalid.join(", ")
            ),
        ),
        Phase::Held => (
            false,
            format!(
                "standing by: the Lease {lease} is held by {holder:?}; taken over once it goes unchanged for its lease duration ({valid_for} s)"
            ),
        ),
        Phase::Stale => (
            false,
            format!(
                "the Lease {lease} held by {holder:?} has not changed for {since} s of its {valid_for} s lease duration: taken over if it stays unchanged"
            ),
        ),
        Phase::Expired => (
            false,
            format!(
                "the Lease {lease} held by {holder:?} went unchanged for {since} s (its lease duration: {valid_for} s): taking it over"
            ),
        ),
    };
    Saying { warn, text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LEASE: &str = "default/wink";
    const D: Duration = Duration::from_secs(15);

    fn lease(spec: Value) -> Record {
        Record::parse(json!({"metadata": {"name": "wink", "resourceVersion": "1"}, "spec": spec}))
    }

    fn in_2100(holder: &str, renewals: u32) -> Record {
        lease(json!({"holderIdentity": holder, "leaseDurationSeconds": 15,
                     "renewTime": "2100-01-01T00:00:00.000000Z", "leaseTransitions": renewals}))
    }

    #[test]
    fn a_lease_renewed_in_2100_is_taken_once_unchanged_for_its_duration() {
        let mut o = Observer::default();
        let t0 = Instant::now();
        let record = in_2100("someone-else", 0);
        let (take, said) = o.may_take(LEASE, &record, "me", D, t0);
        assert!(!take);
        let said = said.expect("why it waits is said");
        assert!(
            said.text.contains("\"someone-else\"") && said.text.contains("15 s"),
            "{said:?}"
        );
        for s in 1..8 {
            let (take, said) = o.may_take(LEASE, &record, "me", D, t0 + Duration::from_secs(s));
            assert!(
                !take && said.is_none(),
                "said once, not every retry: {s} s {said:?}"
            );
        }
        let (take, said) = o.may_take(LEASE, &record, "me", D, t0 + Duration::from_secs(8));
        assert!(!take);
        assert!(said.unwrap().text.contains("not changed for 8 s of its 15 s"));
        let (take, said) = o.may_take(LEASE, &record, "me", D, t0 + Duration::from_secs(14));
        assert!(!take && said.is_none());
        let (take, said) = o.may_take(LEASE, &record, "me", D, t0 + D);
        assert!(take, "unchanged for its lease duration");
        assert!(said.unwrap().text.contains("taking it over"));
        assert!(
            o.may_take(LEASE, &record, "me", D, t0 + D).1.is_none(),
            "said once"
        );
    }

    #[test]
    fn a_holder_that_keeps_renewing_keeps_its_lease_whatever_its_timestamps() {
        let mut o = Observer::default();
        let t0 = Instant::now();
        let mut sayings = 0;
        for i in 0..30u32 {
            // Renewed every 2 s, with a renewTime long past.
            let record = lease(json!({"holderIdentity": "other", "leaseDurationSeconds": 15,
                "renewTime": "2001-01-01T00:00:00.000000Z", "leaseTransitions": 3, "n": i}));
            let (take, said) = o.may_take(LEASE, &record, "me", D, t0 + Duration::from_secs(2 * i as u64));
            assert!(!take, "renewed {i}");
            sayings += usize::from(said.is_some());
        }
        assert_eq!(sayings, 1, "one line for one holder");
        // Another holder is news.
        let (_, said) = o.may_take(LEASE, &in_2100("third", 1), "me", D, t0 + Duration::from_secs(61));
        assert!(said.unwrap().text.contains("\"third\""));
    }

    #[test]
    fn free_or_own_leases_are_taken_at_once() {
        let mut o = Observer::default();
        let now = Instant::now();
        assert!(o.may_take(LEASE, &lease(json!({})), "me", D, now).0);
        assert!(o.may_take(LEASE, &lease(Value::Null), "me", D, now).0);
        assert!(o.may_take(LEASE, &in_2100("me", 0), "me", D, now).0);
        assert!(
            o.may_take(LEASE, &lease(json!({"holderIdentity": ""})), "me", D, now)
                .0
        );
    }

    #[test]
    fn garbage_fields_are_noted_and_the_record_still_timed() {
        let record = lease(json!({"holderIdentity": 5, "leaseDurationSeconds": "abc",
                                  "renewTime": "garbage", "leaseTransitions": "x"}));
        assert_eq!(record.holder, "5");
        assert_eq!(record.duration, None);
        assert_eq!(
            record.invalid,
            [
                "holderIdentity",
                "leaseDurationSeconds",
                "leaseTransitions",
                "renewTime"
            ]
        );
        let mut o = Observer::default();
        let t0 = Instant::now();
        let (take, said) = o.may_take(LEASE, &record, "me", D, t0);
        let said = said.unwrap();
        assert!(!take && said.warn, "{said:?}");
        assert!(
            said.text.contains("renewTime") && !said.text.contains("garbage"),
            "no body: {said:?}"
        );
        for s in 1..15 {
            let (take, said) = o.may_take(LEASE, &record, "me", D, t0 + Duration::from_secs(s));
            assert!(!take, "{s}");
            assert!(said.is_none_or(|s| !s.warn), "the warning once");
        }
        assert!(
            o.may_take(LEASE, &record, "me", D, t0 + D).0,
            "our own lease duration"
        );
        let spec = record.next_spec(Some("me"), 15, now(), record.transitions + 1);
        assert_eq!(spec["holderIdentity"], "me");
        assert_eq!(spec["leaseTransitions"], 1);
        assert!(Record::parse(json!({"spec": spec})).invalid.is_empty(), "{spec}");
        let not_an_object = lease(json!("x"));
        assert_eq!(not_an_object.invalid, ["spec"]);
        assert!(o.may_take(LEASE, &not_an_object, "me", D, t0).0, "no holder");
    }
}
