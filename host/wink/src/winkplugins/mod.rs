//! Plugins as cluster objects: a shared informer on `WinkPlugin`s
//! (`wink.dev/v1alpha1`, [`crd`]) and a controller that runs each one's
//! component through the plugin manager beside the plugin directory's.
//!
//! Every event names a WinkPlugin; one worker takes the names in order and
//! makes the plugin what its object says ([`apply`]): fetched by digest
//! (the store first) in a task of its own, at most [`MAX_CONCURRENT_PULLS`]
//! at once and [`MAX_PULLS_PER_HOST`] from one registry or https host, so
//! that a slow registry delays only its own WinkPlugins while
//! the worker goes on with the others' loads and deletions' unloads (a
//! pull whose object was edited, deleted or created anew meanwhile is
//! dropped and the object's pass made again); then its config and grant in
//! place, loaded as a file is,
//! so an edit of config, grant or source swaps that plugin alone with the
//! guarantees of a file reload; a deleted object's plugin is unloaded and
//! its grant taken back, its pin and plugin file forgotten and the store
//! collected (also each [`COLLECT_EVERY`], which forgets WinkPlugins
//! deleted while wink did not run). A failed pass leaves what runs running and is
//! tried again with backoff ([`RETRY_FIRST`] doubling to [`RETRY_MAX`]); a
//! generation already applied is not applied again. Every replica loads;
//! only the leader writes status ([`status`]): compared each [`REFRESH`]
//! with what the manager says (synced, quarantined), written at once when
//! more than the call counts changed, and for the counts alone at most
//! once each [`COUNTERS_REFRESH`]; it says in its log when a status it
//! writes reports another generation or readiness.
//!
//! NamespacedWinkPlugins (team plugins, [`namespaced`]) go through a second
//! controller of the same code: each named `<name>--<namespace>`, run as
//! the WinkPlugin the operator's team policy makes of it (refused with a
//! condition saying why), passed over again when that policy changes, its
//! status saying its team and plugin name, and when its namespace moves in
//! or out of the policy's `namespaceSelector` ([`team_policy`]); a
//! namespace runs at most the policy's `limits.plugins` of them ([`team_cap`]).

pub mod apply;
pub mod crd;
pub mod manifests;
pub mod namespaced;
mod objects;
pub(crate) use objects::ensure_named_crd;
pub mod pull_secret;
pub mod spec;
pub mod status;
pub mod team_cap;
pub mod team_policy;

use apply::Context_;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use objects::{Objects, api_resource, ensure_crd, run_controller};
use serde_json::Value;
use status::{Outcome, Running};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use wink_informer::SharedInformerFactory;
use wink_informer::repeated::{RepeatedFailure, short_anyhow, short_error, short_text};

/// The first wait before a failed pass is tried again.
pub const RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two tries.
pub const RETRY_MAX: Duration = Duration::from_secs(300);
/// How often the status of every WinkPlugin is compared with the plugin's.
pub const REFRESH: Duration = Duration::from_secs(1);
/// How long after a status write a change of the call counts alone
/// (`calls`, `crashes`) waits before it is written.
pub const COUNTERS_REFRESH: Duration = Duration::from_secs(60);
/// At most this many WinkPlugins are run.
pub const MAX_WINKPLUGINS: usize = 1024;
/// How often the store is collected besides at each deletion (blobs no
/// plugin names, pins of WinkPlugins deleted while wink did not run).
pub const COLLECT_EVERY: Duration = Duration::from_secs(60);
/// At most this many pulls (registry or https) run at once; the others
/// wait their turn (client-go controllers' default worker count is
/// smaller; pulls are mostly waiting on the network).
pub const MAX_CONCURRENT_PULLS: usize = 4;
/// At most this many of them from one host: a registry that hangs or
/// dribbles bytes leaves the other turns to other hosts.
pub const MAX_PULLS_PER_HOST: usize = 2;

/// Whether wink watches WinkPlugins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Watch {
    /// When the CRD is installed (`wink manifests --winkplugins` ships it).
    Auto,
    /// Install the CRD when missing, then watch.
    Install,
    /// Never.
    Off,
}

