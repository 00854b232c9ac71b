//! A read-only HTTP view of the informer cache (the seeds' `indexer_run`):
//! `GET /cache/{group}/{version}/{resource}?namespace=&index=&value=&labelSelector=`
//! answers a Kubernetes-style List from the local stores, never from the API
//! server. The core group is spelled `core` (e.g. `/cache/core/v1/pods`).
//! Off unless the operator enables it; loopback only unless allowed, with
//! its connections bounded ([`crate::listener`]); never serves Secrets,
//! whatever plugins were granted. Selectors are matched off the runtime's
//! workers, and answers are streamed within a memory budget
//! (`answer`): a slow reader holds a bounded share, and past the budget
//! an answer is refused with 503 and `Retry-After`. Owns only HTTP.

mod answer;

use crate::informer::store::{Store, selected};
use crate::informer::{ObjRef, SharedInformerFactory};
use crate::listener::BoundedListener;
use answer::Budget;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use wink_selector::LabelSelector;

/// Query parameters of a cache read.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CacheQuery {
    pub namespace: Option<String>,
    pub index: Option<String>,
    pub value: Option<String>,
    pub label_selector: Option<String>,
}

fn status(code: StatusCode, reason: &str, message: String) -> Response {
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16(),
    });
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// What the cache view's routes read.
#[derive(Clone)]
struct View {
    factory: Arc<SharedInformerFactory>,
    budget: Budget,
}

/// How long an answer waits for the budget before it is refused.
const BUDGET_WAIT: Duration = Duration::from_secs(2);

/// The objects a query selects, read from the store, or why the query is
/// a bad request; parsing the selector and matching it against every
/// object is the caller's blocking work.
fn select(store: &Store, q: &CacheQuery) -> Result<Vec<ObjRef>, String> {
    let selector = q
        .label_selector
        .as_deref()
        .map(LabelSelector::parse)
        .transpose()?;
    let (namespace, selector) = (q.namespace.as_deref(), selector.as_ref());
    match (&q.index, &q.value) {
        (Some(index), Some(value)) => Ok(store
            .by_index(index, value)
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|o| selected(o, namespace, selector))
            .collect()),
        (Some(_), None) => Err("index needs a value".into()),
        (None, _) => Ok(store.list(namespace, selector)),
    }
}

fn json(o: &ObjRef) -> Cow<'_, str> {
    o.json()
}

async fn read(
    State(view): State<View>,
    Path((group, version, resource)): Path<(String, String, String)>,
    Query(q): Query<CacheQuery>,
) -> Response {
    let group = if group == "core" { String::new() } else { group };
    if group.is_empty() && resource == "secrets" {
        // A plugin's Secrets grant is not a grant to whoever reaches this port.
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "the cache view never serves secrets".to_string(),
        );
    }
    let Some((informer, ar)) =
        view.factory
            .find_complete(&group, &version, &resource, q.namespace.as_deref())
    else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("no informer caches {resource} in {group}/{version} (a plugin must watch it)"),
        );
    };
    // Off the runtime's workers: a selector costs each object a match.
    let store = informer.store().clone();
    let objects = match tokio::task::spawn_blocking(move || select(&store, &q)).await {
        Ok(Ok(objects)) => objects,
        Ok(Err(bad)) => return status(StatusCode::BAD_REQUEST, "BadRequest", bad),
        Err(e) => {
            let message = format!("reading the cache failed: {e}");
            return status(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message);
        }
    };
    let head = format!(
        r#"{{"apiVersion":{},"kind":{},"metadata":{{}},"items":["#,
        serde_json::Value::from(ar.api_version.clone()),
        serde_json::Value::from(format!("{}List", ar.kind)),
    );
    match answer::stream(head, objects, json, &view.budget, BUDGET_WAIT).await {
        Some(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        None => {
            let message = "the cache view's answers in flight are at their memory budget: retry later";
            let mut refused = status(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailable",
                message.into(),
            );
            refused
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            refused
        }
    }
}

/// The cache view's routes, with their budget of answers in flight.
pub fn router(factory: Arc<SharedInformerFactory>) -> axum::Router {
    axum::Router::new()
        .route("/cache/{group}/{version}/{resource}", get(read))
        .with_state(View {
            factory,
            budget: Budget::default(),
        })
}

/// Serve the cache view on a bound listener until the task is dropped.
pub async fn serve(listener: BoundedListener, factory: Arc<SharedInformerFactory>) -> anyhow::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "cache view listening");
    crate::listener::serve(listener, router(factory), None).await
}
