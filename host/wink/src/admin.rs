//! The admin server (`--admin-addr`): what an operator and a kubelet ask
//! of a daemon. `/healthz` (the process and every informer's list+watch task
//! are alive), `/readyz` (every plugin loaded and synced; not ready while a
//! plugin loads or waits for the API server), `/metrics` (Prometheus text),
//! `/debug/plugins` (JSON: each plugin's state, digest, compiler,
//! permissions, calls, crashes, writes), and the cache view's routes.
//!
//! Owns only HTTP and the rendering of what the factory and the manager
//! report; it changes nothing. Served on a bounded listener ([`crate::listener`]).

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

/// What the admin server reads.
#[derive(Clone)]
pub struct Admin {
    pub factory: Arc<SharedInformerFactory>,
    pub manager: Arc<PluginManager>,
}

type Labels = Vec<(&'static str, String)>;

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
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<i64>().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as i64
}

/// Every metric, read from the factory and the manager at scrape time.
async fn render(a: &Admin) -> String {
    let mut registry = Registry::with_prefix("wink");
    let objects = Family::<Labels, Gauge>::default();
    let events = Family::<Labels, Counter>::default();
    let relists = Family::<Labels, Counter>::default();
    for informer in a.factory.informers() {
        let l: Labels = vec![("informer", informer.name().to_string())];
        objects.get_or_create(&l).set(informer.store().len() as i64);
        events.get_or_create(&l).inc_by(informer.events());
        relists.get_or_create(&l).inc_by(informer.relists());
    }
    registry.register("informer_objects", "Objects in an informer's cache", objects);
    registry.register("informer_events", "Watch events applied", events);
    registry.register("informer_relists", "Completed lists, the first included", relists);

    let calls = Family::<Labels, Counter>::default();
    let crashes = Family::<Labels, Counter>::default();
    let restarts = Family::<Labels, Counter>::default();
    let state = Family::<Labels, Gauge>::default();
    let synced = Family::<Labels, Gauge>::default();
    let writes = Family::<Labels, Counter>::default();
    for p in a.manager.status().await {
        let l: Labels = vec![("plugin", p.name.clone())];
        calls.get_or_create(&l).inc_by(p.calls);
        crashes.get_or_create(&l).inc_by(p.crashes);
        restarts.get_or_create(&l).inc_by(p.restarts.into());
        synced.get_or_create(&l).set(p.synced.into());
        let mut with_state = l.clone();
        with_state.push(("state", state_name(&p.state).to_string()));
        state.get_or_create(&with_state).set(1);
        for (verb, resource, outcome, n) in &p.writes {
            let mut w = l.clone();
            w.extend([
                ("verb", verb.to_string()),
                ("resource", resource.clone()),
                ("code", outcome.clone()),
            ]);
            writes.get_or_create(&w).inc_by(*n);
        }
    }
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
    let memory = Gauge::<i64>::default();
    memory.set(resident_bytes());
    registry.register(
        "process_resident_memory_bytes",
        "Resident memory, from the OS",
        memory,
    );
    let mut text = String::new();
    encode(&mut text, &registry).expect("metrics encode into a string");
    text
}

async fn metrics(State(a): State<Admin>) -> Response {
    let ct = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    ([(header::CONTENT_TYPE, ct)], render(&a).await).into_response()
}

async fn debug_plugins(State(a): State<Admin>) -> Response {
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
                "synced": p.synced,
                "calls": p.calls,
                "crashes": p.crashes,
                "restarts": p.restarts,
                "watches": p.watches.iter().map(|w| w.describe()).collect::<Vec<_>>(),
                "permissions": p.permissions,
                "writes": p.writes.iter().map(|(v, r, o, n)| serde_json::json!({"verb": v, "resource": r, "outcome": o, "count": n})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let body = serde_json::json!({"plugins": plugins, "waiting": a.manager.waiting()});
    ([(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The admin server's routes (the cache view's included).
pub fn router(admin: Admin) -> axum::Router {
    let view = crate::cache_view::router(admin.factory.clone());
    axum::Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/debug/plugins", get(debug_plugins))
        .with_state(admin)
        .merge(view)
}

/// Serve the admin server on a bound listener until the task is dropped.
pub async fn serve(listener: crate::listener::BoundedListener, admin: Admin) -> anyhow::Result<()> {
    tracing::info!(addr = %axum::serve::Listener::local_addr(&listener)?, "admin server listening");
    axum::serve(listener, router(admin)).await?;
    Ok(())
}
