//! The one entry point from a source to a loadable file: a reference (and
//! the digest it must have, when one is pinned) becomes a verified
//! component in the content-addressed store, read from the store when it
//! is there (no registry needed) and pulled otherwise. With cosign keys
//! (the daemon's `--cosign-key`, a source's own), the manifest digest is
//! verified under every one of them once it is known and before anything
//! is pulled or taken from the store ([`crate::cosign`]). A plugin source
//! of any kind (a `--plugin-ref`, a cluster object's spec) goes through it.

use crate::artifact;
use crate::cosign::{self, PublicKey, VerifyError};
use crate::digest::Digest;
use crate::registry::Registry;
use crate::store::Store;
use anyhow::Context;
use oci_client::Reference;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A component ready to load.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The manifest's digest (what a reference is pinned to).
    pub manifest: Digest,
    /// The component's digest.
    pub component: Digest,
    /// The component in the store, verified.
    pub path: PathBuf,
    /// Whether it came from the store rather than the registry.
    pub from_store: bool,
    /// How long fetching took.
    pub took: Duration,
    /// The ids of the cosign keys the manifest was verified under (none
    /// asked: empty).
    pub verified: Vec<String>,
}

/// A store, the registry client that fills it, and the keys every
/// manifest it fetches must be signed by.
pub struct Fetcher {
    pub store: Store,
    pub registry: Registry,
    pub keys: Vec<PublicKey>,
}

/// Parse an OCI reference (`registry/repo:tag`, `registry/repo@sha256:...`).
pub fn parse_reference(s: &str) -> anyhow::Result<Reference> {
    anyhow::ensure!(
        s.len() <= 1024,
        "an OCI reference of {} characters (at most 1024)",
        s.len()
    );
    let r: Reference = s.parse().map_err(|e| {
        anyhow::anyhow!("{s:?}: not an OCI reference (registry/repository:tag or @sha256:...): {e}")
    })?;
    if let Some(d) = r.digest() {
        Digest::parse(d)?;
    }
    Ok(r)
}

impl Fetcher {
    /// The verified component of `reference`. `expected` is the manifest
    /// digest it must have (a pin); without one, the reference's own
    /// digest, else its tag resolved now. With a digest known, a store
    /// that has the manifest and component answers without the registry.
    pub async fn fetch(&self, reference: &Reference, expected: Option<Digest>) -> anyhow::Result<Fetched> {
        self.fetch_verified(reference, expected, &[]).await
    }

    /// [`Fetcher::fetch`], the manifest verified under `keys` beside the
    /// fetcher's own: a [`VerifyError`] in the error's chain says why not.
    pub async fn fetch_verified(
        &self,
        reference: &Reference,
        expected: Option<Digest>,
        keys: &[PublicKey],
    ) -> anyhow::Result<Fetched> {
        let started = Instant::now();
        let own = reference.digest().map(Digest::parse).transpose()?;
        if let (Some(own), Some(expected)) = (own, expected) {
            anyhow::ensure!(
                own == expected,
                "{reference}: names {own} but {expected} is expected"
            );
        }
        let max = self.registry.options().max_component_bytes;
        let manifest_digest = match expected.or(own) {
            Some(d) => d,
            None => self.registry.resolve(reference).await?,
        };
        let mut all: Vec<PublicKey> = Vec::new();
        for key in self.keys.iter().chain(keys) {
            if !all.contains(key) {
                all.push(key.clone());
            }
        }
        let keys = all;
        self.verify(reference, manifest_digest, &keys).await?;
        let verified: Vec<String> = keys.iter().map(|k| k.id().to_string()).collect();
        if let Some(found) = self.stored(manifest_digest, max)? {
            return Ok(Fetched {
                from_store: true,
                took: started.elapsed(),
                verified,
                ..found
            });
        }
        let manifest = self.registry.manifest(reference, manifest_digest).await?;
        let (component, size) = artifact::component_layer(&manifest, max)
            .with_context(|| format!("{reference} ({manifest_digest})"))?;
        let by_digest = reference.clone_with_digest(manifest_digest.to_string());
        let bytes = self.registry.component(&by_digest, component, size).await?;
        artifact::component_info(&bytes)
            .with_context(|| format!("{reference}: the layer is not a component"))?;
        // The component first: a stored manifest means its component is there.
        let path = self.store.write("the component", component, &bytes)?;
        self.store.write("the manifest", manifest_digest, &manifest)?;
        Ok(Fetched {
            manifest: manifest_digest,
            component,
            path,
            from_store: false,
            took: started.elapsed(),
            verified,
        })
    }

    /// Verify the manifest `digest` of `reference` under `keys` (none: no
    /// check): with the signatures the store kept for it when they still
    /// verify (no registry needed), else with the registry's, kept once
    /// they verify.
    async fn verify(
        &self,
        reference: &Reference,
        digest: Digest,
        keys: &[PublicKey],
    ) -> Result<(), VerifyError> {
        if keys.is_empty() {
            return Ok(());
        }
        let repository = format!("{}/{}", reference.registry(), reference.repository());
        if cosign::check(&self.store.signatures(digest), digest, &repository, keys).is_ok() {
            return Ok(());
        }
        let signatures = self.registry.signatures(reference, digest).await?;
        cosign::check(&signatures, digest, &repository, keys)?;
        self.store
            .keep_signatures(digest, &signatures)
            .map_err(VerifyError::Failed)
    }

    fn stored(&self, manifest_digest: Digest, max: u64) -> anyhow::Result<Option<Fetched>> {
        let Some(manifest) = self
            .store
            .read(manifest_digest, artifact::MAX_MANIFEST_BYTES as u64)?
        else {
            return Ok(None);
        };
        let (component, _) = artifact::component_layer(&manifest, max)?;
        if self.store.read(component, max)?.is_none() {
            return Ok(None);
        }
        Ok(Some(Fetched {
            manifest: manifest_digest,
            component,
            path: self.store.blob_path(component),
            from_store: true,
            took: Duration::ZERO,
            verified: Vec::new(),
        }))
    }
}
