//! [`SharedInformerFactory`]: one informer per distinct watch, shared by every
//! handler that asks for it; an informer whose last handler leaves stops.
//!
//! Owns resource resolution (discovery, so CRDs work) and the watcher
//! configuration. It does not apply deltas or deliver notifications.

use super::fallback::WithFallback;
use super::object::CachePolicy;
use super::object::RawObject;
use super::reflector::Reflector;
use super::shared_informer::SharedInformer;
use anyhow::Context;
use kube::Client;
use kube::api::{Api, ApiResource};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::runtime::{WatchStreamExt, watcher};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What to list and watch; informers are shared per distinct spec.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WatchSpec {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
}

impl WatchSpec {
    /// Every object of a resource type.
    pub fn all(api_version: &str, kind: &str) -> Self {
        WatchSpec {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: None,
            label_selector: None,
            field_selector: None,
        }
    }

    /// A readable name for logs.
    pub fn describe(&self) -> String {
        let mut s = format!("{}/{}", self.api_version, self.kind);
        if let Some(ns) = &self.namespace {
            s.push_str(&format!(" ns={ns}"));
        }
        if let Some(l) = &self.label_selector {
            s.push_str(&format!(" labels={l}"));
        }
        if let Some(f) = &self.field_selector {
            s.push_str(&format!(" fields={f}"));
        }
        s
    }
}

/// Default backlog past which a listener's pending notifications coalesce.
pub const DEFAULT_COALESCE_AFTER: usize = 10_000;

/// Options for every informer the factory starts.
#[derive(Debug, Clone)]
pub struct FactoryOptions {
    /// Use the streaming-list initial strategy (`sendInitialEvents`), falling
    /// back to paged lists on a server that refuses it.
    pub streaming_lists: bool,
    /// Page size of the initial list (kube's default when none).
    pub page_size: Option<u32>,
    /// How objects are cached (stripping, compression).
    pub cache: CachePolicy,
    /// Backlog past which a listener's pending notifications coalesce per
    /// object (`None`: never, client-go's unbounded buffer).
    pub coalesce_after: Option<usize>,
    /// How late a watch's reads may be under a steady stream, so that one
    /// wake-up reads many events (`None`: each event is read as it comes).
    /// The factory uses the client it is given; the daemon builds that
    /// client with this window (`client::client`).
    pub watch_window: Option<Duration>,
}

impl Default for FactoryOptions {
    fn default() -> Self {
        FactoryOptions {
            streaming_lists: false,
            page_size: None,
            cache: CachePolicy::default(),
            coalesce_after: Some(DEFAULT_COALESCE_AFTER),
            watch_window: None,
        }
    }
}

/// Shares informers between handlers.
pub struct SharedInformerFactory {
    client: Client,
    options: FactoryOptions,
    informers: Mutex<HashMap<WatchSpec, Arc<SharedInformer>>>,
    served: Mutex<HashMap<WatchSpec, ApiResource>>,
    resources: tokio::sync::Mutex<HashMap<(String, String), (ApiResource, Scope)>>,
    /// The server refused a streaming list: informers start paged.
    streaming_unsupported: Arc<AtomicBool>,
}

