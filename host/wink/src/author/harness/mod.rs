//! `wink test`: a plugin tested offline. A test case (YAML) gives the
//! initial cache contents and steps (add, update, delete, resync, a relist
//! in which objects went missing); the real informer (store, HandleDeltas,
//! listeners on the delivery pool) and the real plugin runtime play them,
//! with no API server, and what the plugin did is compared with what the
//! case expects: the lines it logged and the policy results it reported.
//! `--bless` records what happened as the expectation.
//!
//! ```yaml
//! plugin: ../target/wasm32-wasip2/release/pod_logger.wasm   # relative to the case
//! config: {tag: demo}                                       # optional
//! fail: [409]                                               # optional: the first write's answer
//! match: {namespaceSelector: {matchLabels: {enforce: "yes"}}} # optional: the operator's scope
//! exclude: {objectSelector: {matchLabels: {tier: system}}}  # optional
//! exceptions: [{apiVersion: wink.dev/v1alpha1, kind: WinkException, ...}] # optional
//! objects:                                                  # the initial list
//!   - {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: default}}
//! steps:
//!   - add: {apiVersion: v1, kind: Pod, metadata: {name: b, namespace: default}}
//!   - update: {apiVersion: v1, kind: Pod, metadata: {name: b, namespace: default, labels: {x: y}}}
//!   - delete: {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: default}}
//!   - resync: true
//!   - relist: []                                            # b went missing: a tombstone
//! expect:
//!   log: ["INFO OnAdd: a", ...]
//!   writes: ['patch apps/v1 Deployment default/b merge {"metadata":{"labels":{"team":"x"}}}', ...]
//!   events: ["Warning MissingLabel default/b: no team label", ...]
//!   reports: ["default/b pod-security privileged-containers pass", ...]
//!   reconciles: ["default/b done", ...]                     # a reconciler's answers
//! ```
//!
//! Owns the case format, playing it and the comparison; the informer and
//! runtime are used as they are. The plugin is granted whatever it
//! declares (as `wink dev` grants it), and its writes and Events reach no
//! server: [`capture`] records each one and answers it as an API server
//! would, so `expect.writes` and `expect.events` say what the plugin did
//! (`create v1 ConfigMap team-a/defaults`, `delete v1 Pod default/old`, a
//! patch with its type and body). Watches get what their namespace, label
//! and field selectors select ([`feed`]); a scope (`match`, `exclude`, as a
//! grants entry or WinkPlugin gives it) is enforced as `wink run` does
//! ([`scoped`]), and so are the operator's WinkExceptions ([`excepted`]).

mod admit;
mod capture;
mod diff;
mod excepted;
mod feed;
mod panics;
mod patch;
mod reconcile;
mod scoped;

use crate::informer::{EventHandler, Notification, ObjRef};
use crate::reports::Aggregator;
use crate::runtime::capabilities::WriteAccess;
use crate::runtime::capabilities::cluster::ClusterAccess;
use crate::runtime::engine::{Compiler, Limits, WinkEngine};
use crate::runtime::grants::{Grants, Rate};
use crate::runtime::instance::PluginInstance;
use crate::runtime::scope::Tracker;
use crate::runtime::{loader, stdio};
use anyhow::{Context, bail};
use feed::Feed;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// One test case.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The component, relative to the case file.
    pub plugin: PathBuf,
    /// The plugin's name (default: the component's file name without
    /// `.wasm`, as `wink run` names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The plugin's config (given to `init` as JSON text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// Where the plugin applies, as the operator's grants entry or
    /// WinkPlugin says it (`namespaceSelector`, `objectSelector`,
    /// `namespaces`, `kinds`).
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub scope_match: Option<crate::runtime::scope::Selection>,
    /// Where it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<crate::runtime::scope::Selection>,
    /// The operator's WinkExceptions (whole objects), honoured as `wink
    /// run --exception-namespaces` honours them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exceptions: Vec<Value>,
    /// The initial cache contents.
    #[serde(default)]
    pub objects: Vec<Value>,
    /// Statuses the plugin's first writes are answered with, one each, in
    /// order (e.g. `[409]`: the first write conflicts), to show its retries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail: Vec<u16>,
    /// One map per step, `{add: OBJECT}`, as a manifest would write it.
    #[serde(default, with = "serde_norway::with::singleton_map_recursive")]
    pub steps: Vec<Step>,
    #[serde(default)]
    pub expect: Expect,
}

/// One step after the initial list.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Step {
    Add(Value),
    Update(Value),
    Delete(Value),
    /// Every watch with a resync period re-delivers its objects.
    Resync(bool),
    /// A relist with this full content: what is missing becomes a tombstone.
    Relist(Vec<Value>),
    /// An admission request to the plugin's `validate` or `mutate`.
    Admit(admit::Admit),
}

