//! What the host checks of a registration before it resolves it: the name a
//! plugin declares, and that it asks only for what this host serves. Owns
//! those refusals and their messages; grants are decided elsewhere
//! (`allowed`).

use crate::bindings::types::{Enqueue, Queue, Registration};
use crate::workqueue::Config;
use std::time::Duration;

/// The longest plugin name (a DNS label: it goes into field managers,
/// Event sources and label values).
pub const MAX_NAME: usize = crate::plugin_file::MAX_NAME_LEN;

/// Whether `name` can be a plugin's declared name: a DNS-1123 label
/// (lowercase letters, digits and `-`, starting and ending with a letter or
/// digit, at most 63 characters).
pub fn check(name: &str) -> anyhow::Result<()> {
    if crate::plugin_file::is_dns_label(name) {
        return Ok(());
    }
    anyhow::bail!(
        "the declared plugin name {name:?} is not a DNS label (lowercase letters, digits and '-', \
         at most {MAX_NAME} characters, not starting or ending with '-')"
    )
}

/// A registration's queue numbers.
pub fn queue_config(q: &Queue) -> Config {
    Config {
        base_delay: Duration::from_millis(q.base_delay_ms.into()),
        max_delay: Duration::from_millis(q.max_delay_ms.into()),
        qps: q.qps,
        burst: q.burst,
    }
}

/// Refuse what the registration asks for that makes no sense (a queue
/// with bad numbers, or of a resource it neither watches nor reads; watches
/// enqueueing without a queue, or by an index not declared on the queue's
/// resource; an index by a field path that cannot index), and webhooks the
/// API server would refuse.
pub fn unserved(registration: &Registration) -> anyhow::Result<()> {
    queue(registration)?;
    indexes(registration)?;
    let mut hooks = Vec::new();
    for w in &registration.admission {
        if hooks.contains(&w.hook) {
            anyhow::bail!("it declares two {:?} webhooks: at most one of each", w.hook);
        }
        hooks.push(w.hook);
        if !(1..=30).contains(&w.timeout_seconds) {
            anyhow::bail!(
                "its {:?} webhook's timeout is {} s: the API server takes 1 to 30",
                w.hook,
                w.timeout_seconds
            );
        }
        if w.rules.is_empty() {
            anyhow::bail!("its {:?} webhook has no rules: it would match nothing", w.hook);
        }
    }
    Ok(())
}

/// Every index of every watch and read can index (see
/// [`wink_informer::index::IndexSpec::check`]).
fn indexes(registration: &Registration) -> anyhow::Result<()> {
    for source in super::sources(registration) {
        for index in source.indexes {
            super::index_spec(&index.by).check().map_err(|why| {
                anyhow::anyhow!(
                    "its index {:?} of {} {}: {why}",
                    index.name,
                    source.resource.api_version,
                    source.resource.kind
                )
            })?;
        }
    }
    Ok(())
}

