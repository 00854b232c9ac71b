//! Watch streams: `?watch=true` answered with a chunked stream of JSON
//! events, one per line, as the real server does: synthetic ADDEDs for
//! "start at any/most recent" and streaming lists (sendInitialEvents), live
//! events read from the store's history, selector transitions turned into
//! ADDED/DELETED, periodic BOOKMARKs, in-stream 410 ERROR when the requested
//! resourceVersion left the history, clean end on timeoutSeconds; objects
//! as JSON or, when a Table is accepted, as one-row Tables.
//!
//! Owns: one task per open watch feeding its response body. Must not touch:
//! writes to the store, routing, discovery.

use super::Shared;
use super::events;
use super::fields::Fields;
use super::limits;
use super::meta::parse_rv;
use super::resources::ResourceDef;
use super::status::ApiError;
use super::store::{EvType, Event, Obj, bookmark_object};
use super::table::{self, Printer, TableRequest};
use axum::body::Body;
use bytes::{Bytes, BytesMut};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use wink_selector::LabelSelector;

/// Watch query parameters.
#[derive(Debug, Default)]
pub struct WatchQuery {
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub send_initial_events: Option<bool>,
    pub bookmarks: bool,
    pub timeout: Option<Duration>,
    pub labels: LabelSelector,
    pub fields: Fields,
    /// Events' objects as one-row Tables (`Accept: ...;as=Table`).
    pub table: Option<TableRequest>,
}

/// What one watcher sees of the store: namespace and selectors.
struct Filter {
    prefix: Option<String>,
    labels: LabelSelector,
    fields: Fields,
}

impl Filter {
    fn trivial(&self) -> bool {
        self.prefix.is_none() && self.labels.is_empty() && self.fields.is_empty()
    }

    fn matches(&self, key: &str, v: &Value) -> bool {
        self.prefix.as_ref().is_none_or(|p| key.starts_with(p.as_str()))
            && self.labels.matches(v)
            && self.fields.matches(v)
    }

    /// The event this watcher must see for a committed write, if any.
    fn apply(&self, e: &Event) -> Option<(EvType, Arc<Obj>)> {
        if self.trivial() {
            return Some((e.ty, e.obj.clone()));
        }
        let cur = self.matches(&e.key, &e.obj.value);
        match e.ty {
            EvType::Added | EvType::Deleted => cur.then(|| (e.ty, e.obj.clone())),
            EvType::Modified => {
                let old = e.prev.as_ref().is_some_and(|p| self.matches(&e.key, &p.value));
                match (old, cur) {
                    (true, true) => Some((EvType::Modified, e.obj.clone())),
                    (false, true) => Some((EvType::Added, e.obj.clone())),
                    // Left the selection: the previous state, at this event's RV.
                    (true, false) => {
                        let p = e.prev.as_ref().expect("matched prev");
                        Some((EvType::Deleted, Obj::new(p.value.clone(), e.rv)))
                    }
                    (false, false) => None,
                }
            }
        }
    }
}

fn push_line(buf: &mut BytesMut, ty: &str, obj: &[u8]) {
    buf.extend_from_slice(b"{\"type\":\"");
    buf.extend_from_slice(ty.as_bytes());
    buf.extend_from_slice(b"\",\"object\":");
    buf.extend_from_slice(obj);
    buf.extend_from_slice(b"}\n");
}

/// How a watcher writes each event's object: as JSON in the requested
/// version, or as a one-row Table.
struct Encoder {
    api_version: String,
    table: Option<(TableRequest, Printer)>,
}

impl Encoder {
    fn encode(&self, obj: &Obj) -> Bytes {
        match &self.table {
            None => json_as(obj, &self.api_version),
            Some((req, printer)) => {
                let v = events::as_version(&obj.value, &self.api_version);
                let meta = serde_json::json!({"resourceVersion": obj.rv.to_string()});
                Bytes::from(table::table(printer, &[&v], *req, meta).to_string())
            }
        }
    }
}

/// An object's JSON as `api_version` (a served version other than the
/// stored one; an Event read through events.k8s.io is converted).
pub fn json_as(obj: &Obj, api_version: &str) -> Bytes {
    if obj.value.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
        return obj.json.clone();
    }
    let v = events::as_version(&obj.value, api_version);
    Bytes::from(serde_json::to_vec(&v).expect("json"))
}

const CHUNK: usize = 64 * 1024;
const BATCH: usize = 4096;

