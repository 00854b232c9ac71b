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
//!   reports: ["default/b pod-security privileged-containers pass", ...]
//! ```
//!
//! Owns the case format, playing it and the comparison; the informer and
//! runtime are used as they are. Writes and Events reach no server here:
//! the plugin is granted none, so it sees `not-permitted`, and its log says
//! so. Watches' namespaces apply; their label and field selectors do not.

mod diff;

use crate::informer::object::{CachePolicy, CachedObject};
use crate::informer::reflector::Delta;
use crate::informer::{EventHandler, ObjRef, SharedInformer};
use crate::reports::Aggregator;
use crate::runtime::engine::{Compiler, Limits, WinkEngine};
use crate::runtime::instance::PluginInstance;
use crate::runtime::{loader, stdio};
use anyhow::{Context, bail};
use kube::api::{ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// The initial cache contents.
    #[serde(default)]
    pub objects: Vec<Value>,
    /// One map per step, `{add: OBJECT}`, as a manifest would write it.
    #[serde(default, with = "serde_yaml::with::singleton_map_recursive")]
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
}

/// What the plugin must have done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Its log lines, in order, as `LEVEL message`.
    #[serde(default)]
    pub log: Vec<String>,
    /// Its policy results at the end, as `key policy rule result`, sorted.
    #[serde(default)]
    pub reports: Vec<String>,
}

/// The verdict on one case.
pub struct Outcome {
    pub got: Expect,
    pub passed: bool,
    /// A readable difference, when it failed.
    pub diff: String,
}

/// One informer per watched or read (apiVersion, kind), fed by the case.
struct Feed {
    informers: BTreeMap<(String, String), (Arc<SharedInformer>, Option<String>)>,
    versions: u64,
}

