//! The content-addressed local store: `<root>/blobs/sha256/<hex>` holds
//! each verified manifest and component under its digest, written through
//! a temporary file and a rename (a crash leaves the old state or the new,
//! never half a blob); `<root>/pins.json` the digest each `--plugin-ref`
//! or WinkPlugin was resolved to; `<root>/plugins/<name>.wasm` the
//! components handed to the plugin manager, each a hard link to its blob
//! (plugins on one digest share one copy; [`crate::collect`] removes
//! blobs nothing names any more); `<root>/signatures/<hex>.json` the cosign
//! signatures a manifest was verified with, checked again (under the keys
//! then in force) before a stored manifest is taken without the registry.
//! Every read is checked against its digest again: a blob damaged on disk
//! is removed and fetched anew, never loaded.

use crate::cosign::Signed;
use crate::digest::{self, Digest};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The pins file is refused past this size.
const MAX_PINS_BYTES: u64 = 1 << 20;
/// A manifest's kept signatures are ignored past this size.
const MAX_SIGNATURES_BYTES: u64 = 1 << 20;

/// A store rooted at one directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// The digest a plugin's reference was resolved to, kept until the
/// reference changes or tags are resolved again on purpose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    pub reference: String,
    pub digest: String,
    /// The object the pin was made for (a WinkPlugin's uid): another
    /// object of the same name resolves its tag anew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

impl Store {
    /// Open (creating) the store at `root`.
    pub fn open(root: &Path) -> anyhow::Result<Store> {
        for dir in ["blobs/sha256", "tmp", "plugins", "signatures"] {
            let dir = root.join(dir);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create the OCI store's {}", dir.display()))?;
        }
        Ok(Store {
            root: root.to_path_buf(),
        })
    }

    /// The default store: `$XDG_STATE_HOME/wink/oci`, else `~/.local/state/wink/oci`.
    pub fn default_root() -> Option<PathBuf> {
        let state = std::env::var_os("XDG_STATE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".local/state"))
            })?;
        Some(state.join("wink/oci"))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the blob of `digest` lives.
    pub fn blob_path(&self, digest: Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(digest.hex())
    }

    /// The blob of `digest` if the store has it intact (at most `max`
    /// bytes); one that does not match its digest is removed.
    pub fn read(&self, digest: Digest, max: u64) -> anyhow::Result<Option<Vec<u8>>> {
        let path = self.blob_path(digest);
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let mut bytes = Vec::new();
        file.take(max + 1).read_to_end(&mut bytes)?;
        let intact = bytes.len() as u64 <= max && Digest::of(&bytes) == digest;
        if !intact {
            tracing::warn!(blob = %path.display(), "a stored blob does not match its digest: removed, to be fetched again");
            let _ = std::fs::remove_file(&path);
            return Ok(None);
        }
        Ok(Some(bytes))
    }

    /// Keep `bytes` as the blob of `digest`, after checking they are. A
    /// blob already there and whole is kept (the same file: plugin files
    /// linked to it stay one copy, however many pulls of the digest run at
    /// once) and its age renewed, so that a collection leaves it to the
    /// pull that is about to pin or link it.
    pub fn write(&self, what: &str, digest: Digest, bytes: &[u8]) -> anyhow::Result<PathBuf> {
        digest::verify(what, bytes, digest)?;
        let path = self.blob_path(digest);
        if !self.renew(&path, digest, bytes.len()) {
            // Of two pulls writing it at once, the first one's file stays.
            let keep_first = || self.renew(&path, digest, bytes.len());
            self.write_atomically_unless(&path, bytes, keep_first)?;
        }
        Ok(path)
    }

    /// Whether the blob at `path` is there and is `digest`'s: then its
    /// modification time is now.
    fn renew(&self, path: &Path, digest: Digest, len: usize) -> bool {
        let whole = std::fs::read(path)
            .ok()
            .is_some_and(|b| b.len() == len && digest::verify("a stored blob", &b, digest).is_ok());
        whole
            && std::fs::File::options()
                .write(true)
                .open(path)
                .and_then(|f| f.set_modified(std::time::SystemTime::now()))
                .is_ok()
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
        self.write_atomically_unless(path, bytes, || false)
    }

