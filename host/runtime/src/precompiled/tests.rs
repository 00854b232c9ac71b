//! The precompiled directory against a careless or hostile local user:
//! foreign and shared directories, planted links, corrupt and swapped
//! entries, a permissive umask.

use super::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

/// The smallest binary component, and another (text) one.
const EMPTY: &[u8] = b"\0asm\x0d\0\x01\0";
/// Another component (wasmtime is built without its text parser).
static OTHER_BYTES: std::sync::LazyLock<Vec<u8>> =
    std::sync::LazyLock::new(|| wat::parse_str("(component (core module))").unwrap());
static THIRD_BYTES: std::sync::LazyLock<Vec<u8>> =
    std::sync::LazyLock::new(|| wat::parse_str("(component (core module) (core module))").unwrap());

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wink-pc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn digest(bytes: &[u8]) -> String {
    crate::loader::digest(bytes)
}

#[test]
fn second_lookup_hits_and_foreign_files_are_not_trusted() {
    let dir = scratch("hits");
    let engine = Engine::default();
    let cache = Precompiled::open(&dir, &engine).unwrap();
    let d = digest(EMPTY);
    let (_, hit) = cache.component(&engine, EMPTY, &d).unwrap();
    assert!(!hit);
    let (_, hit) = cache.component(&engine, EMPTY, &d).unwrap();
    assert!(hit);
    assert_eq!((cache.hits(), cache.misses()), (1, 1));
    // A world-writable entry or seal is not trusted: recompiled, not loaded.
    for file in [cache.entry(&d), cache.seal(&d)] {
        let before = std::fs::metadata(&file).unwrap().permissions();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(!Precompiled::trusted(&file));
        assert!(!cache.contains(&d));
        let (_, hit) = cache.component(&engine, EMPTY, &d).unwrap();
        assert!(!hit, "a world-writable file is not trusted");
        std::fs::set_permissions(&file, before).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_new_directory_is_created_private() {
    let dir = scratch("new").join("nested");
    Precompiled::open(&dir, &Engine::default()).unwrap();
    let md = std::fs::metadata(&dir).unwrap();
    assert_eq!(md.mode() & 0o777, 0o700);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn a_shared_directory_is_refused_and_left_as_it_was() {
    let dir = scratch("shared");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let err = Precompiled::open(&dir, &Engine::default())
        .err()
        .expect("refused");
    assert!(matches!(err, OpenError::NotPrivate { mode: 0o1777, .. }), "{err}");
    assert!(err.to_string().contains("not private"), "{err}");
    let md = std::fs::metadata(&dir).unwrap();
    assert_eq!(
        md.mode() & 0o7777,
        0o1777,
        "the mode (sticky bit included) is untouched"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_of_another_user_is_refused() {
    // As root, make a directory another user owns; otherwise `/` is one.
    let dir = if effective_uid() == 0 {
        let dir = scratch("foreign");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    } else {
        PathBuf::from("/")
    };
    let err = Precompiled::open(&dir, &Engine::default())
        .err()
        .expect("refused");
    assert!(matches!(err, OpenError::NotPrivate { .. }), "{err}");
    if dir != Path::new("/") {
        assert_eq!(std::fs::metadata(&dir).unwrap().uid(), 65534, "owner untouched");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_file_in_place_of_the_directory_is_refused() {
    let dir = scratch("file");
    std::fs::write(&dir, b"x").unwrap();
    let err = Precompiled::open(&dir, &Engine::default())
        .err()
        .expect("refused");
    assert!(matches!(err, OpenError::NotADirectory { .. }), "{err}");
    let _ = std::fs::remove_file(&dir);
}

#[test]
fn planted_links_at_temporary_names_are_never_followed() {
    let dir = scratch("links");
    let engine = Engine::default();
    let cache = Precompiled::open(&dir, &engine).unwrap();
    let d = digest(EMPTY);
    let victim = scratch("victim");
    std::fs::write(&victim, b"precious").unwrap();
    // Links at every name a writer could plausibly use for its temporary file.
    let entry = cache.entry(&d);
    for name in [
        entry.with_extension(format!("tmp-{}", std::process::id())),
        entry.with_extension("tmp"),
        dir.join(".tmp"),
    ] {
        std::os::unix::fs::symlink(&victim, name).unwrap();
    }
    let (_, hit) = cache.component(&engine, EMPTY, &d).unwrap();
    assert!(!hit);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(Precompiled::trusted(&entry), "the entry itself was written");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&victim);
}

#[test]
fn a_corrupt_entry_is_discarded_and_recompiled_never_run() {
    let dir = scratch("corrupt");
    let engine = Engine::default();
    let cache = Precompiled::open(&dir, &engine).unwrap();
    let d = digest(EMPTY);
    cache.component(&engine, EMPTY, &d).unwrap();
    let entry = cache.entry(&d);
    let mut bytes = std::fs::read(&entry).unwrap();
    let middle = bytes.len() / 2;
    let end = (middle + 4096).min(bytes.len());
    for b in &mut bytes[middle..end] {
        *b = !*b;
    }
    std::fs::write(&entry, &bytes).unwrap();
    let (_, hit) = cache.component(&engine, EMPTY, &d).unwrap();
    assert!(!hit, "a corrupt entry is not a hit");
    assert_eq!(cache.discarded(), 1);
    let (_, hit) = cache.component(&engine, EMPTY, &d).unwrap();
    assert!(hit, "and it was rewritten");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_entry_copied_over_another_components_name_is_not_run() {
    let dir = scratch("swapped");
    let engine = Engine::default();
    let cache = Precompiled::open(&dir, &engine).unwrap();
    let other: &[u8] = &OTHER_BYTES;
    let (a, b) = (digest(EMPTY), digest(other));
    cache.component(&engine, EMPTY, &a).unwrap();
    std::fs::copy(cache.entry(&a), cache.entry(&b)).unwrap();
    std::fs::copy(cache.seal(&a), cache.seal(&b)).unwrap();
    assert_eq!(
        Precompiled::check(&cache.entry(&b), &std::fs::read(cache.seal(&b)).unwrap(), &b),
        Err(Rejected::OtherComponent)
    );
    let (_, hit) = cache.component(&engine, other, &b).unwrap();
    assert!(!hit, "another component's code is never taken for this one");
    assert_eq!(cache.discarded(), 1);
    assert_eq!(
        Precompiled::check(&cache.entry(&b), &std::fs::read(cache.seal(&b)).unwrap(), &b),
        Ok(()),
        "rewritten with this component's code"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_entry_without_its_seal_or_of_another_length_is_not_run() {
    let dir = scratch("unsealed");
    let engine = Engine::default();
    let cache = Precompiled::open(&dir, &engine).unwrap();
    let d = digest(EMPTY);
    cache.component(&engine, EMPTY, &d).unwrap();
    // No seal (a writer stopped between its two renames): not a hit.
    std::fs::remove_file(cache.seal(&d)).unwrap();
    assert!(!cache.contains(&d));
    let (_, hit) = cache.component(&engine, EMPTY, &d).unwrap();
    assert!(!hit);
    // Truncated code under a valid seal: discarded.
    let code = std::fs::read(cache.entry(&d)).unwrap();
    std::fs::write(cache.entry(&d), &code[..code.len() - 1]).unwrap();
    assert_eq!(
        Precompiled::check(&cache.entry(&d), &std::fs::read(cache.seal(&d)).unwrap(), &d),
        Err(Rejected::Corrupt)
    );
    let (_, hit) = cache.component(&engine, EMPTY, &d).unwrap();
    assert!(!hit);
    assert_eq!(cache.discarded(), 1);
    // A seal grown past its size (read only that far): discarded.
    cache.component(&engine, EMPTY, &d).unwrap();
    let mut long = std::fs::read(cache.seal(&d)).unwrap();
    long.resize(1 << 20, 0);
    std::fs::write(cache.seal(&d), &long).unwrap();
    let (_, hit) = cache.component(&engine, EMPTY, &d).unwrap();
    assert!(!hit);
    assert_eq!(cache.discarded(), 2);
    // A seal of the former format: refused by its magic.
    let mut seal = std::fs::read(cache.seal(&d)).unwrap();
    seal[..8].copy_from_slice(b"winkpc01");
    std::fs::write(cache.seal(&d), &seal).unwrap();
    assert_eq!(
        Precompiled::check(&cache.entry(&d), &std::fs::read(cache.seal(&d)).unwrap(), &d),
        Err(Rejected::Magic)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn entries_are_private_under_a_permissive_umask() {
    let dir = scratch("umask");
    let engine = Engine::default();
    let cache = Precompiled::open(&dir, &engine).unwrap();
    let d = digest(EMPTY);
    // SAFETY: umask has no preconditions (process-wide: restored at once).
    let old = unsafe { libc::umask(0o002) };
    let result = cache.component(&engine, EMPTY, &d);
    unsafe { libc::umask(old) };
    result.unwrap();
    for file in [cache.entry(&d), cache.seal(&d)] {
        assert_eq!(std::fs::metadata(file).unwrap().mode() & 0o777, 0o600);
    }
    let (_, hit) = cache.component(&engine, EMPTY, &d).unwrap();
    assert!(hit, "trusted, so used");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_fallback_into_shared_temporary_folders() {
    let p = |s: &str| Some(PathBuf::from(s));
    assert_eq!(default_dir_from(None, None), None);
    assert_eq!(default_dir_from(p("relative"), None), None);
    assert_eq!(
        default_dir_from(None, p("/home/u")),
        p("/home/u/.cache/wink/components")
    );
    assert_eq!(default_dir_from(p("/x"), p("/home/u")), p("/x/wink/components"));
}

/// The bytes an entry of `digest` takes (its code and its seal).
fn entry_size(cache: &Precompiled, digest: &str) -> u64 {
    let len = |p: PathBuf| std::fs::metadata(p).unwrap().len();
    len(cache.entry(digest)) + len(cache.seal(digest))
}

#[test]
fn storing_over_the_limit_evicts_the_entry_used_least_recently() {
    let (other, third): (&[u8], &[u8]) = (&OTHER_BYTES, &THIRD_BYTES);
    let engine = Engine::default();
    let (a, b, c) = (digest(EMPTY), digest(other), digest(third));
    // What the three entries take, measured in a directory of their own.
    let probe_dir = scratch("bounded-probe");
    let probe = Precompiled::open(&probe_dir, &engine).unwrap();
    let mut total = 0;
    for (bytes, d) in [(EMPTY, &a), (other, &b), (third, &c)] {
        probe.component(&engine, bytes, d).unwrap();
        total += entry_size(&probe, d);
    }
    let _ = std::fs::remove_dir_all(&probe_dir);

    let dir = scratch("bounded");
    let cache = Precompiled::open_bounded(&dir, &engine, total - 1).unwrap();
    let pause = || std::thread::sleep(std::time::Duration::from_millis(20));
    cache.component(&engine, EMPTY, &a).unwrap();
    pause();
    cache.component(&engine, other, &b).unwrap();
    pause();
    let (_, hit) = cache.component(&engine, EMPTY, &a).unwrap();
    assert!(hit, "two entries fit");
    pause();
    cache.component(&engine, third, &c).unwrap();
    // The third does not fit: the entry used least recently is the second
    // (the first was used again since).
    assert!(cache.contains(&a) && cache.contains(&c));
    assert!(!cache.contains(&b));
    assert_eq!(cache.evicted(), 1);
    // A directory reopened under a smaller limit is swept at once.
    drop(cache);
    let small = Precompiled::open_bounded(&dir, &engine, 1).unwrap();
    assert_eq!(small.evicted(), 2);
    assert!(!small.contains(&a) && !small.contains(&c));
    // The entry just stored stays, even alone over the limit.
    let (_, hit) = small.component(&engine, other, &b).unwrap();
    assert!(!hit);
    assert!(small.contains(&b));
    let _ = std::fs::remove_dir_all(&dir);
}
