//! Shared validating webhooks: plugins whose validating webhooks say the
//! same (failure policy, match policy, timeout, namespace and object
//! selectors) are served by one webhook of the configuration, as Kyverno
//! and Gatekeeper serve all their policies: the API server then sends a
//! review once, not once per plugin, and wink asks each plugin whose own
//! rules match it, at once, and answers with their decisions merged
//! ([`merged`]).
//!
//! A shared webhook's rules are its plugins' rules together; its path names
//! its plugins, `/admission/<a>.<b>.<c>/validate` (plugin names are DNS
//! labels, so `.` cannot be part of one; the API server takes a Service
//! path whose segments are DNS subdomains, so a segment, and with it a
//! shared webhook, holds at most [`MAX_SEGMENT`] characters of names);
//! its name says its failure policy, `fail.shared.validate.wink.dev` or
//! `ignore.shared.validate.wink.dev` (numbered, `fail-1`, `fail-2`, in
//! the order of their first plugins, when several groups have the same).
//! A plugin alone in its group keeps the webhook of its own,
//! `<plugin>.validate.wink.dev` at `/admission/<plugin>/validate`.
//! Mutating webhooks are never shared: the API server runs them one after
//! the other, each seeing the last one's patch.
//!
//! Owns grouping rendered webhooks, reading a shared path back, and merging
//! decisions; rendering is [`super::configurations`]', deciding
//! [`super::server`]'s.

use serde_json::Value;
use wink_runtime::admission::Decision;

/// The longest path segment the API server takes (a DNS subdomain's).
pub const MAX_SEGMENT: usize = 253;
/// The longest audit annotation key the API server keeps (the name part
/// of a qualified name).
const MAX_ANNOTATION_KEY: usize = 63;

/// The plugins a path segment names when it names several (`a.b.c`), in
/// order, once each; `None` for a single plugin's name. An empty name or
/// a segment over [`MAX_SEGMENT`] is `Some` of nothing (no such webhook).
pub fn plugins(segment: &str) -> Option<Vec<&str>> {
    if !segment.contains('.') {
        return None;
    }
    if segment.len() > MAX_SEGMENT || segment.split('.').any(str::is_empty) {
        return Some(Vec::new());
    }
    let mut out: Vec<&str> = Vec::new();
    for p in segment.split('.') {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Some(out)
}

/// What a webhook says besides its name, client and rules: webhooks equal
/// in it may be one.
fn settings(webhook: &Value) -> String {
    let mut rest = webhook.clone();
    if let Some(o) = rest.as_object_mut() {
        for k in ["name", "clientConfig", "rules"] {
            o.remove(k);
        }
    }
    rest.to_string()
}

/// `webhooks` (one per plugin, each `(plugin, rendered webhook)`, sorted
/// by plugin), with those of equal settings made one; `client(path)` is
/// the client configuration of a path. The result is sorted by name.
pub fn group(webhooks: Vec<(String, Value)>, client: impl Fn(&str) -> Value) -> Vec<Value> {
    let mut groups: Vec<(String, Vec<(String, Value)>)> = Vec::new();
    for (plugin, w) in webhooks {
        let key = settings(&w);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push((plugin, w)),
            None => groups.push((key, vec![(plugin, w)])),
        }
    }
    let mut out = Vec::new();
    for (_, members) in groups {
        // Chunks whose joined names fit one path segment.
        let mut chunk: Vec<(String, Value)> = Vec::new();
        let mut len = 0;
        for m in members {
            if !chunk.is_empty() && len + 1 + m.0.len() > MAX_SEGMENT {
                out.push(one(std::mem::take(&mut chunk), &client));
                len = 0;
            }
            len += m.0.len() + usize::from(!chunk.is_empty());
            chunk.push(m);
        }
        if !chunk.is_empty() {
            out.push(one(chunk, &client));
        }
    }
    // Shared webhooks of the same name (the same failure policy): numbered,
    // in the order of their first plugins.
    let mut names: Vec<String> = out
        .iter()
        .map(|w| w["name"].as_str().unwrap_or_default().to_string())
        .collect();
    for name in names.clone() {
        let same: Vec<usize> = (0..out.len()).filter(|i| names[*i] == name).collect();
        if same.len() < 2 || !name.ends_with(SHARED) {
            continue;
        }
        for (n, i) in same.into_iter().enumerate() {
            let policy = name.trim_end_matches(SHARED);
            names[i] = format!("{policy}-{}{SHARED}", n + 1);
            out[i]["name"] = Value::from(names[i].clone());
        }
    }
    out.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    out
}