impl Feed {
    /// The cached form of `v`, with a uid and a resourceVersion when the
    /// case gives none; none when no informer takes its type or namespace.
    fn object(&mut self, v: &Value) -> anyhow::Result<Option<(Arc<SharedInformer>, ObjRef)>> {
        let api_version = v["apiVersion"]
            .as_str()
            .context("an object needs an apiVersion")?;
        let kind = v["kind"].as_str().context("an object needs a kind")?;
        let Some((informer, namespace)) = self.informers.get(&(api_version.into(), kind.into())) else {
            return Ok(None);
        };
        let mut v = v.clone();
        let ns = v["metadata"]["namespace"].as_str().map(str::to_string);
        if namespace.is_some() && *namespace != ns {
            return Ok(None);
        }
        let name = v["metadata"]["name"]
            .as_str()
            .context("an object needs metadata.name")?
            .to_string();
        if v["metadata"]["uid"].is_null() {
            v["metadata"]["uid"] = format!("uid-{}-{name}", ns.as_deref().unwrap_or("")).into();
        }
        self.versions += 1;
        if v["metadata"]["resourceVersion"].is_null() {
            v["metadata"]["resourceVersion"] = self.versions.to_string().into();
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        let obj: DynamicObject = serde_json::from_value(v).context("not a Kubernetes object")?;
        let policy = CachePolicy {
            compress: false,
            ..CachePolicy::default()
        };
        Ok(Some((
            informer.clone(),
            CachedObject::from_dynamic(obj, &ar, policy),
        )))
    }

    /// Wait until every informer's listeners delivered everything.
    fn settle(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.informers.values().all(|(i, _)| i.is_idle()) {
            if Instant::now() > deadline {
                bail!("the plugin did not finish its deliveries within 30 s");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }
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
    let name: Arc<str> = case.name.as_deref().map_or(loaded.name.clone(), Into::into);
    let (instance, registration) =
        PluginInstance::start(name, loaded.pre, &engine, config, Limits::default(), None)?;
    let aggregator = Aggregator::new();
    instance.report_scope().connect(aggregator.clone());
    let mut feed = Feed {
        informers: BTreeMap::new(),
        versions: 0,
    };
    let watches = registration
        .watches
        .iter()
        .map(|w| (&w.resource, &w.namespace, &w.indexes, w.resync_seconds, true));
    let reads = registration
        .reads
        .iter()
        .map(|r| (&r.resource, &r.namespace, &r.indexes, 0, false));
    let mut listeners = Vec::new();
    for (resource, namespace, indexes, resync, events) in watches.chain(reads) {
        let key = (resource.api_version.clone(), resource.kind.clone());
        let informer = feed
            .informers
            .entry(key)
            .or_insert_with(|| {
                (
                    SharedInformer::new(format!("{}/{}", resource.api_version, resource.kind)),
                    namespace.clone(),
                )
            })
            .0
            .clone();
        for index in indexes {
            let by = crate::runtime::manager::index_spec(&index.by);
            informer.ensure_index(&index.name, &by.to_string(), by.func())?;
        }
        instance
            .cache_scope()
            .grant(&resource.api_version, &resource.kind, informer.store().clone());
        if events {
            let resync = (resync > 0).then(|| Duration::from_secs(resync.into()));
            listeners.push((informer, resync));
        }
    }
    // The initial list, then the plugin joins: its initial adds, then one
    // `on-synced` once every watch delivered its list.
    replace_all(&mut feed, &case.objects)?;
    let handler: Arc<dyn EventHandler> = Arc::new(Joined {
        instance: instance.clone(),
        pending: std::sync::atomic::AtomicUsize::new(listeners.len()),
    });
    // One watch at a time, so the log's order does not depend on threads.
    for (informer, resync) in &listeners {
        informer.add_listener(instance.name(), handler.clone(), *resync);
        feed.settle()?;
    }
    if listeners.is_empty() {
        instance.on_synced();
    }
    for step in &case.steps {
        play(&mut feed, step)?;
        feed.settle()?;
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
    let got = Expect { log, reports };
    let passed = got == case.expect;
    let diff = match passed {
        true => String::new(),
        false => {
            let mut out = String::new();
            if got.log != case.expect.log {
                out.push_str("log:\n");
                out.push_str(&diff::lines(&case.expect.log, &got.log));
            }
            if got.reports != case.expect.reports {
                out.push_str("reports:\n");
                out.push_str(&diff::lines(&case.expect.reports, &got.reports));
            }
            out
        }
    };
    Ok(Outcome { got, passed, diff })
}

fn play(feed: &mut Feed, step: &Step) -> anyhow::Result<()> {
    match step {
        Step::Add(v) | Step::Update(v) => {
            if let Some((informer, obj)) = feed.object(v)? {
                informer.apply(Delta::Apply(obj));
            }
        }
        Step::Delete(v) => {
            if let Some((informer, obj)) = feed.object(v)? {
                let last = informer.store().get(&obj.key()).unwrap_or(obj);
                informer.apply(Delta::Delete(last));
            }
        }
        Step::Resync(_) => {
            for (informer, _) in feed.informers.values() {
                informer.resync_due(Instant::now() + Duration::from_secs(366 * 24 * 3600));
            }
        }
        Step::Relist(objects) => replace_all(feed, objects)?,
    }
    Ok(())
}

/// A (re)list of every informer with `objects`: what is missing becomes a
/// tombstone; an object listed again with no resourceVersion of its own and
/// unchanged content is the cached version.
fn replace_all(feed: &mut Feed, objects: &[Value]) -> anyhow::Result<()> {
    let content = |o: &ObjRef| {
        let mut v: Value = serde_json::from_str(&o.json()).unwrap_or_default();
        if let Some(m) = v["metadata"].as_object_mut() {
            m.remove("resourceVersion");
        }
        v
    };
    let mut lists: BTreeMap<String, Vec<ObjRef>> = BTreeMap::new();
    for v in objects {
        if let Some((informer, obj)) = feed.object(v)? {
            let cached = informer
                .store()
                .get(&obj.key())
                .filter(|c| v["metadata"]["resourceVersion"].is_null() && content(c) == content(&obj));
            lists
                .entry(informer.name().to_string())
                .or_default()
                .push(cached.unwrap_or(obj));
        }
    }
    for (informer, _) in feed.informers.values() {
        let list = lists.remove(informer.name()).unwrap_or_default();
        informer.apply(Delta::Replace(list));
    }
    Ok(())
}

/// The plugin behind every watch's listener: events go through; its
/// `on-synced` comes once, after the last watch delivered its initial list.
struct Joined {
    instance: Arc<PluginInstance>,
    pending: std::sync::atomic::AtomicUsize,
}

impl EventHandler for Joined {
    fn on_add(&self, obj: &ObjRef, in_initial_list: bool) {
        self.instance.on_add(obj, in_initial_list)
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        self.instance.on_update(old, new)
    }
    fn on_delete(&self, obj: &ObjRef, final_state_unknown: bool) {
        self.instance.on_delete(obj, final_state_unknown)
    }
    fn on_synced(&self) {
        use std::sync::atomic::Ordering;
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.instance.on_synced();
        }
    }
}

/// `wink test`: every case played and compared (or recorded, with `bless`).
pub fn test(cases: &[PathBuf], record: bool) -> anyhow::Result<()> {
    let mut failed = 0;
    for path in cases {
        let case = read(path)?;
        let outcome = run(path, &case)?;
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

/// Read a case file.
pub fn read(path: &Path) -> anyhow::Result<Case> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_yaml::from_str(&text).with_context(|| format!("{}: not a wink test case", path.display()))
}

/// Write `case` back with `got` as its expectation (`--bless`).
pub fn bless(path: &Path, case: &Case, got: Expect) -> anyhow::Result<()> {
    let mut case = case.clone();
    case.expect = got;
    // The case's leading comment stays (serde drops every other comment).
    let header: String = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let text = format!("{header}{}", serde_yaml::to_string(&case)?);
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
