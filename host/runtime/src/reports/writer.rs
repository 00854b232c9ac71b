//! The report writer: keeps the cluster's wink-managed reports (in the
//! [`ReportApi`] of [`WriterOptions::api`]) equal to what the plugins
//! report now. One task; only the leader writes.
//!
//! Its states, and every transition, are [`Phase`] and [`Phase::next`]:
//!
//! ```text
//! Standby  --leading, and a loaded plugin imports `report`-->  Reading
//! Reading  --the CRDs exist and the existing reports are read-->  Settling
//! Reading  --the API server fails-->  Reading (after a backoff)
//! Settling --every reporting plugin was replayed the cache-->  Current
//!             (one full reconcile first: stale reports go, missing ones come)
//! Current  --results changed-->  Current (one batched write per changed report)
//! any      --leadership lost, or no plugin reports any more-->  Standby
//! ```
//!
//! Writes are batched: changes during [`WriterOptions::batch`] after the
//! first go out together, and a report whose content is the same as the
//! server's copy is not written. Owns the report objects on the API server
//! and nothing else; the aggregator owns the results.

use super::aggregate::{Aggregator, Held, Scope};
use super::api::ReportApi;
use super::layout::{self, ReportId, Timestamps};
use futures::future::BoxFuture;
use http::{self, Method};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use wink_informer::repeated::{RepeatedFailure, short_error};

/// How the writer batches and sizes reports.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// How long after a first change the writer waits for more before it
    /// writes them together.
    pub batch: Duration,
    /// The largest report, in bytes of JSON, before it is split.
    pub max_report_bytes: usize,
    /// Create the CRDs when the cluster lacks them.
    pub install_crds: bool,
    /// The API the reports are written in.
    pub api: ReportApi,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            batch: Duration::from_secs(1),
            max_report_bytes: layout::MAX_REPORT_BYTES,
            install_crds: true,
            api: ReportApi::default(),
        }
    }
}

/// The plugins that report, as the manager sees them now.
#[derive(Debug, Clone, Default)]
pub struct Census {
    /// How many loaded plugins import `report`.
    pub reporters: usize,
    /// Those whose current instance has not been replayed the cache yet.
    pub unsettled: Vec<String>,
}

/// Asks the manager for a [`Census`].
pub type CensusFn = Arc<dyn Fn() -> BoxFuture<'static, Census> + Send + Sync>;

/// The writer's state (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Standby,
    Reading,
    Settling,
    Current,
}

/// What the writer found out since the last step.
enum Step {
    /// Leadership and whether any plugin reports.
    Conditions { leading: bool, reporters: bool },
    /// The existing reports were read (or not).
    Read(bool),
    /// Every reporting plugin was replayed the cache.
    Settled,
}

impl Phase {
    /// The one place transitions are decided.
    fn next(self, step: Step) -> Phase {
        match (self, step) {
            (_, Step::Conditions { leading, reporters }) if !(leading && reporters) => Phase::Standby,
            (Phase::Standby, Step::Conditions { .. }) => Phase::Reading,
            (Phase::Reading, Step::Read(true)) => Phase::Settling,
            (Phase::Reading, Step::Read(false)) => Phase::Reading,
            (Phase::Settling, Step::Settled) => Phase::Current,
            (phase, _) => phase,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Phase::Standby => "standby",
            Phase::Reading => "reading",
            Phase::Settling => "settling",
            Phase::Current => "current",
        }
    }
}

/// A one-subject report's bytes besides its results (metadata, scope,
/// summary), for the comparison with one report per subject.
const SUBJECT_REPORT_ENVELOPE: usize = 400;

/// The report writer task.
pub struct ReportWriter {
    client: kube::Client,
    aggregator: Arc<Aggregator>,
    leadership: crate::leadership::Leadership,
    census: CensusFn,
    options: WriterOptions,
    /// The server's copy of every wink-managed report, as last read or written.
    server: HashMap<ReportId, Value>,
    /// Per scope, per subject: a digest of its results at the last flush.
    subjects: HashMap<Scope, HashMap<String, u64>>,
    /// Flushes that failed, said once a minute while they do.
    failures: RepeatedFailure,
}

/// An answer from the API server.
struct Answer {
    code: u16,
    body: Value,
}

fn outcome(r: &Result<Answer, String>) -> String {
    match r {
        Ok(a) => a.code.to_string(),
        Err(_) => "unavailable".into(),
    }
}

