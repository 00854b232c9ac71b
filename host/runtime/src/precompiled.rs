//! The precompiled-component directory: compiled (Cranelift) code on disk,
//! keyed by the component's digest ([`loader::digest`](super::loader::digest))
//! and the engine's `precompile_compatibility_hash`, so a restart or reload
//! of an unchanged plugin skips Cranelift.
//!
//! Precompiled code is native code: whoever can write this directory can
//! run code in wink. So it is trusted only when it is private, and every
//! artifact is checked before it is deserialized:
//! - the directory is one wink creates itself (0700), or an existing one
//!   owned by wink's user that nobody else can write; any other is refused
//!   (the caller runs uncached and says so), and wink never changes the mode
//!   of a directory it did not create;
//! - files are written to a temporary file created exclusively (`O_EXCL`,
//!   so never through a planted link) under an unpredictable name, mode
//!   0600 whatever the umask, then renamed into place;
//! - an entry is two files: `.cwasm`, exactly what
//!   `Engine::precompile_component` produced (so wasmtime maps it from disk
//!   instead of copying it), and `.seal`, which names the component it was
//!   compiled from and the length and CRC-32 of the `.cwasm`. Both must be
//!   regular files owned by this user that nobody else can write, and the
//!   `.cwasm` must match its seal: a corrupt entry, or one copied over
//!   another component's name, is discarded, logged and recompiled, never
//!   run. (The CRC catches corruption; the privacy of the directory is what
//!   keeps others out.)
//!
//! The directory is bounded ([`sweep`]): opening it and storing an entry
//! remove what dead writers left behind and, over the size limit, the
//! entries used least recently. An edit loop compiles a new entry at every
//! save, so without a bound the directory would only grow.
//!
//! Owns nothing but that directory.

use std::hash::{BuildHasher, Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::Engine;

mod sweep;
use wasmtime::component::Component;

/// Feeds `Hash` input into BLAKE3, for a stable engine fingerprint.
struct StableHasher(blake3::Hasher);

impl Hasher for StableHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        0
    }
}

/// The first bytes of every seal; then the component's digest (32 bytes),
/// the `.cwasm`'s length (8 bytes, little-endian) and CRC-32 (4 bytes, LE).
const MAGIC: &[u8; 8] = b"winkpc02";
const SEAL: usize = MAGIC.len() + 32 + 8 + 4;

/// Why a directory is not used for precompiled components.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create {dir}: {source}")]
    Create { dir: PathBuf, source: std::io::Error },
    #[error("cannot inspect {dir}: {source}")]
    Inspect { dir: PathBuf, source: std::io::Error },
    #[error("{dir} is not a directory")]
    NotADirectory { dir: PathBuf },
    #[error(
        "{dir} is not private (owner uid {owner}, mode {mode:o}): precompiled code runs as native code, so wink uses only a directory it owns that no one else can write"
    )]
    NotPrivate { dir: PathBuf, owner: u32, mode: u32 },
}

/// Why an entry was discarded.
#[derive(Debug, PartialEq, Eq)]
enum Rejected {
    Short,
    Magic,
    OtherComponent,
    Corrupt,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Rejected::Short => "its seal is not a seal of this length",
            Rejected::Magic => "not written by this version of wink",
            Rejected::OtherComponent => "compiled from another component (copied over this name)",
            Rejected::Corrupt => "its code does not match the length and checksum in its seal (corrupt)",
        })
    }
}

/// The size the directory's entries are kept under unless told otherwise:
/// 1 GiB, about 30 compiled Python or JavaScript plugins and hundreds of
/// Rust ones. (wasmtime's own cache keeps 512 MiB, but compressed; entries
/// here stay uncompressed so that wasmtime maps them.)
pub const DEFAULT_LIMIT: u64 = 1 << 30;

/// A directory of precompiled components.
pub struct Precompiled {
    dir: PathBuf,
    engine_key: String,
    /// The entries' total size a sweep brings the directory under.
    limit: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    discarded: AtomicU64,
    evicted: AtomicU64,
    /// One sweep at a time in this process.
    sweeping: Mutex<()>,
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Whether `md` belongs to this user and no one else may write it.
fn private(md: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    md.uid() == effective_uid() && md.mode() & 0o022 == 0
}

/// The directory, created private when missing; refused when not private.
fn private_dir(dir: &Path) -> Result<(), OpenError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| OpenError::Create {
            dir: parent.to_path_buf(),
            source,
        })?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(OpenError::Create {
                dir: dir.to_path_buf(),
                source,
            });
        }
    }
    // Whether created now or found, the directory must be private: one
    // created now is (mode 0700 less the umask); a planted one is not.
    let md = std::fs::symlink_metadata(dir).map_err(|source| OpenError::Inspect {
        dir: dir.to_path_buf(),
        source,
    })?;
    if !md.is_dir() {
        return Err(OpenError::NotADirectory {
            dir: dir.to_path_buf(),
        });
    }
    if !private(&md) {
        return Err(OpenError::NotPrivate {
            dir: dir.to_path_buf(),
            owner: md.uid(),
            mode: md.mode() & 0o7777,
        });
    }
    Ok(())
}

