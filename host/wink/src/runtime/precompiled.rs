//! The precompiled-component directory: compiled (Cranelift) code on disk, keyed by the
//! component's sha256 and the engine's `precompile_compatibility_hash`, so a
//! restart or reload of an unchanged plugin skips Cranelift.
//!
//! Deserializing precompiled code is only safe for trusted files, so only
//! files wink wrote itself are ever loaded: the directory is created private
//! (0700), entries are written to a temporary name and renamed, and an entry
//! is used only if it is a regular file owned by this user that nobody else
//! can write. Owns nothing but that directory.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Feeds `Hash` input into sha256, for a stable engine fingerprint.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        0
    }
}

/// A directory of precompiled components.
pub struct Precompiled {
    dir: PathBuf,
    engine_key: String,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl Precompiled {
    /// Open (creating, private) a cache directory for `engine`.
    pub fn open(dir: &Path, engine: &Engine) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let mut h = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut h);
        Ok(Precompiled {
            dir: dir.to_path_buf(),
            engine_key: hex::encode(&h.0.finalize()[..8]),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        })
    }

    /// The default location: `$XDG_CACHE_HOME/wink` or `~/.cache/wink`.
    pub fn default_dir() -> PathBuf {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir)
            .join("wink")
            .join("components")
    }

    /// Lookups answered from disk.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that compiled.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// The entry of the component whose sha256 (hex) is `digest`.
    fn entry(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}-{}.cwasm", self.engine_key))
    }

    fn trusted(path: &Path) -> bool {
        let Ok(md) = std::fs::symlink_metadata(path) else {
            return false;
        };
        if !md.file_type().is_file() {
            return false;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            if md.uid() != me || md.mode() & 0o022 != 0 {
                return false;
            }
        }
        true
    }

    /// Whether compiled code for the component of sha256 `digest` (hex, as
    /// [`loader::digest`](super::loader::digest) gives it) is cached and trusted.
    pub fn contains(&self, digest: &str) -> bool {
        Self::trusted(&self.entry(digest))
    }

    /// The component for `bytes`, whose sha256 is `digest`: from the cache
    /// when present (and trusted), else compiled and stored. Returns whether
    /// it was a hit.
    pub fn component(
        &self,
        engine: &Engine,
        bytes: &[u8],
        digest: &str,
    ) -> wasmtime::Result<(Component, bool)> {
        let entry = self.entry(digest);
        if Self::trusted(&entry) {
            // SAFETY: the entry was written by this process's user into a
            // private directory by `Engine::precompile_component` (see the
            // module doc), and wasmtime checks its engine compatibility.
            match unsafe { Component::deserialize_file(engine, &entry) } {
                Ok(c) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Ok((c, true));
                }
                Err(e) => {
                    tracing::warn!(entry = %entry.display(), "unusable precompiled entry, recompiling: {e}")
                }
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let compiled = engine.precompile_component(bytes)?;
        let tmp = entry.with_extension(format!("tmp-{}", std::process::id()));
        let stored = std::fs::write(&tmp, &compiled).and_then(|_| std::fs::rename(&tmp, &entry));
        if let Err(e) = stored {
            tracing::warn!(dir = %self.dir.display(), "cannot write the precompiled directory: {e}");
            let _ = std::fs::remove_file(&tmp);
        }
        // SAFETY: `compiled` was just produced by this engine.
        let component = unsafe { Component::deserialize(engine, &compiled)? };
        Ok((component, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lookup_hits_and_foreign_files_are_not_trusted() {
        let dir = std::env::temp_dir().join(format!("wink-cc-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let engine = Engine::default();
        let cache = Precompiled::open(&dir, &engine).unwrap();
        let empty_component = b"\0asm\x0d\0\x01\0";
        let digest = crate::runtime::loader::digest(empty_component);
        let (_, hit) = cache.component(&engine, empty_component, &digest).unwrap();
        assert!(!hit);
        let (_, hit) = cache.component(&engine, empty_component, &digest).unwrap();
        assert!(hit);
        assert_eq!((cache.hits(), cache.misses()), (1, 1));
        // A world-writable entry is not trusted: recompiled, not loaded.
        let entry = cache.entry(&digest);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
            assert!(!Precompiled::trusted(&entry));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
