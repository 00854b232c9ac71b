//! Field selectors: apimachinery's `fields.ParseSelector` grammar (`=`, `==`,
//! `!=` terms separated by commas) and matching against an object's JSON.

use serde_json::Value;

/// One field requirement: a dotted path, whether it must equal, the value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldRequirement {
    path: String,
    equals: bool,
    value: String,
}

/// A parsed field selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<FieldRequirement>);

impl FieldSelector {
    /// Parse, accepting the field labels every resource has
    /// (`metadata.name`, `metadata.namespace`) and `extra` ones (e.g. a
    /// Pod's `spec.nodeName`). Errors read as the API server's.
    pub fn parse(s: &str, extra: &[&str]) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector(reqs));
        }
        for term in s.split(',') {
            let t = term.trim();
            let (path, equals, value) = if let Some((k, v)) = t.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = t.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = t.split_once('=') {
                (k, true, v)
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{t}'"));
            };
            let path = path.trim();
            if !matches!(path, "metadata.name" | "metadata.namespace") && !extra.contains(&path) {
                return Err(format!("field label not supported: {path}"));
            }
            reqs.push(FieldRequirement {
                path: path.to_string(),
                equals,
                value: value.trim().to_string(),
            });
        }
        Ok(FieldSelector(reqs))
    }

    /// Whether this selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the object `obj` (JSON) satisfies every requirement; a
    /// missing field reads as the empty string.
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|r| {
            let field = r.path.split('.').try_fold(obj, |cur, part| cur.get(part));
            let actual = match field {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => String::new(),
            };
            (actual == r.value) == r.equals
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_selectors() {
        let o = json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": {"nodeName": "n1"}});
        let f = |s: &str| FieldSelector::parse(s, &["spec.nodeName"]).unwrap().matches(&o);
        let cases = [
            ("metadata.name=a", true),
            ("metadata.namespace==ns", true),
            ("metadata.name!=b", true),
            ("spec.nodeName=n1,metadata.name=a", true),
            ("spec.nodeName=n2", false),
            ("metadata.name!=a", false),
            ("", true),
        ];
        for (selector, want) in cases {
            assert_eq!(f(selector), want, "{selector}");
        }
        assert_eq!(
            FieldSelector::parse("spec.foo=x", &[]).unwrap_err(),
            "field label not supported: spec.foo"
        );
        assert_eq!(
            FieldSelector::parse("metadata.name", &[]).unwrap_err(),
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
    }
}
