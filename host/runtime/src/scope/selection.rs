//! What an operator writes to scope a plugin: a [`Selection`] (`match` or
//! `exclude` of a grants entry or a WinkPlugin), with label [`Selector`]s
//! spelled as Kubernetes' `metav1.LabelSelector`. Owns parsing (strict:
//! unknown fields are errors), the checks of sizes and operators, and
//! matching one set of labels; it reads no cluster state.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most requirements, values, namespaces or kinds one selection holds.
pub const MAX_ITEMS: usize = 256;
/// The longest label key, value, namespace or kind read.
pub const MAX_TEXT: usize = 317;

/// A label selector requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

impl Requirement {
    fn matches<'a>(&self, label: &impl Fn(&str) -> Option<&'a str>) -> bool {
        let value = label(&self.key);
        match self.operator {
            Operator::In => value.is_some_and(|v| self.values.iter().any(|w| w == v)),
            Operator::NotIn => !value.is_some_and(|v| self.values.iter().any(|w| w == v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

/// A label selector (`matchLabels` and `matchExpressions`, ANDed); an
/// empty one selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Selector {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<Requirement>,
}

impl Selector {
    /// Whether labels read through `label` are selected.
    pub fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| label(k) == Some(v.as_str()))
            && self.match_expressions.iter().all(|r| r.matches(&label))
    }

    /// Every requirement, `matchLabels` as `In` of one value.
    pub fn requirements(&self) -> Vec<Requirement> {
        let labels = self.match_labels.iter().map(|(k, v)| Requirement {
            key: k.clone(),
            operator: Operator::In,
            values: vec![v.clone()],
        });
        labels.chain(self.match_expressions.iter().cloned()).collect()
    }

    /// Check sizes and operators; `at` names the selector in errors.
    pub fn check(&self, at: &str) -> Result<(), String> {
        let n = self.match_labels.len() + self.match_expressions.len();
        if n > MAX_ITEMS {
            return Err(format!("{at}: {n} requirements (at most {MAX_ITEMS})"));
        }
        for (k, v) in &self.match_labels {
            text(k, &format!("{at}.matchLabels key"))?;
            if v.len() > MAX_TEXT {
                return Err(format!("{at}.matchLabels.{k}: longer than {MAX_TEXT}"));
            }
        }
        for (i, r) in self.match_expressions.iter().enumerate() {
            let at = format!("{at}.matchExpressions[{i}]");
            text(&r.key, &format!("{at}.key"))?;
            if r.values.len() > MAX_ITEMS || r.values.iter().any(|v| v.len() > MAX_TEXT) {
                return Err(format!(
                    "{at}.values: at most {MAX_ITEMS} of at most {MAX_TEXT} characters"
                ));
            }
            match (r.operator, r.values.is_empty()) {
                (Operator::In | Operator::NotIn, true) => {
                    return Err(format!("{at}: {:?} needs values", r.operator));
                }
                (Operator::Exists | Operator::DoesNotExist, false) => {
                    return Err(format!("{at}: {:?} takes no values", r.operator));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

fn text(s: &str, at: &str) -> Result<(), String> {
    match s.is_empty() || s.len() > MAX_TEXT {
        true => Err(format!("{at}: {s:?} is empty or longer than {MAX_TEXT}")),
        false => Ok(()),
    }
}

/// Where a plugin applies (`match`), or where it does not (`exclude`):
/// every field given must hold (they are ANDed), as in Kyverno's resource
/// descriptions and ValidatingAdmissionPolicyBinding's `matchResources`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Selection {
    /// The labels of the object's namespace (a Namespace is matched on its
    /// own labels; other cluster-scoped objects always pass).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<Selector>,
    /// The object's own labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_selector: Option<Selector>,
    /// The names of the namespaces (as `namespaceSelector` for
    /// cluster-scoped objects).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    /// Kinds, as `Kind` or `apiVersion/Kind` (`Pod`, `apps/v1/Deployment`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kinds: Option<Vec<String>>,
}

impl Selection {
    /// Whether no field is given.
    pub fn is_empty(&self) -> bool {
        *self == Selection::default()
    }

    /// Check sizes and operators; `at` names the selection in errors.
    pub fn check(&self, at: &str) -> Result<(), String> {
        if let Some(s) = &self.namespace_selector {
            s.check(&format!("{at}.namespaceSelector"))?;
        }
        if let Some(s) = &self.object_selector {
            s.check(&format!("{at}.objectSelector"))?;
        }
        for (field, list) in [("namespaces", &self.namespaces), ("kinds", &self.kinds)] {
            let Some(list) = list else { continue };
            if list.len() > MAX_ITEMS {
                return Err(format!(
                    "{at}.{field}: {} items (at most {MAX_ITEMS})",
                    list.len()
                ));
            }
            for item in list {
                text(item, &format!("{at}.{field}"))?;
            }
        }
        for kind in self.kinds.iter().flatten() {
            let (api_version, kind) = split_kind(kind);
            if let Some(v) = api_version {
                wink_informer::canonical::Gvk::check(v, kind).map_err(|e| format!("{at}.kinds: {}", e.0))?;
            }
        }
        Ok(())
    }

    /// Whether the kind `api_version`/`kind` is among `kinds` (or no kinds given).
    pub fn has_kind(&self, api_version: &str, kind: &str) -> bool {
        let Some(kinds) = &self.kinds else {
            return true;
        };
        kinds.iter().any(|k| match split_kind(k) {
            (None, k) => k == kind,
            (Some(v), k) => wink_informer::canonical::same_type((v, k), (api_version, kind)),
        })
    }
}

/// `apps/v1/Deployment` → (`apps/v1`, `Deployment`); `Pod` → (none, `Pod`).
pub fn split_kind(s: &str) -> (Option<&str>, &str) {
    match s.rsplit_once('/') {
        Some((v, k)) => (Some(v), k),
        None => (None, s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(yaml: &str) -> Selector {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn selectors_match_as_kubernetes_does() {
        let labels = |l: &'static [(&'static str, &'static str)]| {
            move |k: &str| l.iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
        };
        let s = selector(
            "{matchLabels: {enforce: 'yes'}, matchExpressions: [{key: tier, operator: NotIn, values: [db]}]}",
        );
        assert!(s.matches(labels(&[("enforce", "yes")])));
        assert!(s.matches(labels(&[("enforce", "yes"), ("tier", "web")])));
        assert!(!s.matches(labels(&[("enforce", "yes"), ("tier", "db")])));
        assert!(!s.matches(labels(&[("enforce", "no")])));
        assert!(!s.matches(labels(&[])));
        let exists =
            selector("{matchExpressions: [{key: a, operator: Exists}, {key: b, operator: DoesNotExist}]}");
        assert!(exists.matches(labels(&[("a", "")])));
        assert!(!exists.matches(labels(&[("a", ""), ("b", "")])));
        assert!(Selector::default().matches(labels(&[])));
        assert_eq!(s.requirements().len(), 2);
        assert_eq!(s.requirements()[0].operator, Operator::In);
    }

    #[test]
    fn bad_selections_say_where() {
        let check = |yaml: &str| {
            serde_norway::from_str::<Selection>(yaml)
                .map_err(|e| e.to_string())
                .and_then(|s| s.check("match"))
        };
        assert!(check("{namespaces: [a], kinds: [Pod, apps/v1/Deployment]}").is_ok());
        assert!(
            check("{namespaceSelector: {matchLabel: {}}}")
                .unwrap_err()
                .contains("unknown field")
        );
        assert!(
            check("{objectSelector: {matchExpressions: [{key: a, operator: In}]}}")
                .unwrap_err()
                .contains("match.objectSelector.matchExpressions[0]: In needs values")
        );
        assert!(
            check("{objectSelector: {matchExpressions: [{key: a, operator: Exists, values: [x]}]}}")
                .unwrap_err()
                .contains("takes no values")
        );
        assert!(
            check("{namespaces: ['']}")
                .unwrap_err()
                .contains("match.namespaces")
        );
        assert!(
            check("{kinds: [core/v1/Pod]}")
                .unwrap_err()
                .contains("match.kinds")
        );
        let many = format!("{{namespaces: [{}]}}", vec!["a"; MAX_ITEMS + 1].join(","));
        assert!(check(&many).unwrap_err().contains("at most"));
    }

    #[test]
    fn kinds_match_with_or_without_their_api_version() {
        let s: Selection = serde_norway::from_str("{kinds: [Pod, apps/v1/Deployment]}").unwrap();
        assert!(s.has_kind("v1", "Pod"));
        assert!(s.has_kind("apps/v1", "Deployment"));
        assert!(!s.has_kind("apps/v1", "StatefulSet"));
        assert!(!s.has_kind("extensions/v1beta1", "Deployment"));
        assert!(Selection::default().has_kind("v1", "ConfigMap"));
    }
}
