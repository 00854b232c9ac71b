//! Kubernetes label and field selectors: the one implementation of their
//! grammar in wink, used by the informer cache's queries, the cache view and
//! the simulated API server alike.
//!
//! Owns parsing and matching, with the API server's grammar and the
//! API server's wording of errors (apimachinery's `labels.Parse` and
//! `fields.ParseSelector`):
//! - label selectors: `=`, `==`, `!=`, `in`, `notin`, `key` (exists),
//!   `!key` (does not exist), `>` and `<` (integer comparisons);
//! - field selectors: `=`, `==`, `!=` on field paths;
//! - caps on a label selector's length, requirements and set values;
//! - [`LabelSummary`], the few bits an index keeps of an object's labels.
//!
//! Knows nothing of where labels or fields come from beyond the [`Labels`]
//! trait and a JSON object; never touches storage, HTTP or the informer.

mod field;
mod field_labels;
mod label;
mod lexer;
mod summary;

pub use field::FieldSelector;
pub use field_labels::field_labels;
pub use label::{LabelSelector, MAX_REQUIREMENTS, MAX_SELECTOR_BYTES, MAX_VALUES, Requirement};
pub use summary::LabelSummary;

use std::collections::BTreeMap;

/// Something with labels.
pub trait Labels {
    /// The value of label `key`.
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for [(String, String)] {
    fn label(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

impl Labels for Vec<(String, String)> {
    fn label(&self, key: &str) -> Option<&str> {
        self.as_slice().label(key)
    }
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl Labels for serde_json::Map<String, serde_json::Value> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(|v| v.as_str())
    }
}

/// A Kubernetes object as JSON: its labels are `metadata.labels`.
impl Labels for serde_json::Value {
    fn label(&self, key: &str) -> Option<&str> {
        self.get("metadata")?.get("labels")?.get(key)?.as_str()
    }
}
