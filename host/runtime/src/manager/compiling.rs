//! Turning a plugin file's bytes into a running plugin's compiled component:
//! compiling off the async threads (through the precompiled directory on
//! Cranelift), reusing the component kept for a plugin that waits for its
//! resources (the same path, bytes and kind of code: a retry compiles nothing),
//! and tier-up (Winch now, the Cranelift build in the background on the
//! tier-up thread, into the precompiled directory; none without one); a
//! plugin under a fuel cap is compiled for the metered engine instead,
//! neither tiered up nor kept in the precompiled directory. Counts the
//! components compiled. Installing the result is the manager's.

use super::PluginManager;
use super::tier_up;
use super::waiting::Unresolved;
use crate::capabilities::HostState;
use crate::engine::{Compiler, WinkEngine};
use crate::loader::{self, LoadedComponent};
use anyhow::Context;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;
use wasmtime::component::Linker;

impl PluginManager {
    /// Components compiled (or read from the precompiled directory) for
    /// loads since the start: a plugin waiting for its resources adds one,
    /// not one per retry.
    pub fn compilations(&self) -> u64 {
        self.compilations.load(Ordering::Relaxed)
    }

    /// Compile `bytes` (or take the component kept for this path while it
    /// waits) and install it; with tier-up and no precompiled build, on
    /// Winch, its Cranelift build compiled in the background.
    pub(super) async fn compile_and_install(
        &self,
        path: &Path,
        bytes: Vec<u8>,
        digest: String,
        config: String,
        started: Instant,
    ) -> anyhow::Result<()> {
        if let Some((metered, linker)) = self.metered_for(path).await? {
            let loaded = self.prepare(&metered, &linker, path, bytes, digest).await?;
            return self.install_or_keep(loaded, &metered, config, started).await;
        }
        let cached = self.precompiled.as_ref().is_some_and(|c| c.contains(&digest));
        let baseline = self.baseline.clone().filter(|_| !cached);
        let Some((winch, winch_linker)) = baseline else {
            let loaded = self
                .prepare(&self.engine, &self.linker, path, bytes, digest)
                .await?;
            return self.install_or_keep(loaded, &self.engine, config, started).await;
        };
        // Tier up: Winch now; Cranelift in the background, into the
        // precompiled directory for the next load of this component (a
        // restart of wink, or a revert), never swapped in under the running
        // plugin: a swap would hand it its initial list a second time.
        let loaded = self
            .prepare(&winch, &winch_linker, path, bytes.clone(), digest.clone())
            .await?;
        self.install_or_keep(loaded, &winch, config, started).await?;
        if self.precompiled.is_none() {
            // No directory to keep a build in: this load stays on Winch,
            // and so will the next.
            return Ok(());
        }
        let me = self.me.clone();
        let path = path.to_path_buf();
        tokio::spawn(async move {
            let Some(m) = me.upgrade() else { return };
            let optimized = Instant::now();
            let built = m
                .compile(
                    &m.engine,
                    &m.linker,
                    &path,
                    bytes,
                    digest.clone(),
                    Priority::Background,
                )
                .await;
            let mut plugins = m.plugins.lock().await;
            let current = plugins
                .values_mut()
                .find(|r| r.path == path && r.digest == digest);
            let name = current
                .as_ref()
                .map_or_else(String::new, |r| r.instance.name().to_string());
            match built {
                Ok(_) => {
                    tracing::info!(
                        plugin = %name,
                        compile_ms = optimized.elapsed().as_millis() as u64,
                        "Cranelift build cached for the next load; this load stays on Winch"
                    );
                    if let Some(r) = current {
                        r.lifecycle.tiered_up();
                    }
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), "no Cranelift build cached: {e:#}");
                    if let Some(r) = current {
                        r.lifecycle.tier_up_abandoned();
                    }
                }
            }
        });
        Ok(())
    }

    /// The metered engine (built on first use) when the grant of the plugin
    /// in `path` sets a fuel cap; else none.
    async fn metered_for(&self, path: &Path) -> anyhow::Result<Option<(WinkEngine, Linker<HostState>)>> {
        let name = crate::plugin_file::plugin_name(path)?;
        if self.caps(&name)?.fuel.is_none() {
            return Ok(None);
        }
        let metered = self
            .metered
            .get_or_try_init(|| async {
                let engine = WinkEngine::metered()?;
                let linker = loader::linker(&engine)?;
                anyhow::Ok((engine, linker))
            })
            .await?;
        Ok(Some(metered.clone()))
    }

    /// The component kept for `path` while it waits, when it was compiled
    /// from the same bytes for the same kind of code; else a new compile.
    async fn prepare(
        &self,
        engine: &WinkEngine,
        linker: &Linker<HostState>,
        path: &Path,
        bytes: Vec<u8>,
        digest: String,
    ) -> anyhow::Result<LoadedComponent> {
        if let Some(kept) = self.waiting.kept(path, &digest, engine.code_kind()) {
            tracing::debug!(path = %path.display(), "the plugin's component compiled for its last attempt is reused");
            return Ok(kept);
        }
        self.compile(engine, linker, path, bytes, digest, Priority::Load)
            .await
    }

    /// Install `loaded`; when its resources cannot be resolved yet (the
    /// plugin will wait and be loaded again), keep it for the next attempt.
    async fn install_or_keep(
        &self,
        loaded: LoadedComponent,
        engine: &WinkEngine,
        config: String,
        started: Instant,
    ) -> anyhow::Result<()> {
        let kept = loaded.clone();
        let installed = self.install(loaded, engine, config, started).await;
        if let Err(e) = &installed
            && e.downcast_ref::<Unresolved>().is_some()
        {
            self.waiting.keep(kept, engine.code_kind());
        }
        installed
    }

    /// Compile and check a component off the async threads; a background
    /// build on the tier-up thread.
    async fn compile(
        &self,
        engine: &WinkEngine,
        linker: &Linker<HostState>,
        path: &Path,
        bytes: Vec<u8>,
        digest: String,
        priority: Priority,
    ) -> anyhow::Result<LoadedComponent> {
        // Only the shared engine's Cranelift builds are kept in the
        // precompiled directory (one directory holds one engine's builds).
        let precompiled = self
            .precompiled
            .clone()
            .filter(|_| engine.compiler() == Compiler::Cranelift && !engine.meters_fuel());
        let (engine, linker, owned) = (engine.clone(), linker.clone(), path.to_path_buf());
        let loaded = tokio::task::spawn_blocking(move || {
            let build =
                || loader::load_digested(&engine, &linker, precompiled.as_deref(), &owned, &bytes, digest);
            match priority {
                Priority::Load => build(),
                Priority::Background => tier_up::run(build),
            }
        })
        .await
        .context("compile task failed")??;
        self.compilations.fetch_add(1, Ordering::Relaxed);
        Ok(loaded)
    }
}

/// Whom a compile keeps waiting: a load (a plugin is not running until it
/// is done), or nobody (a tier-up build for the next load).
#[derive(Clone, Copy)]
enum Priority {
    Load,
    Background,
}
