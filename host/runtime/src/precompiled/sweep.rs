//! Keeping the precompiled directory bounded, as wasmtime's own cache is by
//! its soft size limit: what a sweep removes, and in which order.
//!
//! A sweep lists the directory once and removes:
//! - temporary files older than [`ABANDONED`]: a writer that died (killed
//!   mid-write) left them; a younger one may be another process's write in
//!   progress;
//! - halves of entries: a seal whose code is gone, or code with no seal
//!   older than [`ABANDONED`] (a writer puts the code in place and then its
//!   seal, so a younger one may be waiting for it);
//! - then, while the entries' total size is over the limit, the entry used
//!   least recently: its seal's modification time, which every hit
//!   refreshes ([`touch`]). The entry just stored or loaded is never
//!   removed, even alone over the limit. Entries of another engine (another
//!   wink version or configuration) are never used here, so they go first.
//!
//! It removes an entry's seal before its code, so a reader sees a miss,
//! never code without its seal. It touches only regular files of this user
//! whose names it recognises; the directory itself is checked by the caller.
//!
//! Owns the listing and removal of files in that directory, nothing else.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How old a temporary file or an unsealed entry must be to be another
/// writer's leftover rather than its write in progress.
pub const ABANDONED: Duration = Duration::from_secs(10 * 60);

/// The prefix of the temporary files entries are written through.
pub const TEMPORARY: &str = ".tmp-";

/// What one sweep removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Whole entries removed to bring the directory under its limit.
    pub evicted: u64,
    /// Leftovers removed: abandoned temporary files and halves of entries.
    pub leftovers: u64,
    /// The entries' total size after the sweep, in bytes.
    pub bytes: u64,
}

/// One entry's two files, as found.
#[derive(Default)]
struct Found {
    code: Option<(u64, SystemTime)>,
    seal: Option<(u64, SystemTime)>,
}

/// Whether `md` is a regular file of this user.
fn ours(md: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    md.file_type().is_file() && md.uid() == super::effective_uid()
}

