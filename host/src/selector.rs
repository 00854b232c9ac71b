//! Kubernetes label selectors: parsing and matching, shared by the cache
//! queries and the simulated API server. Owns the selector grammar
//! (`=`, `==`, `!=`, `in`, `notin`, exists, `!`exists); knows nothing about
//! where the labels come from beyond the [`Labels`] trait.

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

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn matches(&self, labels: &(impl Labels + ?Sized)) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.label(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => labels.label(k) != Some(v.as_str()),
            Requirement::In(k, vs) => labels.label(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => labels.label(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => labels.label(k).is_some(),
            Requirement::DoesNotExist(k) => labels.label(k).is_none(),
        }
    }
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub requirements: Vec<Requirement>,
}

fn valid_key(k: &str) -> bool {
    !k.is_empty() && k.len() <= 317 && k.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63 && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// Split on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Result<Vec<&str>, String> {
    let (mut depth, mut start, mut parts) = (0i32, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced ')' in selector {s:?}"));
                }
            }
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced '(' in selector {s:?}"));
    }
    parts.push(&s[start..]);
    Ok(parts)
}

fn parse_set(key: &str, rest: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesized set after {key:?}, got {rest:?}"))?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
    if let Some(bad) = values.iter().find(|v| !valid_value(v)) {
        return Err(format!("invalid label value {bad:?}"));
    }
    Ok(values)
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    let part = part.trim();
    if part.is_empty() {
        return Err("empty requirement in selector".into());
    }
    let checked = |k: &str| -> Result<String, String> {
        let k = k.trim();
        if valid_key(k) {
            Ok(k.to_string())
        } else {
            Err(format!("invalid label key {k:?}"))
        }
    };
    let value = |v: &str| -> Result<String, String> {
        let v = v.trim();
        if valid_value(v) {
            Ok(v.to_string())
        } else {
            Err(format!("invalid label value {v:?}"))
        }
    };
    if let Some(k) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(checked(k)?));
    }
    if let Some((k, v)) = part.split_once("!=") {
        return Ok(Requirement::NotEquals(checked(k)?, value(v)?));
    }
    if let Some((k, v)) = part.split_once("==") {
        return Ok(Requirement::Equals(checked(k)?, value(v)?));
    }
    if let Some((k, v)) = part.split_once('=') {
        return Ok(Requirement::Equals(checked(k)?, value(v)?));
    }
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or("").trim_start();
    if rest.is_empty() {
        return Ok(Requirement::Exists(checked(key)?));
    }
    if let Some(set) = rest.strip_prefix("notin") {
        return Ok(Requirement::NotIn(checked(key)?, parse_set(key, set)?));
    }
    if let Some(set) = rest.strip_prefix("in") {
        return Ok(Requirement::In(checked(key)?, parse_set(key, set)?));
    }
    Err(format!("cannot parse selector requirement {part:?}"))
}

impl LabelSelector {
    /// Parse Kubernetes selector syntax, e.g. `app=web,tier notin (db),!canary`.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Ok(LabelSelector::default());
        }
        let requirements = split_top_level(s)?
            .into_iter()
            .map(parse_requirement)
            .collect::<Result<_, _>>()?;
        Ok(LabelSelector { requirements })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &(impl Labels + ?Sized)) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether this selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_operator() {
        let l = labels(&[("app", "web"), ("tier", "front")]);
        let yes = [
            "",
            "app=web",
            "app==web",
            "app!=db",
            "app in (web,api)",
            "tier notin (db)",
            "app",
            "!canary",
            "app=web,tier=front",
            "missing notin (x)",
            "app in (api, web)",
        ];
        let no = [
            "app=db",
            "app!=web",
            "app in (db)",
            "tier notin (front,db)",
            "canary",
            "!app",
            "app=web,tier=back",
        ];
        for s in yes {
            assert!(LabelSelector::parse(s).unwrap().matches(&l), "{s} should match");
        }
        for s in no {
            assert!(
                !LabelSelector::parse(s).unwrap().matches(&l),
                "{s} should not match"
            );
        }
    }

    #[test]
    fn malformed_selectors_are_errors() {
        for s in [
            "app in web",
            "app in (web",
            "=web",
            "app=we b",
            "a,,b",
            "app notin",
        ] {
            assert!(LabelSelector::parse(s).is_err(), "{s} should be rejected");
        }
    }
}
