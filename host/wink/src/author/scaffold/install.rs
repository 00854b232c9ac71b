//! The SDKs `wink new` points a project at outside a wink checkout: the
//! Rust crate, the Python package and build script, the JavaScript package
//! and `wit/`, as this binary was built with them (embedded by
//! `host/wink/build.rs`), installed once per user and version into
//!
//! `$XDG_DATA_HOME/wink/sdk/<wink version>-<content hash>/` (when
//! `$XDG_DATA_HOME` is an absolute path, as the XDG base directory spec
//! asks), else `$HOME/.local/share/wink/sdk/<version>-<hash>/`.
//!
//! A data directory, not a cache one: projects name the SDK by its path
//! (`wink-sdk = { path = ... }`, `build.sh`, `package.json`), so a cache
//! cleaner must not take it away. Versioned by the wink version and a hash
//! of the embedded files: a newer wink (or a rebuilt one with another SDK)
//! installs beside the old tree, and projects made with the old one keep
//! building against it. The tree has a checkout's layout (`sdk/`,
//! `sdk/python`, `sdk/js`, `wit/`) so the SDKs' own relative paths to the
//! WIT (`sdk/src/lib.rs`: `../wit`) hold.
//!
//! Installing writes a temporary sibling folder and renames it into place:
//! another `wink new` running at the same time sees no tree or a whole one,
//! and when two install at once the first rename wins and the other drops
//! its copy. A tree that is present is checked against the embedded files
//! (every file there, with the same bytes; files added beside them, such as
//! Python's `__pycache__`, are fine) and reused; a damaged one is moved
//! aside and installed again. Owns the trees under `<data>/wink/sdk/` (and
//! its temporary `.<tree>.tmp-*` / `.<tree>.damaged-*` siblings); it never
//! removes another version's tree.

use anyhow::bail;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/embedded_sdk.rs"));

/// The installed tree's folder name: `<wink version>-<content hash>`.
pub fn tree_name() -> String {
    format!("{}-{SDK_HASH}", env!("CARGO_PKG_VERSION"))
}

/// The per-user data directory: `$XDG_DATA_HOME` when absolute, else
/// `$HOME/.local/share`.
pub fn data_home(xdg: Option<OsString>, home: Option<OsString>) -> anyhow::Result<PathBuf> {
    if let Some(x) = xdg.map(PathBuf::from).filter(|x| x.is_absolute()) {
        return Ok(x);
    }
    match home.filter(|h| !h.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".local/share")),
        None => bail!(
            "neither $XDG_DATA_HOME (absolute) nor $HOME is set: wink new installs its SDK under one of them (or give --sdk PATH)"
        ),
    }
}

/// The installed SDK tree for this user (installed now when missing or
/// damaged): its folder, holding `sdk/`, `sdk/python`, `sdk/js`, `wit/`.
pub fn installed() -> anyhow::Result<PathBuf> {
    let data = data_home(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))?;
    install(&data.join("wink/sdk"))
}

/// Why a tree is not usable as it is.
enum Problem {
    Missing,
    Damaged(String),
}

/// Check the tree at `dest` against the embedded files.
fn check(dest: &Path) -> Result<(), Problem> {
    match std::fs::symlink_metadata(dest) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Problem::Missing),
        Err(e) => return Err(Problem::Damaged(e.to_string())),
        Ok(m) if !m.is_dir() => return Err(Problem::Damaged("not a directory".into())),
        Ok(_) => {}
    }
    for (rel, _, bytes) in SDK_FILES {
        match std::fs::read(dest.join(rel)) {
            Ok(b) if b == *bytes => {}
            Ok(_) => return Err(Problem::Damaged(format!("{rel} was changed"))),
            Err(e) => return Err(Problem::Damaged(format!("{rel}: {e}"))),
        }
    }
    Ok(())
}

/// A name for a temporary sibling of the tree, unique to this process and
/// moment (the time too: a data folder shared by machines shares no pids).
fn sibling(base: &Path, what: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    base.join(format!(
        ".{}.{what}-{}-{nanos:x}-{n}",
        tree_name(),
        std::process::id()
    ))
}

