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

/// What one collection did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Collected {
    /// How many blobs went.
    pub removed: usize,
    /// When blobs nothing names were kept for being younger than
    /// [`GRACE`]: how long until the youngest of them is old enough.
    pub again_in: Option<Duration>,
}

/// Remove the blobs nothing names (see the module): how many went, and
/// when to come back for those kept only for their age.
/// `max_component` is the cap a pinned manifest's layer is read under.
pub fn collect(store: &Store, max_component: u64) -> anyhow::Result<Collected> {
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
    let mut again_in: Option<Duration> = None;
    let blobs = store.root().join("blobs/sha256");
    for entry in std::fs::read_dir(&blobs)?.flatten() {
        let hex = entry.file_name().to_string_lossy().into_owned();
        let Ok(m) = entry.metadata() else { continue };
        if keep.contains(&hex) || linked.contains(&(m.dev(), m.ino())) {
            continue;
        }
        // A clock set back reads as age zero: kept one grace more.
        let age = m
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .unwrap_or_default();
        if age < GRACE {
            let left = GRACE - age;
            again_in = Some(again_in.map_or(left, |a| a.max(left)));
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
    Ok(Collected { removed, again_in })
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
        // Young blobs stay, and the collection says when to come back.
        let young = collect(&store, 1 << 20).unwrap();
        assert_eq!(young.removed, 0);
        assert!(
            young.again_in.is_some_and(|d| d > GRACE / 2 && d <= GRACE),
            "{young:?}"
        );
        let old = std::time::SystemTime::now() - GRACE * 2;
        for d in [built.layer_digest, built.manifest_digest, linked, loose] {
            let f = std::fs::File::options()
                .write(true)
                .open(store.blob_path(d))
                .unwrap();
            f.set_modified(old).unwrap();
        }
        let old_enough = collect(&store, 1 << 20).unwrap();
        assert_eq!(
            old_enough,
            Collected {
                removed: 1,
                again_in: None
            }
        );
        assert!(!store.blob_path(loose).exists());
        // Nothing names them any more: gone.
        store.unpin("x").unwrap();
        store.remove_plugin("p").unwrap();
        assert_eq!(collect(&store, 1 << 20).unwrap().removed, 3);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