/// The default location from `$XDG_CACHE_HOME` or `$HOME`; none when
/// neither is set (no fallback into a shared temporary folder, which any
/// local user could create first).
pub fn default_dir_from(xdg_cache_home: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    let base = xdg_cache_home
        .filter(|p| p.is_absolute())
        .or_else(|| home.filter(|p| p.is_absolute()).map(|h| h.join(".cache")))?;
    Some(base.join("wink").join("components"))
}

/// A name no other process can guess: pid, time and a per-process random key.
fn unpredictable_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    std::process::id().hash(&mut h);
    COUNTER.fetch_add(1, Ordering::Relaxed).hash(&mut h);
    std::time::SystemTime::now().hash(&mut h);
    format!("{:016x}", h.finish())
}

impl Precompiled {
    /// Open `dir` for `engine`, bounded to [`DEFAULT_LIMIT`].
    pub fn open(dir: &Path, engine: &Engine) -> Result<Self, OpenError> {
        Self::open_bounded(dir, engine, DEFAULT_LIMIT)
    }

    /// Open `dir` for `engine`, its entries kept under `limit` bytes: created
    /// private when missing, refused when it exists and is not private (its
    /// mode is never changed), then swept.
    pub fn open_bounded(dir: &Path, engine: &Engine, limit: u64) -> Result<Self, OpenError> {
        private_dir(dir)?;
        let mut h = StableHasher(blake3::Hasher::new());
        engine.precompile_compatibility_hash().hash(&mut h);
        let opened = Precompiled {
            dir: dir.to_path_buf(),
            engine_key: hex::encode(&h.0.finalize().as_bytes()[..8]),
            limit,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            sweeping: Mutex::new(()),
        };
        opened.sweep(None);
        Ok(opened)
    }