/// What the controller keeps of one WinkPlugin.
#[derive(Default)]
struct Entry {
    outcome: Outcome,
    /// Whether the last pass ran the plugin.
    applied: bool,
    /// What runs: the digests and language of the last pass that ran the
    /// plugin. A failed pass leaves that version running, and its status
    /// says so (as Flux keeps `status.artifact` when a fetch fails).
    running: Option<status::Artifact>,
    retry_at: Option<Instant>,
    delay: Duration,
    /// The last status written, and when.
    written: Option<Value>,
    written_at: Option<Instant>,
    /// Passes that failed, and status writes: said once a minute while
    /// they fail.
    failures: RepeatedFailure,
    status_failures: RepeatedFailure,
}

/// Run the WinkPlugins of the cluster of `config` (per `watch`) in
/// `manager`, beside the plugin directory `plugins` and the `--plugin-ref`s
/// of `oci`; pull Secrets are read in `namespace`. Started in the
/// background: an API server slow to answer delays nothing else, and one
/// that cannot start is said and the daemon runs on without it.
pub fn watch(
    watch: Watch,
    config: &kube::Config,
    manager: &Arc<wink_runtime::PluginManager>,
    oci: &wink_oci::plugins::PluginRefArgs,
    plugins: &std::path::Path,
    namespace: &str,
) -> anyhow::Result<()> {
    if watch == Watch::Off {
        return Ok(());
    }
    oci.check()?;
    let client = kube::Client::try_from(config.clone())?;
    let (manager, oci, plugins) = (manager.clone(), oci.clone(), plugins.to_path_buf());
    let namespace = namespace.to_string();
    tokio::spawn(async move {
        let cx = |pins| {
            Ok(Context_ {
                manager: manager.clone(),
                fetcher: oci.fetcher()?,
                client: client.clone(),
                namespace: namespace.clone(),
                taken: oci.taken(&plugins),
                pins,
            })
        };
        match start(watch, client.clone(), cx).await {
            Ok(_) => {}
            Err(e) if watch == Watch::Auto => tracing::warn!("WinkPlugins not watched: {}", short_anyhow(&e)),
            Err(e) => tracing::error!("WinkPlugins not watched: {}", short_anyhow(&e)),
        }
    });
    Ok(())
}