/// The queue's checks (see [`unserved`]).
fn queue(registration: &Registration) -> anyhow::Result<()> {
    let enqueueing = registration
        .watches
        .iter()
        .find(|w| !matches!(w.enqueue, Enqueue::None));
    let Some(q) = &registration.queue else {
        if let Some(w) = enqueueing {
            anyhow::bail!(
                "its watch of {} {} enqueues keys, but it registers no queue",
                w.resource.api_version,
                w.resource.kind
            );
        }
        return Ok(());
    };
    queue_config(q).check().map_err(anyhow::Error::msg)?;
    let (v, k) = (&q.resource.api_version, &q.resource.kind);
    wink_informer::canonical::Gvk::check(v, k).map_err(|e| anyhow::anyhow!("its queue's resource: {e}"))?;
    let of_queue = |r: &crate::bindings::types::ResourceType| r.api_version == *v && r.kind == *k;
    let indexes: Vec<&str> = super::sources(registration)
        .filter(|s| of_queue(s.resource))
        .flat_map(|s| s.indexes.iter().map(|i| i.name.as_str()))
        .collect();
    if !registration.watches.iter().any(|w| of_queue(&w.resource))
        && !registration.reads.iter().any(|r| of_queue(&r.resource))
    {
        anyhow::bail!("its queue is of {v} {k}, which it neither watches nor reads");
    }
    for w in &registration.watches {
        if let Enqueue::ByIndex(name) = &w.enqueue
            && !indexes.contains(&name.as_str())
        {
            anyhow::bail!(
                "its watch of {} {} enqueues by the index {name:?}, which no watch or read of {v} {k} declares",
                w.resource.api_version,
                w.resource.kind
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::bindings::types::{Index, IndexBy, ResourceType, Watch};

    fn watch(api_version: &str, kind: &str, enqueue: Enqueue, indexes: Vec<Index>) -> Watch {
        Watch {
            resource: ResourceType {
                api_version: api_version.into(),
                kind: kind.into(),
            },
            namespace: None,
            label_selector: None,
            field_selector: None,
            resync_seconds: 0,
            indexes,
            updates_when: Vec::new(),
            enqueue,
        }
    }

    fn registration(watches: Vec<Watch>, queue: Option<Queue>) -> Registration {
        Registration {
            name: None,
            watches,
            reads: Vec::new(),
            writes: Vec::new(),
            records_events: false,
            wait_for_sync: true,
            admission: Vec::new(),
            queue,
        }
    }

    fn deployments(base_delay_ms: u32, qps: u32) -> Queue {
        Queue {
            resource: ResourceType {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
            },
            base_delay_ms,
            max_delay_ms: 1_000_000,
            qps,
            burst: 100,
        }
    }

    #[test]
    fn a_queue_is_served_and_its_numbers_and_feeds_checked() {
        let by_cm = Index {
            name: "by-configmap".into(),
            by: IndexBy::Field("spec.configMap".into()),
        };
        let good = registration(
            vec![
                watch("apps/v1", "Deployment", Enqueue::OwnKey, vec![by_cm]),
                watch("v1", "ConfigMap", Enqueue::ByIndex("by-configmap".into()), vec![]),
                watch("v1", "Pod", Enqueue::ControllerOwner, vec![]),
            ],
            Some(deployments(5, 10)),
        );
        unserved(&good).unwrap();
        let refused = |r: Registration, why: &str| {
            let e = unserved(&r).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        };
        let own = || watch("apps/v1", "Deployment", Enqueue::OwnKey, vec![]);
        refused(registration(vec![own()], None), "registers no queue");
        refused(
            registration(vec![own()], Some(deployments(0, 10))),
            "base-delay-ms is 0",
        );
        refused(registration(vec![own()], Some(deployments(5, 0))), "at least 1");
        refused(
            registration(
                vec![watch("v1", "Pod", Enqueue::Mapped, vec![])],
                Some(deployments(5, 10)),
            ),
            "neither watches nor reads",
        );
        refused(
            registration(
                vec![
                    own(),
                    watch("v1", "ConfigMap", Enqueue::ByIndex("nope".into()), vec![]),
                ],
                Some(deployments(5, 10)),
            ),
            "enqueues by the index \"nope\"",
        );
    }

    #[test]
    fn indexes_by_field_paths_that_cannot_index_are_refused() {
        let by = |path: &str| Index {
            name: "by-host".into(),
            by: IndexBy::Field(path.into()),
        };
        let with = |path: &str| {
            let mut r = registration(vec![], None);
            r.reads.push(crate::bindings::types::Read {
                resource: ResourceType {
                    api_version: "networking.k8s.io/v1".into(),
                    kind: "Ingress".into(),
                },
                namespace: None,
                label_selector: None,
                field_selector: None,
                indexes: vec![by(path)],
            });
            r
        };
        unserved(&with("spec.rules[*].host")).unwrap();
        unserved(&with("spec.rules.host")).unwrap();
        let e = unserved(&with("spec.rules[0")).unwrap_err().to_string();
        assert_eq!(
            e,
            "its index \"by-host\" of networking.k8s.io/v1 Ingress: the field path \"spec.rules[0\" cannot \
             index: segment 2 (\"rules[0\"): '[' is never closed"
        );
        let watched = registration(
            vec![watch("v1", "Pod", Enqueue::None, vec![by("spec..nodeName")])],
            None,
        );
        let e = unserved(&watched).unwrap_err().to_string();
        assert!(e.contains("of v1 Pod") && e.contains("segment 2 is empty"), "{e}");
    }

    #[test]
    fn declared_names_are_dns_labels() {
        for ok in ["team-label-guard", "a", "p2", &"a".repeat(63)] {
            check(ok).unwrap();
        }
        for bad in ["", "Team", "team_label", "-a", "a-", "a.b", &"a".repeat(64)] {
            let e = check(bad).unwrap_err().to_string();
            assert!(e.contains("not a DNS label"), "{bad}: {e}");
        }
    }
}
