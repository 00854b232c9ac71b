//! The library's components build reproducibly: one small policy
//! (`block-wildcard-ingress-host`) built with the documented command in two
//! copies of the source tree, under two different `CARGO_HOME` paths (the
//! second a folder of links to the first's registry), gives the same bytes,
//! and neither copy's path nor either home's is in them. Each copy's
//! target folder is kept between runs (the registry's crates are built
//! once, at the same paths), and the workspace's own crates, the ones whose
//! folder differs, are cleaned and compiled from the copy every run.

use crate::common::{cargo, ensure_wasm_target, root, target_dir};
use crate::registry_support::sha256;
use std::path::{Path, PathBuf};

const PLUGIN: &str = "block-wildcard-ingress-host";

/// `src` copied into `dst`, without build output and version control.
fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap().flatten() {
        let name = entry.file_name();
        if [".git", "target", "node_modules"].contains(&name.to_str().unwrap_or("")) {
            continue;
        }
        let (from, to) = (entry.path(), dst.join(&name));
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&from, &to);
        } else if kind.is_file() {
            std::fs::copy(&from, &to).unwrap();
        }
    }
}

/// The documented build of [`PLUGIN`] in `tree` with `cargo_home`, into
/// `target`: its component's bytes.
fn build(tree: &Path, cargo_home: &Path, target: &Path) -> Vec<u8> {
    let run = |args: &[&str]| {
        let status = cargo()
            .current_dir(tree)
            .env("CARGO_HOME", cargo_home)
            .env("CARGO_TARGET_DIR", target)
            .env(
                "CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS",
                format!("--remap-path-prefix={}=/cargo", cargo_home.display()),
            )
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "cargo {args:?} in {}", tree.display());
    };
    let wasm = ["--release", "--target", "wasm32-wasip2"];
    run(&[&["clean", "-p", PLUGIN, "-p", "wink-sdk"][..], &wasm].concat());
    run(&[&["build", "--offline", "-p", PLUGIN][..], &wasm].concat());
    let file = target.join(format!("wasm32-wasip2/release/{}.wasm", PLUGIN.replace('-', "_")));
    std::fs::read(file).unwrap()
}

fn contains(haystack: &[u8], needle: &Path) -> bool {
    let needle = needle.to_str().unwrap().as_bytes();
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn a_library_component_built_in_two_copies_under_two_homes_is_the_same_bytes() {
    ensure_wasm_target();
    let base = target_dir().join("repro");
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let other_home = base.join("home-two");
    std::fs::create_dir_all(&other_home).unwrap();
    let link = other_home.join("registry");
    if !link.exists() {
        std::os::unix::fs::symlink(home.join("registry"), &link).unwrap();
    }
    let started = std::time::Instant::now();
    let mut built = Vec::new();
    for (copy, cargo_home) in [("one", &home), ("two", &other_home)] {
        let tree = base.join(copy);
        let _ = std::fs::remove_dir_all(&tree);
        copy_tree(&root(), &tree);
        let bytes = build(&tree, cargo_home, &base.join(format!("target-{copy}")));
        for path in [&tree, &home, &other_home] {
            assert!(!contains(&bytes, path), "{} is in the component", path.display());
        }
        built.push(bytes);
    }
    assert_eq!(
        sha256(&built[0]),
        sha256(&built[1]),
        "the same source, other bytes"
    );
    println!(
        "{PLUGIN}: {} bytes, {} in both copies ({:?})",
        built[0].len(),
        sha256(&built[0]),
        started.elapsed()
    );
}
