//! The README's quick path, as written, in a fresh clone of the committed
//! tree: its `sh` blocks run in order, its plugin replaces the file `wink
//! new` wrote, and the `wink dev` it ends with shows the lines the README
//! says you will see, for the Rust plugin and for the Python one. The test
//! command it gives is the one `.ci/run` runs.
//!
//! Two commands are the test's own, as in `readme_paths`: `cargo run
//! [--release] -p wink -- ARGS` is the already built `wink ARGS` (a build in
//! the clone would take minutes), and `pip install componentize-py==...` is
//! answered by the folder `lang_support` installs it into, on `PYTHONPATH`.
//! Every other command (rustup, the plugin's `cargo build`) runs as written;
//! the clone's `target/` is a link to one kept under the workspace's
//! `target/`, so the plugin's dependencies build once, not on every run.

use super::commands::wink_invocations;
use super::markdown::{self, Block};
use crate::common::{Wink, root, wink_bin};
use crate::lang_support::{COMPONENTIZE_PY, python_tools};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A first build of a Python component takes tens of seconds, more while
/// other builds share the cores.
const WAIT: Duration = Duration::from_secs(600);

/// The README's section under `heading`: its blocks, in order.
fn section(heading: &str) -> Vec<Block> {
    let readme = markdown::read("README.md");
    let at = readme
        .find(heading)
        .unwrap_or_else(|| panic!("the README has {heading:?}"));
    let rest = &readme[at + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    markdown::blocks("README.md", &rest[..end])
}

/// A fresh clone of the committed tree at `target/docs-readme/NAME`, its
/// `target/` kept across runs.
fn clone(name: &str) -> PathBuf {
    let base = root().join("target/docs-readme");
    let dir = base.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(base.join(format!("{name}-target"))).unwrap();
    let out = Command::new("git")
        .args(["clone", "--quiet"])
        .arg(root())
        .arg(&dir)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git clone: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::os::unix::fs::symlink(base.join(format!("{name}-target")), dir.join("target")).unwrap();
    dir
}

/// Run `lines` with `sh` in `dir`, the test's two commands standing in.
fn run(dir: &Path, lines: &[&str], env: &[(&str, &std::ffi::OsStr)]) {
    let script = format!(
        r#"set -ex
cargo() {{
  if [ "$1 $2 $3 $4 $5" = "run --release -p wink --" ]; then shift 5; "$WINK" "$@"
  elif [ "$1 $2 $3 $4" = "run -p wink --" ]; then shift 4; "$WINK" "$@"
  else command cargo "$@"; fi
}}
pip() {{
  [ "$*" = "install {COMPONENTIZE_PY}" ] || {{ echo "unexpected: pip $*" >&2; return 1; }}
}}
{}
"#,
        lines.join("\n")
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&script)
        .current_dir(dir)
        .env("WINK", wink_bin())
        .envs(env.iter().copied());
    // Not this test's cargo variables: build scripts rerun when they change.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
            "CARGO_TARGET_",
        ]
        .iter()
        .any(|p| name.starts_with(p))
            || name == "CARGO_PRIMARY_PACKAGE"
        {
            cmd.env_remove(&*name);
        }
    }
    let out = cmd.output().expect("run sh");
    assert!(
        out.status.success(),
        "the README's commands failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether `line` matches `expected`, where `...` stands for anything.
fn matches(line: &str, expected: &str) -> bool {
    let mut rest = line;
    for part in expected.split("...") {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Play one section: its first `sh` block, the plugin into `file`, then the
/// second `sh` block, whose last line is the `wink dev` that is left running
/// until each of `expected` is in its output.
fn play(dir: &Path, blocks: &[Block], file: &str, expected: &[String], env: &[(&str, &std::ffi::OsStr)]) {
    let sh: Vec<&Block> = blocks.iter().filter(|b| b.lang() == "sh").collect();
    let plugin = blocks.iter().find(|b| b.lang() == "rust" || b.lang() == "python");
    let (Some(plugin), [first, second]) = (plugin, sh.as_slice()) else {
        panic!("two sh blocks and a plugin: {blocks:?}");
    };
    let lines = |b: &Block| -> Vec<String> { b.body.lines().map(str::to_string).collect() };
    let first = lines(first);
    run(dir, &first.iter().map(String::as_str).collect::<Vec<_>>(), env);
    assert!(dir.join(file).is_file(), "`wink new` wrote {file}");
    std::fs::write(dir.join(file), format!("{}\n", plugin.body)).unwrap();
    let second = lines(second);
    let (dev, before) = second.split_last().unwrap();
    run(dir, &before.iter().map(String::as_str).collect::<Vec<_>>(), env);
    let args = wink_invocations(dev);
    assert_eq!(args.len(), 1, "the last line runs wink: {dev}");
    assert_eq!(args[0].first().map(String::as_str), Some("dev"), "{dev}");
    let cache = dir.join(".cache");
    let mut env = env.to_vec();
    env.push(("XDG_CACHE_HOME", cache.as_os_str()));
    let args: Vec<&str> = args[0].iter().map(String::as_str).collect();
    let wink = Wink::spawn_with_env(dir, &args, &env);
    for line in expected {
        wink.wait_until(line, WAIT, |w| w.lines().iter().any(|l| matches(l, line)));
    }
}

/// The lines the README says `wink dev` shows.
fn expected(blocks: &[Block]) -> Vec<String> {
    let shown = blocks
        .iter()
        .find(|b| b.lang() == "text")
        .expect("the lines you will see");
    let lines: Vec<String> = shown.body.lines().map(str::to_string).collect();
    assert!(
        !lines.is_empty() && lines.iter().all(|l| l.starts_with("[hello] ")),
        "{lines:?}"
    );
    lines
}

#[test]
fn the_readme_rust_plugin_reacts_under_wink_dev_as_written() {
    let blocks = section("## Your first plugin on the embedded cluster, in Rust");
    let dir = clone("rust");
    play(&dir, &blocks, "plugins/hello/src/lib.rs", &expected(&blocks), &[]);
}

#[test]
fn the_readme_python_plugin_reacts_under_wink_dev_as_written() {
    let rust = expected(&section("## Your first plugin on the embedded cluster, in Rust"));
    let blocks = section("## The same plugin in Python");
    // "The same lines appear": the Python section names the first.
    let prose = markdown::read("README.md");
    assert!(
        prose.contains(&format!("The same lines appear, `{}`", rust[0])),
        "{}",
        rust[0]
    );
    let dir = clone("python");
    let tools = python_tools();
    play(
        &dir,
        &blocks,
        "plugins/python/hello/app.py",
        &rust,
        &[("PYTHONPATH", tools.as_os_str())],
    );
}

#[test]
fn the_readme_test_command_is_what_ci_runs() {
    let blocks = section("## Run every test");
    let [block] = blocks.as_slice() else {
        panic!("one block: {blocks:?}")
    };
    assert_eq!(block.lang(), "sh");
    let command = block.body.trim();
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.lines()
            .any(|l| l.trim() == command || l.trim().starts_with(&format!("{command} "))),
        "`.ci/run` runs the README's `{command}`"
    );
}

#[test]
fn the_readme_is_a_front_door_of_at_most_150_lines() {
    let lines = markdown::read("README.md").lines().count();
    assert!(
        lines <= 150,
        "README.md has {lines} lines: the rest goes into the manual"
    );
}
