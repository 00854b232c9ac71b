//! The objects a controller runs, WinkPlugins or NamespacedWinkPlugins:
//! how their events name plugins ([`Names`]), where their objects are in
//! the informer's store, their CRDs' presence ([`ensure_crd`]), and
//! starting a controller on them ([`run_controller`]).

use super::{Context_, Controller, MAX_CONCURRENT_PULLS, crd, namespaced};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, PostParams};
use kube::core::GroupVersionKind;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use wink_informer::SharedInformerFactory;
use wink_informer::factory::{FactoryOptions, WatchSpec};
use wink_informer::object::ObjRef;
use wink_informer::processor::EventHandler;

/// Which objects a controller runs.
#[derive(Clone)]
pub(super) enum Objects {
    /// WinkPlugins: a plugin is named as its object.
    Cluster,
    /// NamespacedWinkPlugins ([`namespaced`]): plugin name -> the object's
    /// store key (`namespace/name`).
    Team(Arc<std::sync::Mutex<BTreeMap<String, String>>>),
}

impl Objects {
    /// The plugin name of `obj` (remembering its key).
    pub(super) fn plugin(&self, obj: &ObjRef) -> String {
        match self {
            Objects::Cluster => obj.name().to_string(),
            Objects::Team(keys) => {
                let ns = obj.namespace().unwrap_or_default();
                let plugin = namespaced::plugin_name(obj.name(), ns);
                let mut keys = keys.lock().unwrap_or_else(|e| e.into_inner());
                keys.entry(plugin.clone())
                    .or_insert_with(|| format!("{ns}/{}", obj.name()));
                plugin
            }
        }
    }

    /// The store key of plugin `name`'s object.
    pub(super) fn key(&self, name: &str) -> Option<String> {
        match self {
            Objects::Cluster => Some(name.to_string()),
            Objects::Team(keys) => keys.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned(),
        }
    }

    pub(super) fn kind(&self) -> &'static str {
        match self {
            Objects::Cluster => crd::KIND,
            Objects::Team(_) => namespaced::KIND,
        }
    }
}

pub(super) struct Names(pub(super) mpsc::UnboundedSender<String>, pub(super) Objects);

impl EventHandler for Names {
    fn on_add(&self, obj: &ObjRef, _: bool) {
        let _ = self.0.send(self.1.plugin(obj));
    }
    fn on_update(&self, _: &ObjRef, new: &ObjRef) {
        let _ = self.0.send(self.1.plugin(new));
    }
    fn on_delete(&self, obj: &ObjRef, _: bool) {
        let _ = self.0.send(self.1.plugin(obj));
    }
}

pub(super) fn api_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(crd::GROUP, crd::VERSION, kind), plural)
}

/// Whether the CRD `name` is there; with `install`, create it (`definition`) when it is not.
pub(super) async fn ensure_crd(
    client: &kube::Client,
    install: bool,
    name: &str,
    definition: Value,
) -> anyhow::Result<bool> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    match api.get_opt(name).await {
        Ok(Some(_)) => return Ok(true),
        Ok(None) => {}
        // Not allowed to look: as good as not installed, unless asked to install.
        Err(kube::Error::Api(s)) if s.code == 403 && !install => {
            tracing::debug!("{name} not watched: the CRD may not be read ({})", s.message);
            return Ok(false);
        }
        Err(e) => return Err(e.into()),
    }
    if !install {
        return Ok(false);
    }
    ensure_named_crd(client, name, definition, name).await?;
    Ok(true)
}

/// Create the CRD `name` (`definition`, of `kind`s) when it is missing.
pub(crate) async fn ensure_named_crd(
    client: &kube::Client,
    name: &str,
    definition: Value,
    kind: &str,
) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    match api.get_opt(name).await {
        Ok(Some(_)) => return Ok(()),
        Ok(None) => {}
        // Not allowed to look: try to create it, which says more.
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        Err(e) => return Err(e.into()),
    }
    let definition: CustomResourceDefinition = serde_json::from_value(definition)?;
    match api.create(&PostParams::default(), &definition).await {
        Ok(_) => tracing::info!("installed the {kind} CRD"),
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(kube::Error::Api(s)) if s.code == 403 => anyhow::bail!(
            "the {kind} CRD {name} is missing and wink may not create it ({}): install it (`wink manifests` includes it)",
            s.message
        ),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// Watch the objects `objects` names and run them.
pub(super) async fn run_controller(
    client: kube::Client,
    cx: Context_,
    objects: Objects,
) -> anyhow::Result<()> {
    let kind = objects.kind();
    let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default());
    let spec = WatchSpec::all(crd::API_VERSION, kind);
    // A CRD just created is served a moment later.
    let mut tries = 0;
    let informer = loop {
        match factory.informer_for(&spec).await {
            Ok(i) => break i,
            Err(e) if tries < 20 => {
                tries += 1;
                tracing::debug!("{kind}s not served yet: {e:#}");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => return Err(e.context(format!("watching {kind}s"))),
        }
    };
    let (tx, rx) = mpsc::unbounded_channel();
    informer.add_listener(kind, Arc::new(Names(tx, objects.clone())), None);
    let (done, pulled) = mpsc::unbounded_channel();
    let controller = Controller {
        cx: Arc::new(cx),
        client,
        informer,
        entries: BTreeMap::new(),
        pulls: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_PULLS)),
        hosts: BTreeMap::new(),
        in_flight: BTreeMap::new(),
        done,
        collected: Instant::now(),
        collect_again: None,
        objects,
        team: Default::default(),
        _factory: factory,
    };
    tokio::spawn(controller.run(rx, pulled));
    tracing::info!("watching {kind}s");
    Ok(())
}
