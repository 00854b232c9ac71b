//! Taking over as the leader: a standby's plugins were loaded and attached
//! (their informers current) but were handed nothing; on becoming the
//! leader each running plugin gets a fresh instance through the usual
//! hand-over, so the cache is replayed to it as initial adds and then every
//! event after: a failover costs no relist. Owns only that step.

use super::PluginManager;
use super::lifecycle::PluginState;

impl PluginManager {
    /// Start every running plugin afresh with the cache replayed to it.
    pub async fn take_over(&self) {
        let names: Vec<String> = {
            let plugins = self.plugins.lock().await;
            plugins
                .iter()
                .filter(|(_, r)| matches!(r.lifecycle.state(), PluginState::Running | PluginState::TieringUp))
                .map(|(n, _)| n.clone())
                .collect()
        };
        for name in names {
            let from = {
                let plugins = self.plugins.lock().await;
                plugins.get(&name).map(|r| {
                    let i = &r.instance;
                    (
                        i.pre().clone(),
                        i.engine().clone(),
                        i.config().to_string(),
                        i.id(),
                        i.limits(),
                    )
                })
            };
            let Some((pre, engine, config, old, limits)) = from else {
                continue;
            };
            let started = match self
                .start_instance(name.as_str().into(), pre, &engine, config, limits)
                .await
            {
                Ok((instance, registration)) => self
                    .resolve(&name, &registration)
                    .await
                    .map(|resolution| (instance, resolution)),
                Err(e) => Err(e),
            };
            let mut plugins = self.plugins.lock().await;
            let Some(r) = plugins.get_mut(&name).filter(|r| r.instance.id() == old) else {
                continue; // reloaded, restarted or unloaded meanwhile
            };
            match started {
                Ok((instance, resolution)) => {
                    r.registered = self.attach(&instance, resolution, Some(&r.registered));
                    r.instance = instance;
                    tracing::info!(plugin = %name, "plugin takes over: the cache is replayed to it");
                }
                Err(e) => tracing::error!(plugin = %name, "plugin could not take over: {e:#}"),
            }
        }
    }
}