/// Remove temporary siblings of any tree left by a `wink new` that was
/// killed while installing (older than an hour: not one still at work).
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let temporary = name.starts_with('.') && (name.contains(".tmp-") || name.contains(".damaged-"));
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(3600));
        if temporary && old {
            remove(&e.path());
        }
    }
}

/// Write every embedded file under `dir` (which must not exist).
fn write_tree(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(dir)?;
    for (rel, exec, bytes) in SDK_FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, bytes)?;
        if *exec {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

/// Remove `path` (a folder or a file), ignoring what cannot be removed.
fn remove(path: &Path) {
    if std::fs::remove_dir_all(path).is_err() {
        let _ = std::fs::remove_file(path);
    }
}

/// The tree in `base` (`base/<tree_name()>`), installed when missing and
/// installed again when damaged.
pub fn install(base: &Path) -> anyhow::Result<PathBuf> {
    let dest = base.join(tree_name());
    let unwritable = |e: std::io::Error| {
        anyhow::anyhow!(
            "cannot install wink's SDK into {}: {e} (wink new installs it once per user there: make that folder writable, set $XDG_DATA_HOME to a writable folder, or give --sdk PATH)",
            base.display()
        )
    };
    // A few rounds: each either finds a whole tree, or installs one, or
    // lost the race to another wink that did (checked on the next round).
    for _ in 0..4 {
        let damaged = match check(&dest) {
            Ok(()) => return Ok(dest),
            Err(Problem::Missing) => false,
            Err(Problem::Damaged(why)) => {
                eprintln!(
                    "wink: the installed SDK at {} is damaged ({why}): installing it again",
                    dest.display()
                );
                true
            }
        };
        std::fs::create_dir_all(base).map_err(unwritable)?;
        sweep(base);
        let tmp = sibling(base, "tmp");
        if let Err(e) = write_tree(&tmp) {
            remove(&tmp);
            return Err(unwritable(e));
        }
        if damaged {
            // Out of the way first (a rename, so a reader sees the damaged
            // tree or none); gone already when another wink repaired it.
            let aside = sibling(base, "damaged");
            if std::fs::rename(&dest, &aside).is_ok() {
                remove(&aside);
            }
        }
        match std::fs::rename(&tmp, &dest) {
            Ok(()) => return Ok(dest),
            Err(e) => {
                remove(&tmp);
                if !dest.exists() {
                    return Err(unwritable(e));
                }
            }
        }
    }
    bail!(
        "could not install wink's SDK into {}: it kept changing while being installed",
        dest.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wink-sdk-install-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_embedded_tree_has_a_checkouts_layout_and_only_sources() {
        let names: Vec<&str> = SDK_FILES.iter().map(|(p, _, _)| *p).collect();
        for want in [
            "sdk/Cargo.toml",
            "sdk/src/lib.rs",
            "sdk/python/wink_build.py",
            "sdk/python/wink_sdk/__init__.py",
            "sdk/js/package.json",
            "sdk/js/bin/wink-build.mjs",
            "sdk/js/src/index.ts",
            "wit/plugin.wit",
        ] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        for n in &names {
            assert!(
                !n.contains("__pycache__") && !n.contains("node_modules") && !n.contains("/test"),
                "{n}"
            );
        }
        let lib = SDK_FILES.iter().find(|f| f.0 == "sdk/src/lib.rs").unwrap();
        assert!(String::from_utf8_lossy(lib.2).contains("\"../wit\""));
        let cargo = SDK_FILES.iter().find(|f| f.0 == "sdk/Cargo.toml").unwrap();
        let cargo = String::from_utf8_lossy(cargo.2);
        assert!(
            !cargo.contains("workspace = true") && !cargo.contains(".workspace"),
            "{cargo}"
        );
        assert!(cargo.contains("name = \"wink-sdk\"") && cargo.contains("wit-bindgen = {"));
        let build = SDK_FILES.iter().find(|f| f.0 == "sdk/js/bin/wink-build.mjs");
        assert!(build.unwrap().1, "wink-build stays executable");
        assert_eq!(SDK_HASH.len(), 12);
    }

    #[test]
    fn data_home_follows_xdg_then_home() {
        let d = |x: Option<&str>, h: Option<&str>| data_home(x.map(Into::into), h.map(Into::into));
        assert_eq!(d(Some("/x"), Some("/h")).unwrap(), Path::new("/x"));
        assert_eq!(d(Some("rel"), Some("/h")).unwrap(), Path::new("/h/.local/share"));
        assert_eq!(d(None, Some("/h")).unwrap(), Path::new("/h/.local/share"));
        assert!(d(None, None).unwrap_err().to_string().contains("--sdk"));
    }

    #[test]
    fn installs_once_and_reuses_the_tree() {
        let base = temp("reuse");
        let tree = install(&base).unwrap();
        assert_eq!(tree, base.join(tree_name()));
        for (rel, _, bytes) in SDK_FILES {
            assert_eq!(std::fs::read(tree.join(rel)).unwrap(), *bytes, "{rel}");
        }
        let lib = tree.join("sdk/src/lib.rs");
        let before = std::fs::metadata(&lib).unwrap().modified().unwrap();
        // Files a build adds beside the SDK's are not damage.
        std::fs::create_dir_all(tree.join("sdk/python/wink_sdk/__pycache__")).unwrap();
        std::fs::write(tree.join("sdk/python/wink_sdk/__pycache__/x.pyc"), "").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(install(&base).unwrap(), tree);
        assert_eq!(std::fs::metadata(&lib).unwrap().modified().unwrap(), before);
        assert!(tree.join("sdk/python/wink_sdk/__pycache__/x.pyc").exists());
        let entries: Vec<_> = std::fs::read_dir(&base).unwrap().collect();
        assert_eq!(entries.len(), 1, "no temporary folders left");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_damaged_tree_is_installed_again() {
        let base = temp("repair");
        let tree = install(&base).unwrap();
        std::fs::write(tree.join("wit/plugin.wit"), "garbage").unwrap();
        std::fs::remove_file(tree.join("sdk/src/lib.rs")).unwrap();
        assert_eq!(install(&base).unwrap(), tree);
        assert!(check(&tree).is_ok());
        // A file where the tree should be.
        std::fs::remove_dir_all(&tree).unwrap();
        std::fs::write(&tree, "not a tree").unwrap();
        assert_eq!(install(&base).unwrap(), tree);
        assert!(check(&tree).is_ok());
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 1);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn leftovers_of_a_killed_install_are_swept() {
        let base = temp("sweep");
        let old = base.join(format!(".{}.tmp-1-0-0", tree_name()));
        let fresh = base.join(format!(".{}.tmp-2-0-0", tree_name()));
        for d in [&old, &fresh] {
            std::fs::create_dir_all(d.join("sdk")).unwrap();
        }
        let hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::open(&old)
            .unwrap()
            .set_modified(hours_ago)
            .unwrap();
        install(&base).unwrap();
        assert!(!old.exists(), "an old leftover is removed");
        assert!(fresh.exists(), "a recent one may be another wink's at work");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn an_unwritable_data_dir_is_a_clear_error() {
        let base = temp("unwritable");
        std::fs::write(base.join("file"), "").unwrap();
        let err = install(&base.join("file/wink/sdk")).unwrap_err().to_string();
        assert!(err.contains("cannot install wink's SDK into"), "{err}");
        assert!(err.contains("XDG_DATA_HOME") && err.contains("--sdk"), "{err}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn concurrent_installs_see_one_whole_tree() {
        let base = temp("race");
        let trees: Vec<PathBuf> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4).map(|_| s.spawn(|| install(&base).unwrap())).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(trees.iter().all(|t| *t == base.join(tree_name())));
        assert!(check(&trees[0]).is_ok());
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 1);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
