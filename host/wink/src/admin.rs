//! The admin server (`--admin-addr`): what an operator and a kubelet ask
//! of a daemon. `/healthz` (the process and every informer's list+watch task
//! are alive), `/readyz` (every plugin loaded and synced; not ready while
//! the plugin directory or a plugin loads, or a plugin waits for the API
//! server), `/metrics` (Prometheus text),
//! `/debug/plugins` (JSON: each plugin's state, digest, compiler,
//! permissions, calls, crashes, writes), and the cache view's routes.
//!
//! Owns only HTTP and the rendering of what the factory and the manager
//! report; it changes nothing. Served on a bounded listener ([`crate::listener`])
//! whose reserve keeps the probes answering when its connection cap is reached.

use crate::informer::SharedInformerFactory;
use crate::runtime::PluginManager;
use crate::runtime::manager::PluginState;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::Arc;

mod per_plugin;
mod workqueue;

/// What the admin server reads.
#[derive(Clone)]
pub struct Admin {
    pub factory: Arc<SharedInformerFactory>,
    pub manager: Arc<PluginManager>,
    /// The webhook server's counts, when it serves.
    pub admission: Option<crate::admission::metrics::AdmissionMetrics>,
    /// Whether the plugin directory's first load is still under way.
    pub loading: Loading,
}

/// Whether the daemon's first load of its plugin directory is over (the
/// flag is set by [`Loading::done`]): until then `/readyz` is not ready,
/// whatever the plugins loaded so far say.
#[derive(Clone, Debug, Default)]
pub struct Loading(Arc<std::sync::atomic::AtomicBool>);

impl Loading {
    /// The first load is over.
    pub fn done(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }

    fn under_way(&self) -> bool {
        !self.0.load(std::sync::atomic::Ordering::Acquire)
    }
}

