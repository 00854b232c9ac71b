//! Field paths of field indexes (`IndexSpec::Field`): their syntax, the
//! refusal of a path that cannot index, and the values a path reads from
//! an object.
//!
//! A path is dot-separated field names, each optionally followed by list
//! steps: `[*]` (every element) or `[N]` (the element at index N, from
//! 0). A field whose value is a list is read through every element
//! without brackets too, so `spec.rules.host` and `spec.rules[*].host` are
//! the same path; lists nest (`spec.rules[*].http.paths[*].backend.service.name`).
//! A path reads one value per element it reaches, as a client-go index
//! function returns several: strings as they are, numbers and booleans
//! as JSON writes them, a final list's scalar elements each; objects and
//! nulls give nothing, and each distinct value counts once. A field name
//! cannot contain `.`, `[` or `]` (a map key such as a label with dots
//! is out of reach: index labels with `IndexSpec::Label`).
//!
//! Owns: parsing and reading paths. Must not touch: the store or index
//! maintenance (`store`), the other index kinds (`index`).

use serde_json::Value;

/// The longest path accepted, in bytes.
pub const MAX_LEN: usize = 512;
/// The most steps (field names and list steps) in one path.
pub const MAX_STEPS: usize = 64;

/// One step of a parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// A field of an object (of each element, on a list).
    Field(String),
    /// `[*]`: every element of a list.
    Each,
    /// `[N]`: the element at N of a list.
    At(usize),
}

/// A parsed field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    steps: Vec<Step>,
}

impl FieldPath {
    /// Parse `path`; the error says what is wrong with it and where.
    pub fn parse(path: &str) -> Result<FieldPath, String> {
        if path.is_empty() {
            return Err("the path is empty".into());
        }
        if path.len() > MAX_LEN {
            return Err(format!(
                "the path is {} bytes long, at most {MAX_LEN} are read",
                path.len()
            ));
        }
        let mut steps = Vec::new();
        for (i, segment) in path.split('.').enumerate() {
            let at = i + 1;
            let (name, mut rest) = match segment.find(['[', ']']) {
                Some(b) => segment.split_at(b),
                None => (segment, ""),
            };
            if name.is_empty() {
                return Err(match segment {
                    "" => format!("segment {at} is empty (a leading, trailing or doubled '.')"),
                    _ => format!("segment {at} ({segment:?}) has a list step but no field name before it"),
                });
            }
            steps.push(Step::Field(name.to_string()));
            while !rest.is_empty() {
                let Some(inner) = rest.strip_prefix('[') else {
                    return Err(format!(
                        "segment {at} ({segment:?}): {rest:?} follows a field or a list step; \
                         only '[*]' or '[N]' may, then '.'"
                    ));
                };
                let Some(close) = inner.find(']') else {
                    return Err(format!("segment {at} ({segment:?}): '[' is never closed"));
                };
                let step = match &inner[..close] {
                    "*" => Step::Each,
                    "" => {
                        return Err(format!(
                            "segment {at} ({segment:?}): '[]' selects nothing; write '[*]'"
                        ));
                    }
                    n if n.bytes().all(|b| b.is_ascii_digit()) => Step::At(n.parse().map_err(|_| {
                        format!("segment {at} ({segment:?}): the list index {n} is too large")
                    })?),
                    other => {
                        return Err(format!(
                            "segment {at} ({segment:?}): '[{other}]' is not a list step ('[*]' or '[N]', N from 0)"
                        ));
                    }
                };
                steps.push(step);
                rest = &inner[close + 1..];
            }
        }
        if steps.len() > MAX_STEPS {
            return Err(format!("the path has {} steps, at most {MAX_STEPS}", steps.len()));
        }
        Ok(FieldPath { steps })
    }

    /// The values this path reads from `object`, each once, in the order
    /// they are reached.
    pub fn values(&self, object: &Value) -> Vec<String> {
        let mut current = vec![object];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in current {
                match step {
                    Step::Field(name) => field(v, name, &mut next),
                    Step::Each => next.extend(v.as_array().into_iter().flatten()),
                    Step::At(n) => next.extend(v.as_array().and_then(|a| a.get(*n))),
                }
            }
            current = next;
        }
        let mut out: Vec<String> = Vec::new();
        for v in current {
            scalars(v, &mut out);
        }
        out
    }
}

/// `name` of `v`, or of each element of `v` (through nested lists).
fn field<'a>(v: &'a Value, name: &str, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(o) => out.extend(o.get(name)),
        Value::Array(a) => a.iter().for_each(|e| field(e, name, out)),
        _ => {}
    }
}