/// The end of a shared webhook's name, after its failure policy: five
/// labels, so never a plugin's own webhook's (`<plugin>.validate.wink.dev`).
pub const SHARED: &str = ".shared.validate.wink.dev";

/// The webhook serving `members` (a plugin alone: its own, unchanged).
fn one(mut members: Vec<(String, Value)>, client: &impl Fn(&str) -> Value) -> Value {
    if members.len() == 1 {
        return members.pop().expect("one member").1;
    }
    let names: Vec<&str> = members.iter().map(|(p, _)| p.as_str()).collect();
    let mut rules: Vec<Value> = Vec::new();
    for (_, w) in &members {
        for r in w["rules"].as_array().into_iter().flatten() {
            if !rules.contains(r) {
                rules.push(r.clone());
            }
        }
    }
    let mut shared = members[0].1.clone();
    let policy = shared["failurePolicy"]
        .as_str()
        .unwrap_or("fail")
        .to_ascii_lowercase();
    shared["name"] = Value::from(format!("{policy}{SHARED}"));
    shared["clientConfig"] = client(&format!("/admission/{}/validate", names.join(".")));
    shared["rules"] = Value::Array(rules);
    shared
}

/// `text` said by `plugin`: prefixed with its name unless it begins with it.
fn named(plugin: &str, text: &str) -> String {
    match text
        .strip_prefix(plugin)
        .is_some_and(|rest| rest.starts_with(':'))
    {
        true => text.to_string(),
        false => format!("{plugin}: {text}"),
    }
}

