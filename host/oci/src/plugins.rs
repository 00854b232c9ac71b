//! `wink run --plugin-ref NAME=REF`: plugins from OCI registries beside
//! the plugin directory. Each reference is fetched through
//! [`Fetcher::fetch`] (the store first), pinned (a tag is resolved once;
//! one that moves later changes nothing until `--resolve-tags`, or the
//! reference given changes), put in the store's `plugins/` directory as
//! `NAME.wasm` and loaded by the plugin manager like any file; with
//! `--cosign-key`, only once its signature verifies. A failure (registry
//! down, not found, digest mismatch, no valid signature) is logged with its reason
//! and tried again with backoff; the daemon and its other plugins run on.

use crate::cli::{RegistryArgs, StoreArgs, VerifyArgs};
use crate::digest::Digest;
use crate::fetch::{Fetcher, parse_reference};
use crate::registry::Registry;
use crate::store::Pin;
use clap::Args;
use oci_client::Reference;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wink_informer::repeated::{RepeatedFailure, short_anyhow};
use wink_runtime::PluginManager;

/// The first wait before a failed fetch is tried again.
pub const RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two tries.
pub const RETRY_MAX: Duration = Duration::from_secs(300);

/// At most this many `--plugin-ref`s.
pub const MAX_PLUGIN_REFS: usize = 256;

/// The flags of `wink run` for plugins from registries.
#[derive(Args, Debug, Clone)]
pub struct PluginRefArgs {
    /// A plugin from an OCI registry, NAME=REF (REF: registry/repository:tag
    /// or @sha256:...); repeatable, beside the plugin directory. A tag is
    /// resolved once and pinned in the store: a tag that moves later
    /// changes nothing until --resolve-tags.
    #[arg(long = "plugin-ref", value_name = "NAME=REF")]
    pub plugin_refs: Vec<String>,
    /// Resolve the tags of --plugin-ref again at start, and pin what they
    /// name now.
    #[arg(long)]
    pub resolve_tags: bool,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

/// The references to load, checked.
pub struct PluginRefs {
    refs: Vec<(String, String, Reference)>,
    fetcher: Fetcher,
    resolve_tags: bool,
}

impl PluginRefArgs {
    /// Check every NAME=REF before anything starts (a malformed one ends
    /// the start with its reason); none given: nothing to do.
    pub fn prepare(&self, plugins_dir: &Path) -> anyhow::Result<Option<PluginRefs>> {
        if self.plugin_refs.is_empty() {
            return Ok(None);
        }
        anyhow::ensure!(
            self.plugin_refs.len() <= MAX_PLUGIN_REFS,
            "{} --plugin-ref flags (at most {MAX_PLUGIN_REFS})",
            self.plugin_refs.len()
        );
        let mut refs: Vec<(String, String, Reference)> = Vec::new();
        for arg in &self.plugin_refs {
            let (name, raw) = arg
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("--plugin-ref {arg:?}: expected NAME=REF"))?;
            let file = PathBuf::from(format!("{name}.wasm"));
            anyhow::ensure!(
                !refs.iter().any(|(n, _, _)| n == name),
                "--plugin-ref {name}: given twice"
            );
            let plugin = wink_runtime::plugin_file::plugin_name(&file)?;
            if let Some(twin) = wink_runtime::plugin_file::file_of(plugins_dir, &plugin) {
                anyhow::bail!(
                    "--plugin-ref {name}: the plugin directory {} has {} too (one name, one plugin)",
                    plugins_dir.display(),
                    twin.file_name().unwrap_or_default().to_string_lossy()
                );
            }
            refs.push((name.to_string(), raw.to_string(), parse_reference(raw)?));
        }
        let fetcher = self.fetcher()?;
        Ok(Some(PluginRefs {
            refs,
            fetcher,
            resolve_tags: self.resolve_tags,
        }))
    }
}

/// Says whether a plugin name is taken, and by what.
pub type Taken = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

impl PluginRefArgs {
    /// Check what the daemon-wide flags name before the start goes on (a
    /// `--cosign-key` that is no key ends it, rather than leaving the
    /// daemon without WinkPlugins after one warning).
    pub fn check(&self) -> anyhow::Result<()> {
        self.verify.keys().map(|_| ())
    }