/// Start a watch; errors before the stream starts are plain HTTP errors.
pub fn start(
    shared: Arc<Shared>,
    def: Arc<ResourceDef>,
    api_version: String,
    ns: Option<String>,
    q: WatchQuery,
) -> Result<Body, ApiError> {
    let rvm = q.resource_version_match.as_deref().filter(|s| !s.is_empty());
    if q.send_initial_events.is_some() && !shared.config.watch_list {
        return Err(ApiError::new(
            422,
            "Invalid",
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
        ));
    }
    match (q.send_initial_events, rvm) {
        (Some(_), Some("NotOlderThan")) | (None, None) | (Some(false), None) => {}
        (Some(_), _) => {
            return Err(ApiError::new(
                422,
                "Invalid",
                format!(
                    "{} is invalid: resourceVersionMatch: Unsupported value: {rvm:?}: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    def.kind
                ),
            ));
        }
        (None, Some(_)) => {
            return Err(ApiError::new(
                422,
                "Invalid",
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
    }
    if q.send_initial_events == Some(true) && !q.bookmarks {
        return Err(ApiError::new(
            422,
            "Invalid",
            "allowWatchBookmarks: Required value: allowWatchBookmarks must be set to true when sendInitialEvents is set",
        ));
    }
    let rv = q.resource_version.as_deref().filter(|s| !s.is_empty());
    let requested = match rv {
        None | Some("0") => None,
        Some(s) => Some(parse_rv(s)?),
    };
    let initial = match q.send_initial_events {
        Some(b) => b,
        None => requested.is_none(),
    };
    let qualified = def.qualified();
    let storage = def.storage();
    let filter = Filter {
        prefix: ns.filter(|_| def.namespaced).map(|n| format!("{n}/")),
        labels: q.labels,
        fields: q.fields,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(8);
    let mut first = BytesMut::new();
    let (cursor, notify, encoder) = {
        let st = shared.store.lock();
        let table = st.table(&storage).ok_or_else(ApiError::no_route)?;
        let notify = table.notify.subscribe();
        let encoder = Encoder {
            api_version: api_version.clone(),
            table: q
                .table
                .map(|req| (req, super::list::printer(&st, &def, &api_version))),
        };
        if let Some(r) = requested
            && r > st.rv
        {
            return Err(ApiError::too_large(r, st.rv));
        }
        if initial {
            let range = match &filter.prefix {
                Some(p) => table
                    .objects
                    .range::<str, _>((std::ops::Bound::Included(p.as_str()), std::ops::Bound::Unbounded)),
                None => table
                    .objects
                    .range::<str, _>((std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)),
            };
            for (k, o) in range {
                if filter.prefix.as_ref().is_some_and(|p| !k.starts_with(p.as_str())) {
                    break;
                }
                if filter.matches(k, &o.value) {
                    push_line(&mut first, "ADDED", &encoder.encode(o));
                }
            }
            (st.rv, notify, encoder)
        } else {
            let r = requested.unwrap_or(st.rv);
            if let Err(e) = st.events_after(&storage, r, 0, false) {
                push_line(&mut first, "ERROR", e.to_json().to_string().as_bytes());
                drop(st);
                let _ = tx.try_send(first.freeze());
                return Ok(body(rx));
            }
            (r, notify, encoder)
        }
    };
    if initial && q.send_initial_events == Some(true) {
        let bm = bookmark_object(&api_version, &def.kind, cursor, true);
        push_line(&mut first, "BOOKMARK", bm.to_string().as_bytes());
    }
    shared.stats.watch_opened(&qualified);
    let w = Watcher {
        _guard: OpenGuard(shared.clone(), qualified),
        shared: shared.clone(),
        storage,
        kind: def.kind.clone(),
        api_version,
        filter,
        bookmarks: q.bookmarks,
        encoder,
        tx,
    };
    let timeout = q.timeout.unwrap_or_else(|| {
        // The real server's default: a random duration in [min, 2*min) with min 30 minutes.
        Duration::from_secs(1800 + rand::random_range(0..1800))
    });
    tokio::spawn(w.run(first, cursor, notify, timeout));
    Ok(body(rx))
}

fn body(rx: mpsc::Receiver<Bytes>) -> Body {
    Body::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    }))
}

struct Watcher {
    _guard: OpenGuard,
    shared: Arc<Shared>,
    /// The table read (events.k8s.io Events: core Events').
    storage: String,
    kind: String,
    api_version: String,
    filter: Filter,
    bookmarks: bool,
    encoder: Encoder,
    tx: mpsc::Sender<Bytes>,
}

struct OpenGuard(Arc<Shared>, String);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.stats.watch_closed(&self.1);
    }
}

impl Watcher {
    async fn send(&self, buf: &mut BytesMut) -> bool {
        if buf.is_empty() {
            return true;
        }
        self.shared.faults.wait_unpaused().await;
        self.tx.send(buf.split().freeze()).await.is_ok()
    }

    async fn run(
        self,
        mut buf: BytesMut,
        mut cursor: u64,
        mut notify: tokio::sync::watch::Receiver<u64>,
        timeout: Duration,
    ) {
        let mut close = self.shared.faults.close_signal();
        let deadline = tokio::time::Instant::now() + timeout;
        let interval = self
            .shared
            .config
            .bookmark_interval
            .clamp(limits::MIN_BOOKMARK_INTERVAL, limits::MAX_BOOKMARK_INTERVAL);
        let mut bookmark = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        let mut want_bookmark = false;
        loop {
            // Drain everything committed after the cursor.
            loop {
                let drained = {
                    let st = self.shared.store.lock();
                    st.events_after(&self.storage, cursor, BATCH, true)
                        .map(|ev| (ev, st.rv))
                };
                let (events, now) = match drained {
                    Ok(x) => x,
                    Err(e) => {
                        push_line(&mut buf, "ERROR", e.to_json().to_string().as_bytes());
                        self.send(&mut buf).await;
                        return;
                    }
                };
                let full = events.len() == BATCH;
                for e in &events {
                    if let Some((ty, obj)) = self.filter.apply(e) {
                        push_line(&mut buf, ty.as_str(), &self.encoder.encode(&obj));
                    }
                    if buf.len() >= CHUNK && !self.send(&mut buf).await {
                        return;
                    }
                }
                cursor = match (full, events.last()) {
                    (true, Some(e)) => e.rv,
                    _ => now.max(cursor),
                };
                if !full {
                    break;
                }
            }
            if want_bookmark && self.bookmarks {
                let bm = bookmark_object(&self.api_version, &self.kind, cursor, false);
                push_line(&mut buf, "BOOKMARK", bm.to_string().as_bytes());
            }
            want_bookmark = false;
            if !self.send(&mut buf).await {
                return;
            }
            tokio::select! {
                r = notify.changed() => if r.is_err() { return },
                _ = bookmark.tick() => want_bookmark = true,
                _ = close.changed() => return,
                _ = tokio::time::sleep_until(deadline) => return,
                _ = self.tx.closed() => return,
            }
        }
    }
}