type Labels = Vec<(&'static str, String)>;

/// `base` with more labels.
fn with<const N: usize>(base: &Labels, more: [(&'static str, &str); N]) -> Labels {
    let mut labels = base.clone();
    labels.extend(more.map(|(k, v)| (k, v.to_string())));
    labels
}

async fn healthz(State(a): State<Admin>) -> Response {
    let dead: Vec<String> = a
        .factory
        .informers()
        .iter()
        .filter(|i| !i.is_alive())
        .map(|i| i.name().to_string())
        .collect();
    if dead.is_empty() {
        (StatusCode::OK, "ok\n").into_response()
    } else {
        let body = format!("informers stopped: {}\n", dead.join(", "));
        (StatusCode::SERVICE_UNAVAILABLE, body).into_response()
    }
}

async fn readyz(State(a): State<Admin>) -> Response {
    let status = a.manager.status().await;
    let mut not_ready: Vec<String> = status
        .iter()
        .filter(|p| !p.synced && matches!(p.state, PluginState::Running | PluginState::TieringUp))
        .map(|p| format!("{} is not synced", p.name))
        .collect();
    if a.loading.under_way() {
        not_ready.push("the plugin directory is loading".to_string());
    }
    let waiting = a.manager.waiting();
    if waiting > 0 {
        not_ready.push(format!("{waiting} plugin(s) wait for the API server"));
    }
    if not_ready.is_empty() {
        (StatusCode::OK, "ok\n").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{}\n", not_ready.join("; ")),
        )
            .into_response()
    }
}

fn state_name(s: &PluginState) -> &'static str {
    match s {
        PluginState::Running => "running",
        PluginState::TieringUp => "tiering-up",
        PluginState::Restarting => "restarting",
        PluginState::Quarantined(_) => "quarantined",
    }
}

/// The resident memory of this process, from the OS.
fn resident_bytes() -> i64 {
    let pages = wink_input::read_text(std::path::Path::new("/proc/self/statm"), 4096, "statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<i64>().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as i64
}

/// The policy reports: results held, the writer's requests, its largest report.
fn report_metrics(registry: &mut Registry, reports: &crate::reports::Aggregator) {
    let (subjects, results, _) = reports.counts();
    let held = Family::<Labels, Gauge>::default();
    held.get_or_create(&vec![("of", "subjects".to_string())])
        .set(subjects as i64);
    held.get_or_create(&vec![("of", "results".to_string())])
        .set(results as i64);
    registry.register(
        "report_held",
        "Policy results held, and the objects they are about",
        held,
    );
    let requests = Family::<Labels, Counter>::default();
    for (op, outcome, n) in reports.stats.requests() {
        let l: Labels = vec![("op", op.to_string()), ("outcome", outcome)];
        requests.get_or_create(&l).inc_by(n);
    }
    registry.register(
        "report_requests",
        "Requests of the report writer, by operation and outcome",
        requests,
    );
    let largest = Gauge::<i64>::default();
    largest.set(reports.stats.largest() as i64);
    registry.register(
        "report_largest_bytes",
        "The largest report written, in bytes",
        largest,
    );
}

/// Every metric, read from the factory and the manager at scrape time.
async fn render(a: &Admin) -> String {
    let mut registry = Registry::with_prefix("wink");
    let objects = Family::<Labels, Gauge>::default();
    let events = Family::<Labels, Counter>::default();
    let by_type = Family::<Labels, Counter>::default();
    let relists = Family::<Labels, Counter>::default();
    let watch_errors = Family::<Labels, Counter>::default();
    let last_sync = Family::<Labels, Gauge>::default();
    let queue_depth = Family::<Labels, Gauge>::default();
    let coalesced = Family::<Labels, Counter>::default();
    for informer in a.factory.informers() {
        let l: Labels = vec![("informer", informer.name().to_string())];
        objects.get_or_create(&l).set(informer.store().len() as i64);
        events.get_or_create(&l).inc_by(informer.events());
        relists.get_or_create(&l).inc_by(informer.relists());
        let stats = informer.stats();
        let (added, modified, deleted) = stats.events();
        for (ty, n) in [("ADDED", added), ("MODIFIED", modified), ("DELETED", deleted)] {
            by_type.get_or_create(&with(&l, [("type", ty)])).inc_by(n);
        }
        watch_errors.get_or_create(&l).inc_by(stats.watch_errors());
        last_sync.get_or_create(&l).set(stats.last_sync() as i64);
        // A plugin's listeners, one per informer it registered on.
        for (plugin, backlog, merged) in informer.listener_stats() {
            let p: Labels = vec![("plugin", plugin)];
            queue_depth.get_or_create(&p).inc_by(backlog as i64);
            coalesced.get_or_create(&p).inc_by(merged);
        }
    }
    registry.register("informer_objects", "Objects in an informer's cache", objects);
    registry.register("informer_events", "Watch events applied", events);
    registry.register("informer_watch_events", "Watch events applied, by type", by_type);
    registry.register("informer_relists", "Completed lists, the first included", relists);
    registry.register(
        "informer_watch_errors",
        "Watch errors, each followed by a restart with backoff",
        watch_errors,
    );
    registry.register(
        "informer_last_sync_timestamp_seconds",
        "When the last list completed (Unix time)",
        last_sync,
    );
    registry.register(
        "plugin_queue_depth",
        "Notifications waiting for a plugin",
        queue_depth,
    );
    registry.register(
        "plugin_coalesced",
        "Notifications absorbed by coalescing",
        coalesced,
    );

    let calls = Family::<Labels, Counter>::default();
    let crashes = Family::<Labels, Counter>::default();
    let restarts = Family::<Labels, Counter>::default();
    let state = Family::<Labels, Gauge>::default();
    let synced = Family::<Labels, Gauge>::default();
    let writes = Family::<Labels, Counter>::default();
    let deliveries = Family::<Labels, Counter>::default();
    let crash_kinds = Family::<Labels, Counter>::default();
    let queries = Family::<Labels, Counter>::default();
    let rate_waits = Family::<Labels, Counter>::default();
    let rate_waited = Family::<Labels, Counter<f64, std::sync::atomic::AtomicU64>>::default();
    let info = Family::<Labels, Gauge>::default();
    let mut handler_time = per_plugin::PerPlugin::new(
        "plugin_handler_seconds",
        "Duration of calls into the plugin's current instance",
    );
    for p in a.manager.status().await {
        handler_time.push(&p.name, p.handler_time.clone());
        let l: Labels = vec![("plugin", p.name.clone())];
        let team = a.manager.team_of(&p.name).unwrap_or_default();
        info.get_or_create(&with(&l, [("team", &team)])).set(1);
        calls.get_or_create(&l).inc_by(p.calls);
        crashes.get_or_create(&l).inc_by(p.crashes);
        restarts.get_or_create(&l).inc_by(p.restarts.into());
        synced.get_or_create(&l).set(p.synced.into());
        state
            .get_or_create(&with(&l, [("state", state_name(&p.state))]))
            .set(1);
        let (adds, updates, deletes) = p.deliveries;
        for (ty, n) in [("add", adds), ("update", updates), ("delete", deletes)] {
            deliveries.get_or_create(&with(&l, [("type", ty)])).inc_by(n);
        }
        for (kind, n) in &p.crash_kinds {
            crash_kinds.get_or_create(&with(&l, [("kind", kind)])).inc_by(*n);
        }
        for (op, result, n) in &p.cache_queries {
            queries
                .get_or_create(&with(&l, [("operation", op), ("result", result)]))
                .inc_by(*n);
        }
        rate_waits.get_or_create(&l).inc_by(p.rate_waits.0);
        rate_waited.get_or_create(&l).inc_by(p.rate_waits.1.as_secs_f64());
        for (verb, resource, outcome, n) in &p.writes {
            let labels = with(&l, [("verb", verb), ("resource", resource), ("code", outcome)]);
            writes.get_or_create(&labels).inc_by(*n);
        }
    }
    registry.register_collector(Box::new(handler_time));
    registry.register("plugin_info", "A plugin's team (1 for each loaded plugin)", info);
    registry.register("plugin_calls", "Calls into the plugin's current instance", calls);
    registry.register(
        "plugin_crashes",
        "Crashes since the plugin was loaded (traps, deadlines, memory)",
        crashes,
    );
    registry.register("plugin_restarts", "Restarts after crashes", restarts);
    registry.register(
        "plugin_state",
        "A plugin's lifecycle state (1 for the current one)",
        state,
    );
    registry.register(
        "plugin_synced",
        "Whether a plugin delivered its initial lists",
        synced,
    );
    registry.register("plugin_writes", "Writes by verb, resource and outcome", writes);
    registry.register(
        "plugin_deliveries",
        "Deliveries to the current instance, by type",
        deliveries,
    );
    registry.register(
        "plugin_crashes_by_kind",
        "Crashes by kind (deadline, fuel, memory, panic, stack, other)",
        crash_kinds,
    );
    registry.register(
        "plugin_cache_queries",
        "Cache queries by operation and result",
        queries,
    );
    registry.register(
        "plugin_rate_limit_waits",
        "Writes that waited for a rate limit",
        rate_waits,
    );
    registry.register(
        "plugin_rate_limit_wait_seconds",
        "Time writes waited for a rate limit",
        rate_waited,
    );
    let held = Family::<Labels, Counter<f64, std::sync::atomic::AtomicU64>>::default();
    for (team, time) in a.manager.cpu_held() {
        held.get_or_create(&vec![("team", team)])
            .inc_by(time.as_secs_f64());
    }
    registry.register(
        "team_throttled_seconds",
        "Time a team's deliveries were held back to its CPU share",
        held,
    );
    let leader = Gauge::<i64>::default();
    leader.set(a.manager.leadership().is_leading().into());
    registry.register(
        "leader",
        "Whether this replica leads (1) or stands by (0)",
        leader,
    );
    let waiting = Gauge::<i64>::default();
    waiting.set(a.manager.waiting() as i64);
    registry.register("plugins_waiting", "Plugins waiting for the API server", waiting);
    let retries = Counter::<u64>::default();
    retries.inc_by(a.manager.load_retries());
    registry.register(
        "plugin_load_retries",
        "Loads attempted again after waiting for the API server",
        retries,
    );
    let compilations = Counter::<u64>::default();
    compilations.inc_by(a.manager.compilations());
    registry.register(
        "plugin_compilations",
        "Components compiled (or read from the precompiled directory) for plugin loads",
        compilations,
    );
    report_metrics(&mut registry, a.manager.reports());
    if let Some(admission) = &a.admission {
        admission.register(&mut registry);
    }
    let memory = Gauge::<i64>::default();
    memory.set(resident_bytes());
    registry.register(
        "process_resident_memory_bytes",
        "Resident memory, from the OS",
        memory,
    );
    let mut text = String::new();
    encode(&mut text, &registry).expect("metrics encode into a string");
    workqueue::append(&mut text, &a.manager.queue_status());
    text
}

async fn metrics(State(a): State<Admin>) -> Response {
    let ct = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    ([(header::CONTENT_TYPE, ct)], render(&a).await).into_response()
}

async fn debug_plugins(State(a): State<Admin>) -> Response {
    let mut backlog: std::collections::HashMap<String, usize> = Default::default();
    for informer in a.factory.informers() {
        for (plugin, waiting, _) in informer.listener_stats() {
            *backlog.entry(plugin).or_default() += waiting;
        }
    }
    let queues: std::collections::HashMap<String, _> = a.manager.queue_status().into_iter().collect();
    let plugins: Vec<serde_json::Value> = a
        .manager
        .status()
        .await
        .into_iter()
        .map(|p| {
            let quarantined = match &p.state {
                PluginState::Quarantined(why) => Some(why.clone()),
                _ => None,
            };
            serde_json::json!({
                "name": p.name,
                "path": p.path,
                "state": state_name(&p.state),
                "quarantined": quarantined,
                "digest": p.digest,
                "compiler": format!("{:?}", p.compiler),
                "memory_mib": p.memory_bytes >> 20,
                "fuel": p.fuel,
                "synced": p.synced,
                "queue_depth": backlog.get(&p.name).copied().unwrap_or(0),
                "work_queue": queues.get(&p.name).map(workqueue::debug),
                "calls": p.calls,
                "crashes": p.crashes,
                "restarts": p.restarts,
                "watches": p.watches.iter().map(|w| w.describe()).collect::<Vec<_>>(),
                "declared": {"writes": p.declared.0, "events": p.declared.1},
                "permissions": p.permissions,
                "last_error": p.last_error,
                "writes": p.writes.iter().map(|(v, r, o, n)| serde_json::json!({"verb": v, "resource": r, "outcome": o, "count": n})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let body = serde_json::json!({"plugins": plugins, "waiting": a.manager.waiting()});
    ([(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The health probes' routes: what the listener's reserve answers when
/// its connection cap is reached.
pub fn probes(admin: Admin) -> axum::Router {
    axum::Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(admin)
}

/// The admin server's routes (the probes' and the cache view's included).
pub fn router(admin: Admin) -> axum::Router {
    let view = crate::cache_view::router(admin.factory.clone());
    probes(admin.clone())
        .merge(
            axum::Router::new()
                .route("/metrics", get(metrics))
                .route("/debug/plugins", get(debug_plugins))
                .with_state(admin),
        )
        .merge(view)
}

/// Serve the admin server on a bound listener until the task is dropped;
/// the probes answer even when its connection cap is reached.
pub async fn serve(listener: crate::listener::BoundedListener, admin: Admin) -> anyhow::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "admin server listening");
    crate::listener::serve(listener, router(admin.clone()), Some(probes(admin))).await
}