impl ReportWriter {
    /// A writer through `client` (one that does not retry by itself).
    pub fn new(
        client: kube::Client,
        aggregator: Arc<Aggregator>,
        leadership: crate::leadership::Leadership,
        census: CensusFn,
        options: WriterOptions,
    ) -> Self {
        ReportWriter {
            client,
            aggregator,
            leadership,
            census,
            options,
            server: HashMap::new(),
            subjects: HashMap::new(),
            failures: RepeatedFailure::default(),
        }
    }

    async fn call(
        &self,
        op: &'static str,
        method: Method,
        uri: &str,
        ct: &str,
        body: Option<&Value>,
    ) -> Result<Answer, String> {
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let req = http::Request::builder()
            .method(method)
            .uri(uri)
            .header(http::header::CONTENT_TYPE, ct)
            .header(http::header::ACCEPT, "application/json")
            .header(
                http::header::USER_AGENT,
                concat!("wink/", env!("CARGO_PKG_VERSION"), " (policy reports)"),
            )
            .body(kube::client::Body::from(bytes))
            .map_err(|e| e.to_string())?;
        let exchange = async {
            let resp = self.client.send(req).await.map_err(|e| short_error(&e))?;
            let code = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect_bytes()
                .await
                .map_err(|e| e.to_string())?;
            Ok(Answer {
                code,
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            })
        };
        let answer = match tokio::time::timeout(Duration::from_secs(10), exchange).await {
            Ok(a) => a,
            Err(_) => Err("no answer within 10s".to_string()),
        };
        self.aggregator.stats.count(op, &outcome(&answer));
        answer
    }