    /// The fetcher of the store and registry flags (for plugins from
    /// other sources than `--plugin-ref`).
    pub fn fetcher(&self) -> anyhow::Result<Fetcher> {
        Ok(Fetcher {
            store: self.store.open()?,
            registry: Registry::new(self.registry.options()?),
            keys: self.verify.keys()?,
        })
    }

    /// Whether a plugin name is taken by `plugins_dir` or a `--plugin-ref`,
    /// and by which.
    pub fn taken(&self, plugins_dir: &Path) -> Taken {
        let (dir, refs) = (plugins_dir.to_path_buf(), self.plugin_refs.clone());
        Box::new(move |name: &str| {
            if let Some(file) = wink_runtime::plugin_file::file_of(&dir, name) {
                return Some(format!(
                    "the plugin directory {} has {} (one name, one plugin)",
                    dir.display(),
                    file.file_name().unwrap_or_default().to_string_lossy()
                ));
            }
            refs.iter()
                .any(|r| r.split_once('=').is_some_and(|(n, _)| n == name))
                .then(|| format!("--plugin-ref names {name} too (one name, one plugin)"))
        })
    }
}

impl PluginRefs {
    /// Fetch every reference and load it into `manager`. A fetch that
    /// fails (registry down, not found, digest mismatch) is logged and
    /// tried again with backoff, [`RETRY_FIRST`] doubling up to
    /// [`RETRY_MAX`], until it succeeds; a component that fetched but
    /// does not load is logged once, as a bad file in the directory is.
    /// Returns once every reference was fetched.
    pub async fn load(&self, manager: &PluginManager) {
        let mut pending: Vec<&(String, String, Reference)> = self.refs.iter().collect();
        let mut delay = RETRY_FIRST;
        // Per reference: its fetches' failures, said once a minute while
        // they last.
        let mut failures: HashMap<&str, RepeatedFailure> = HashMap::new();
        loop {
            let mut failed = Vec::new();
            for entry @ (name, raw, reference) in pending {
                let failing = failures.entry(raw.as_str()).or_default();
                match self.fetch(name, raw, reference).await {
                    Ok(path) => {
                        if let Some(said) = failing.succeeded() {
                            tracing::info!(plugin = %name, reference = %raw, "plugin fetched from the registry: {said}");
                        }
                        if let Err(e) = manager.load_file(&path).await {
                            let error = short_anyhow(&e);
                            tracing::error!(plugin = %name, reference = %raw, %error, "plugin from the registry not loaded");
                        }
                    }
                    Err(e) => {
                        let retry_in_s = delay.as_secs();
                        if let Some(error) = failing.failed(&short_anyhow(&e)) {
                            tracing::warn!(plugin = %name, reference = %raw, %error, retry_in_s, "plugin from the registry not loaded");
                        }
                        failed.push(entry);
                    }
                }
            }
            if failed.is_empty() {
                return;
            }
            pending = failed;
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(RETRY_MAX);
        }
    }

    /// The verified component of `name`, in the directory the manager
    /// loads it from.
    pub async fn fetch(&self, name: &str, raw: &str, reference: &Reference) -> anyhow::Result<PathBuf> {
        let store = &self.fetcher.store;
        let pinned = match self.resolve_tags {
            true => None,
            false => store.pins()?.remove(name).filter(|p| p.reference == raw),
        };
        let expected = pinned.map(|p| Digest::parse(&p.digest)).transpose()?;
        let fetched = self.fetcher.fetch(reference, expected).await?;
        store.pin(
            name,
            Pin {
                reference: raw.to_string(),
                digest: fetched.manifest.to_string(),
                uid: None,
            },
        )?;
        let max = self.fetcher.registry.options().max_component_bytes;
        let path = store.materialise(name, fetched.component, max)?;
        tracing::info!(
            plugin = %name,
            reference = %raw,
            digest = %fetched.manifest,
            from = %if fetched.from_store { "store" } else { "registry" },
            took_ms = fetched.took.as_millis() as u64,
            "plugin fetched"
        );
        Ok(path)
    }
}
