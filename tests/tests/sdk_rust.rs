//! End-to-end: the Rust SDK used from outside this workspace, as a plugin
//! author does.
//!
//! - The SDK README's crate (its `Cargo.toml` and `src/lib.rs` blocks, the
//!   `wink-sdk` path changed to this checkout's `sdk/`) and its
//!   `wink-test.yaml` block, in a folder outside the checkout: the README's
//!   `sh` blocks run as written (`rustup target add`, `cargo build --release
//!   --target wasm32-wasip2`, `wink test wink-test.yaml`), and the case passes.
//! - Every Rust example of `plugins/` copied out beside a `target` folder
//!   (the checkout's layout), its `Cargo.toml` changed only in the
//!   `wink-sdk` path: `cargo build --release --target wasm32-wasip2` builds
//!   it (no `workspace = true` left to inherit, no dependency besides
//!   `wink-sdk`) and its `wink-test.yaml`, unchanged, passes.
//! - The SDK's own examples (`sdk/examples`, the README's code) build in the
//!   workspace with the command the README gives and pass their cases.
//! - CHANGELOG.md's Rust migration snippets: each "after" builds against
//!   this checkout's SDK, each "before" fails with the error quoted under it.
//!
//! The crates outside resolve their dependencies afresh, as an author's
//! would, and build into `target/sdk-rust` (their `target` folders link
//! there), kept between runs so that the SDK's dependencies are compiled
//! once: not the workspace's target folder, where a copy's `cdylib`
//! (`deps/require_labels.wasm`, a name without a hash) would overwrite the
//! workspace example's and `wink dev` would load `my_plugin.wasm`. Builds
//! run one at a time. `wink` is the workspace's binary, on `PATH`.

use crate::common::{ensure_wasm_target, root, target_dir, wink_bin};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

/// One build at a time: the machine's cores are shared.
static BUILD: Mutex<()> = Mutex::new(());

/// A folder outside the checkout, at a path stable per checkout (cargo
/// rebuilds a crate it has seen at that path in place), removed when dropped.
struct Outside {
    dir: PathBuf,
}