/// Start watching WinkPlugins (per `watch`) and running them. Whether the
/// controller runs; an error says why it could not start (the daemon runs
/// on without it).
pub async fn start(
    watch: Watch,
    client: kube::Client,
    cx: impl Fn(&'static str) -> anyhow::Result<Context_>,
) -> anyhow::Result<bool> {
    if watch == Watch::Off
        || !ensure_crd(&client, watch == Watch::Install, crd::CRD_NAME, crd::definition()).await?
    {
        return Ok(false);
    }
    run_controller(client.clone(), cx(apply::PINS)?, Objects::Cluster).await?;
    // Team plugins: beside WinkPlugins, when their CRD is there (or installed).
    let install = watch == Watch::Install;
    match ensure_crd(&client, install, namespaced::CRD_NAME, namespaced::definition()).await {
        Ok(true) => {
            let keys = Objects::Team(Default::default());
            if let Err(e) = run_controller(client, cx(apply::TEAM_PINS)?, keys).await {
                tracing::warn!("NamespacedWinkPlugins not watched: {}", short_anyhow(&e));
            }
        }
        Ok(false) => tracing::debug!("NamespacedWinkPlugins not watched: their CRD is not installed"),
        Err(e) => tracing::warn!("NamespacedWinkPlugins not watched: {}", short_anyhow(&e)),
    }
    Ok(true)
}

/// Which object a pull in flight was started for.
#[derive(Clone, PartialEq)]
struct Flight {
    uid: String,
    generation: i64,
    retry: bool,
}

/// A pull's end.
struct Done {
    name: String,
    flight: Flight,
    result: Result<apply::Pulled, Box<Outcome>>,
}

struct Controller {
    cx: Arc<Context_>,
    client: kube::Client,
    informer: Arc<wink_informer::SharedInformer>,
    entries: BTreeMap<String, Entry>,
    /// The turns of pulls ([`MAX_CONCURRENT_PULLS`]), and per host
    /// ([`MAX_PULLS_PER_HOST`]; a host's turns are dropped when none of
    /// its pulls is under way or waiting).
    pulls: Arc<tokio::sync::Semaphore>,
    hosts: BTreeMap<String, Arc<tokio::sync::Semaphore>>,
    /// The pulls under way, per WinkPlugin.
    in_flight: BTreeMap<String, Flight>,
    done: mpsc::UnboundedSender<Done>,
    /// When the store was last collected.
    collected: Instant,
    /// When to collect again before [`COLLECT_EVERY`]: a collection was
    /// put off for a pull under way, or kept unnamed blobs for their age.
    collect_again: Option<Instant>,
    objects: Objects,
    /// The team policy the team plugins were last passed under, and their
    /// namespaces' decisions ([`team_policy`]).
    team: team_policy::Followed,
    _factory: Arc<SharedInformerFactory>,
}

impl Controller {
    async fn run(
        mut self,
        mut names: mpsc::UnboundedReceiver<String>,
        mut pulled: mpsc::UnboundedReceiver<Done>,
    ) {
        let mut tick = tokio::time::interval(REFRESH);
        loop {
            tokio::select! {
                name = names.recv() => match name {
                    Some(name) => self.reconcile(&name, false).await,
                    None => return,
                },
                Some(done) = pulled.recv() => self.pulled(done).await,
                _ = tick.tick() => {
                    self.follow_team_policy().await;
                    let now = Instant::now();
                    let due: Vec<String> = self
                        .entries
                        .iter()
                        .filter(|(_, e)| e.retry_at.is_some_and(|t| t <= now))
                        .map(|(n, _)| n.clone())
                        .collect();
                    for name in due {
                        self.reconcile(&name, true).await;
                    }
                    self.write_statuses().await;
                    if self.collected.elapsed() >= COLLECT_EVERY
                        || self.collect_again.is_some_and(|t| t <= Instant::now())
                    {
                        self.collect();
                    }
                }
            }
        }
    }

    fn object(&self, name: &str) -> Option<Value> {
        let obj = self.informer.store().get(&self.objects.key(name)?)?;
        serde_json::from_str(&obj.json()).ok()
    }

    /// The WinkPlugin object `object` runs as: itself, or a team plugin's
    /// under the team policy ([`namespaced::as_winkplugin`]); else the
    /// outcome saying why it may not run.
    fn prepare(&mut self, object: Value) -> Result<Value, Box<Outcome>> {
        let prepared = match self.objects {
            Objects::Team(_) => self.team_plugin(&object),
            Objects::Cluster => {
                let name = object["metadata"]["name"].as_str().unwrap_or_default();
                match namespaced::cluster_name_refused(name) {
                    Some(refused) => Err(refused),
                    None => return Ok(object),
                }
            }
        };
        prepared.map_err(|r| {
            let mut o = Outcome {
                generation: object["metadata"]["generation"].as_i64().unwrap_or(0),
                ..Outcome::default()
            };
            o.conditions.push(status::Condition::new(
                "Loaded",
                Some(false),
                r.reason,
                r.message.clone(),
            ));
            o.last_error = Some(r.message);
            Box::new(o)
        })
    }

    /// Make plugin `name` what its object says; `retry`: a failed pass's
    /// turn came.
    async fn reconcile(&mut self, name: &str, retry: bool) {
        let Some(object) = self.object(name) else {
            if self.entries.remove(name).is_some_and(|e| e.applied) {
                self.cx.manager.unload(name).await;
                tracing::info!(winkplugin = %name, "{} deleted: its plugin is unloaded", self.objects.kind());
            }
            if let Objects::Team(keys) = &self.objects {
                keys.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
                self.room_made();
            }
            self.cx.manager.give_grant(name, None).await;
            self.cx.manager.give_failure_policy(name, None);
            self.cx.manager.give_team(name, None);
            if !self.in_flight.contains_key(name) {
                self.forget(name);
                self.collect();
            }
            return;
        };
        let generation = object["metadata"]["generation"].as_i64().unwrap_or(0);
        if let Some(e) = self.entries.get(name)
            && e.outcome.generation == generation
            && (e.retry_at.is_none() || !retry)
        {
            // Seen (a status write, a resync): nothing to do.
            return;
        }
        if !self.entries.contains_key(name) && self.entries.len() >= MAX_WINKPLUGINS {
            tracing::error!(winkplugin = %name, "more than {MAX_WINKPLUGINS} WinkPlugins: not run");
            return;
        }
        if self.in_flight.contains_key(name) {
            // Its pull's end looks at the object again.
            return;
        }
        let flight = Flight {
            uid: object["metadata"]["uid"].as_str().unwrap_or("").to_string(),
            generation,
            retry,
        };
        self.team_namespaces().await;
        let object = self.prepare(object);
        if object.is_err()
            && let Some(e) = self.entries.get_mut(name)
            && e.applied
        {
            // No longer allowed (the team policy changed): not left running.
            self.cx.manager.unload(name).await;
            self.cx.manager.give_grant(name, None).await;
            self.cx.manager.give_team(name, None);
            e.applied = false;
            e.running = None;
            tracing::warn!(winkplugin = %name, "team plugin no longer allowed: its plugin is unloaded");
        }
        self.in_flight.insert(name.to_string(), flight.clone());
        let host = object
            .as_ref()
            .ok()
            .and_then(|o| spec::parse(o).ok())
            .map(|s| s.source.host())
            .unwrap_or_default();
        // Turns of hosts no pull holds or waits for any more are dropped.
        self.hosts.retain(|_, s| Arc::strong_count(s) > 1);
        let of_host = self
            .hosts
            .entry(host)
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(MAX_PULLS_PER_HOST)))
            .clone();
        let (cx, pulls, done) = (self.cx.clone(), self.pulls.clone(), self.done.clone());
        let name = name.to_string();
        tokio::spawn(async move {
            let _host_turn = of_host.acquire_owned().await;
            let _turn = pulls.acquire_owned().await;
            let result = match object {
                Ok(object) => apply::pull(&cx, &name, &object).await,
                Err(refused) => Err(refused),
            };
            let _ = done.send(Done { name, flight, result });
        });
    }

    /// Forget what the store keeps for the WinkPlugin `name`, gone: its
    /// pin and its files in the plugins directory.
    fn forget(&self, name: &str) {
        let store = &self.cx.fetcher.store;
        if let Err(e) = store
            .unpin(&self.cx.pin_key(name))
            .and_then(|_| store.remove_plugin(name))
        {
            tracing::warn!(winkplugin = %name, "the store keeps what the deleted WinkPlugin used: {}", short_anyhow(&e));
        }
    }

    /// Collect the store's blobs no plugin names, when no pull is under
    /// way (else at a later tick); and first, once the informer has
    /// synced, forget the pins and files of WinkPlugins deleted while wink
    /// did not run. Blobs kept only for their age are come back for when
    /// they are old enough.
    fn collect(&mut self) {
        if !self.in_flight.is_empty() || !self.informer.has_synced() {
            self.collect_again = Some(Instant::now() + REFRESH);
            return;
        }
        self.collected = Instant::now();
        self.collect_again = None;
        let store = &self.cx.fetcher.store;
        let gone: Vec<String> = store
            .pins()
            .unwrap_or_default()
            .keys()
            .filter_map(|k| k.strip_prefix(self.cx.pins))
            .filter(|n| !self.entries.contains_key(*n) && self.object(n).is_none())
            .map(str::to_string)
            .collect();
        for name in gone {
            self.forget(&name);
        }
        let max = self.cx.fetcher.registry.options().max_component_bytes;
        match wink_oci::collect::collect(store, max) {
            Ok(done) => self.collect_again = done.again_in.map(|d| Instant::now() + d),
            Err(e) => tracing::warn!("the OCI store was not collected: {}", short_anyhow(&e)),
        }
    }

    /// A pull ended: load what it fetched when its object is still the
    /// one it was started for, else make the object's pass again.
    async fn pulled(&mut self, done: Done) {
        let Done { name, flight, result } = done;
        self.in_flight.remove(&name);
        let current = self.object(&name).map(|o| Flight {
            uid: o["metadata"]["uid"].as_str().unwrap_or("").to_string(),
            generation: o["metadata"]["generation"].as_i64().unwrap_or(0),
            retry: flight.retry,
        });
        if current.as_ref() != Some(&flight) {
            tracing::debug!(winkplugin = %name, "WinkPlugin changed while it was pulled: passed over again");
            self.reconcile(&name, false).await;
            return;
        }
        let (outcome, ran) = match result {
            Ok(pulled) => apply::finish(&self.cx, &name, pulled).await,
            Err(outcome) => (*outcome, None),
        };
        self.record(&name, flight.generation, flight.retry, outcome, ran)
            .await;
    }

    /// Keep what a pass found, and when to try again.
    async fn record(
        &mut self,
        name: &str,
        generation: i64,
        retry: bool,
        mut outcome: Outcome,
        ran: Option<spec::Spec>,
    ) {
        let entry = self.entries.entry(name.to_string()).or_default();
        let same_generation = entry.outcome.generation == generation;
        match (&ran, &entry.running) {
            (Some(_), _) => entry.running = Some(status::Artifact::of(&outcome)),
            (None, Some(running)) => running.describe(&mut outcome),
            (None, None) => {}
        }
        let reason = outcome
            .conditions
            .iter()
            .find(|c| c.ok == Some(false))
            .map(|c| c.reason.as_str());
        match (&ran, &outcome.last_error) {
            (None, Some(e)) => {
                let what = format!("{}: {}", reason.unwrap_or("Failed"), short_text(e));
                if let Some(said) = entry.failures.failed(&what) {
                    tracing::error!(winkplugin = %name, "WinkPlugin not applied: {said}");
                }
            }
            _ => {
                if let Some(said) = entry.failures.succeeded() {
                    tracing::info!(winkplugin = %name, "WinkPlugin applied: {said}");
                }
            }
        }
        entry.outcome = outcome;
        match ran {
            Some(_) => {
                entry.applied = true;
                entry.retry_at = None;
                entry.delay = RETRY_FIRST;
            }
            None => {
                entry.delay = match same_generation && retry {
                    true => (entry.delay * 2).clamp(RETRY_FIRST, RETRY_MAX),
                    false => RETRY_FIRST,
                };
                entry.retry_at = Some(Instant::now() + entry.delay);
            }
        }
        self.write_statuses().await;
    }

    /// As the leader, write each WinkPlugin's status where it changed.
    async fn write_statuses(&mut self) {
        if !self.cx.manager.leadership().is_leading() {
            return;
        }
        let running: BTreeMap<String, Running> = self
            .cx
            .manager
            .status()
            .await
            .iter()
            .map(|s| (s.name.clone(), Running::of(s)))
            .collect();
        let names: Vec<String> = self.entries.keys().cloned().collect();
        for name in names {
            let current = self.object(&name).and_then(|o| o.get("status").cloned());
            let entry = &self.entries[&name];
            let run = running.get(&name).filter(|_| entry.applied);
            let mut new = status::render(&entry.outcome, run, current.as_ref());
            let (api, object_name): (Api<DynamicObject>, String) = match self.objects.key(&name) {
                Some(key) if matches!(self.objects, Objects::Team(_)) => {
                    let (ns, object) = key.split_once('/').unwrap_or_default();
                    // Status and reports say the team (the namespace) and the plugin name.
                    new["team"] = Value::from(ns);
                    new["plugin"] = Value::from(name.as_str());
                    let ar = api_resource(namespaced::KIND, namespaced::PLURAL);
                    (
                        Api::namespaced_with(self.client.clone(), ns, &ar),
                        object.to_string(),
                    )
                }
                _ => (
                    Api::all_with(self.client.clone(), &api_resource(crd::KIND, crd::PLURAL)),
                    name.clone(),
                ),
            };
            let since = entry.written_at.map(|t| t.elapsed());
            if !status::due(&new, current.as_ref(), entry.written.as_ref(), since) {
                continue;
            }
            let patch = Patch::Merge(status::patch(&new, current.as_ref()));
            match api
                .patch_status(&object_name, &PatchParams::default(), &patch)
                .await
            {
                Ok(_) => {
                    if let Some(e) = self.entries.get_mut(&name) {
                        // Said when this replica first writes it, and when
                        // the generation or readiness it reports changes.
                        let key = |s: &Value| (s["observedGeneration"].clone(), s["ready"].clone());
                        if e.written.as_ref().map(key) != Some(key(&new)) {
                            tracing::info!(
                                winkplugin = %name,
                                observed_generation = %new["observedGeneration"],
                                ready = %new["ready"].as_str().unwrap_or("Unknown"),
                                "WinkPlugin status written"
                            );
                        }
                        e.written = Some(new);
                        e.written_at = Some(Instant::now());
                        if let Some(said) = e.status_failures.succeeded() {
                            tracing::info!(winkplugin = %name, "WinkPlugin status written: {said}");
                        }
                    }
                }
                Err(err) => {
                    let said = self
                        .entries
                        .get_mut(&name)
                        .and_then(|e| e.status_failures.failed(&short_error(&err)));
                    if let Some(said) = said {
                        tracing::warn!(winkplugin = %name, "WinkPlugin status not written: {said}");
                    }
                }
            }
        }
    }
}
