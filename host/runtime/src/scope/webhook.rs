//! A scoped plugin's webhooks as the configurations register them: the
//! plugin's own namespace and object selectors ANDed with the scope's
//! (`match`), and with the negation of `exclude` where one requirement
//! says it (a `notin`, a `!key`); what a selector cannot say (kinds, an
//! exclude of several requirements, which would be an OR) is left to the
//! review, which is answered without the plugin when its object is out of
//! scope. Owns only that rewriting.

use super::{NAME_LABEL, Operator, Requirement, Scope, Selection};
use crate::bindings::types::Webhook;

/// `r` as label selector text.
fn text(r: &Requirement) -> String {
    let values = || r.values.join(",");
    match r.operator {
        Operator::In => format!("{} in ({})", r.key, values()),
        Operator::NotIn => format!("{} notin ({})", r.key, values()),
        Operator::Exists => r.key.clone(),
        Operator::DoesNotExist => format!("!{}", r.key),
    }
}

fn negated(r: &Requirement) -> Requirement {
    let operator = match r.operator {
        Operator::In => Operator::NotIn,
        Operator::NotIn => Operator::In,
        Operator::Exists => Operator::DoesNotExist,
        Operator::DoesNotExist => Operator::Exists,
    };
    Requirement {
        operator,
        ..r.clone()
    }
}

/// The namespace and object requirements of `s`.
fn requirements(s: &Selection) -> (Vec<Requirement>, Vec<Requirement>) {
    let mut ns = s
        .namespace_selector
        .as_ref()
        .map(|s| s.requirements())
        .unwrap_or_default();
    if let Some(names) = &s.namespaces {
        ns.push(Requirement {
            key: NAME_LABEL.into(),
            operator: Operator::In,
            values: names.clone(),
        });
    }
    let obj = s
        .object_selector
        .as_ref()
        .map(|s| s.requirements())
        .unwrap_or_default();
    (ns, obj)
}

fn and(own: Option<String>, more: &[Requirement]) -> Option<String> {
    let parts: Vec<String> = own
        .into_iter()
        .filter(|s| !s.trim().is_empty())
        .chain(more.iter().map(text))
        .collect();
    (!parts.is_empty()).then(|| parts.join(","))
}

/// `webhook` narrowed to `scope`.
pub fn narrow(mut webhook: Webhook, scope: &Scope) -> Webhook {
    let (mut ns, mut obj) = requirements(scope.include());
    if let Some(e) = scope.exclude().filter(|e| e.kinds.is_none()) {
        match requirements(e) {
            (n, o) if n.len() == 1 && o.is_empty() => ns.push(negated(&n[0])),
            (n, o) if n.is_empty() && o.len() == 1 => obj.push(negated(&o[0])),
            _ => {}
        }
    }
    webhook.namespace_selector = and(webhook.namespace_selector.take(), &ns);
    webhook.object_selector = and(webhook.object_selector.take(), &obj);
    webhook
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::types::{FailurePolicy, Hook, MatchPolicy};

    fn webhook(ns: Option<&str>) -> Webhook {
        Webhook {
            hook: Hook::Validate,
            rules: vec![],
            namespace_selector: ns.map(str::to_string),
            object_selector: None,
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 10,
            match_policy: MatchPolicy::Equivalent,
        }
    }

    fn scope(include: &str, exclude: &str) -> Scope {
        let read = |y: &str| (!y.is_empty()).then(|| serde_norway::from_str::<Selection>(y).unwrap());
        Scope::new(read(include).as_ref(), read(exclude).as_ref()).unwrap()
    }

    #[test]
    fn the_selectors_are_the_intersection_of_the_plugins_and_the_operators() {
        let s = scope(
            "{namespaceSelector: {matchLabels: {enforce: 'yes'}}, objectSelector: {matchExpressions: [{key: app, operator: Exists}]}}",
            "{namespaces: [a, b]}",
        );
        let w = narrow(webhook(Some("team=x")), &s);
        assert_eq!(
            w.namespace_selector.as_deref(),
            Some("team=x,enforce in (yes),kubernetes.io/metadata.name notin (a,b)")
        );
        assert_eq!(w.object_selector.as_deref(), Some("app"));
        // Every text parses as the configurations read it.
        for t in [w.namespace_selector.unwrap(), w.object_selector.unwrap()] {
            wink_selector::LabelSelector::parse(&t).unwrap();
        }
        // An exclude of two requirements is an OR: left to the review.
        let two = scope(
            "{namespaces: [a]}",
            "{namespaces: [b], objectSelector: {matchLabels: {skip: 'y'}}}",
        );
        let w = narrow(webhook(None), &two);
        assert_eq!(
            w.namespace_selector.as_deref(),
            Some("kubernetes.io/metadata.name in (a)")
        );
        assert_eq!(w.object_selector, None);
        let labels = scope("", "{objectSelector: {matchLabels: {skip: 'y'}}}");
        assert_eq!(
            narrow(webhook(None), &labels).object_selector.as_deref(),
            Some("skip notin (y)")
        );
    }
}