impl SharedInformerFactory {
    /// A factory using `client` for every informer.
    pub fn new(client: Client, options: FactoryOptions) -> Arc<Self> {
        Arc::new(SharedInformerFactory {
            client,
            options,
            informers: Mutex::new(HashMap::new()),
            served: Mutex::new(HashMap::new()),
            resources: tokio::sync::Mutex::new(HashMap::new()),
            streaming_unsupported: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Every running informer (for health and metrics).
    pub fn informers(&self) -> Vec<Arc<SharedInformer>> {
        self.informers.lock().unwrap().values().cloned().collect()
    }

    /// The client every informer lists and watches with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Resolve apiVersion + kind through discovery (cached); a spelling the
    /// API server would not accept is refused ([`crate::canonical::Gvk`]).
    pub async fn resolve(&self, api_version: &str, kind: &str) -> anyhow::Result<(ApiResource, Scope)> {
        let cache_key = (api_version.to_string(), kind.to_string());
        let mut resources = self.resources.lock().await;
        if let Some(found) = resources.get(&cache_key) {
            return Ok(found.clone());
        }
        // Only as the API server spells it: "/v1" is no core group here.
        let gvk = crate::canonical::Gvk::parse(api_version, kind)?;
        let gvk = GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
        let (ar, caps) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .with_context(|| format!("the API server does not serve {api_version} {kind}"))?;
        resources.insert(cache_key, (ar.clone(), caps.scope.clone()));
        Ok((ar, caps.scope))
    }

    /// The running informer for `spec`, started if there is none.
    pub async fn informer_for(&self, spec: &WatchSpec) -> anyhow::Result<Arc<SharedInformer>> {
        if let Some(inf) = self.informers.lock().unwrap().get(spec) {
            return Ok(inf.clone());
        }
        let (ar, scope) = self.resolve(&spec.api_version, &spec.kind).await?;
        let mut informers = self.informers.lock().unwrap();
        if let Some(inf) = informers.get(spec) {
            return Ok(inf.clone());
        }
        let api: Api<RawObject> = match (&scope, &spec.namespace) {
            (Scope::Namespaced, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &ar),
            _ => Api::all_with(self.client.clone(), &ar),
        };
        let mut config = watcher::Config::default();
        if let Some(l) = &spec.label_selector {
            config = config.labels(l);
        }
        if let Some(f) = &spec.field_selector {
            config = config.fields(f);
        }
        if let Some(p) = self.options.page_size {
            config = config.page_size(p);
        }
        let informer = SharedInformer::new(spec.describe());
        informer.set_coalesce_after(self.options.coalesce_after);
        let reflector = Reflector::new(ar.clone(), self.options.cache);
        let paged = watcher(api.clone(), config.clone()).default_backoff();
        if self.options.streaming_lists && !self.streaming_unsupported.load(Ordering::Relaxed) {
            let streaming = watcher(api, config.streaming_lists()).default_backoff();
            let unsupported = self.streaming_unsupported.clone();
            let stream = WithFallback::new(streaming, paged, unsupported, spec.describe());
            informer.spawn(stream, reflector);
        } else {
            informer.spawn(paged, reflector);
        }
        tracing::info!(informer = %spec.describe(), "informer started");
        self.served.lock().unwrap().insert(spec.clone(), ar);
        informers.insert(spec.clone(), informer.clone());
        Ok(informer)
    }

    /// Remove a listener; an informer left without listeners stops.
    pub fn release(&self, spec: &WatchSpec, listener_id: u64) {
        let informer = self.informers.lock().unwrap().get(spec).cloned();
        let Some(informer) = informer else { return };
        if informer.remove_listener(listener_id) == 0 {
            let mut informers = self.informers.lock().unwrap();
            if informer.listener_count() == 0 {
                informers.remove(spec);
                self.served.lock().unwrap().remove(spec);
                drop(informers);
                informer.stop();
                tracing::info!(informer = %spec.describe(), "informer stopped: no listeners left");
            }
        }
    }

    /// The running informers' specs, sorted.
    pub fn running(&self) -> Vec<WatchSpec> {
        let mut specs: Vec<WatchSpec> = self.informers.lock().unwrap().keys().cloned().collect();
        specs.sort();
        specs
    }

    /// A running informer holding every object of a resource named by group,
    /// version and plural (no selectors), in all namespaces or in
    /// `namespace`, with its resource. All-namespace informers win.
    pub fn find_complete(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: Option<&str>,
    ) -> Option<(Arc<SharedInformer>, ApiResource)> {
        let served = self.served.lock().unwrap();
        let informers = self.informers.lock().unwrap();
        let mut candidates: Vec<(&WatchSpec, &ApiResource)> = served
            .iter()
            .filter(|(spec, ar)| {
                ar.group == group
                    && ar.version == version
                    && ar.plural == plural
                    && spec.label_selector.is_none()
                    && spec.field_selector.is_none()
                    && (spec.namespace.is_none() || spec.namespace.as_deref() == namespace)
            })
            .collect();
        candidates.sort_by_key(|(spec, _)| spec.namespace.is_some());
        let (spec, ar) = candidates.first()?;
        Some((informers.get(*spec)?.clone(), (*ar).clone()))
    }

    /// The running informer for `spec`, if any.
    pub fn get(&self, spec: &WatchSpec) -> Option<Arc<SharedInformer>> {
        self.informers.lock().unwrap().get(spec).cloned()
    }

    /// Stop every informer.
    pub fn shutdown(&self) {
        let all: Vec<Arc<SharedInformer>> = self.informers.lock().unwrap().drain().map(|(_, i)| i).collect();
        for i in all {
            i.stop();
        }
    }
}
