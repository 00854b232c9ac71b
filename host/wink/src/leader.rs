//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's
//! semantics (`leaderelection` with a `LeaseLock`): a candidate takes the
//! Lease when it is free or its holder let it expire (this candidate saw it
//! unchanged for its `leaseDurationSeconds`, by its own clock: see
//! [`observe`]), by an update conditioned on the Lease's
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
//! enforces. The Lease is read and written as JSON, so a Lease with fields
//! of the wrong types is still read (and replaced when it expires) rather
//! than failing every attempt. Owns the Lease and the leadership flag; it
//! knows nothing of plugins.

mod observe;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{GetParams, PostParams};
use kube::core::Request;
use observe::{Observer, Record};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use wink_informer::repeated::{RepeatedFailure, short_error};

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

pub use wink_runtime::leadership::Leadership;

/// The Lease of a [`LeaderConfig`] on the API server, as JSON.
struct LeaseApi {
    client: kube::Client,
    request: Request,
    config: LeaderConfig,
}

impl LeaseApi {
    fn new(client: kube::Client, config: LeaderConfig) -> LeaseApi {
        let path = <Lease as kube::Resource>::url_path(&(), Some(&config.namespace));
        LeaseApi {
            client,
            request: Request::new(path),
            config,
        }
    }

    /// "namespace/name", for the log.
    fn describe(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }

    /// The Lease, none when there is none.
    async fn read(&self) -> kube::Result<Option<Value>> {
        let request = self
            .request
            .get(&self.config.name, &GetParams::default())
            .map_err(kube::Error::BuildRequest)?;
        match self.client.request_text(request).await {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(kube::Error::SerdeError),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Create `object`, or replace it (conditioned on its resourceVersion);
    /// false when another writer got there first (409).
    async fn write(&self, object: &Value, create: bool) -> kube::Result<bool> {
        let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
        let request = match create {
            true => self.request.create(&PostParams::default(), body),
            false => self
                .request
                .replace(&self.config.name, &PostParams::default(), body),
        }
        .map_err(kube::Error::BuildRequest)?;
        match self.client.request_text(request).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn seconds(&self) -> i64 {
        self.config.lease_duration.as_secs().max(1) as i64
    }

    /// One acquire-or-renew attempt: whether this replica holds the Lease now.
    async fn try_acquire_or_renew(&self, observer: &mut Observer) -> kube::Result<bool> {
        let identity = self.config.identity.as_str();
        let Some(object) = self.read().await? else {
            let lease = json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": Record::parse(json!({})).next_spec(Some(identity), self.seconds(), observe::now(), 0),
            });
            return self.write(&lease, true).await;
        };
        let record = Record::parse(object);
        let lease = self.describe();
        let (take, saying) = observer.may_take(
            &lease,
            &record,
            identity,
            self.config.lease_duration,
            Instant::now(),
        );
        if let Some(saying) = saying {
            match saying.warn {
                true => tracing::warn!(lease, identity, "{}", saying.text),
                false => tracing::info!(lease, identity, "{}", saying.text),
            }
        }
        if !take {
            return Ok(false);
        }
        let (acquired, transitions) = match (&record.acquired, record.holder == identity) {
            (Some(acquired), true) => (acquired.clone(), record.transitions),
            _ => (observe::now(), record.transitions + 1),
        };
        let spec = record.next_spec(Some(identity), self.seconds(), acquired, transitions);
        let mut object = record.object;
        object["spec"] = spec;
        self.write(&object, false).await
    }

    /// Give the Lease up if this replica holds it (on shutdown), so a
    /// standby takes over on its next try instead of after the lease expires.
    async fn release(&self) -> kube::Result<()> {
        let Some(object) = self.read().await? else {
            return Ok(());
        };
        let record = Record::parse(object);
        if record.holder != self.config.identity {
            return Ok(());
        }
        let spec = record.next_spec(None, 1, observe::now(), record.transitions);
        let mut object = record.object;
        object["spec"] = spec;
        self.write(&object, false).await.map(drop)
    }
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
        let flag = leadership.clone();
        let task = tokio::spawn(async move {
            let lease = LeaseApi::new(client, config);
            let config = &lease.config;
            let mut observer = Observer::default();
            let mut last_renewed: Option<Instant> = None;
            let mut failures = RepeatedFailure::default();
            loop {
                let attempt =
                    tokio::time::timeout(config.retry_period, lease.try_acquire_or_renew(&mut observer))
                        .await;
                // An error is said once, then once a minute while it lasts.
                match &attempt {
                    Ok(Err(e)) => {
                        if let Some(said) = failures.failed(&short_error(e)) {
                            tracing::warn!(lease = %lease.describe(), "cannot read or write the Lease: {said}");
                        }
                    }
                    Ok(Ok(_)) => {
                        if let Some(said) = failures.succeeded() {
                            tracing::info!(lease = %lease.describe(), "the Lease is read and written again: {said}");
                        }
                    }
                    Err(_) => {}
                }
                let held = matches!(attempt, Ok(Ok(true)));
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
                match lease.release().await {
                    Ok(()) => tracing::info!(identity = %config.identity, "leadership released"),
                    Err(e) => tracing::warn!("could not release the Lease: {}", short_error(&e)),
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