    /// Create the CRDs the cluster lacks, then wait until they are served.
    async fn ensure_crds(&self) -> Result<(), String> {
        let api = self.options.api;
        let kinds = format!("{} CRDs ({})", api.kind(true), api.group());
        for crd in super::crd::definitions(api) {
            let uri = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
            let a = self
                .call("create-crd", Method::POST, uri, "application/json", Some(&crd))
                .await?;
            match a.code {
                200..=299 | 409 => {}
                403 => {
                    return Err(format!(
                        "the {kinds} are missing and wink may not create them ({}): install them (`wink manifests --report-api {api}` includes them)",
                        a.body["message"].as_str().unwrap_or("forbidden")
                    ));
                }
                code => return Err(format!("creating CRD {}: HTTP {code}", crd["metadata"]["name"])),
            }
        }
        for _ in 0..100 {
            let a = self
                .call(
                    "list",
                    Method::GET,
                    &format!("{}?limit=1", layout::collection(api, None)),
                    "application/json",
                    None,
                )
                .await?;
            if a.code == 200 {
                tracing::info!("installed the {kinds}");
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("the {kinds} were created but are not served"))
    }

    /// Read every wink-managed report into `server`.
    async fn read(&mut self) -> Result<(), String> {
        let selector = format!("{}%3D{}", layout::MANAGED_BY.0, layout::MANAGED_BY.1).replace('/', "%2F");
        let mut found = HashMap::new();
        let mut installed = false;
        let api = self.options.api;
        for all in [layout::all_namespaces(api), layout::collection(api, None)] {
            let mut cont = String::new();
            loop {
                let uri = format!("{all}?labelSelector={selector}&limit=500{cont}");
                let a = self
                    .call("list", Method::GET, &uri, "application/json", None)
                    .await?;
                if a.code == 404 && !installed {
                    if !self.options.install_crds {
                        return Err(format!(
                            "the {} CRDs ({}) are not installed (`wink manifests --report-api {api}` includes them)",
                            api.kind(true),
                            api.group()
                        ));
                    }
                    self.ensure_crds().await?;
                    installed = true;
                    continue;
                }
                if a.code != 200 {
                    return Err(format!("listing reports: HTTP {}: {}", a.code, a.body["message"]));
                }
                for item in a.body["items"].as_array().into_iter().flatten() {
                    let id = ReportId {
                        api,
                        namespace: item["metadata"]["namespace"].as_str().map(str::to_string),
                        name: item["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                    };
                    found.insert(id, item.clone());
                }
                match a.body["metadata"]["continue"].as_str().filter(|c| !c.is_empty()) {
                    Some(c) => cont = format!("&continue={c}"),
                    None => break,
                }
            }
        }
        self.server = found;
        self.subjects.clear();
        Ok(())
    }

    /// Count, for comparison, the writes (and bytes) one report per subject
    /// would need: one per subject whose results changed, of about its
    /// results' size plus an object's envelope.
    fn count_per_subject(&mut self, scope: &Scope, held: &[Held]) {
        let mut now: HashMap<String, (std::collections::hash_map::DefaultHasher, usize)> = HashMap::new();
        for h in held {
            let (hasher, size) = now.entry(h.subject.uid.clone()).or_default();
            h.result.hash(hasher);
            *size += layout::result_size(h);
        }
        let now: HashMap<String, (u64, usize)> =
            now.into_iter().map(|(k, (h, n))| (k, (h.finish(), n))).collect();
        let before = self.subjects.remove(scope).unwrap_or_default();
        let (mut writes, mut bytes) = (0u64, 0u64);
        for (uid, (digest, size)) in &now {
            if before.get(uid) != Some(digest) {
                writes += 1;
                bytes += (size + SUBJECT_REPORT_ENVELOPE) as u64;
            }
        }
        writes += before.keys().filter(|k| !now.contains_key(*k)).count() as u64;
        let stats = &self.aggregator.stats;
        stats.per_subject.fetch_add(writes, Ordering::Relaxed);
        stats.per_subject_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.subjects
            .insert(scope.clone(), now.into_iter().map(|(k, (h, _))| (k, h)).collect());
    }

    /// Make the reports of `scopes` equal to the aggregator's results; the
    /// scopes whose writes failed are returned.
    async fn flush(&mut self, scopes: BTreeSet<Scope>) -> BTreeSet<Scope> {
        let mut failed = BTreeSet::new();
        let mut wrote = false;
        // The first failure of this flush, said for all of them.
        let mut failure: Option<(String, String)> = None;
        for scope in scopes {
            let held = self.aggregator.snapshot(&scope);
            self.count_per_subject(&scope, &held);
            let mut known = Timestamps::default();
            for (_, v) in self.server.iter().filter(|(id, _)| id.scope() == scope) {
                known.learn(v);
            }
            let desired = layout::reports(
                self.options.api,
                &scope,
                &held,
                &known,
                self.options.max_report_bytes,
            );
            let wanted: BTreeSet<ReportId> = desired.iter().map(|(id, _)| id.clone()).collect();
            for (id, body) in desired {
                if self
                    .server
                    .get(&id)
                    .is_some_and(|s| layout::same_content(s, &body))
                {
                    continue;
                }
                wrote = true;
                let size = body.to_string().len();
                self.aggregator.stats.largest.fetch_max(size, Ordering::Relaxed);
                match self.put(&id, body).await {
                    Ok(copy) => {
                        self.aggregator
                            .stats
                            .bytes
                            .fetch_add(size as u64, Ordering::Relaxed);
                        self.server.insert(id, copy);
                    }
                    Err(e) => {
                        failure
                            .get_or_insert((id.path(), format!("policy report not written (retried): {e}")));
                        failed.insert(scope.clone());
                    }
                }
            }
            let stale: Vec<ReportId> = self
                .server
                .keys()
                .filter(|id| id.scope() == scope && !wanted.contains(*id))
                .cloned()
                .collect();
            for id in stale {
                wrote = true;
                match self
                    .call("delete", Method::DELETE, &id.path(), "application/json", None)
                    .await
                {
                    Ok(a) if (200..300).contains(&a.code) || a.code == 404 => {
                        self.server.remove(&id);
                    }
                    other => {
                        let why = other.map_or_else(|e| e, |a| format!("HTTP {}", a.code));
                        let said = format!("stale policy report not deleted (retried): {why}");
                        failure.get_or_insert((id.path(), said));
                        failed.insert(scope.clone());
                    }
                }
            }
        }
        if wrote {
            self.aggregator.stats.flushes.fetch_add(1, Ordering::Relaxed);
        }
        match failure {
            Some((report, what)) => {
                let what = format!("{what} ({} scope(s) failed)", failed.len());
                if let Some(said) = self.failures.failed(&what) {
                    tracing::warn!(%report, "{said}");
                }
            }
            None => {
                if let Some(said) = self.failures.succeeded() {
                    tracing::info!("policy reports written: {said}");
                }
            }
        }
        failed
    }

    /// Write one report: a merge patch of its content when the server has
    /// it, else a create. Returns the server's copy.
    async fn put(&mut self, id: &ReportId, body: Value) -> Result<Value, String> {
        let query = "?fieldManager=wink";
        if self.server.contains_key(id) {
            let mut patch = json!({
                "metadata": {"labels": body["metadata"]["labels"]},
                "summary": body["summary"],
                "results": body["results"],
            });
            if let Some(source) = body.get("source") {
                patch["source"] = source.clone();
            }
            let uri = format!("{}{query}", id.path());
            let a = self
                .call(
                    "patch",
                    Method::PATCH,
                    &uri,
                    "application/merge-patch+json",
                    Some(&patch),
                )
                .await?;
            match a.code {
                200..=299 => return Ok(a.body),
                404 => {
                    self.server.remove(id);
                }
                code => return Err(format!("HTTP {code}: {}", a.body["message"])),
            }
        }
        let uri = format!("{}{query}", id.collection());
        let a = self
            .call("create", Method::POST, &uri, "application/json", Some(&body))
            .await?;
        match a.code {
            200..=299 => Ok(a.body),
            409 => {
                // Someone else made it: learn the server's copy; the next
                // flush patches it.
                let got = self
                    .call("get", Method::GET, &id.path(), "application/json", None)
                    .await?;
                if got.code == 200 {
                    self.server.insert(id.clone(), got.body);
                }
                Err("it already existed; patched next time".into())
            }
            code => Err(format!("HTTP {code}: {}", a.body["message"])),
        }
    }

    fn set_phase(&self, phase: Phase) {
        *self.aggregator.stats.phase.lock().unwrap() = phase.as_str();
    }

    /// Run until the process ends.
    pub async fn run(mut self) {
        let mut phase = Phase::Standby;
        let mut backoff = Duration::from_millis(500);
        let mut reading = RepeatedFailure::default();
        loop {
            self.set_phase(phase);
            let census = (self.census)().await;
            let conditions = Step::Conditions {
                leading: self.leadership.is_leading(),
                reporters: census.reporters > 0,
            };
            let was = phase;
            if was == Phase::Current && self.leadership.is_leading() && census.reporters == 0 {
                // The last reporting plugin went: its results go too.
                let dirty = self.aggregator.take_dirty();
                let failed = self.flush(dirty).await;
                self.aggregator.mark_dirty(failed);
            }
            phase = phase.next(conditions);
            if phase == Phase::Standby {
                if was != Phase::Standby {
                    tracing::info!("policy reports: standing by (not leading, or no plugin reports)");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            match phase {
                Phase::Reading => {
                    let read = self.read().await;
                    if let Err(e) = &read {
                        if let Some(e) = reading.failed(e) {
                            tracing::warn!(
                                "policy reports: cannot read the existing reports (retrying): {e}"
                            );
                        }
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(30));
                    } else {
                        backoff = Duration::from_millis(500);
                        if let Some(said) = reading.succeeded() {
                            tracing::info!("policy reports: the existing reports are read: {said}");
                        }
                    }
                    phase = phase.next(Step::Read(read.is_ok()));
                }
                Phase::Settling => {
                    if census.unsettled.is_empty() {
                        // Everything, once: stale reports go, missing ones come.
                        self.aggregator.take_dirty();
                        let mut scopes = self.aggregator.scopes();
                        scopes.extend(self.server.keys().map(ReportId::scope));
                        let failed = self.flush(scopes).await;
                        self.aggregator.mark_dirty(failed);
                        tracing::info!(
                            reports = self.server.len(),
                            api = %self.options.api,
                            "policy reports: reconciled with every plugin's results"
                        );
                        phase = phase.next(Step::Settled);
                    } else {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
                Phase::Current => {
                    let woke =
                        tokio::time::timeout(Duration::from_millis(500), self.aggregator.changed()).await;
                    if woke.is_err() && !self.aggregator.has_dirty() {
                        continue;
                    }
                    tokio::time::sleep(self.options.batch).await;
                    if !self.leadership.is_leading() {
                        continue;
                    }
                    let dirty = self.aggregator.take_dirty();
                    let failed = self.flush(dirty).await;
                    if !failed.is_empty() {
                        self.aggregator.mark_dirty(failed);
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(30));
                    } else {
                        backoff = Duration::from_millis(500);
                    }
                }
                Phase::Standby => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions() {
        let on = || Step::Conditions {
            leading: true,
            reporters: true,
        };
        let off = Step::Conditions {
            leading: false,
            reporters: true,
        };
        assert_eq!(Phase::Standby.next(on()), Phase::Reading);
        assert_eq!(Phase::Reading.next(Step::Read(false)), Phase::Reading);
        assert_eq!(Phase::Reading.next(Step::Read(true)), Phase::Settling);
        assert_eq!(Phase::Settling.next(on()), Phase::Settling);
        assert_eq!(Phase::Settling.next(Step::Settled), Phase::Current);
        assert_eq!(Phase::Current.next(on()), Phase::Current);
        assert_eq!(Phase::Current.next(off), Phase::Standby);
        let none = Step::Conditions {
            leading: true,
            reporters: false,
        };
        assert_eq!(Phase::Settling.next(none), Phase::Standby);
    }
}
