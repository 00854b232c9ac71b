//! Admission steps of a `wink test` case: `{admit: {door, request}}` asks
//! the plugin's `validate` or `mutate` export about an AdmissionRequest (or
//! a whole AdmissionReview), on an admission instance of its own as
//! `wink run` does, and records the answer as `expect.admission` lines:
//! `validate default/web: denied 403 Forbidden: MESSAGE`, `mutate
//! default/web: allowed`, then `  warning: TEXT`, `  annotation: KEY=VALUE`
//! (an audit annotation) and `  patch: JSON PATCH` lines; a request about
//! an object outside the case's scope is `validate default/web: allowed
//! without the plugin: WHY`, as the API server would not send it; one
//! about an object a case's WinkException excepts from that webhook is
//! `allowed` without asking the plugin, with the daemon's warning `excepted
//! by WinkException NS/NAME: REASON`. Owns only that; the translation of
//! requests and answers is the runtime's
//! ([`crate::runtime::admission::review`]), the exception's decision the
//! webhook server's ([`crate::exceptions::review`]).

use crate::runtime::admission::{AdmissionRequest, Decision, review};
use crate::runtime::exceptions::ExceptionSet;
use crate::runtime::instance::{Door, PluginInstance};
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// An admission step.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Admit {
    /// `validate` or `mutate`.
    pub door: String,
    /// An `admission.k8s.io/v1` AdmissionRequest, or an AdmissionReview
    /// holding one in `request`.
    pub request: Value,
}

/// What answers a review before the plugin is asked: the case's scope
/// and exceptions.
pub struct Gates<'a> {
    pub scope: Option<Arc<crate::runtime::scope::Scope>>,
    pub exceptions: Option<&'a ExceptionSet>,
}

/// Play one admission step against `instance`'s plugin; its lines.
pub fn play(
    instance: &Arc<PluginInstance>,
    admitting: &mut Option<Arc<PluginInstance>>,
    gates: &Gates<'_>,
    step: &Admit,
) -> anyhow::Result<Vec<String>> {
    let door = match step.door.as_str() {
        "validate" => Door::Validate,
        "mutate" => Door::Mutate,
        other => bail!("admit: door must be validate or mutate, not {other:?}"),
    };
    let tree = step.request.get("request").unwrap_or(&step.request);
    if !tree.is_object() {
        bail!(
            "admit: the request is {}, not a JSON object (an AdmissionRequest, or an AdmissionReview holding one)",
            json_kind(tree)
        );
    }
    let request = AdmissionRequest::from_value(tree.clone());
    let asked = review::asked(&request)
        .map_err(anyhow::Error::msg)
        .context("admit")?;
    let admitter = match admitting {
        Some(a) if !a.is_crashed() => a.clone(),
        _ => {
            let fresh = PluginInstance::start_sharing(
                instance,
                instance.limits().call_deadline,
                &Default::default(),
            )?;
            *admitting = Some(fresh.clone());
            fresh
        }
    };
    let key = match (
        tree.get("namespace").and_then(Value::as_str),
        tree.get("name").and_then(Value::as_str),
    ) {
        (Some(ns), Some(name)) if !ns.is_empty() => format!("{ns}/{name}"),
        (_, Some(name)) => name.to_string(),
        _ => "(no name)".to_string(),
    };
    if let Err(line) = super::scoped::admitted(gates.scope.as_ref(), &step.door, &key, tree) {
        return Ok(vec![one_line(&line)]);
    }
    let now = std::time::SystemTime::now();
    let excepted = gates
        .exceptions
        .and_then(|set| crate::exceptions::review::excepted(set, instance.name(), &step.door, &request, now));
    if let Some(e) = excepted {
        return Ok(lines(&step.door, &key, &crate::exceptions::review::allowed(&e)));
    }
    let answer = futures::executor::block_on(admitter.admit(door, asked));
    let (verdict, changed) = match answer {
        Ok(answer) => answer,
        Err(why) => return Ok(vec![one_line(&format!("{} {key}: no answer: {why}", step.door))]),
    };
    let changed = changed.filter(|_| door == Door::Mutate);
    let decision = review::decision(verdict, changed, &request).map_err(anyhow::Error::msg)?;
    Ok(lines(&step.door, &key, &decision))
}

/// The lines of `decision`, the answer of `door` about `key`.
fn lines(door: &str, key: &str, decision: &Decision) -> Vec<String> {
    let mut lines = vec![if decision.allowed {
        format!("{door} {key}: allowed")
    } else {
        let reason = if decision.reason.is_empty() {
            "Forbidden"
        } else {
            &decision.reason
        };
        format!(
            "{door} {key}: denied {} {reason}: {}",
            decision.code, decision.message
        )
    }];
    lines.extend(decision.warnings.iter().map(|w| format!("  warning: {w}")));
    lines.extend(
        decision
            .audit_annotations
            .iter()
            .map(|(k, v)| format!("  annotation: {k}={v}")),
    );
    if let Some(patch) = &decision.patch {
        lines.push(format!("  patch: {patch}"));
    }
    lines.iter().map(|l| one_line(l)).collect()
}

/// What a JSON value is, for an error.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `line` with its control characters escaped (`\n`, `\u{1b}`): a name, a
/// message or a warning cannot start an expectation line of its own.
fn one_line(line: &str) -> String {
    line.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn control_characters_are_escaped_so_no_text_forges_a_line() {
        assert_eq!(
            one_line("validate ns/a\nvalidate ns/b: allowed"),
            "validate ns/a\\nvalidate ns/b: allowed"
        );
        assert_eq!(one_line("x\u{1b}[31m"), "x\\u{1b}[31m");
        assert_eq!(one_line("plain: allowed"), "plain: allowed");
    }
}
