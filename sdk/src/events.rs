//! Events about objects (`events.k8s.io/v1`), as `kubectl describe` shows
//! them. Identical events are aggregated by the host into one Event with a
//! series count. Declare [`Registration::records_events`](crate::Registration::records_events);
//! the operator grants it.
//!
//! ```no_run
//! # fn f(obj: &wink_sdk::Object) {
//! let _ = wink_sdk::events::warning(obj, "MissingLabel", "Labeled", "missing label team");
//! # }
//! ```

use crate::Object;
use crate::bindings::wink::plugin::events as wit;

pub use crate::write::WriteError;
pub use wit::{EventType, Recorded};

/// Record an Event about `regarding`.
pub fn record(
    regarding: &Object,
    kind: EventType,
    reason: &str,
    action: &str,
    note: &str,
) -> Result<Recorded, WriteError> {
    wit::record_event(regarding.handle(), kind, reason, action, note)
}

/// Record a Normal Event.
pub fn normal(regarding: &Object, reason: &str, action: &str, note: &str) -> Result<Recorded, WriteError> {
    record(regarding, EventType::Normal, reason, action, note)
}

/// Record a Warning Event.
pub fn warning(regarding: &Object, reason: &str, action: &str, note: &str) -> Result<Recorded, WriteError> {
    record(regarding, EventType::Warning, reason, action, note)
}
