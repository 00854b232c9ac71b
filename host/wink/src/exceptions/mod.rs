//! The operator's exceptions to plugins' policy as cluster objects:
//! `WinkException`s ([`crd`]) read in the namespaces `--exception-namespaces`
//! names (`*`: all) and nowhere else, as Kyverno's `--exceptionNamespace`;
//! RBAC on the resource says who may create them. Without the flag,
//! exceptions are off and nothing watches them.
//!
//! Owns the informers on WinkExceptions (one per namespace named), the
//! listener that keeps the manager's [`ExceptionSet`] what they say (an
//! exception that does not parse is said in the log and not in force), and
//! the leader's status writes ([`status`]). What an exception does is the
//! runtime's and the admission server's ([`review`]).

pub mod crd;
pub mod manifests;
pub mod review;
pub mod status;

use std::sync::Arc;
use std::time::Duration;
use wink_informer::factory::{FactoryOptions, WatchSpec};
use wink_informer::object::ObjRef;
use wink_informer::processor::EventHandler;
use wink_informer::{SharedInformer, SharedInformerFactory};
use wink_runtime::exceptions::{Exception, ExceptionSet};

/// The most namespaces `--exception-namespaces` names.
pub const MAX_NAMESPACES: usize = 64;

/// `--exception-namespaces`: where WinkExceptions are honoured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    /// Every namespace (`*`).
    All,
    /// These.
    Some(Vec<String>),
}

impl Namespaces {
    /// The flag's value: none when exceptions are off.
    pub fn parse(names: &[String]) -> anyhow::Result<Option<Namespaces>> {
        let names: Vec<String> = names
            .iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect();
        if names.is_empty() {
            return Ok(None);
        }
        anyhow::ensure!(
            names.len() <= MAX_NAMESPACES,
            "--exception-namespaces: {} namespaces (at most {MAX_NAMESPACES}; `*` for all)",
            names.len()
        );
        if names.iter().any(|n| n == "*") {
            return Ok(Some(Namespaces::All));
        }
        for n in &names {
            anyhow::ensure!(
                n.len() <= 63
                    && n.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "--exception-namespaces: {n:?} is not a namespace name"
            );
        }
        Ok(Some(Namespaces::Some(names)))
    }

    fn describe(&self) -> String {
        match self {
            Namespaces::All => "every namespace".into(),
            Namespaces::Some(n) => format!("namespace(s) {}", n.join(", ")),
        }
    }
}

/// Keeps the set what the WinkExceptions say.
struct Listener {
    set: ExceptionSet,
}

impl Listener {
    fn put(&self, obj: &ObjRef) {
        let (ns, name) = (obj.namespace().unwrap_or_default(), obj.name());
        let parsed = serde_json::from_str(&obj.json())
            .map_err(|e| e.to_string())
            .and_then(|v| Exception::from_object(&v));
        match parsed {
            Ok(e) => {
                if self.set.put(e) {
                    tracing::info!(winkexception = %format!("{ns}/{name}"), "WinkException in force");
                } else {
                    tracing::warn!(winkexception = %format!("{ns}/{name}"), "WinkException not in force: too many exceptions");
                }
            }
            Err(why) => {
                self.set.remove(ns, name);
                tracing::warn!(winkexception = %format!("{ns}/{name}"), "WinkException not in force: {why}");
            }
        }
    }
}

impl EventHandler for Listener {
    fn on_add(&self, obj: &ObjRef, _: bool) {
        self.put(obj);
    }
    fn on_update(&self, _: &ObjRef, new: &ObjRef) {
        self.put(new);
    }
    fn on_delete(&self, obj: &ObjRef, _: bool) {
        self.set.remove(obj.namespace().unwrap_or_default(), obj.name());
        tracing::info!(winkexception = %format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name()), "WinkException deleted");
    }
}

/// Honour the WinkExceptions of `namespaces` in `manager` (none: off),
/// reading them from the cluster of `config`; the leader writes their
/// status, counting the objects of `cache` they except. Started in the
/// background: a cluster without the CRD, where it may not be created, is
/// said and the daemon runs on without exceptions.
pub fn watch(
    namespaces: Option<Namespaces>,
    config: &kube::Config,
    manager: &Arc<wink_runtime::PluginManager>,
    cache: Arc<SharedInformerFactory>,
) -> anyhow::Result<()> {
    let Some(namespaces) = namespaces else {
        return Ok(());
    };
    let client = kube::Client::try_from(config.clone())?;
    let manager = manager.clone();
    tokio::spawn(async move {
        match start(&namespaces, client, manager, cache).await {
            Ok(()) => tracing::info!(
                "WinkExceptions honoured in {} alone; any elsewhere are ignored",
                namespaces.describe()
            ),
            Err(e) => tracing::error!("WinkExceptions not watched: {e:#}"),
        }
    });
    Ok(())
}

async fn start(
    namespaces: &Namespaces,
    client: kube::Client,
    manager: Arc<wink_runtime::PluginManager>,
    cache: Arc<SharedInformerFactory>,
) -> anyhow::Result<()> {
    crate::winkplugins::ensure_named_crd(&client, crd::CRD_NAME, crd::definition(), "WinkException").await?;
    let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default());
    let specs: Vec<WatchSpec> = match namespaces {
        Namespaces::All => vec![WatchSpec::all(crd::API_VERSION, crd::KIND)],
        Namespaces::Some(names) => names
            .iter()
            .map(|ns| WatchSpec {
                namespace: Some(ns.clone()),
                ..WatchSpec::all(crd::API_VERSION, crd::KIND)
            })
            .collect(),
    };
    let listener = Arc::new(Listener {
        set: manager.exceptions().clone(),
    });
    let mut informers: Vec<Arc<SharedInformer>> = Vec::new();
    for spec in &specs {
        // A CRD just created is served a moment later.
        let mut tries = 0;
        let informer = loop {
            match factory.informer_for(spec).await {
                Ok(i) => break i,
                Err(e) if tries < 40 => {
                    tries += 1;
                    tracing::debug!("WinkExceptions not served yet: {e:#}");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => return Err(e.context("watching WinkExceptions")),
            }
        };
        informer.add_listener("winkexceptions", listener.clone(), None);
        informers.push(informer);
    }
    for i in &informers {
        i.wait_for_sync().await;
    }
    let writer = status::Writer::new(client, manager, cache, informers, factory);
    tokio::spawn(writer.run());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(names: &[&str]) -> anyhow::Result<Option<Namespaces>> {
        Namespaces::parse(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_flag_names_namespaces_or_all_and_absent_is_off() {
        assert_eq!(parse(&[]).unwrap(), None);
        assert_eq!(parse(&[" "]).unwrap(), None);
        assert_eq!(
            parse(&["a", "b-2"]).unwrap(),
            Some(Namespaces::Some(vec!["a".into(), "b-2".into()]))
        );
        assert_eq!(parse(&["a", "*"]).unwrap(), Some(Namespaces::All));
        assert!(parse(&["Not_A_Namespace"]).is_err());
        let many: Vec<String> = (0..=MAX_NAMESPACES).map(|i| format!("n{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(parse(&many).is_err());
    }
}
