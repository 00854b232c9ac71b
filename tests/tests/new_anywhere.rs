//! End-to-end: `wink new` outside any wink checkout, as for a user who has
//! only the `wink` binary. In an empty temporary folder (with `HOME` and
//! `XDG_DATA_HOME` in temporary folders too), `wink new p` in Rust, Python
//! and JavaScript installs the SDK the binary carries once under
//! `$XDG_DATA_HOME/wink/sdk/<version>-<hash>/`, and each project builds
//! the way its files say (cargo; `sh build.sh`; its own `npm install` and
//! `npm run build`), passes its `wink test` case and is loaded and run by
//! `wink dev` on the simulated cluster. A second `wink new` reuses the
//! installed tree untouched, a damaged tree is installed again, and bad
//! names and an unwritable data folder are refused with clear errors.
//!
//! The Rust build shares the workspace's target folder (`CARGO_TARGET_DIR`,
//! the workspace's toolchain) so wit-bindgen and serde are not compiled
//! again, and its component is moved out of it at once, where `wink dev`
//! and the other suites would load it as one of the examples.

use crate::common::{Wink, root, target_dir, wink_bin};
use crate::lang_support;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

const WAIT: Duration = Duration::from_secs(120);

/// Temporary `home/`, `data/` (`XDG_DATA_HOME`) and `work/` folders outside
/// the checkout, removed when dropped.
struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    fn new(test: &str) -> Sandbox {
        // The same folder on every run from this checkout: the Rust build's
        // paths (the project's, the installed SDK's) stay the same, so the
        // shared target folder reuses its build of them instead of gaining
        // another copy each run.
        use std::hash::{Hash, Hasher};
        let mut checkout = std::collections::hash_map::DefaultHasher::new();
        root().hash(&mut checkout);
        let dir = std::env::temp_dir().join(format!(
            "wink-new-anywhere-{test}-{:08x}",
            checkout.finish() as u32
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["home", "data", "work"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let dir = dir.canonicalize().unwrap();
        assert!(
            !dir.starts_with(root()),
            "{} is outside the checkout",
            dir.display()
        );
        Sandbox { dir }
    }

    fn work(&self) -> PathBuf {
        self.dir.join("work")
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// `program` in `dir` as the sandbox's user: its `HOME` and
    /// `XDG_DATA_HOME`, and the real user's toolchains and package caches
    /// (rustup, cargo, npm), which a `HOME` of its own would hide.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        let or_home = |var: &str, sub: &str| std::env::var_os(var).unwrap_or_else(|| home.join(sub).into());
        let mut c = Command::new(program);
        c.current_dir(dir)
            .env("HOME", self.dir.join("home"))
            .env("XDG_DATA_HOME", self.data())
            .env("CARGO_HOME", or_home("CARGO_HOME", ".cargo"))
            .env("RUSTUP_HOME", or_home("RUSTUP_HOME", ".rustup"))
            .env("npm_config_cache", or_home("npm_config_cache", ".npm"))
            .env("RUST_LOG", "error")
            .env_remove("WINK_JS_TOOLS");
        c
    }

    fn wink(&self, dir: &Path, args: &[&str]) -> Output {
        self.command(wink_bin(), dir)
            .args(args)
            .output()
            .expect("run wink")
    }

    /// The installed SDK tree (the only folder under `data/wink/sdk`).
    fn tree(&self) -> PathBuf {
        let mut trees: Vec<PathBuf> = std::fs::read_dir(self.data().join("wink/sdk"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(trees.len(), 1, "one tree, no temporary folders: {trees:?}");
        trees.pop().unwrap()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run(what: &str, cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what} failed:\n{}", text(&out));
}

/// The toolchain `rust-toolchain.toml` pins, for a build sharing the
/// workspace's target folder (a project outside the checkout would get the
/// user's default one).
fn toolchain() -> String {
    let pin = std::fs::read_to_string(root().join("rust-toolchain.toml")).unwrap();
    let line = pin
        .lines()
        .find(|l| l.trim_start().starts_with("channel"))
        .unwrap();
    line.split('"').nth(1).unwrap().to_string()
}

/// `wink new p --lang LANG` in an empty folder: succeeds, and the project
/// names the installed tree.
fn new_project(sb: &Sandbox, lang: &str) -> PathBuf {
    let out = sb.wink(&sb.work(), &["new", "p", "--lang", lang]);
    assert!(out.status.success(), "wink new p --lang {lang}: {}", text(&out));
    let project = sb.work().join("p");
    let tree = sb.tree();
    let file = match lang {
        "rust" => "Cargo.toml",
        "python" => "build.sh",
        _ => "package.json",
    };
    let named = std::fs::read_to_string(project.join(file)).unwrap();
    assert!(
        named.contains(tree.to_str().unwrap()),
        "{file} names {}:\n{named}",
        tree.display()
    );
    project
}

/// The project's `wink test` case passes, and `wink dev` loads its
/// component (`dir/<component>`) on the simulated cluster and runs it on a
/// seeded Pod.
fn passes_and_runs(sb: &Sandbox, project: &Path, component: &Path) {
    let out = sb.wink(project, &["test", "wink-test.yaml"]);
    assert!(out.status.success(), "wink test: {}", text(&out));
    assert!(text(&out).contains("ok      wink-test.yaml"), "{}", text(&out));

    let plugins = sb.dir.join("plugins");
    let seed = sb.dir.join("seed");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::create_dir_all(&seed).unwrap();
    std::fs::copy(component, plugins.join("p.wasm")).unwrap();
    std::fs::write(
        seed.join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: pod0, namespace: default}\nspec: {containers: [{name: c, image: nginx}]}\n",
    )
    .unwrap();
    let arg = |p: PathBuf| p.to_str().unwrap().to_string();
    let args = [
        "dev".to_string(),
        "--plugins".into(),
        arg(plugins.clone()),
        "--churn".into(),
        "0".into(),
        "--seed".into(),
        arg(seed),
        "--kubeconfig-out".into(),
        arg(sb.dir.join("kubeconfig")),
        "--precompiled".into(),
        arg(sb.dir.join("precompiled")),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let home = sb.dir.join("home");
    let data = sb.data();
    let env: [(&str, &std::ffi::OsStr); 2] =
        [("HOME", home.as_os_str()), ("XDG_DATA_HOME", data.as_os_str())];
    let mut wink = Wink::spawn_with_env(&sb.work(), &args, &env);
    wink.wait_for_line("hello default/pod0: listed", WAIT);
    wink.terminate(Duration::from_secs(10));
    std::fs::remove_dir_all(&plugins).unwrap();
}

#[test]
fn a_rust_project_made_outside_a_checkout_builds_passes_and_runs() {
    let sb = Sandbox::new("rust");
    let project = new_project(&sb, "rust");
    crate::common::ensure_wasm_target();
    let mut cargo = sb.command(
        std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo")),
        &project,
    );
    // Not the variables cargo set for this test process (see common's cargo()).
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
            "CARGO_PRIMARY",
            "CARGO_TARGET_TMPDIR",
        ]
        .iter()
        .any(|p| name.starts_with(p))
        {
            cargo.env_remove(&*name);
        }
    }
    run(
        "cargo build --release --target wasm32-wasip2",
        cargo
            .args(["build", "--release", "--target", "wasm32-wasip2"])
            .env("CARGO_TARGET_DIR", target_dir())
            .env("RUSTUP_TOOLCHAIN", toolchain()),
    );
    // Out of the shared folder, to where the project's case looks.
    let shared = target_dir().join("wasm32-wasip2/release");
    let own = project.join("target/wasm32-wasip2/release");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::copy(shared.join("p.wasm"), own.join("p.wasm")).unwrap();
    let _ = std::fs::remove_file(shared.join("p.wasm"));
    let _ = std::fs::remove_file(shared.join("p.d"));
    passes_and_runs(&sb, &project, &own.join("p.wasm"));
}

#[test]
fn a_python_project_made_outside_a_checkout_builds_passes_and_runs() {
    let sb = Sandbox::new("python");
    let project = new_project(&sb, "python");
    run(
        "sh build.sh",
        sb.command("sh", &project)
            .arg("build.sh")
            .env("PYTHONPATH", lang_support::python_tools()),
    );
    passes_and_runs(&sb, &project, &project.join("build/p.wasm"));
}

#[test]
fn a_js_project_made_outside_a_checkout_builds_with_its_own_npm_install() {
    let sb = Sandbox::new("js");
    let project = new_project(&sb, "js");
    run(
        "npm install",
        sb.command("npm", &project)
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"]),
    );
    // The SDK's own dependencies came with it; nothing was written into
    // the shared tree.
    let sdk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.tree().join("sdk/js/package.json")).unwrap())
            .unwrap();
    let tools: Vec<&String> = sdk["dependencies"].as_object().unwrap().keys().collect();
    assert!(tools.iter().any(|t| *t == "esbuild"), "{tools:?}");
    for dep in tools.into_iter().chain([&"wink-sdk".to_string()]) {
        let installed = project.join("node_modules").join(dep).join("package.json");
        assert!(
            installed.is_file(),
            "{dep} installed by the project's npm install"
        );
    }
    assert!(!sb.tree().join("sdk/js/node_modules").exists());
    run(
        "npm run build",
        sb.command("npm", &project).args(["run", "--silent", "build"]),
    );
    run(
        "npm run check",
        sb.command("npm", &project).args(["run", "--silent", "check"]),
    );
    passes_and_runs(&sb, &project, &project.join("build/p.wasm"));
}

fn modified(p: &Path) -> SystemTime {
    std::fs::metadata(p).unwrap().modified().unwrap()
}

#[test]
fn the_installed_sdk_is_reused_repaired_and_errors_are_clear() {
    let sb = Sandbox::new("reuse");
    let work = sb.work();
    // Three at once into an empty data folder: each sees one whole tree.
    let children: Vec<_> = ["a", "a2", "a3"]
        .iter()
        .map(|name| {
            let mut c = sb.command(wink_bin(), &work);
            c.args(["new", name]).stdout(std::process::Stdio::piped());
            c.stderr(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    let mut paths = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
    for name in ["a", "a2", "a3"] {
        let cargo = std::fs::read_to_string(work.join(name).join("Cargo.toml")).unwrap();
        paths.push(
            cargo
                .lines()
                .find(|l| l.starts_with("wink-sdk"))
                .unwrap()
                .to_string(),
        );
    }
    assert!(paths.iter().all(|p| *p == paths[0]), "{paths:?}");
    let tree = sb.tree();
    assert!(tree.starts_with(sb.data().join("wink/sdk")));
    for f in [
        "sdk/Cargo.toml",
        "sdk/src/lib.rs",
        "sdk/python/wink_build.py",
        "sdk/js/package.json",
        "wit/plugin.wit",
    ] {
        assert!(tree.join(f).is_file(), "{f}");
    }
    let wit = std::fs::read(tree.join("wit/plugin.wit")).unwrap();
    let package = std::fs::read(tree.join("sdk/js/package.json")).unwrap();
    let before = modified(&tree.join("sdk/src/lib.rs"));
    std::thread::sleep(Duration::from_millis(50));

    // Reused: the same tree, not written again, for every language.
    for (name, lang) in [("b", "rust"), ("c", "python"), ("d", "js")] {
        let out = sb.wink(&work, &["new", name, "--lang", lang]);
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(sb.tree(), tree);
        assert_eq!(modified(&tree.join("sdk/src/lib.rs")), before);
    }
    let cargo = std::fs::read_to_string(work.join("b/Cargo.toml")).unwrap();
    assert!(
        cargo.contains(&format!("path = \"{}/sdk\"", tree.display())),
        "{cargo}"
    );

    // Damaged: installed again, and said so.
    std::fs::write(tree.join("wit/plugin.wit"), "package broken;").unwrap();
    std::fs::remove_file(tree.join("sdk/js/package.json")).unwrap();
    let out = sb.wink(&work, &["new", "e", "--lang", "python"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("is damaged"), "{}", text(&out));
    assert_eq!(sb.tree(), tree);
    assert_eq!(std::fs::read(tree.join("wit/plugin.wit")).unwrap(), wit);
    assert_eq!(std::fs::read(tree.join("sdk/js/package.json")).unwrap(), package);

    // Names that cannot be a crate's or package's.
    for (name, lang) in [
        ("1abc", "rust"),
        ("fn", "rust"),
        ("Hello", "js"),
        ("a.b", "python"),
    ] {
        let out = sb.wink(&work, &["new", name, "--lang", lang]);
        assert!(
            !out.status.success() && text(&out).contains("is not a valid plugin name"),
            "{name}: {}",
            text(&out)
        );
        assert!(!work.join(name).exists(), "{name}");
    }

    // An unwritable data folder (a file in the way): a clear error, no project.
    std::fs::write(sb.dir.join("file"), "").unwrap();
    let out = sb
        .command(wink_bin(), &work)
        .args(["new", "f"])
        .env("XDG_DATA_HOME", sb.dir.join("file/data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("cannot install wink's SDK into") && said.contains("--sdk"),
        "{said}"
    );
    assert!(!work.join("f").exists());
}
