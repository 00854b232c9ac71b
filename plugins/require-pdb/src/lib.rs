//! `require-pdb`: a Deployment running several replicas is meant to
//! survive losing some, but a node drain evicts them all at once unless a
//! PodDisruptionBudget says how many may go. A Deployment asking for more
//! replicas than the configured number needs a PodDisruptionBudget of its
//! namespace whose selector matches its Pod template's labels: a
//! context-aware policy, looked up in wink's informer cache.
//!
//! - At the door (a validating webhook on Deployment create and update):
//!   refused, naming `spec.replicas` and the template's labels. Create the
//!   PodDisruptionBudget first (it may exist before its Pods).
//! - In the background: every Deployment gets the result `pdb` (`fail`, or
//!   `pass` naming the PodDisruptionBudget); a PodDisruptionBudget added,
//!   changed or deleted has the Deployments of its namespace given theirs again.
//!
//! An absent `spec.replicas` counts as 1. A selector matches as Kubernetes
//! matches it (`matchLabels` and `matchExpressions`; `{}` selects every Pod
//! of the namespace, a missing one none).
//! Config (this is the default): `{"replicasAbove": 1}`.

use std::collections::BTreeMap;
use wink_sdk::admission::{self, Operation, Rule, Verdict, Webhook};
use wink_sdk::cache;
use wink_sdk::serde::Deserialize;
use wink_sdk::serde_json::Value;
use wink_sdk::{Handler, Object, Registration, Resource, Watch, policy};

const NAME: &str = "require-pdb";

#[derive(Deserialize)]
#[serde(
    crate = "wink_sdk::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
struct Config {
    replicas_above: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config { replicas_above: 1 }
    }
}

fn pdbs() -> Resource {
    Resource::new("policy/v1", "PodDisruptionBudget")
}

fn deployments() -> Resource {
    Resource::new("apps/v1", "Deployment")
}

/// Whether the label selector `selector` (a LabelSelector) matches `labels`.
fn matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector.as_object() else {
        return false;
    };
    let by_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k).map(String::as_str) == v.as_str());
    let by_expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|e| {
            let value = e["key"].as_str().and_then(|k| labels.get(k));
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e["operator"].as_str() {
                Some("In") => value.is_some_and(|v| values.contains(&v.as_str())),
                Some("NotIn") => !value.is_some_and(|v| values.contains(&v.as_str())),
                Some("Exists") => value.is_some(),
                Some("DoesNotExist") => value.is_none(),
                _ => false,
            }
        });
    by_labels && by_expressions
}

struct Policy {
    config: Config,
}

impl Policy {
    /// What is wrong with `deployment` in `namespace`, and the PodDisruptionBudget that covers it.
    fn check(&self, namespace: &str, deployment: &Value) -> (Vec<String>, Option<String>) {
        let replicas = deployment["spec"]
            .get("replicas")
            .map_or(Some(1), Value::as_i64)
            .unwrap_or(0);
        if replicas <= i64::from(self.config.replicas_above) {
            return (Vec::new(), None);
        }
        let labels: BTreeMap<String, String> =
            wink_sdk::serde_json::from_value(deployment["spec"]["template"]["metadata"]["labels"].clone())
                .unwrap_or_default();
        let found = match cache::list_objects(&pdbs(), Some(namespace), None) {
            Ok(all) => all.into_iter().find(|pdb| {
                pdb.decode::<Value>()
                    .is_ok_and(|p| matches(&p["spec"]["selector"], &labels))
            }),
            Err(e) => return (vec![format!("PodDisruptionBudgets not looked up: {e:?}")], None),
        };
        match found {
            Some(pdb) => (Vec::new(), Some(pdb.key().to_string())),
            None => {
                let shown: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                (
                    vec![format!(
                        "spec.replicas {replicas} is above {} and no PodDisruptionBudget of namespace {namespace} selects its Pods (spec.template.metadata.labels {})",
                        self.config.replicas_above,
                        shown.join(",")
                    )],
                    None,
                )
            }
        }
    }

    fn report(&self, obj: &Object) {
        let (Ok(deployment), Some(ns)) = (obj.decode::<Value>(), obj.namespace()) else {
            return;
        };
        let (found, pdb) = self.check(ns, &deployment);
        let pass = match pdb {
            Some(pdb) => format!("the PodDisruptionBudget {pdb} selects its Pods"),
            None => format!(
                "at most {} replicas: no PodDisruptionBudget needed",
                self.config.replicas_above
            ),
        };
        policy::report(obj, &policy::Rule::new("pdb", "Best Practices", &pass), &found);
    }

    /// A PodDisruptionBudget changed: every Deployment of its namespace again.
    fn report_namespace(&self, pdb: &Object) {
        let Some(ns) = pdb.namespace() else { return };
        match cache::list_objects(&deployments(), Some(ns), None) {
            Ok(all) => all.iter().for_each(|d| self.report(d)),
            Err(e) => wink_sdk::warn!("{NAME}: Deployments of {ns} not looked up: {e:?}"),
        }
    }
}

impl Handler for Policy {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        let door = Webhook::validate().rule(Rule::new(
            &[Operation::Create, Operation::Update],
            "apps",
            "v1",
            "deployments",
        ));
        let registration = Registration::new()
            .name(NAME)
            .watch(Watch::new("apps/v1", "Deployment"))
            .watch(Watch::new("policy/v1", "PodDisruptionBudget"))
            .admission(door);
        Ok((Policy { config }, registration))
    }

    fn on_add(&mut self, obj: &Object, in_initial_list: bool) {
        match obj.kind() {
            "Deployment" => self.report(obj),
            // In the initial list each Deployment is reported against the
            // whole cache by its own add.
            _ if !in_initial_list => self.report_namespace(obj),
            _ => {}
        }
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        match new.kind() {
            "Deployment" => self.report(new),
            _ => self.report_namespace(new),
        }
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
        if obj.kind() == "PodDisruptionBudget" {
            self.report_namespace(obj);
        }
    }

    fn validate(&mut self, request: &admission::Request) -> Verdict {
        match (request.decode::<Value>(), request.namespace()) {
            (Some(Ok(deployment)), Some(ns)) => policy::verdict(NAME, &self.check(ns, &deployment).0),
            _ => Verdict::allow(),
        }
    }
}

wink_sdk::export_plugin!(Policy);
