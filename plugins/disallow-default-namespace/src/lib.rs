//! `disallow-default-namespace`: the `default` namespace is where
//! everything lands that nobody placed; workloads there share it with
//! whatever else was forgotten, under no team's quota or policies. Objects
//! of the configured kinds may not be created in it.
//!
//! - At the door (a validating webhook on create and update of the kinds,
//!   sent only for the `default` namespace): refused, naming
//!   `metadata.namespace`.
//! - In the background: the objects of those kinds in `default` (the only
//!   namespace it watches) get the result `namespace` `fail`.
//!
//! Config (these are the defaults: the Pod and the workload kinds):
//! `{"kinds": [{"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": "apps/v1", "kind": "Deployment"}, ...]}`;
//! a kind's `resource` (plural) may be given, else it is the kind in lower
//! case plus `s` (`es` after `s`, `x`, `ch`, `sh`; `ies` for a final `y`).

use wink_sdk::admission::{self, Operation, Rule, Webhook};
use wink_sdk::serde::Deserialize;
use wink_sdk::{Registration, Watch, policy, workload};

const NAME: &str = "disallow-default-namespace";
const NAMESPACE: &str = "default";

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", deny_unknown_fields, rename_all = "camelCase")]
struct Kind {
    api_version: String,
    kind: String,
    #[serde(default)]
    resource: Option<String>,
}

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    kinds: Vec<Kind>,
}

struct Policy {
    config: Config,
}

/// What the policy reads of an object: its `metadata.namespace`.
#[derive(Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", default)]
struct Placed {
    metadata: Metadata,
}

#[derive(Default, Deserialize)]
#[serde(crate = "wink_sdk::serde", default)]
struct Metadata {
    namespace: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        let kinds = workload::KINDS
            .iter()
            .map(|k| Kind {
                api_version: k.api_version.into(),
                kind: k.kind.into(),
                resource: Some(k.resource.into()),
            })
            .collect();
        Config { kinds }
    }
}

/// `Kind`'s resource, as Kubernetes' plural usually is.
fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'o', 'u']))
    {
        return format!("{stem}ies");
    }
    match ["s", "x", "ch", "sh"].iter().any(|e| lower.ends_with(e)) {
        true => format!("{lower}es"),
        false => format!("{lower}s"),
    }
}

impl Kind {
    /// Its webhook rule.
    fn rule(&self) -> Result<Rule, String> {
        let (group, version) = match self.api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", self.api_version.as_str()),
        };
        if self.kind.is_empty() || version.is_empty() || version.contains('/') {
            return Err(format!(
                "bad config: kinds: {:?} {:?} is not an apiVersion and a kind",
                self.api_version, self.kind
            ));
        }
        let resource = self.resource.clone().unwrap_or_else(|| plural(&self.kind));
        let ops = [Operation::Create, Operation::Update];
        Ok(Rule::new(&ops, group, version, &resource).scope(admission::Scope::Namespaced))
    }
}

impl policy::Check<Placed> for Policy {
    const NAME: &'static str = NAME;

    fn new(config: &str) -> Result<Self, String> {
        let config: Config = wink_sdk::config(config)?;
        if config.kinds.is_empty() {
            return Err("bad config: kinds: name at least one kind".into());
        }
        // Each kind's rule, now: a bad one fails init.
        config.kinds.iter().try_for_each(|k| k.rule().map(drop))?;
        Ok(Policy { config })
    }

    fn registration(&self) -> Registration {
        let mut door =
            Webhook::validate().namespace_selector(format!("kubernetes.io/metadata.name={NAMESPACE}"));
        let mut registration = Registration::new();
        for kind in &self.config.kinds {
            if let Ok(rule) = kind.rule() {
                door = door.rule(rule);
            }
            registration = registration.watch(Watch::new(&kind.api_version, &kind.kind).namespace(NAMESPACE));
        }
        registration.admission(door)
    }

    fn rule(&self) -> policy::Rule {
        policy::Rule::new("namespace", "Best Practices", "not in the default namespace")
    }

    fn violations(&self, _kind: &str, object: &Placed) -> Vec<String> {
        // The request's object carries its namespace (the API server sets it).
        match object.metadata.namespace.as_deref() {
            Some(NAMESPACE) => vec![format!(
                "metadata.namespace is {NAMESPACE}: use a namespace of its own"
            )],
            _ => Vec::new(),
        }
    }
}

wink_sdk::export_plugin!(policy::Checked<Policy, Placed>);