/// What the plugin must have done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Its log lines, in order, as `LEVEL message`.
    #[serde(default)]
    pub log: Vec<String>,
    /// Its writes, in order, one line each: `VERB apiVersion Kind key`
    /// (`key/status` for the status subresource), then a patch's type and
    /// body, a delete's options.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    /// Its Events, in order, as `TYPE REASON key: note`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// Its policy results at the end, as `key policy rule result`, sorted.
    #[serde(default)]
    pub reports: Vec<String>,
    /// Its answers to `admit` steps, in order (see [`admit`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admission: Vec<String>,
    /// Its reconciles, in order, as `KEY ANSWER` (see [`reconcile`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reconciles: Vec<String>,
}

/// The verdict on one case.
pub struct Outcome {
    pub got: Expect,
    pub passed: bool,
    /// A readable difference, when it failed.
    pub diff: String,
}

/// Play `case` (read from `path`) and compare.
pub fn run(path: &Path, case: &Case) -> anyhow::Result<Outcome> {
    let base = path.parent().unwrap_or(Path::new("."));
    let component = base.join(&case.plugin);
    let engine = WinkEngine::with_compiler(Compiler::Winch)?;
    let linker = loader::linker(&engine)?;
    let loaded = loader::load(&engine, &linker, None, &component)
        .with_context(|| format!("loading {}", component.display()))?;
    let config = case.config.as_ref().map(Value::to_string).unwrap_or_default();
    stdio::capture_guest_lines();
    stdio::take_captured();
    let limits = Limits::default().for_language(loaded.language);
    let name: Arc<str> = case.name.as_deref().map_or(loaded.name.clone(), Into::into);
    let (mut instance, mut registration) =
        PluginInstance::start(name, loaded.pre.clone(), &engine, config.clone(), limits, None)?;
    // A name the plugin declares is its name, as under `wink run` (the
    // case's `name`, when given, must be that one).
    if let Some(declared) = registration.name.clone().filter(|n| **n != *instance.name()) {
        if case.name.is_some() {
            bail!(
                "the case names the plugin {:?}, but it declares the name {declared:?}",
                instance.name()
            );
        }
        stdio::take_captured();
        (instance, registration) =
            PluginInstance::start(declared.into(), loaded.pre, &engine, config, limits, None)?;
    }
    let aggregator = Aggregator::new();
    instance.report_scope().connect(aggregator.clone());
    // Whatever it declares, as `wink dev` grants it, answered by the capture.
    let capture = Arc::new(capture::Capture::new(&case.objects));
    capture.inject(&case.fail);
    let declared = crate::runtime::manager::declared_writes(&registration);
    let (mut permissions, _) =
        Grants::whatever_is_declared().permissions(instance.name(), &declared, registration.records_events);
    permissions.rate = Some(Rate {
        qps: 1e9,
        burst: 1_000_000_000,
    });
    let cluster = Arc::new(ClusterAccess::local(capture.clone()));
    instance
        .write_scope()
        .grant(WriteAccess::new(instance.name().into(), cluster, permissions));
    let mut feed = Feed::default();
    let scope = scoped::scope(case.scope_match.as_ref(), case.exclude.as_ref(), &mut feed)?;
    instance.cache_scope().scope().set(scope);
    let scope = instance.cache_scope().scope().clone();
    let exceptions = excepted::set(&case.exceptions)?;
    // What each watch tells the plugin, under a scope or exceptions.
    let tracker = || {
        let excepting = exceptions.as_ref().map(|set| {
            let (name, id, reports) = (instance.name().into(), instance.id(), instance.report_scope());
            crate::runtime::scope::excepting::Excepting::new(set.clone(), name, id, reports.clone())
        });
        let tracker = Tracker::new(scope.clone());
        match excepting {
            Some(e) => Some(Arc::new(tracker.with_exceptions(e))),
            None => scope.get().map(|_| Arc::new(tracker)),
        }
    };
    let mut listeners = Vec::new();
    for source in crate::runtime::manager::sources(&registration) {
        let (api_version, kind) = (&source.resource.api_version, &source.resource.kind);
        let informer = feed.watch(
            api_version,
            kind,
            source.namespace,
            source.label_selector,
            source.field_selector,
        )?;
        capture.watch(api_version, kind, informer.store().clone());
        for index in source.indexes {
            let by = crate::runtime::manager::index_spec(&index.by);
            by.check()
                .map_err(|why| anyhow::anyhow!("registration refused: its index {:?}: {why}", index.name))?;
            informer.ensure_index(&index.name, &by.to_string(), by.func())?;
        }
        instance
            .cache_scope()
            .grant(api_version, kind, informer.store().clone());
        if source.handles_events {
            let resync =
                (source.resync_seconds > 0).then(|| Duration::from_secs(source.resync_seconds.into()));
            let filter = crate::runtime::filter::UpdateFilter::new(source.updates_when.to_vec());
            listeners.push((informer, resync, source.watch, filter));
        }
    }
    // The initial list, then the plugin joins: its initial adds, then one
    // `on-synced` once every watch delivered its list.
    feed.replace_all(&case.objects)?;
    let joined = Arc::new(Joined {
        instance: instance.clone(),
        pending: std::sync::atomic::AtomicUsize::new(listeners.len()),
        faults: capture.faults.clone(),
        queue: reconcile::Offline::of(&registration).map(Arc::new),
    });
    if let Some(q) = &joined.queue {
        instance.queue_scope().connect(q.clone());
    }
    // One watch at a time, so the log's order does not depend on threads.
    let mut scoped_watches = Vec::new();
    for (informer, resync, watch, filter) in listeners.iter().cloned() {
        let handler = Arc::new(Watched {
            joined: joined.clone(),
            watch,
            filter,
            tracker: tracker(),
        });
        if handler.tracker.is_some() {
            scoped_watches.push((handler.clone(), informer.clone()));
        }
        informer.add_listener(instance.name(), handler as Arc<dyn EventHandler>, resync);
        feed.settle()?;
    }
    if listeners.is_empty() {
        instance.on_synced();
    }
    joined.drain();
    let mut admission = Vec::new();
    let mut admitting = None;
    for step in &case.steps {
        if let Step::Admit(a) = step {
            let gates = admit::Gates {
                scope: scope.get(),
                exceptions: exceptions.as_ref(),
            };
            admission.extend(admit::play(&instance, &mut admitting, &gates, a)?);
            continue;
        }
        feed.play(step)?;
        feed.settle()?;
        // A step may have moved objects in or out of the scope (a
        // Namespace relabelled): each watch's objects are decided again
        // (and whether an exception excepts them).
        for (watched, informer) in &scoped_watches {
            let tracker = watched.tracker.as_ref().expect("a scoped watch");
            for marker in scoped::markers(tracker, informer) {
                watched.deliver("delivering a scope change", marker, false);
            }
        }
        joined.drain();
    }
    let faults = capture.faults.take();
    if !faults.is_empty() {
        bail!("wink test itself failed (a bug to report): {}", faults.join("; "));
    }
    if instance.is_crashed() {
        bail!("the plugin trapped (see the log above)");
    }
    let log: Vec<String> = stdio::take_captured().into_iter().map(|(_, line)| line).collect();
    let mut reports = Vec::new();
    for scope in aggregator.scopes() {
        for h in aggregator.snapshot(&scope) {
            let key = crate::informer::object::key_of(h.subject.namespace.as_deref(), &h.subject.name);
            reports.push(format!(
                "{key} {} {} {}",
                h.result.policy,
                h.result.rule,
                h.result.outcome.as_str()
            ));
        }
    }
    reports.sort();
    let got = Expect {
        log,
        writes: capture.writes(),
        events: capture.events(),
        reports,
        admission,
        reconciles: joined
            .queue
            .as_ref()
            .map(|q| std::mem::take(&mut *q.answers.lock().unwrap()))
            .unwrap_or_default(),
    };
    let passed = got == case.expect;
    let mut diff = String::new();
    let parts = [
        ("log", &case.expect.log, &got.log),
        ("writes", &case.expect.writes, &got.writes),
        ("events", &case.expect.events, &got.events),
        ("reports", &case.expect.reports, &got.reports),
        ("admission", &case.expect.admission, &got.admission),
        ("reconciles", &case.expect.reconciles, &got.reconciles),
    ];
    for (what, expected, got) in parts {
        if expected != got {
            diff.push_str(&format!("{what}:\n{}", diff::lines(expected, got)));
        }
    }
    Ok(Outcome { got, passed, diff })
}

