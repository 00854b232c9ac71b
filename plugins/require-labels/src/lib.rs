//! `require-labels`: a policy that acts. It watches apps/v1 Deployments in
//! every namespace; a Deployment missing a required label gets a Warning
//! Event (`MissingLabel`, the note names the label) and the label, set to
//! its default by a merge patch. It converges: the patched Deployment comes
//! back as an update that needs nothing.
//!
//! Every Deployment it checks (each add and update) also gets one policy
//! result per required label, in category `Labels` with severity medium:
//! rule `require-label-<label>`, `fail` ("missing label team") when the
//! Deployment it was handed lacks the label, `pass` ("has label team") when
//! it has it. The label it sets comes back as an update, which turns the
//! result to `pass`.
//!
//! The same rule at the door: its mutating webhook sets a missing label to
//! its default on every Deployment created or updated, with a warning
//! naming it, so a new Deployment is stored with its labels; the event
//! handler fixes those created while wink was away.
//!
//! Config (these are the defaults): `{"labels": ["team"], "default": "unassigned"}`.
//! It declares `patch` on Deployments and Events; the operator grants them.

use wink_sdk::admission::{self, Mutation, Operation, Rule, Webhook};
use wink_sdk::report::{self, Outcome, Severity};
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json;
use wink_sdk::write::{self, WriteError, Written};
use wink_sdk::{Handler, Object, Registration, Resource, Verb, Watch, events};

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    labels: Vec<String>,
    default: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            labels: vec!["team".into()],
            default: "unassigned".into(),
        }
    }
}

struct RequireLabels {
    config: Config,
}

fn deployments() -> Resource {
    Resource::new("apps/v1", "Deployment")
}

impl RequireLabels {
    fn check(&self, obj: &Object) {
        let missing: Vec<&String> = self
            .config
            .labels
            .iter()
            .filter(|l| obj.label(l).is_none())
            .collect();
        self.report(obj, &missing);
        if missing.is_empty() {
            return;
        }
        let labels: serde_json::Map<String, serde_json::Value> = missing
            .iter()
            .map(|label| (label.to_string(), self.config.default.clone().into()))
            .collect();
        let patch = serde_json::json!({"metadata": {"labels": labels}});
        // In audit mode the patch is a dry run: say what would have been done.
        let (action, done) = match write::merge_patch(&deployments(), obj.key(), &patch) {
            Ok(Written::Applied(_)) => ("Labeled", "set to"),
            Ok(Written::DryRun(_)) => ("WouldLabel", "would be set to (audit mode: nothing changed)"),
            // Deleted meanwhile: nothing to label.
            Err(WriteError::NotFound(_)) => return,
            Err(e) => {
                wink_sdk::warn!("require-labels: {} not labeled: {e:?}", obj.key());
                ("NotLabeled", "could not be set to")
            }
        };
        for label in &missing {
            let note = format!("missing label {label}: {done} {:?}", self.config.default);
            wink_sdk::info!("require-labels: {}: {note}", obj.key());
            if let Err(e) = events::warning(obj, "MissingLabel", action, &note) {
                wink_sdk::warn!("require-labels: Event about {} not recorded: {e:?}", obj.key());
            }
        }
    }

    // ANCHOR: report
    /// One result per required label: `fail` when it is `missing`, else `pass`.
    fn report(&self, obj: &Object, missing: &[&String]) {
        let findings: Vec<report::Finding> = self
            .config
            .labels
            .iter()
            .map(|label| {
                let (outcome, message) = if missing.contains(&label) {
                    (Outcome::Fail, format!("missing label {label}"))
                } else {
                    (Outcome::Pass, format!("has label {label}"))
                };
                report::finding(format!("require-label-{label}"), outcome)
                    .message(message)
                    .severity(Severity::Medium)
                    .category("Labels")
            })
            .collect();
        if let Err(e) = report::set(obj, &findings) {
            wink_sdk::warn!("require-labels: results about {} not given: {e}", obj.key());
        }
    }
    // ANCHOR_END: report
}

impl Handler for RequireLabels {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        // ANCHOR: registration
        let registration = Registration::new()
            .watch(Watch::new("apps/v1", "Deployment"))
            .writes(deployments(), &[Verb::Patch])
            .records_events()
            .admission(Webhook::mutate().rule(Rule::new(
                &[Operation::Create, Operation::Update],
                "apps",
                "v1",
                "deployments",
            )));
        // ANCHOR_END: registration
        Ok((RequireLabels { config }, registration))
    }

    fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
        self.check(obj);
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        self.check(new);
    }

    fn mutate(&mut self, request: &admission::Request) -> Mutation {
        let Some(Ok(mut deployment)) = request.decode::<serde_json::Value>() else {
            return Mutation::unchanged();
        };
        let missing: Vec<&String> = self
            .config
            .labels
            .iter()
            .filter(|l| deployment["metadata"]["labels"].get(l.as_str()).is_none())
            .collect();
        if missing.is_empty() {
            return Mutation::unchanged();
        }
        let labels = &mut deployment["metadata"]["labels"];
        if !labels.is_object() {
            *labels = serde_json::json!({});
        }
        let mut mutation = Mutation::unchanged();
        for label in missing {
            labels[label.as_str()] = self.config.default.clone().into();
            mutation.verdict = mutation.verdict.warn(format!(
                "require-labels: missing label {label}: set to {:?}",
                self.config.default
            ));
        }
        mutation.object = Some(deployment);
        mutation
    }
}

wink_sdk::export_plugin!(RequireLabels);
