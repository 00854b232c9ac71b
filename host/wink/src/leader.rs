//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's
//! semantics (`leaderelection` with a `LeaseLock`): a candidate takes the
//! Lease when it is free or its holder let it expire (`renewTime` +
//! `leaseDurationSeconds` passed), by an update conditioned on the Lease's
//! resourceVersion, so two candidates never both succeed; the leader renews
//! it every retry period, and gives up leadership (fencing: it stops
//! delivering and writing) once it could not renew for the renew deadline,
//! which is shorter than the lease, so no one else can have taken over yet.
//! On shutdown the leader releases the Lease at once for a standby.
//!
//! A small module rather than a crate: kube-lease-manager fits kube 5, but
//! it takes the Lease by server-side apply and relies on the server's
//! field-ownership conflicts to keep two candidates out, which the
//! simulated API server does not implement; this module needs only
//! resourceVersion preconditions, which every server (and the simulator)
//! enforces. Owns the Lease and the leadership flag; it knows nothing of
//! plugins.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How leadership is contended for.
#[derive(Debug, Clone)]
pub struct LeaderConfig {
    /// The Lease's namespace and name.
    pub namespace: String,
    pub name: String,
    /// This replica's identity (the pod name on a cluster).
    pub identity: String,
    /// How long a Lease is valid after its last renewal (client-go: 15 s).
    pub lease_duration: Duration,
    /// How long a leader tries to renew before it gives up (client-go: 10 s).
    pub renew_deadline: Duration,
    /// How often candidates try and leaders renew (client-go: 2 s).
    pub retry_period: Duration,
}

/// Whether this replica leads: read on every delivery and write.
#[derive(Debug, Clone)]
pub struct Leadership {
    leading: Arc<AtomicBool>,
}

impl Leadership {
    /// Always leading (no election).
    pub fn always() -> Self {
        Leadership {
            leading: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Not leading until elected.
    pub fn standby() -> Self {
        Leadership {
            leading: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether this replica leads now.
    pub fn is_leading(&self) -> bool {
        self.leading.load(Ordering::Acquire)
    }

    fn set(&self, leading: bool) {
        self.leading.store(leading, Ordering::Release);
    }
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

/// Whether `spec` is held by someone other than `identity` and still valid.
fn held_by_other(spec: &LeaseSpec, identity: &str) -> bool {
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder.is_empty() || holder == identity {
        return false;
    }
    let (Some(renewed), Some(seconds)) = (&spec.renew_time, spec.lease_duration_seconds) else {
        return false;
    };
    let expires = renewed.0 + Duration::from_secs(seconds.max(1) as u64);
    expires > Timestamp::now()
}

/// One acquire-or-renew attempt: whether this replica holds the Lease now.
async fn try_acquire_or_renew(api: &Api<Lease>, config: &LeaderConfig) -> kube::Result<bool> {
    let seconds = config.lease_duration.as_secs().max(1) as i32;
    let existing = api.get_opt(&config.name).await?;
    let Some(mut lease) = existing else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(config.name.clone()),
                namespace: Some(config.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(config.identity.clone()),
                lease_duration_seconds: Some(seconds),
                acquire_time: Some(now()),
                renew_time: Some(now()),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        };
    };
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    if held_by_other(spec, &config.identity) {
        return Ok(false);
    }
    if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
        spec.acquire_time = Some(now());
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
    }
    spec.holder_identity = Some(config.identity.clone());
    spec.lease_duration_seconds = Some(seconds);
    spec.renew_time = Some(now());
    // Conditioned on the resourceVersion read: a concurrent taker gets 409.
    match api.replace(&config.name, &PostParams::default(), &lease).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Give the Lease up if this replica holds it (on shutdown), so a standby
/// takes over on its next try instead of after the lease expires.
async fn release(api: &Api<Lease>, config: &LeaderConfig) -> kube::Result<()> {
    let Some(mut lease) = api.get_opt(&config.name).await? else {
        return Ok(());
    };
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
        return Ok(());
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(now());
    api.replace(&config.name, &PostParams::default(), &lease)
        .await
        .map(drop)
}

/// A running election: its leadership flag, told of every change on
/// `changes`. Call [`Elector::shutdown`] to release the Lease on the way out.
pub struct Elector {
    pub leadership: Leadership,
    pub changes: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Elector {
    /// Start contending for the Lease with `client`, driving `leadership`
    /// (which starts as a standby's).
    pub fn start(client: kube::Client, config: LeaderConfig, leadership: Leadership) -> Elector {
        leadership.set(false);
        let (changes_tx, changes) = watch::channel(false);
        let (stop, mut stopped) = watch::channel(false);
        let api: Api<Lease> = Api::namespaced(client, &config.namespace);
        let flag = leadership.clone();
        let task = tokio::spawn(async move {
            let attempt = |api: Api<Lease>, config: LeaderConfig| async move {
                tokio::time::timeout(config.retry_period, try_acquire_or_renew(&api, &config)).await
            };
            let mut last_renewed: Option<Instant> = None;
            loop {
                let held = matches!(attempt(api.clone(), config.clone()).await, Ok(Ok(true)));
                let leading = flag.is_leading();
                if held {
                    last_renewed = Some(Instant::now());
                    if !leading {
                        tracing::info!(identity = %config.identity, lease = %config.name, "became the leader");
                        flag.set(true);
                        let _ = changes_tx.send(true);
                    }
                } else if leading && last_renewed.is_none_or(|t| t.elapsed() >= config.renew_deadline) {
                    // Fencing: stop before the Lease can expire on the server.
                    tracing::warn!(identity = %config.identity, "lost the leadership (could not renew): standing by");
                    flag.set(false);
                    let _ = changes_tx.send(false);
                }
                tokio::select! {
                    _ = tokio::time::sleep(config.retry_period) => {}
                    _ = stopped.changed() => break,
                }
            }
            if flag.is_leading() {
                flag.set(false);
                let _ = changes_tx.send(false);
                match release(&api, &config).await {
                    Ok(()) => tracing::info!(identity = %config.identity, "leadership released"),
                    Err(e) => tracing::warn!("could not release the Lease: {e}"),
                }
            }
        });
        Elector {
            leadership,
            changes,
            stop,
            task,
        }
    }

    /// Stop contending; a leader releases the Lease first.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: &str, renewed_secs_ago: u64, duration: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            renew_time: Some(MicroTime(
                Timestamp::now() - Duration::from_secs(renewed_secs_ago),
            )),
            lease_duration_seconds: Some(duration),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn a_lease_is_held_by_another_only_while_it_is_valid() {
        assert!(held_by_other(&spec("a", 1, 15), "b"));
        assert!(!held_by_other(&spec("a", 20, 15), "b"), "expired");
        assert!(!held_by_other(&spec("b", 1, 15), "b"), "ours");
        assert!(!held_by_other(&spec("", 1, 15), "b"), "released");
        assert!(!held_by_other(&LeaseSpec::default(), "b"), "never held");
    }
}