impl Outside {
    fn new(test: &str) -> Outside {
        use std::hash::{Hash, Hasher};
        let mut checkout = std::collections::hash_map::DefaultHasher::new();
        root().hash(&mut checkout);
        let dir = std::env::temp_dir().join(format!("wink-sdk-rust-{test}-{:x}", checkout.finish()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = dir.canonicalize().unwrap();
        assert!(
            !dir.starts_with(root()),
            "{} is outside the checkout",
            dir.display()
        );
        Outside { dir }
    }

    /// `<dir>/target`, a link to the suite's target folder.
    fn link_target(dir: &Path) {
        let shared = target_dir().join("sdk-rust");
        std::fs::create_dir_all(&shared).unwrap();
        std::os::unix::fs::symlink(&shared, dir.join("target")).unwrap();
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The toolchain `rust-toolchain.toml` pins (a folder outside the checkout
/// would get the user's default one).
fn toolchain() -> String {
    let pin = std::fs::read_to_string(root().join("rust-toolchain.toml")).unwrap();
    let line = pin
        .lines()
        .find(|l| l.trim_start().starts_with("channel"))
        .unwrap();
    line.split('"').nth(1).unwrap().to_string()
}

/// A folder holding `wink` (the workspace's binary), for `PATH`.
fn wink_on_path() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = target_dir().join("sdk-rust-bin");
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("wink");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(wink_bin(), &link).unwrap();
        dir
    })
}

/// `sh -c script` in `dir` as an author outside the checkout runs it: the
/// pinned toolchain, `wink` on `PATH`, none of the variables cargo sets for
/// this test process.
fn author_shell(dir: &Path, script: &str) -> Output {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![wink_on_path().to_path_buf()];
    paths.extend(std::env::split_paths(&path));
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("set -ex\n{script}"))
        .current_dir(dir)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("RUSTUP_TOOLCHAIN", toolchain())
        .env("RUST_LOG", "error");
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_") && name != "CARGO_HOME" || name == "CARGO" {
            c.env_remove(&*name);
        }
    }
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    c.output().expect("run sh")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The fenced blocks of `lang` in `markdown`.
fn blocks(markdown: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = markdown;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```").expect("a closed block");
        out.push(body[..end].to_string());
        rest = &body[end + 3..];
    }
    out
}

/// A manifest with its `wink-sdk` path (`shown`) pointing at this checkout's SDK.
fn with_sdk_path(manifest: &str, shown: &str) -> String {
    let from = format!("wink-sdk = {{ path = \"{shown}\"");
    assert_eq!(manifest.matches(&from).count(), 1, "{from} in:\n{manifest}");
    let sdk = root().join("sdk");
    manifest.replace(
        &from,
        &format!("wink-sdk = {{ path = {:?}", sdk.display().to_string()),
    )
}

#[test]
fn the_readme_plugin_builds_outside_the_workspace_and_passes_its_case() {
    ensure_wasm_target();
    let readme = std::fs::read_to_string(root().join("sdk/README.md")).unwrap();
    let (toml, rust, yaml, sh) = (
        blocks(&readme, "toml"),
        blocks(&readme, "rust"),
        blocks(&readme, "yaml"),
        blocks(&readme, "sh"),
    );
    assert_eq!(
        (toml.len(), yaml.len(), sh.len()),
        (1, 1, 2),
        "one crate, one case, build and test"
    );
    let outside = Outside::new("readme");
    let dir = outside.dir.join("my-plugin");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), with_sdk_path(&toml[0], "../wink/sdk")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), &rust[0]).unwrap();
    std::fs::write(dir.join("wink-test.yaml"), &yaml[0]).unwrap();
    Outside::link_target(&dir);
    let script = sh.join("");
    assert!(
        script.contains("cargo build --release --target wasm32-wasip2"),
        "{script}"
    );
    assert!(script.contains("wink test wink-test.yaml"), "{script}");
    let out = author_shell(&dir, &script);
    let log = text(&out);
    assert!(out.status.success(), "the README's commands failed:\n{log}");
    assert!(log.contains("ok      wink-test.yaml"), "the case passed:\n{log}");
}

#[test]
fn every_rust_example_builds_when_copied_out_and_passes_its_case() {
    ensure_wasm_target();
    let outside = Outside::new("examples");
    let plugins = outside.dir.join("plugins");
    Outside::link_target(&outside.dir);
    let mut examples: Vec<PathBuf> = std::fs::read_dir(root().join("plugins"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    examples.sort();
    assert!(examples.len() >= 8, "{examples:?}");
    for example in &examples {
        let name = example.file_name().unwrap().to_str().unwrap();
        let dir = plugins.join(name);
        copy_dir(example, &dir);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            !manifest.contains("workspace"),
            "{name}: nothing inherited:\n{manifest}"
        );
        let deps = manifest.split("[dependencies]\n").nth(1).expect("[dependencies]");
        assert_eq!(
            deps.lines().filter(|l| !l.trim().is_empty()).count(),
            1,
            "{name}: wink-sdk is the one dependency:\n{manifest}"
        );
        std::fs::write(dir.join("Cargo.toml"), with_sdk_path(&manifest, "../../sdk")).unwrap();
        Outside::link_target(&dir);
        let out = author_shell(
            &dir,
            "cargo build --release --target wasm32-wasip2\nwink test wink-test.yaml",
        );
        let log = text(&out);
        assert!(out.status.success(), "{name} copied out:\n{log}");
        assert!(
            log.contains("ok      wink-test.yaml"),
            "{name}'s case passed:\n{log}"
        );
    }
}

#[test]
fn the_sdk_examples_build_as_the_readme_says_and_pass_their_cases() {
    ensure_wasm_target();
    let readme = std::fs::read_to_string(root().join("sdk/README.md")).unwrap();
    let build = "cargo build --release --target wasm32-wasip2 -p wink-sdk --examples --features examples";
    assert!(readme.contains(build), "the README gives `{build}`");
    let out = {
        let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
        let mut c = Command::new("sh");
        c.arg("-c").arg(build).current_dir(root());
        // As common's nested cargo: none of the variables cargo sets for
        // this test process (build scripts rerun when one changes).
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            let per_crate = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_BIN_"];
            if per_crate.iter().any(|p| name.starts_with(p))
                || name == "CARGO_PRIMARY_PACKAGE"
                || name == "CARGO_TARGET_TMPDIR"
            {
                c.env_remove(&*name);
            }
        }
        c.output().unwrap()
    };
    assert!(out.status.success(), "{build}:\n{}", text(&out));
    for case in [
        "sdk/examples/pod_logger.wink-test.yaml",
        "sdk/examples/team_labels.wink-test.yaml",
    ] {
        let out = Command::new(wink_bin())
            .arg("test")
            .arg(case)
            .current_dir(root())
            .env("RUST_LOG", "error")
            .output()
            .unwrap();
        assert!(out.status.success(), "wink test {case}:\n{}", text(&out));
    }
}

/// Copy the files of `from` (not its `target`) into `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if entry.file_name() == "target" {
            continue;
        }
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).unwrap();
        }
    }
}