/// The answer of a shared webhook from its plugins' `answers`, in path
/// order: allowed when every plugin allows; a denial's code and reason are
/// the first denying plugin's and its message every denying plugin's,
/// each named (`plugin: message`, joined by `; `); warnings are each
/// plugin's, as it says them (PodSecurity's `would violate PodSecurity
/// ...` stays as clients look for it); audit annotation keys are prefixed `<plugin>.` where
/// the key stays within the API server's 63 characters.
pub fn merged(answers: Vec<(String, Decision)>) -> Decision {
    let mut out = Decision::allow();
    let mut messages = Vec::new();
    for (plugin, d) in answers {
        if !d.allowed {
            if out.allowed {
                out.allowed = false;
                out.code = d.code;
                out.reason = d.reason.clone();
            }
            messages.push(named(&plugin, &d.message));
        }
        out.warnings.extend(d.warnings);
        out.audit_annotations
            .extend(d.audit_annotations.into_iter().map(|(k, v)| {
                let prefixed = format!("{plugin}.{k}");
                match prefixed.len() <= MAX_ANNOTATION_KEY {
                    true => (prefixed, v),
                    false => (k, v),
                }
            }));
    }
    out.message = messages.join("; ");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hook(plugin: &str, policy: &str, resource: &str) -> (String, Value) {
        let w = json!({
            "name": format!("{plugin}.validate.wink.dev"),
            "clientConfig": {"url": format!("https://h/admission/{plugin}/validate")},
            "rules": [{"operations": ["CREATE"], "resources": [resource]}],
            "failurePolicy": policy,
            "timeoutSeconds": 10,
        });
        (plugin.to_string(), w)
    }

    fn client(path: &str) -> Value {
        json!({"url": format!("https://h{path}")})
    }

    #[test]
    fn plugins_of_equal_settings_share_one_webhook_with_their_rules_together() {
        let hooks = vec![
            hook("a", "Fail", "pods"),
            hook("b", "Fail", "pods"),
            hook("c", "Ignore", "pods"),
            hook("d", "Fail", "services"),
        ];
        let out = group(hooks, client);
        assert_eq!(out.len(), 2, "{out:#?}");
        assert_eq!(out[1]["name"], "fail.shared.validate.wink.dev");
        assert_eq!(
            out[1]["clientConfig"]["url"],
            "https://h/admission/a.b.d/validate"
        );
        assert_eq!(
            out[1]["rules"],
            json!([{"operations": ["CREATE"], "resources": ["pods"]},
                   {"operations": ["CREATE"], "resources": ["services"]}]),
            "a rule given twice is kept once"
        );
        assert_eq!(out[1]["failurePolicy"], "Fail");
        // Alone in its group: its own webhook, unchanged.
        assert_eq!(out[0], hook("c", "Ignore", "pods").1);
    }

    #[test]
    fn a_shared_webhook_holds_what_one_path_segment_can_name() {
        let name = |i: usize| format!("{i:02}-{}", "p".repeat(57));
        let hooks: Vec<_> = (0..9).map(|i| hook(&name(i), "Fail", "pods")).collect();
        let out = group(hooks, client);
        // 60-character names: four fit 253 characters with their dots.
        assert_eq!(out.len(), 3, "{out:#?}");
        assert_eq!(out[1]["name"], "fail-1.shared.validate.wink.dev");
        assert_eq!(out[2]["name"], "fail-2.shared.validate.wink.dev");
        let url = |i: usize| out[i]["clientConfig"]["url"].as_str().unwrap();
        assert!(url(1).contains("/admission/00-") && url(2).contains("/admission/04-"));
        for w in &out {
            let url = w["clientConfig"]["url"].as_str().unwrap();
            let segment = url
                .trim_start_matches("https://h/admission/")
                .trim_end_matches("/validate");
            assert!(segment.len() <= MAX_SEGMENT, "{segment}");
            assert!(w["name"].as_str().unwrap().len() <= 253);
        }
        assert_eq!(out[0], hook(&name(8), "Fail", "pods").1, "the ninth alone");
        assert!(out[0]["name"].as_str().unwrap().starts_with("08-"));
    }

    #[test]
    fn a_path_segment_names_its_plugins() {
        assert_eq!(plugins("pod-security"), None);
        assert_eq!(plugins("a.b.a"), Some(vec!["a", "b"]));
        assert_eq!(plugins("a..b"), Some(vec![]));
        assert_eq!(plugins(&"a.".repeat(200)), Some(vec![]));
    }

    #[test]
    fn decisions_merge_naming_each_plugin() {
        let deny = |message: &str, code| Decision {
            allowed: false,
            code,
            reason: format!("R{code}"),
            message: message.into(),
            ..Decision::allow()
        };
        let warn = Decision {
            warnings: vec!["careful".into()],
            audit_annotations: vec![("k".into(), "v".into()), ("x".repeat(62), "long".into())],
            ..Decision::allow()
        };
        let all = merged(vec![("a".into(), Decision::allow()), ("b".into(), warn.clone())]);
        assert!(all.allowed);
        assert_eq!(all.warnings, vec!["careful"]);
        assert_eq!(
            all.audit_annotations,
            vec![("b.k".into(), "v".into()), ("x".repeat(62), "long".into())]
        );
        let refused = merged(vec![
            ("a".into(), Decision::allow()),
            ("b".into(), deny("no latest tag", 403)),
            ("c".into(), deny("c: says so itself", 400)),
            ("d".into(), warn),
        ]);
        assert!(!refused.allowed);
        assert_eq!((refused.code, refused.reason.as_str()), (403, "R403"));
        assert_eq!(refused.message, "b: no latest tag; c: says so itself");
        assert_eq!(refused.warnings, vec!["careful"]);
    }
}