/// Remove `path`; a file already gone (another sweep) counts as removed.
fn remove(path: &Path) -> bool {
    match std::fs::remove_file(path) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Sweep `dir` down to `limit` bytes of entries, keeping the entry whose
/// file stem (`{digest}-{engine key}`) is `keep`. `now` is the time ages
/// are measured from.
pub fn sweep(dir: &Path, limit: u64, keep: Option<&str>, now: SystemTime) -> std::io::Result<Swept> {
    let age = |t: SystemTime| now.duration_since(t).unwrap_or_default();
    let mut swept = Swept::default();
    let mut entries: BTreeMap<String, Found> = BTreeMap::new();
    for dirent in std::fs::read_dir(dir)? {
        let dirent = dirent?;
        let Ok(md) = std::fs::symlink_metadata(dirent.path()) else {
            continue; // gone since the listing
        };
        let name = dirent.file_name();
        let Some(name) = name.to_str().filter(|_| ours(&md)) else {
            continue;
        };
        let stamp = (md.len(), md.modified()?);
        if name.starts_with(TEMPORARY) {
            if age(stamp.1) > ABANDONED && remove(&dirent.path()) {
                swept.leftovers += 1;
            }
        } else if let Some(stem) = name.strip_suffix(".cwasm") {
            entries.entry(stem.to_owned()).or_default().code = Some(stamp);
        } else if let Some(stem) = name.strip_suffix(".seal") {
            entries.entry(stem.to_owned()).or_default().seal = Some(stamp);
        }
    }

    // (last used, stem, bytes) of every whole entry.
    let mut whole = Vec::with_capacity(entries.len());
    for (stem, found) in entries {
        match (found.code, found.seal) {
            (Some((code, _)), Some((seal, used))) => whole.push((used, stem, code + seal)),
            (None, Some(_)) => {
                if remove(&dir.join(format!("{stem}.seal"))) {
                    swept.leftovers += 1;
                }
            }
            (Some((code, written)), None) => {
                if age(written) > ABANDONED {
                    if remove(&dir.join(format!("{stem}.cwasm"))) {
                        swept.leftovers += 1;
                    }
                } else {
                    swept.bytes += code; // a write in progress: it counts
                }
            }
            (None, None) => {}
        }
    }
    swept.bytes += whole.iter().map(|(_, _, bytes)| bytes).sum::<u64>();

    whole.sort();
    for (_, stem, bytes) in whole {
        if swept.bytes <= limit {
            break;
        }
        if keep == Some(stem.as_str()) {
            continue;
        }
        if remove(&dir.join(format!("{stem}.seal"))) {
            remove(&dir.join(format!("{stem}.cwasm")));
            swept.evicted += 1;
            swept.bytes -= bytes;
        }
    }
    Ok(swept)
}

/// Mark the entry sealed by `seal` as used now.
pub fn touch(seal: &Path) {
    if let Ok(file) = std::fs::File::open(seal) {
        let _ = file.set_modified(SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("wink-sweep-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A file of `len` bytes last modified `ago` before now.
    fn file(dir: &Path, name: &str, len: usize, ago: Duration) {
        let path = dir.join(name);
        std::fs::write(&path, vec![7u8; len]).unwrap();
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(SystemTime::now() - ago).unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|d| d.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    const OLD: Duration = Duration::from_secs(11 * 60);
    const NEW: Duration = Duration::from_secs(1);

    #[test]
    fn leftovers_of_dead_writers_go_and_writes_in_progress_stay() {
        let dir = scratch("leftovers");
        file(&dir, ".tmp-dead", 10, OLD);
        file(&dir, ".tmp-writing", 10, NEW);
        file(&dir, "lost-k.seal", 52, NEW);
        file(&dir, "unsealed-k.cwasm", 10, OLD);
        file(&dir, "sealing-k.cwasm", 10, NEW);
        file(&dir, "whole-k.cwasm", 100, OLD);
        file(&dir, "whole-k.seal", 52, OLD);
        file(&dir, "README", 5, OLD);
        let swept = sweep(&dir, u64::MAX, None, SystemTime::now()).unwrap();
        assert_eq!(
            names(&dir),
            [
                ".tmp-writing",
                "README",
                "sealing-k.cwasm",
                "whole-k.cwasm",
                "whole-k.seal"
            ]
        );
        assert_eq!(
            swept,
            Swept {
                evicted: 0,
                leftovers: 3,
                bytes: 10 + 152
            }
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn over_the_limit_the_least_recently_used_entries_go_first() {
        let dir = scratch("limit");
        for (stem, ago) in [("a-k", 40), ("b-k", 30), ("c-k", 20), ("d-k", 10)] {
            file(&dir, &format!("{stem}.cwasm"), 100, NEW);
            file(&dir, &format!("{stem}.seal"), 50, Duration::from_secs(ago));
        }
        // Four entries of 150 bytes under 400: the two used longest ago go.
        let swept = sweep(&dir, 400, None, SystemTime::now()).unwrap();
        assert_eq!(swept.evicted, 2);
        assert_eq!(swept.bytes, 300);
        assert_eq!(names(&dir), ["c-k.cwasm", "c-k.seal", "d-k.cwasm", "d-k.seal"]);
        // A use makes an entry the newest.
        touch(&dir.join("c-k.seal"));
        sweep(&dir, 150, None, SystemTime::now()).unwrap();
        assert_eq!(names(&dir), ["c-k.cwasm", "c-k.seal"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_entry_kept_stays_even_alone_over_the_limit() {
        let dir = scratch("keep");
        file(&dir, "old-k.cwasm", 100, NEW);
        file(&dir, "old-k.seal", 50, Duration::from_secs(60));
        file(&dir, "big-k.cwasm", 1000, NEW);
        file(&dir, "big-k.seal", 50, Duration::from_secs(120));
        let swept = sweep(&dir, 10, Some("big-k"), SystemTime::now()).unwrap();
        assert_eq!((swept.evicted, swept.bytes), (1, 1050));
        assert_eq!(names(&dir), ["big-k.cwasm", "big-k.seal"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