/// A crate outside the checkout named `name`, depending on this checkout's
/// SDK, whose `src/lib.rs` declares one module per `(file, code)`.
fn snippet_crate(outside: &Outside, name: &str, modules: &[(String, String)]) -> PathBuf {
    let dir = outside.dir.join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let sdk = root().join("sdk");
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         [lib]\ncrate-type = [\"rlib\"]\n\n[dependencies]\nwink-sdk = {{ path = {:?} }}\n",
        sdk.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    let mut lib = String::from("#![allow(dead_code, unused_imports)]\n");
    for (file, code) in modules {
        lib.push_str(&format!("mod {file};\n"));
        std::fs::write(dir.join("src").join(format!("{file}.rs")), code).unwrap();
    }
    std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
    Outside::link_target(&dir);
    dir
}

/// CHANGELOG.md's migration notes: every `rust` block (an "after") builds
/// against this checkout's SDK, and every `rust,ignore` block (a "before")
/// fails with the error the `text` block right after it quotes.
#[test]
fn the_changelogs_rust_migration_snippets_build_after_and_fail_before_as_quoted() {
    ensure_wasm_target();
    let changelog = std::fs::read_to_string(root().join("CHANGELOG.md")).unwrap();
    let fenced = fenced_blocks(&changelog);
    let mut after = Vec::new();
    let mut before = Vec::new();
    for (i, (info, body)) in fenced.iter().enumerate() {
        match info.as_str() {
            "rust" => after.push((format!("after_{}", after.len() + 1), body.clone())),
            "rust,ignore" => {
                let quoted = match fenced.get(i + 1) {
                    Some((next, text)) if next == "text" && text.starts_with("error[") => {
                        text.lines().next().unwrap().to_string()
                    }
                    _ => panic!("a `rust,ignore` block is followed by the error it gets:\n{body}"),
                };
                before.push((format!("before_{}", before.len() + 1), body.clone(), quoted));
            }
            _ => {}
        }
    }
    assert!(after.len() >= 6, "the migration notes' afters: {}", after.len());
    assert!(
        before.len() >= 5,
        "the migration notes' befores: {}",
        before.len()
    );
    let outside = Outside::new("changelog");
    let build = "cargo build --release --target wasm32-wasip2 --message-format short";

    let dir = snippet_crate(&outside, "changelog-after", &after);
    let out = author_shell(&dir, build);
    assert!(
        out.status.success(),
        "CHANGELOG.md's `rust` blocks do not build:\n{}",
        text(&out)
    );

    let modules: Vec<(String, String)> = before.iter().map(|(f, c, _)| (f.clone(), c.clone())).collect();
    let dir = snippet_crate(&outside, "changelog-before", &modules);
    let out = author_shell(&dir, build);
    let said = text(&out);
    assert!(!out.status.success(), "the befores fail to build:\n{said}");
    for (file, code, quoted) in &before {
        let at = format!("src/{file}.rs:");
        let errors: Vec<&str> = said.lines().filter(|l| l.starts_with(&at)).collect();
        assert!(
            errors.iter().any(|l| l.contains(&format!(": {quoted}"))),
            "CHANGELOG.md quotes `{quoted}` for\n{code}\nbut the compiler says:\n{}",
            errors.join("\n")
        );
    }
}

/// The fenced blocks of `markdown`: (info string, body).
fn fenced_blocks(markdown: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in markdown.lines() {
        match &mut open {
            None if line.starts_with("```") => open = Some((line[3..].trim().to_string(), Vec::new())),
            None => {}
            Some((info, body)) if line.trim() == "```" => {
                out.push((std::mem::take(info), format!("{}\n", body.join("\n"))));
                open = None;
            }
            Some((_, body)) => body.push(line),
        }
    }
    assert!(open.is_none(), "a block is not closed");
    out
}
