//! The installer against the real apt-get: a small package missing on this
//! machine (GNU `hello`, 280 KB), asked for from two threads at once.

use super::*;

/// Remove `package` (its binary then leaves PATH).
fn remove(package: &str) {
    let out = apt(&["remove", "-y", "-q", package]);
    assert!(out.ok, "apt-get remove {package}:\n{}", tail(&out.output));
}

#[test]
fn two_threads_asking_for_a_missing_package_both_get_it_from_one_install() {
    let (package, binary) = ("hello", "hello");
    {
        // Whatever another run left: the package starts missing.
        let _apt = APT.lock().unwrap_or_else(|e| e.into_inner());
        let _across = ProcessLock::take();
        if find(binary).is_some() {
            remove(package);
        }
    }
    assert!(find(binary).is_none(), "{binary} still on PATH");
    let barrier = std::sync::Barrier::new(2);
    let found: Vec<PathBuf> = std::thread::scope(|s| {
        let ask = || {
            barrier.wait();
            ensure(package, binary)
        };
        let threads = [s.spawn(ask), s.spawn(ask)];
        threads.map(|t| t.join().expect("ensure succeeds")).to_vec()
    });
    let said = Command::new(&found[0]).output().expect("run hello");
    let _apt = APT.lock().unwrap_or_else(|e| e.into_inner());
    let _across = ProcessLock::take();
    remove(package);
    assert_eq!(found[0], found[1], "both threads found the same binary");
    assert!(
        String::from_utf8_lossy(&said.stdout).contains("Hello, world!"),
        "the installed binary runs: {said:?}"
    );
    assert_eq!(installs(package), 1, "one apt-get install for both threads");
    assert!(find(binary).is_none(), "removed again, so the test can run again");
}

#[test]
fn a_binary_on_path_is_found_without_apt_get() {
    // `sh` is on every machine: no apt-get runs.
    let sh = ensure("dash", "sh");
    assert!(sh.is_file(), "{}", sh.display());
    assert_eq!(installs("dash"), 0);
}

#[test]
fn a_package_that_does_not_exist_panics_naming_it_with_apt_gets_words() {
    let missing = "wink-no-such-package-for-tests";
    let err =
        std::panic::catch_unwind(|| ensure(missing, missing)).expect_err("an install that cannot succeed");
    let said = err
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| err.downcast_ref::<&str>().unwrap_or(&"").to_string());
    assert!(
        said.contains(&format!("apt-get install {missing} failed")),
        "{said}"
    );
    assert!(
        said.contains("Unable to locate package"),
        "apt-get's own words: {said}"
    );
}
