//! Label and field selectors as the API server parses them from the
//! `labelSelector` / `fieldSelector` query parameters.
//!
//! Owns: parsing and matching. Must not touch: storage or HTTP.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum LabelReq {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
    Gt(String, i64),
    Lt(String, i64),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelReq>);

fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn parse_set(rest: &str) -> Option<Vec<String>> {
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    let vals: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
    vals.iter().all(|v| valid_value(v)).then_some(vals)
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for term in split_top_level(s) {
            let t = term.trim();
            let err = || format!("unable to parse requirement: found '{t}'");
            let req = if let Some(k) = t.strip_prefix('!') {
                LabelReq::NotExists(k.trim().to_string())
            } else if let Some((k, v)) = t.split_once("!=") {
                LabelReq::Ne(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = t.split_once("==") {
                LabelReq::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = t.split_once('=') {
                LabelReq::Eq(k.trim().into(), v.trim().into())
            } else if let Some(i) = t.find(" notin ") {
                LabelReq::NotIn(t[..i].trim().into(), parse_set(&t[i + 7..]).ok_or_else(err)?)
            } else if let Some(i) = t.find(" in ") {
                LabelReq::In(t[..i].trim().into(), parse_set(&t[i + 4..]).ok_or_else(err)?)
            } else if let Some((k, v)) = t.split_once('>') {
                LabelReq::Gt(k.trim().into(), v.trim().parse().map_err(|_| err())?)
            } else if let Some((k, v)) = t.split_once('<') {
                LabelReq::Lt(k.trim().into(), v.trim().parse().map_err(|_| err())?)
            } else {
                LabelReq::Exists(t.to_string())
            };
            let (key, value) = match &req {
                LabelReq::Eq(k, v) | LabelReq::Ne(k, v) => (k, Some(v)),
                LabelReq::In(k, _)
                | LabelReq::NotIn(k, _)
                | LabelReq::Exists(k)
                | LabelReq::NotExists(k)
                | LabelReq::Gt(k, _)
                | LabelReq::Lt(k, _) => (k, None),
            };
            if !valid_key(key) || value.is_some_and(|v| !valid_value(v)) {
                return Err(err());
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Match an object's `metadata.labels`.
    pub fn matches(&self, obj: &Value) -> bool {
        if self.0.is_empty() {
            return true;
        }
        let labels = obj.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            LabelReq::Eq(k, v) => get(k) == Some(v),
            LabelReq::Ne(k, v) => get(k) != Some(v),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
            LabelReq::Gt(k, n) => get(k).and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x > *n),
            LabelReq::Lt(k, n) => get(k).and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x < *n),
        })
    }
}

/// A parsed field selector (`=`, `==`, `!=` on supported field labels).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parse, accepting `metadata.name`, `metadata.namespace` and `extra` labels.
    pub fn parse(s: &str, extra: &[&str]) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector(reqs));
        }
        for term in s.split(',') {
            let t = term.trim();
            let (k, eq, v) = if let Some((k, v)) = t.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = t.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = t.split_once('=') {
                (k, true, v)
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{t}'"));
            };
            let k = k.trim();
            if !matches!(k, "metadata.name" | "metadata.namespace") && !extra.contains(&k) {
                return Err(format!("field label not supported: {k}"));
            }
            reqs.push((k.to_string(), eq, v.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(k, eq, v)| {
            let mut cur = Some(obj);
            for part in k.split('.') {
                cur = cur.and_then(|c| c.get(part));
            }
            let actual = match cur {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => String::new(),
            };
            (actual == *v) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}, "spec": {"nodeName": "n1"}})
    }

    #[test]
    fn label_operators() {
        let o = obj(json!({"app": "web", "tier": "front", "n": "5"}));
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(&o);
        assert!(m("app=web") && m("app==web") && m("app!=api") && m("!missing"));
        assert!(m("app in (web, api),tier") && m("app notin (db)") && m("n>3") && m("n<6"));
        assert!(!m("app=api") && !m("app in (api,db)") && !m("missing") && !m("!app"));
        assert!(m("missing notin (x)") && m("missing!=x") && m(""));
        assert!(LabelSelector::parse("app in web").is_err());
        assert!(LabelSelector::parse("a=b c").is_err());
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        let f = |s: &str| FieldSelector::parse(s, &["spec.nodeName"]).unwrap().matches(&o);
        assert!(f("metadata.name=a") && f("metadata.namespace==ns") && f("metadata.name!=b"));
        assert!(f("spec.nodeName=n1,metadata.name=a") && !f("spec.nodeName=n2"));
        assert!(FieldSelector::parse("spec.foo=x", &[]).is_err());
    }
}