/// The plugin behind every watch's listener: its `on-synced` comes once,
/// after the last watch delivered its initial list. A panic in a delivery
/// (the harness's, on the delivery thread) is recorded in `faults`, and the
/// delivery ends, so the case can end.
struct Joined {
    instance: Arc<PluginInstance>,
    pending: std::sync::atomic::AtomicUsize,
    faults: panics::Faults,
    /// The plugin's work queue, when it registers one.
    queue: Option<Arc<reconcile::Offline>>,
}

impl Joined {
    /// Reconcile every key queued so far.
    fn drain(&self) {
        if let Some(q) = &self.queue {
            let _ = self.faults.guard("reconciling", || q.drain(&self.instance));
        }
    }
}

/// One watch's listener: its events go through with the watch's number, as
/// `wink run` delivers them, and its update filter applied.
struct Watched {
    joined: Arc<Joined>,
    watch: u32,
    filter: crate::runtime::filter::UpdateFilter,
    /// What the plugin was told through this watch, under a scope.
    tracker: Option<Arc<Tracker>>,
}

impl Watched {
    /// Deliver `n` (through the scope's tracker, when scoped); `feeds`:
    /// it also adds keys to the plugin's queue, as `wink run`'s feeding
    /// listener does for what is in scope.
    fn deliver(&self, what: &str, n: Notification, feeds: bool) {
        let instance = &self.joined.instance;
        let scope = instance.cache_scope().scope();
        // What is in scope and not excepted feeds the queue, as under `wink run`.
        let excepts = |o: &ObjRef| self.tracker.as_ref().is_some_and(|t| t.excepts(o));
        let admits = |o: &ObjRef| scope.admits(o) && !excepts(o);
        let in_scope = match &n {
            Notification::Update { old, new } => admits(new) || admits(old),
            Notification::Add { obj, .. } | Notification::Delete { obj, .. } => admits(obj),
            Notification::Synced => false,
        };
        let _ = self.joined.faults.guard(what, || {
            if let Some(q) = self.joined.queue.as_ref().filter(|_| feeds && in_scope) {
                q.notified(instance, self.watch, &n);
            }
            let told = match &self.tracker {
                Some(tracker) => tracker.map(n),
                None => Some(n),
            };
            if let Some(n) = told {
                futures::executor::block_on(instance.deliver(self.watch, &n));
            }
        });
    }
}