    /// Write `bytes` to `path` through a temporary file; where a file is
    /// already there, it is replaced unless `keep` says otherwise.
    fn write_atomically_unless(
        &self,
        path: &Path,
        bytes: &[u8],
        keep: impl Fn() -> bool,
    ) -> anyhow::Result<()> {
        let tmp = self.root.join("tmp").join(format!(
            "{}.{}.{}",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("blob"),
            std::process::id(),
            unique()
        ));
        let written = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            match std::fs::hard_link(&tmp, path) {
                Ok(()) => std::fs::remove_file(&tmp),
                Err(_) if keep() => std::fs::remove_file(&tmp),
                Err(_) => std::fs::rename(&tmp, path),
            }
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.with_context(|| format!("cannot write {}", path.display()))
    }

    /// Put the stored component `layer` where the plugin manager loads it
    /// from, as `<name>.wasm`: a hard link to its blob, so that any number
    /// of plugins on one digest share one copy (unchanged when it already
    /// is that link; a copy only where the file system cannot link).
    pub fn materialise(&self, name: &str, layer: Digest, max: u64) -> anyhow::Result<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let path = self.plugins_dir().join(format!("{name}.wasm"));
        let blob = self.blob_path(layer);
        let bytes = self
            .read(layer, max)?
            .with_context(|| format!("the component {layer} is not in the store"))?;
        let inode = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
        if inode(&path).is_some() && inode(&path) == inode(&blob) {
            return Ok(path);
        }
        let tmp = self
            .root
            .join("tmp")
            .join(format!("{name}.wasm.{}.{}", std::process::id(), unique()));
        match std::fs::hard_link(&blob, &tmp) {
            Ok(()) => std::fs::rename(&tmp, &path)
                .inspect_err(|_| {
                    let _ = std::fs::remove_file(&tmp);
                })
                .with_context(|| format!("cannot write {}", path.display()))?,
            Err(_) => self.write_atomically(&path, &bytes)?,
        }
        Ok(path)
    }

    /// Forget plugin `name`: its `<name>.wasm` and config in the plugins
    /// directory (what they linked to stays until [`crate::collect`]).
    pub fn remove_plugin(&self, name: &str) -> anyhow::Result<()> {
        let path = self.plugins_dir().join(format!("{name}.wasm"));
        for file in [wink_runtime::plugin_file::config_path(&path), path] {
            match std::fs::remove_file(&file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("cannot remove {}", file.display()));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The directory of components handed to the plugin manager.
    pub fn plugins_dir(&self) -> PathBuf {
        self.root.join("plugins")
    }

    fn pins_path(&self) -> PathBuf {
        self.root.join("pins.json")
    }

    fn signatures_path(&self, manifest: Digest) -> PathBuf {
        self.root
            .join("signatures")
            .join(format!("{}.json", manifest.hex()))
    }

    /// The cosign signatures kept for the manifest `manifest` (none when
    /// there are none, or they do not read).
    pub fn signatures(&self, manifest: Digest) -> Vec<Signed> {
        let path = self.signatures_path(manifest);
        if !path.exists() {
            return Vec::new();
        }
        wink_input::read_text(&path, MAX_SIGNATURES_BYTES, "signatures")
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Keep `signatures`, which verified the manifest `manifest`.
    pub fn keep_signatures(&self, manifest: Digest, signatures: &[Signed]) -> anyhow::Result<()> {
        let text = serde_json::to_vec(signatures)?;
        self.write_atomically(&self.signatures_path(manifest), &text)
    }

    /// Every plugin's pin (none when the file is absent).
    pub fn pins(&self) -> anyhow::Result<BTreeMap<String, Pin>> {
        let path = self.pins_path();
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            _ => {}
        }
        let text = wink_input::read_text(&path, MAX_PINS_BYTES, "pins")?;
        serde_json::from_str(&text).with_context(|| format!("{}: not a pins file", path.display()))
    }

    /// Forget the pin of plugin `name` (none: nothing to do).
    pub fn unpin(&self, name: &str) -> anyhow::Result<()> {
        let mut pins = self.pins()?;
        if pins.remove(name).is_none() {
            return Ok(());
        }
        let text = serde_json::to_vec_pretty(&pins)?;
        self.write_atomically(&self.pins_path(), &text)
    }

    /// Record `pin` for plugin `name`.
    pub fn pin(&self, name: &str, pin: Pin) -> anyhow::Result<()> {
        let mut pins = self.pins()?;
        if pins.get(name) == Some(&pin) {
            return Ok(());
        }
        pins.insert(name.to_string(), pin);
        let text = serde_json::to_vec_pretty(&pins)?;
        self.write_atomically(&self.pins_path(), &text)
    }
}

/// A number no other temporary file of this process has.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wink-oci-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn keeps_blobs_by_digest_and_refuses_others() {
        let store = Store::open(&temp("blobs")).unwrap();
        let d = Digest::of(b"component");
        assert!(store.write("layer", d, b"not it").is_err());
        assert!(!store.blob_path(d).exists(), "a refused blob leaves nothing");
        store.write("layer", d, b"component").unwrap();
        assert_eq!(store.read(d, 100).unwrap().unwrap(), b"component");
        // Damaged on disk: not returned, and gone.
        std::fs::write(store.blob_path(d), b"tampered").unwrap();
        assert!(store.read(d, 100).unwrap().is_none());
        assert!(!store.blob_path(d).exists());
        let _ = std::fs::remove_dir_all(store.root());
    }

    #[test]
    fn keeps_a_manifests_signatures_and_reads_a_damaged_record_as_none() {
        let store = Store::open(&temp("signatures")).unwrap();
        let d = Digest::of(b"manifest");
        assert!(store.signatures(d).is_empty());
        let signed = vec![Signed {
            payload: "cGF5bG9hZA==".into(),
            signature: "c2ln".into(),
        }];
        store.keep_signatures(d, &signed).unwrap();
        assert_eq!(store.signatures(d), signed);
        assert!(store.signatures(Digest::of(b"other")).is_empty());
        std::fs::write(store.signatures_path(d), b"{not json").unwrap();
        assert!(store.signatures(d).is_empty());
        let _ = std::fs::remove_dir_all(store.root());
    }

    #[test]
    fn pins_and_materialises() {
        let store = Store::open(&temp("pins")).unwrap();
        assert!(store.pins().unwrap().is_empty());
        let pin = Pin {
            reference: "r/x:1".into(),
            digest: Digest::of(b"m").to_string(),
            uid: None,
        };
        store.pin("x", pin.clone()).unwrap();
        assert_eq!(store.pins().unwrap()["x"], pin);
        let d = Digest::of(b"wasm");
        store.write("layer", d, b"wasm").unwrap();
        let path = store.materialise("x", d, 100).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"wasm");
        // Shared with the blob and with every plugin on that digest.
        use std::os::unix::fs::MetadataExt;
        let again = store.materialise("x2", d, 100).unwrap();
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        assert_eq!(ino(&path), ino(&store.blob_path(d)));
        assert_eq!(ino(&again), ino(&path));
        store.unpin("x").unwrap();
        assert!(store.pins().unwrap().is_empty());
        store.remove_plugin("x").unwrap();
        assert!(!path.exists() && again.exists());
        assert!(store.materialise("y", Digest::of(b"other"), 100).is_err());
        let _ = std::fs::remove_dir_all(store.root());
    }

    #[test]
    fn a_blob_written_again_stays_the_file_plugins_link_to_and_is_younger() {
        use std::os::unix::fs::MetadataExt;
        let store = Store::open(&temp("again")).unwrap();
        let d = Digest::of(b"wasm");
        let blob = store.write("layer", d, b"wasm").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&blob)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let linked = store.materialise("x", d, 100).unwrap();
        // Pulls of the same digest, one after the other and at once.
        store.write("layer", d, b"wasm").unwrap();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| store.write("layer", d, b"wasm").unwrap());
            }
        });
        let meta = std::fs::metadata(&blob).unwrap();
        assert_eq!(meta.ino(), std::fs::metadata(&linked).unwrap().ino(), "one copy");
        assert!(meta.modified().unwrap() > old, "its age renewed");
        // A damaged blob is replaced, not kept.
        std::fs::remove_file(&linked).unwrap();
        std::fs::write(&blob, b"tampered").unwrap();
        store.write("layer", d, b"wasm").unwrap();
        assert_eq!(std::fs::read(&blob).unwrap(), b"wasm");
        let _ = std::fs::remove_dir_all(store.root());
    }
}
