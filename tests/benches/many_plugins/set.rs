//! The plugins of a run: N different registrations of the `bench-many`
//! plugin (what they watch, where, with which selector and update filter),
//! each written as a config beside its own copy of the component, and the
//! same specs for the native baseline's handlers.

use serde_json::{Value, json};

/// The two streams: ConfigMaps updated in a burst, Pods churned at a pace.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stream {
    Burst,
    Paced,
}

impl Stream {
    pub fn name(self) -> &'static str {
        match self {
            Stream::Burst => "burst",
            Stream::Paced => "paced",
        }
    }

    pub fn parse(s: &str) -> Stream {
        match s {
            "burst" => Stream::Burst,
            "paced" => Stream::Paced,
            other => panic!("unknown stream {other}"),
        }
    }

    /// The kind the stream writes.
    pub fn kind(self) -> &'static str {
        match self {
            Stream::Burst => "ConfigMap",
            Stream::Paced => "Pod",
        }
    }

    /// The kind the other stream writes (watched here, quiet here).
    fn other_kind(self) -> &'static str {
        match self {
            Stream::Burst => "Pod",
            Stream::Paced => "ConfigMap",
        }
    }

    /// A selector every object of the stream matches, and one that only
    /// some match.
    fn selectors(self) -> [&'static str; 2] {
        match self {
            Stream::Burst => ["app=bench", "shard in (s1,s2,s3,s4)"],
            Stream::Paced => ["app=web", "app=web,tier!=db"],
        }
    }
}

/// One plugin's registration.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Spec {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub namespace: Option<&'static str>,
    pub label_selector: Option<&'static str>,
    /// `generation`, `labels`, `label:<key>`: an update is delivered when
    /// any of them changed; empty: every update.
    pub updates_when: Vec<&'static str>,
}

impl Spec {
    /// The plugin's config file.
    pub fn config(&self) -> Value {
        json!({"api_version": self.api_version, "kind": self.kind, "namespace": self.namespace,
            "label_selector": self.label_selector, "updates_when": self.updates_when})
    }

    /// The watch it opens: plugins that share one share a list+watch.
    pub fn watch(
        &self,
    ) -> (
        &'static str,
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
    ) {
        (self.api_version, self.kind, self.namespace, self.label_selector)
    }

    /// Whether it watches the stream's objects (`default` namespace).
    pub fn on_stream(&self, stream: Stream) -> bool {
        self.kind == stream.kind() && self.namespace.is_none_or(|n| n == "default")
    }
}

/// The plugins of a set: `mixed` (what an operator's many policies look
/// like: 6 in 10 on the stream's kind, in every namespace or `default`,
/// with a selector every object matches, one that some match, or none;
/// the others on the other stream's kind, Deployments, Services, or
/// another namespace; every other plugin filtering its updates by
/// generation, labels or one label) or `plain` (all on the stream's kind,
/// nothing filtered: N copies of one registration). Plugin 0 is the same
/// in both: the stream's kind, everything.
pub fn plugins(stream: Stream, set: &str, n: usize) -> Vec<Spec> {
    (0..n)
        .map(|i| {
            let plain = Spec {
                api_version: "v1",
                kind: stream.kind(),
                namespace: None,
                label_selector: None,
                updates_when: Vec::new(),
            };
            if i == 0 || set == "plain" {
                return plain;
            }
            let mut spec = plain;
            match i % 10 {
                0..=5 => {}
                6 => spec.kind = stream.other_kind(),
                7 => {
                    spec.api_version = "apps/v1";
                    spec.kind = "Deployment";
                }
                8 => spec.kind = "Service",
                _ => spec.namespace = Some("other"),
            }
            if spec.namespace.is_none() && (i / 10) % 3 == 1 {
                spec.namespace = Some("default");
            }
            spec.label_selector = match i % 3 {
                0 => None,
                k => Some(stream.selectors()[k - 1]),
            };
            if spec.kind != stream.kind() {
                spec.label_selector = None;
            }
            if i % 2 == 1 {
                spec.updates_when = match (i / 2) % 4 {
                    0 => vec!["generation"],
                    1 => vec!["labels"],
                    2 => vec!["generation", "labels"],
                    _ => vec!["label:app"],
                };
            }
            spec
        })
        .collect()
}

/// What a set of specs is, in a few words: how many watch the stream's
/// objects, how many of them filter, and how many watches they open.
pub fn describe(stream: Stream, specs: &[Spec]) -> String {
    let on: Vec<&Spec> = specs.iter().filter(|s| s.on_stream(stream)).collect();
    let filtering = on.iter().filter(|s| !s.updates_when.is_empty()).count();
    let mut watches: Vec<_> = specs.iter().map(Spec::watch).collect();
    watches.sort();
    watches.dedup();
    format!(
        "{} on the stream ({filtering} filtering), {} watches",
        on.len(),
        watches.len()
    )
}