impl EventHandler for Watched {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        let n = Notification::Add {
            obj: obj.clone(),
            in_initial_list,
        };
        self.deliver("delivering an add", n, true);
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        let delivers = self.filter.delivers(old, new);
        // An update that moves the object across the scope is told
        // whatever the filter says (an add or a delete for the plugin).
        if delivers || self.tracker.as_ref().is_some_and(|t| t.moves(old, new)) {
            let n = Notification::Update {
                old: old.clone(),
                new: new.clone(),
            };
            self.deliver("delivering an update", n, delivers);
        }
    }
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        let n = Notification::Delete {
            obj: obj.clone(),
            final_state_unknown,
        };
        self.deliver("delivering a delete", n, true);
    }
    fn on_synced(&self) {
        use std::sync::atomic::Ordering;
        let joined = &self.joined;
        if joined.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = joined.faults.guard("delivering on-synced", || {
                joined.instance.on_synced();
                if let Some(q) = &joined.queue {
                    q.synced(&joined.instance);
                }
            });
        }
    }
}

/// `wink test`: every case played and compared (or recorded, with `bless`).
pub fn test(cases: &[PathBuf], record: bool) -> anyhow::Result<()> {
    let mut failed = 0;
    for path in cases {
        let case = read(path)?;
        // A case that cannot be played (or a panic playing it) fails it;
        // the other cases are still played.
        let played = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(path, &case)))
            .unwrap_or_else(|p| {
                bail!(
                    "wink test itself failed (a bug to report): {}",
                    panics::message(p.as_ref())
                )
            });
        let outcome = match played {
            Ok(outcome) => outcome,
            Err(e) => {
                failed += 1;
                println!("FAILED  {}\n  {e:#}", path.display());
                continue;
            }
        };
        match (outcome.passed, record) {
            (true, _) => println!("ok      {}", path.display()),
            (false, true) => {
                bless(path, &case, outcome.got)?;
                println!("blessed {}", path.display());
            }
            (false, false) => {
                failed += 1;
                println!("FAILED  {}\n{}", path.display(), outcome.diff);
            }
        }
    }
    if failed > 0 {
        anyhow::bail!(
            "{failed} of {} test case(s) failed (`wink test --bless` records what happened)",
            cases.len()
        );
    }
    Ok(())
}

/// The largest test case file read.
pub const MAX_CASE_BYTES: u64 = 4 << 20;

/// Read a case file: with the one safe-file reader (a regular file, at most
/// [`MAX_CASE_BYTES`]), its nesting checked before it is parsed.
pub fn read(path: &Path) -> anyhow::Result<Case> {
    let text = wink_input::read_text(path, MAX_CASE_BYTES, "test case")?;
    let not_a_case = || format!("{}: not a wink test case", path.display());
    wink_input::depth::check_yaml(text.as_bytes()).with_context(not_a_case)?;
    serde_norway::from_str(&text).with_context(not_a_case)
}

/// Write `case` back with `got` as its expectation (`--bless`).
pub fn bless(path: &Path, case: &Case, got: Expect) -> anyhow::Result<()> {
    let mut case = case.clone();
    case.expect = got;
    // The case's leading comment stays (serde drops every other comment).
    let header: String = wink_input::read_text(path, MAX_CASE_BYTES, "test case")?
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let text = format!("{header}{}", serde_norway::to_string(&case)?);
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