/// The scalar values of `v` (of each element of a list) as strings,
/// appended where not already there.
fn scalars(v: &Value, out: &mut Vec<String>) {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => return a.iter().for_each(|e| scalars(e, out)),
        Value::Object(_) | Value::Null => return,
    };
    if !out.contains(&s) {
        out.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ingress() -> Value {
        json!({"spec": {
        "tls": [{"hosts": ["a.example.com", "b.example.com"]}],
        "rules": [
            {"host": "a.example.com", "http": {"paths": [
                {"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
                {"path": "/api", "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}},
            {"host": "b.example.com", "http": {"paths": [
                {"path": "/", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}]}},
            {"http": {"paths": [{"path": "/x", "backend": {"resource": {"kind": "Bucket"}}}]}}
        ]}})
    }

    fn values(path: &str, o: &Value) -> Vec<String> {
        FieldPath::parse(path)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .values(o)
    }

    #[test]
    fn lists_give_one_value_per_element_with_or_without_brackets() {
        let o = ingress();
        for path in ["spec.rules.host", "spec.rules[*].host"] {
            assert_eq!(values(path, &o), ["a.example.com", "b.example.com"], "{path}");
        }
        for path in [
            "spec.rules[*].http.paths[*].backend.service.name",
            "spec.rules.http.paths.backend.service.name",
            "spec.rules[*].http.paths.backend.service.name",
        ] {
            assert_eq!(
                values(path, &o),
                ["web", "api"],
                "{path}: each distinct value once"
            );
        }
        assert_eq!(
            values("spec.rules.http.paths.backend.service.port.number", &o),
            ["80", "8080"]
        );
        // A final list's scalars are values too.
        assert_eq!(values("spec.tls.hosts", &o), ["a.example.com", "b.example.com"]);
        assert_eq!(
            values("spec.tls[*].hosts[*]", &o),
            ["a.example.com", "b.example.com"]
        );
        // Numeric indexes pick one element.
        assert_eq!(values("spec.rules[1].host", &o), ["b.example.com"]);
        assert_eq!(values("spec.rules[0].http.paths[1].path", &o), ["/api"]);
        assert!(values("spec.rules[7].host", &o).is_empty());
        // Objects, nulls, missing fields and list steps on non-lists give nothing.
        assert!(values("spec.rules", &o).is_empty());
        assert!(values("spec.missing.deep", &o).is_empty());
        assert!(values("spec[*].rules", &o).is_empty());
        assert!(values("spec.tls.hosts.x", &o).is_empty());
        let flat = json!({"spec": {"nodeName": "n1", "priority": 5, "ready": true, "none": null}});
        assert_eq!(values("spec.nodeName", &flat), ["n1"]);
        assert_eq!(values("spec.priority", &flat), ["5"]);
        assert_eq!(values("spec.ready", &flat), ["true"]);
        assert!(values("spec.none", &flat).is_empty());
        // Nested lists are read through.
        let nested = json!({"m": [[{"k": "a"}, {"k": "b"}], [{"k": "c"}]]});
        assert_eq!(values("m.k", &nested), ["a", "b", "c"]);
        assert_eq!(values("m[*][*].k", &nested), ["a", "b", "c"]);
        assert_eq!(values("m[1][0].k", &nested), ["c"]);
    }

    #[test]
    fn paths_that_cannot_index_are_refused_with_why() {
        let refused = |path: &str, why: &str| {
            let e = FieldPath::parse(path).unwrap_err();
            assert!(e.contains(why), "{path}: {e}");
        };
        refused("", "empty");
        refused("spec..host", "segment 2 is empty");
        refused(".spec", "segment 1 is empty");
        refused("spec.", "segment 2 is empty");
        refused("spec.rules[0", "'[' is never closed");
        refused("spec.rules[", "'[' is never closed");
        refused("spec.rules[]", "'[]' selects nothing");
        refused("spec.rules[x]", "'[x]' is not a list step");
        refused("spec.rules[-1]", "'[-1]' is not a list step");
        refused("spec.rules[0]x", "\"x\" follows");
        refused("spec.rules]", "\"]\" follows");
        refused("spec.[*].host", "no field name");
        refused("[*]", "no field name");
        refused("spec.rules[99999999999999999999999]", "too large");
        refused(&"a.".repeat(300), "at most 512");
        refused(&["a"; 65].join("."), "at most 64");
        for ok in [
            "spec.nodeName",
            "a",
            "spec.rules[*].host",
            "a[0][*].b",
            "metadata.labels.app",
        ] {
            FieldPath::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }
}
