//! The one label-selector type: a builder, or Kubernetes' own syntax.

use std::fmt;

/// A label selector, built (`Selector::new().eq("app", "web").not_in("tier", ["db"])`)
/// or written in Kubernetes syntax (`Selector::from("app=web,tier notin (db)")`).
///
/// Everything that takes a label selector (the [`cache`](crate::cache)
/// queries, [`Watch::label_selector`](crate::Watch::label_selector)) takes
/// `impl Into<Selector>`: a `Selector` or a reference to one, a `&str` or a
/// `String` in Kubernetes syntax, or an `Option<&str>` (`None`: everything).
/// A written selector and builder steps combine: `Selector::from("app=web").exists("tier")`.
/// An empty selector matches everything. The host parses the text and
/// answers a malformed one with an error (`InvalidQuery` for a query).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    parts: Vec<String>,
}

impl Selector {
    /// Matches everything.
    pub fn new() -> Self {
        Self::default()
    }
    /// `key=value`.
    pub fn eq(mut self, key: &str, value: &str) -> Self {
        self.parts.push(format!("{key}={value}"));
        self
    }
    /// `key!=value`.
    pub fn ne(mut self, key: &str, value: &str) -> Self {
        self.parts.push(format!("{key}!={value}"));
        self
    }
    /// `key in (v1,v2)`.
    pub fn is_in<'a>(mut self, key: &str, values: impl IntoIterator<Item = &'a str>) -> Self {
        self.parts.push(format!(
            "{key} in ({})",
            values.into_iter().collect::<Vec<_>>().join(",")
        ));
        self
    }
    /// `key notin (v1,v2)`.
    pub fn not_in<'a>(mut self, key: &str, values: impl IntoIterator<Item = &'a str>) -> Self {
        self.parts.push(format!(
            "{key} notin ({})",
            values.into_iter().collect::<Vec<_>>().join(",")
        ));
        self
    }
    /// `key` (the label exists).
    pub fn exists(mut self, key: &str) -> Self {
        self.parts.push(key.to_string());
        self
    }
    /// `!key` (the label does not exist).
    pub fn missing(mut self, key: &str) -> Self {
        self.parts.push(format!("!{key}"));
        self
    }
    /// True when it matches everything.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
    /// The selector in Kubernetes syntax.
    pub fn to_selector_string(&self) -> String {
        self.parts.join(",")
    }
    /// What the host is sent: nothing for an empty selector.
    pub(crate) fn into_query(self) -> Option<String> {
        (!self.is_empty()).then(|| self.to_selector_string())
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_selector_string())
    }
}

impl From<&str> for Selector {
    /// A selector in Kubernetes syntax, as written (blank: everything).
    fn from(text: &str) -> Self {
        let text = text.trim();
        Selector {
            parts: if text.is_empty() {
                Vec::new()
            } else {
                vec![text.to_string()]
            },
        }
    }
}

impl From<String> for Selector {
    fn from(text: String) -> Self {
        Selector::from(text.as_str())
    }
}

impl From<&String> for Selector {
    fn from(text: &String) -> Self {
        Selector::from(text.as_str())
    }
}

impl From<Option<&str>> for Selector {
    /// `None`: everything.
    fn from(text: Option<&str>) -> Self {
        text.map(Selector::from).unwrap_or_default()
    }
}

impl From<&Selector> for Selector {
    fn from(selector: &Selector) -> Self {
        selector.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(selector: impl Into<Selector>) -> Option<String> {
        selector.into().into_query()
    }

    #[test]
    fn builds_kubernetes_syntax() {
        let s = Selector::new()
            .eq("app", "web")
            .ne("tier", "db")
            .is_in("env", ["prod", "staging"])
            .not_in("zone", ["a"])
            .exists("team")
            .missing("legacy");
        assert_eq!(
            s.to_selector_string(),
            "app=web,tier!=db,env in (prod,staging),zone notin (a),team,!legacy"
        );
        assert_eq!(s.to_string(), s.to_selector_string());
    }

    #[test]
    #[allow(clippy::needless_borrows_for_generic_args)] // the borrowed forms are the point
    fn every_form_converts_to_the_same_selector() {
        let built = Selector::new().eq("app", "web").exists("tier");
        let text = "app=web,tier";
        assert_eq!(query(&built), Some(text.to_string()));
        assert_eq!(query(built.clone()), Some(text.to_string()));
        assert_eq!(query(text), Some(text.to_string()));
        assert_eq!(query(text.to_string()), Some(text.to_string()));
        assert_eq!(query(&text.to_string()), Some(text.to_string()));
        assert_eq!(query(Some(text)), Some(text.to_string()));
        assert_eq!(
            Selector::from(text).to_selector_string(),
            built.to_selector_string()
        );
    }

    #[test]
    fn empty_forms_match_everything_and_send_nothing() {
        assert_eq!(query(None), None);
        assert_eq!(query(Some("")), None);
        assert_eq!(query(""), None);
        assert_eq!(query("  "), None);
        assert_eq!(query(Selector::new()), None);
        assert!(Selector::from(None).is_empty());
    }

    #[test]
    fn text_and_builder_steps_combine() {
        let s = Selector::from(" app in (web,api) ").missing("legacy");
        assert_eq!(s.to_selector_string(), "app in (web,api),!legacy");
        assert_eq!(Selector::from("").eq("a", "b").to_selector_string(), "a=b");
    }
}
