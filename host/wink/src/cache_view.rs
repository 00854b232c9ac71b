//! A read-only HTTP view of the informer cache (the seeds' `indexer_run`):
//! `GET /cache/{group}/{version}/{resource}?namespace=&index=&value=&labelSelector=`
//! answers a Kubernetes-style List from the local stores, never from the API
//! server. The core group is spelled `core` (e.g. `/cache/core/v1/pods`).
//! Off unless the operator enables it; loopback only unless allowed, with
//! its connections bounded ([`crate::listener`]); never serves Secrets,
//! whatever plugins were granted. Owns only HTTP.

use crate::informer::SharedInformerFactory;
use crate::informer::store::selected;
use crate::listener::BoundedListener;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use std::sync::Arc;
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

async fn read(
    State(factory): State<Arc<SharedInformerFactory>>,
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
    let Some((informer, ar)) = factory.find_complete(&group, &version, &resource, q.namespace.as_deref())
    else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("no informer caches {resource} in {group}/{version} (a plugin must watch it)"),
        );
    };
    let selector = match q.label_selector.as_deref().map(LabelSelector::parse).transpose() {
        Ok(s) => s,
        Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", e),
    };
    let store = informer.store();
    let (namespace, selector) = (q.namespace.as_deref(), selector.as_ref());
    let objects = match (&q.index, &q.value) {
        (Some(index), Some(value)) => match store.by_index(index, value) {
            Ok(objects) => objects
                .into_iter()
                .filter(|o| selected(o, namespace, selector))
                .collect(),
            Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", e.to_string()),
        },
        (Some(_), None) => {
            return status(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                "index needs a value".into(),
            );
        }
        (None, _) => store.list(namespace, selector),
    };
    let mut body = format!(
        r#"{{"apiVersion":{},"kind":{},"metadata":{{}},"items":["#,
        serde_json::Value::from(ar.api_version.clone()),
        serde_json::Value::from(format!("{}List", ar.kind)),
    );
    let mut first = true;
    for o in &objects {
        if !first {
            body.push(',');
        }
        first = false;
        body.push_str(&o.json());
    }
    body.push_str("]}");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The cache view's routes.
pub fn router(factory: Arc<SharedInformerFactory>) -> axum::Router {
    axum::Router::new()
        .route("/cache/{group}/{version}/{resource}", get(read))
        .with_state(factory)
}

/// Serve the cache view on a bound listener until the task is dropped.
pub async fn serve(listener: BoundedListener, factory: Arc<SharedInformerFactory>) -> anyhow::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "cache view listening");
    crate::listener::serve(listener, router(factory), None).await
}