    /// Remove leftovers and, over the limit, the entries used least
    /// recently, keeping the entry `keep` (a digest). A sweep that fails
    /// costs disk, never a load: it is logged.
    fn sweep(&self, keep: Option<&str>) {
        let _one = self.sweeping.lock().unwrap_or_else(|e| e.into_inner());
        let keep = keep.map(|digest| format!("{digest}-{}", self.engine_key));
        match sweep::sweep(
            &self.dir,
            self.limit,
            keep.as_deref(),
            std::time::SystemTime::now(),
        ) {
            Ok(swept) => {
                self.evicted.fetch_add(swept.evicted, Ordering::Relaxed);
                if swept.evicted + swept.leftovers > 0 {
                    tracing::info!(
                        dir = %self.dir.display(),
                        evicted = swept.evicted,
                        leftovers = swept.leftovers,
                        bytes = swept.bytes,
                        limit = self.limit,
                        "precompiled directory swept"
                    );
                }
            }
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), "cannot sweep the precompiled directory: {e}")
            }
        }
    }

    /// The default location: `$XDG_CACHE_HOME/wink/components` or
    /// `~/.cache/wink/components`; none without either variable.
    pub fn default_dir() -> Option<PathBuf> {
        default_dir_from(
            std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from),
            std::env::var_os("HOME").map(PathBuf::from),
        )
    }

    /// Lookups answered from disk.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that compiled.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Entries found and discarded (corrupt, swapped, foreign format).
    pub fn discarded(&self) -> u64 {
        self.discarded.load(Ordering::Relaxed)
    }

    /// Entries removed to keep the directory under its limit.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// The compiled code of the component whose digest (hex) is `digest`.
    fn entry(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}-{}.cwasm", self.engine_key))
    }

    /// The seal of that entry.
    fn seal(&self, digest: &str) -> PathBuf {
        self.entry(digest).with_extension("seal")
    }

    /// A regular file (not a link) owned by this user, writable by no one else.
    fn trusted(path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|md| md.file_type().is_file() && private(&md))
    }

    /// Whether compiled code for the component `digest` (hex, as
    /// [`loader::digest`](super::loader::digest) gives it) is stored and trusted.
    pub fn contains(&self, digest: &str) -> bool {
        Self::trusted(&self.entry(digest)) && Self::trusted(&self.seal(digest))
    }

    /// The seal of `code`, compiled from the component `digest`.
    fn sealed(digest: &[u8], code: &[u8]) -> Vec<u8> {
        let mut seal = Vec::with_capacity(SEAL);
        seal.extend_from_slice(MAGIC);
        seal.extend_from_slice(digest);
        seal.extend_from_slice(&(code.len() as u64).to_le_bytes());
        seal.extend_from_slice(&crc32fast::hash(code).to_le_bytes());
        seal
    }

    /// Whether `code` is what `seal` says was compiled from `digest`.
    fn verified(seal: &[u8], code: &[u8], digest: &str) -> Result<(), Rejected> {
        if seal.len() != SEAL {
            return Err(Rejected::Short);
        }
        let (magic, rest) = seal.split_at(MAGIC.len());
        let (component, rest) = rest.split_at(32);
        let (len, sum) = rest.split_at(8);
        if magic != MAGIC {
            return Err(Rejected::Magic);
        }
        if hex::encode(component) != digest {
            return Err(Rejected::OtherComponent);
        }
        if len != (code.len() as u64).to_le_bytes() || sum != crc32fast::hash(code).to_le_bytes() {
            return Err(Rejected::Corrupt);
        }
        Ok(())
    }

    /// Check an entry against its seal, mapping it rather than reading it.
    fn check(entry: &Path, seal: &[u8], digest: &str) -> Result<(), Rejected> {
        let file = std::fs::File::open(entry).map_err(|_| Rejected::Corrupt)?;
        // SAFETY: a private file of this user, only ever replaced by rename
        // (never written in place), read here and dropped before use.
        let code = unsafe { memmap2::Mmap::map(&file) }.map_err(|_| Rejected::Corrupt)?;
        Self::verified(seal, &code, digest)
    }

    /// Load a trusted, verified entry; a bad one is discarded and logged.
    fn load(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let (entry, seal) = (self.entry(digest), self.seal(digest));
        if !Self::trusted(&entry) || !Self::trusted(&seal) {
            return None;
        }
        // A seal gone since (a writer replacing this entry) is a miss; one
        // longer than a seal is read no further than to see that.
        let mut sealed = Vec::with_capacity(SEAL + 1);
        std::fs::File::open(&seal)
            .ok()?
            .take(SEAL as u64 + 1)
            .read_to_end(&mut sealed)
            .ok()?;
        if let Err(why) = Self::check(&entry, &sealed, digest) {
            self.discarded.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(entry = %entry.display(), "precompiled entry discarded, recompiling: {why}");
            let _ = std::fs::remove_file(&seal);
            let _ = std::fs::remove_file(&entry);
            return None;
        }
        // SAFETY: the entry is a file of this user in a private directory,
        // its seal names this component and its code matches the length
        // and checksum written with it by `store` from
        // `Engine::precompile_component`; wasmtime checks its engine
        // compatibility. wasmtime maps the file instead of copying it.
        match unsafe { Component::deserialize_file(engine, &entry) } {
            Ok(c) => {
                sweep::touch(&seal);
                Some(c)
            }
            Err(e) => {
                tracing::warn!(entry = %entry.display(), "unusable precompiled entry, recompiling: {e}");
                None
            }
        }
    }

    /// Write `bytes` at `path` through a private temporary file and a rename.
    fn write_private(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let tmp = self
            .dir
            .join(format!("{}{}", sweep::TEMPORARY, unpredictable_suffix()));
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)?;
            // 0600 whatever the umask (the umask only removes bits, but say it).
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            file.write_all(bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        let result = write();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// Write `code` (the component `digest`'s compiled code) as its entry,
    /// then its seal: until the seal is in place the entry is not used.
    fn store(&self, digest: &str, code: &[u8]) -> std::io::Result<()> {
        let component = hex::decode(digest).map_err(std::io::Error::other)?;
        let seal = self.seal(digest);
        let _ = std::fs::remove_file(&seal);
        self.write_private(&self.entry(digest), code)?;
        self.write_private(&seal, &Self::sealed(&component, code))
    }

    /// The component for `bytes`, whose digest is `digest`: from disk when
    /// present, trusted and verified, else compiled and stored. Returns
    /// whether it was a hit.
    pub fn component(
        &self,
        engine: &Engine,
        bytes: &[u8],
        digest: &str,
    ) -> wasmtime::Result<(Component, bool)> {
        if let Some(component) = self.load(engine, digest) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok((component, true));
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let compiled = engine.precompile_component(bytes)?;
        match self.store(digest, &compiled) {
            Ok(()) => self.sweep(Some(digest)),
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), "cannot write the precompiled directory: {e}")
            }
        }
        // SAFETY: `compiled` was just produced by this engine.
        let component = unsafe { Component::deserialize(engine, &compiled)? };
        Ok((component, false))
    }
}

#[cfg(test)]
mod tests;
