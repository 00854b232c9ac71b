//! The admin HTTP path `/_sim/...`: fault injection, restart and request
//! statistics for tests and demos driving a `wink sim` process from outside.
//!
//! Owns: the `/_sim` routes. Must not touch: the Kubernetes API routes.
//!
//! | path | effect |
//! |---|---|
//! | `POST /_sim/faults/close-watches` | end every open watch stream |
//! | `POST /_sim/faults/fail?n=3&status=500` | answer the next n requests with status |
//! | `POST /_sim/faults/fail?n=1&status=429&verb=create&resource=configmaps` | the same for those requests alone |
//! | `POST /_sim/faults/compact` | drop the event history (resumes get 410) |
//! | `POST /_sim/faults/pause?ms=2000` | hold every request and watch for ms |
//! | `POST /_sim/faults/delay?ms=100` | delay every response (0 clears) |
//! | `POST /_sim/restart?keep=true` | drop all connections; keep or replace the state |
//! | `GET /_sim/stats` | JSON: resourceVersion, requests per verb/resource, open watches, the control plane's work, admission webhook calls per webhook name |

use super::Shared;
use super::faults::Faults;
use axum::body::Body;
use axum::http::{Method, Response, header};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

fn reply(code: u16, v: serde_json::Value) -> Response<Body> {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(v.to_string()))
        .expect("response")
}

pub async fn handle(
    shared: &Arc<Shared>,
    method: &Method,
    segs: &[&str],
    q: &HashMap<String, String>,
) -> Response<Body> {
    let num = |k: &str| q.get(k).and_then(|v| v.parse::<u64>().ok());
    let faults = Faults {
        shared: shared.clone(),
    };
    match (method, segs) {
        (&Method::GET, ["stats"]) => {
            let mut s = shared.stats.to_json();
            s["resourceVersion"] = json!(shared.store.current_rv().to_string());
            s["webhookCalls"] = shared.admission.to_json();
            reply(200, s)
        }
        (&Method::POST, ["faults", "close-watches"]) => {
            faults.close_watches();
            reply(200, json!({"ok": true}))
        }
        (&Method::POST, ["faults", "fail"]) => {
            let n = num("n").unwrap_or(1) as usize;
            let status = num("status").unwrap_or(500) as u16;
            match (q.get("verb"), q.get("resource")) {
                (Some(verb), Some(resource)) => faults.fail_next_on(n, status, verb, resource),
                _ => faults.fail_next(n, status),
            }
            reply(200, json!({"ok": true, "n": n, "status": status}))
        }
        (&Method::POST, ["faults", "compact"]) => {
            faults.compact();
            reply(200, json!({"ok": true}))
        }
        (&Method::POST, ["faults", "pause"]) => {
            faults.pause(Duration::from_millis(num("ms").unwrap_or(1000)));
            reply(200, json!({"ok": true}))
        }
        (&Method::POST, ["faults", "delay"]) => {
            faults.delay(num("ms").map(Duration::from_millis));
            reply(200, json!({"ok": true}))
        }
        (&Method::POST, ["restart"]) => {
            let keep = q.get("keep").is_none_or(|v| v != "false");
            let tx = shared.control.clone();
            // Answer first: the restart drops this connection too.
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let (ack, _) = tokio::sync::oneshot::channel();
                let _ = tx.send(super::Control::Restart { keep, ack });
            });
            reply(202, json!({"ok": true, "keep": keep}))
        }
        _ => reply(404, json!({"error": "unknown admin path"})),
    }
}
