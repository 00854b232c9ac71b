//! Collecting the store: a blob is kept while a pin names it (a pinned
//! manifest and its component) or a file of the plugins directory is it
//! (a hard link, [`Store::materialise`]); any other blob older than
//! [`GRACE`] is removed, with the signatures kept for it. Pins and plugin
//! files are forgotten by their owners ([`Store::unpin`],
//! [`Store::remove_plugin`]); this only takes what nothing names.

use crate::artifact::{self, MAX_MANIFEST_BYTES};
use crate::digest::Digest;
use crate::store::Store;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

/// A blob written this recently is kept whatever names it: a pull under
/// way writes its blobs before it pins or links them.
pub const GRACE: Duration = Duration::from_secs(10);

/// Remove the blobs nothing names (see the module); how many went.
/// `max_component` is the cap a pinned manifest's layer is read under.
pub fn collect(store: &Store, max_component: u64) -> anyhow::Result<usize> {
    let mut keep: HashSet<String> = HashSet::new();
    for pin in store.pins()?.values() {
        let Ok(manifest) = Digest::parse(&pin.digest) else {
            continue;
        };
        keep.insert(manifest.hex());
        if let Some(bytes) = store.read(manifest, MAX_MANIFEST_BYTES as u64)?
            && let Ok((component, _)) = artifact::component_layer(&bytes, max_component)
        {
            keep.insert(component.hex());
        }
    }
    let mut linked: HashSet<(u64, u64)> = HashSet::new();
    for entry in std::fs::read_dir(store.plugins_dir())?.flatten() {
        if let Ok(m) = entry.metadata() {
            linked.insert((m.dev(), m.ino()));
        }
    }
    let mut removed = 0;
    let blobs = store.root().join("blobs/sha256");
    for entry in std::fs::read_dir(&blobs)?.flatten() {
        let hex = entry.file_name().to_string_lossy().into_owned();
        let Ok(m) = entry.metadata() else { continue };
        let young = m
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_none_or(|age| age < GRACE);
        if keep.contains(&hex) || linked.contains(&(m.dev(), m.ino())) || young {
            continue;
        }
        if std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
            let _ = std::fs::remove_file(store.root().join("signatures").join(format!("{hex}.json")));
        }
    }
    if removed > 0 {
        tracing::info!(store = %store.root().display(), removed, "blobs no plugin names removed from the store");
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Pin;

    #[test]
    fn keeps_what_a_pin_or_a_plugin_names_and_removes_the_rest() {
        let dir = std::env::temp_dir().join(format!("wink-oci-collect-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let built = artifact::build(b"\0asm\x0d\0\x01\0", None).unwrap();
        store
            .write("the component", built.layer_digest, b"\0asm\x0d\0\x01\0")
            .unwrap();
        store
            .write("the manifest", built.manifest_digest, &built.manifest)
            .unwrap();
        let linked = Digest::of(b"linked");
        store.write("a component", linked, b"linked").unwrap();
        store.materialise("p", linked, 100).unwrap();
        let loose = Digest::of(b"loose");
        store.write("a component", loose, b"loose").unwrap();
        store
            .pin(
                "x",
                Pin {
                    reference: "r/x:1".into(),
                    digest: built.manifest_digest.to_string(),
                    uid: None,
                },
            )
            .unwrap();
        // Young blobs stay.
        assert_eq!(collect(&store, 1 << 20).unwrap(), 0);
        let old = std::time::SystemTime::now() - GRACE * 2;
        for d in [built.layer_digest, built.manifest_digest, linked, loose] {
            let f = std::fs::File::options()
                .write(true)
                .open(store.blob_path(d))
                .unwrap();
            f.set_modified(old).unwrap();
        }
        assert_eq!(collect(&store, 1 << 20).unwrap(), 1);
        assert!(!store.blob_path(loose).exists());
        // Nothing names them any more: gone.
        store.unpin("x").unwrap();
        store.remove_plugin("p").unwrap();
        assert_eq!(collect(&store, 1 << 20).unwrap(), 3);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
