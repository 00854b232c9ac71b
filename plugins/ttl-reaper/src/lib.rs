//! `ttl-reaper`: deletes ConfigMaps carrying the annotation `wink.dev/ttl`
//! (a duration: `30s`, `5m`, `2h`, `1d`) at the time they expire (their
//! `creationTimestamp` plus the duration), with a uid precondition (a
//! ConfigMap re-created under the same name is not deleted by mistake).
//!
//! A reconciler over ConfigMaps' keys, with no resync: each ConfigMap's
//! events enqueue its own key; `reconcile` reads the cache and, when the
//! ConfigMap is not yet due, answers `requeue-after` the time left, so the
//! host calls it again at the expiry. A failed delete is an error, retried
//! with backoff. A far expiry is looked at again at most every
//! [`LOOK_AGAIN`] (a clock set right meanwhile is then noticed). The host
//! reconciles only once the cache has synced, so nothing is deleted from a
//! partial picture.
//!
//! Config: none (`{}`). It declares `delete` on ConfigMaps; the operator grants it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wink_sdk::cache;
use wink_sdk::queue::{Action, Enqueue, Queue};
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json;
use wink_sdk::write::{self, DeleteOptions, WriteError, Written};
use wink_sdk::{Handler, Registration, Resource, Verb, Watch};

const TTL: &str = "wink.dev/ttl";

/// The longest `requeue-after` answered: an expiry further away is looked
/// at again after this long.
const LOOK_AGAIN: Duration = Duration::from_secs(3600);

/// No settings: `{}` or nothing (an unknown field is refused).
#[derive(Deserialize, Default)]
#[serde(crate = "wink_sdk::serde", deny_unknown_fields)]
struct Config {}

struct TtlReaper;

fn config_maps() -> Resource {
    Resource::new("v1", "ConfigMap")
}

/// `30s`, `5m`, `2h`, `1d`, or plain seconds.
fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = number.parse().ok()?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86400,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

/// Seconds since the epoch of an RFC 3339 UTC time (`2026-11-23T20:00:00Z`).
fn epoch_seconds(t: &str) -> Option<u64> {
    let (date, time) = t.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut h = time
        .split(':')
        .map(|p| p.split('.').next().unwrap_or("0").parse::<i64>());
    let (hh, mm, ss) = (h.next()?.ok()?, h.next()?.ok()?, h.next()?.ok()?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    u64::try_from(days * 86400 + hh * 3600 + mm * 60 + ss).ok()
}

/// Milliseconds since the epoch, now.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What is left before the expiry at `expiry_ms` (since the epoch) when it
/// is `now_ms`: `None` once it is due; at most [`LOOK_AGAIN`].
fn time_left(expiry_ms: u64, now_ms: u64) -> Option<Duration> {
    let left = expiry_ms.checked_sub(now_ms).filter(|&ms| ms > 0)?;
    Some(Duration::from_millis(left).min(LOOK_AGAIN))
}

impl Handler for TtlReaper {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let Config {} = wink_sdk::config(config)?;
        let registration = Registration::new()
            .queue(Queue::new(config_maps()))
            .watch(Watch::new("v1", "ConfigMap").enqueue(Enqueue::OwnKey))
            .writes(config_maps(), &[Verb::Delete]);
        Ok((TtlReaper, registration))
    }

    fn reconcile(&mut self, key: &str) -> Result<Action, String> {
        let Some(obj) = cache::get_object(&config_maps(), key).map_err(|e| format!("{e:?}"))? else {
            return Ok(Action::Done); // gone
        };
        let v: serde_json::Value = obj.decode().map_err(|e| format!("{e:?}"))?;
        let Some(ttl) = v
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(TTL))
            .and_then(|t| t.as_str())
        else {
            return Ok(Action::Done);
        };
        let Some(ttl) = parse_duration(ttl) else {
            wink_sdk::warn!("ttl-reaper: {key} has an unreadable {TTL}: {ttl:?}");
            return Ok(Action::Done);
        };
        let Some(created) = v
            .pointer("/metadata/creationTimestamp")
            .and_then(|t| t.as_str())
            .and_then(epoch_seconds)
        else {
            return Ok(Action::Done);
        };
        let expiry_ms = (created + ttl.as_secs()).saturating_mul(1000);
        if let Some(left) = time_left(expiry_ms, now_ms()) {
            return Ok(Action::RequeueAfter(left));
        }
        let options = DeleteOptions {
            uid: Some(obj.uid().to_string()),
            ..DeleteOptions::default()
        };
        match write::delete(&config_maps(), key, &options) {
            Ok(Written::Applied(_)) => {
                wink_sdk::info!("ttl-reaper: deleted {key} (older than {}s)", ttl.as_secs())
            }
            Ok(Written::DryRun(_)) => wink_sdk::info!(
                "ttl-reaper: would delete {key} (older than {}s; audit mode: dry run)",
                ttl.as_secs()
            ),
            // Gone already, or re-created under the same name.
            Err(WriteError::NotFound(_) | WriteError::Conflict(_)) => {}
            Err(e) => return Err(format!("{key} not deleted: {e:?}")),
        }
        Ok(Action::Done)
    }
}

wink_sdk::export_plugin!(TtlReaper);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_times() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(epoch_seconds("1970-01-02T00:00:01Z"), Some(86401));
        assert_eq!(epoch_seconds("2026-11-23T20:00:00Z"), Some(1795464000));
    }

    #[test]
    fn the_time_left_is_capped_and_none_once_due() {
        assert_eq!(time_left(10_000, 9_250), Some(Duration::from_millis(750)));
        assert_eq!(time_left(10_000, 10_000), None);
        assert_eq!(time_left(10_000, 12_000), None);
        assert_eq!(time_left(u64::MAX, 0), Some(LOOK_AGAIN));
    }
}
