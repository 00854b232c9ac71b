//! End-to-end: the manual's commands for Python and TypeScript plugins
//! (the `sh` block of `docs/src/getting-started/python-and-js.md`) run as
//! written in a fresh clone of the committed tree, from its root: each
//! example builds with its own `npm install` (no `npm install` in `sdk/js`
//! first, no `$WINK_JS_TOOLS`), type-checks, and passes its `wink test`
//! case, in both languages; the SDK's own unit tests pass; and the clone is
//! as clean afterwards as before (the committed lockfiles are what `npm
//! install` writes, and everything the builds make is ignored).
//!
//! The block is run once for `pod-logger`, as written, and again with the
//! names of the other examples (every project of the clone's
//! `plugins/python` and `plugins/js`) in its place (lines already run are
//! not run again; lines about a language an example is not written in are
//! left out). Two commands of it are the test's own: `pip install
//! componentize-py==...` is checked for the version and answered by the
//! folder `lang_support` installs it into, on `PYTHONPATH` (the manual's
//! `--target DIR on PYTHONPATH`), and `cargo run -p wink -- ARGS` is the
//! already built `wink ARGS` (a build in the clone would take minutes, and
//! one sharing the workspace's target folder would replace its `wink`).
//! The last line, `wink run --plugins DIR`, names a placeholder and runs a
//! daemon: it is left out.

use crate::common::{root, wink_bin};
use crate::lang_support::{COMPONENTIZE_PY, Lang, examples_in, python_tools};
use std::path::PathBuf;
use std::process::{Command, Output};

/// A clone of the checkout's committed tree in a temporary folder, removed
/// when dropped.
struct Clone {
    dir: PathBuf,
}

impl Clone {
    fn new() -> Clone {
        let dir = std::env::temp_dir().join(format!("wink-readme-paths-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new("git")
            .args(["clone", "--quiet"])
            .arg(root())
            .arg(&dir)
            .output()
            .expect("run git");
        assert!(out.status.success(), "git clone: {}", text(&out));
        Clone { dir }
    }

    fn git_status(&self) -> String {
        let out = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(&self.dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Clone {
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

/// The lines of the first `sh` block after `heading` in the manual's page `page`.
fn readme_block(page: &str, heading: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("docs/src").join(page)).unwrap();
    let section = &readme[readme.find(heading).unwrap_or_else(|| panic!("no {heading:?}"))..];
    let block = &section[section.find("```sh\n").expect("an sh block") + 6..];
    let block = &block[..block.find("```").expect("the block's end")];
    block.lines().map(str::to_string).collect()
}

/// `line` for example `name` in place of pod-logger.
fn for_example(line: &str, name: &str) -> String {
    line.replace("pod-logger", name)
        .replace("pod_logger", &name.replace('-', "_"))
}

/// The shell functions standing for the two commands the test answers
/// itself (see the module's comment).
fn prelude() -> String {
    format!(
        r#"set -ex
cargo() {{
  if [ "$1 $2 $3 $4" = "run -p wink --" ]; then shift 4; "$WINK" "$@"; else echo "unexpected: cargo $*" >&2; return 1; fi
}}
pip() {{
  [ "$*" = "install {COMPONENTIZE_PY}" ] || {{ echo "unexpected: pip $*" >&2; return 1; }}
}}
"#
    )
}

#[test]
fn python_and_typescript_examples_build_in_a_fresh_clone() {
    let block = readme_block(
        "getting-started/python-and-js.md",
        "# A first plugin in Python or TypeScript",
    );
    let (run, skip): (Vec<&String>, Vec<&String>) = block.iter().partition(|l| !l.contains("--plugins DIR"));
    assert_eq!(skip.len(), 1, "one placeholder line: {skip:?}");
    for needle in [
        "npm install",
        "npm run build",
        "wink_build.py",
        "-- test plugins/js",
    ] {
        assert!(
            run.iter().any(|l| l.contains(needle)),
            "the block has {needle:?}: {run:?}"
        );
    }
    // The examples of the committed tree, each in the languages it is
    // written in: a line about another language's project is left out.
    let clone = Clone::new();
    assert_eq!(clone.git_status(), "", "a fresh clone is clean");
    let py = examples_in(&clone.dir, Lang::Python);
    let js = examples_in(&clone.dir, Lang::Js);
    let has = |lang: &str, name: &str| {
        let of = if lang == "python" { &py } else { &js };
        of.iter().any(|n| n == name)
    };
    let mut names: Vec<&String> = py.iter().chain(&js).collect();
    names.sort();
    names.dedup();
    for name in [
        "pod-logger",
        "app-index",
        "require-labels",
        "service-selector-guard",
    ] {
        assert!(
            has("python", name) && has("js", name),
            "{name} in both languages: {py:?} {js:?}"
        );
    }
    let mut script = prelude();
    let mut seen = std::collections::BTreeSet::new();
    for name in &names {
        for line in &run {
            let other = ["python", "js"]
                .iter()
                .any(|lang| line.contains(&format!("plugins/{lang}/pod-logger")) && !has(lang, name));
            let line = for_example(line, name);
            if !other && seen.insert(line.clone()) {
                script.push_str(&line);
                script.push('\n');
            }
        }
    }
    let wink = wink_bin();
    let out = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(&clone.dir)
        .env("WINK", wink)
        .env("PYTHONPATH", python_tools())
        .env("RUST_LOG", "error")
        .env_remove("WINK_JS_TOOLS")
        .output()
        .expect("run sh");
    let log = text(&out);
    assert!(out.status.success(), "the manual's commands failed:\n{log}");
    for name in &names {
        for lang in ["python", "js"].into_iter().filter(|lang| has(lang, name)) {
            let case = format!("plugins/{lang}/{name}/wink-test.yaml");
            assert!(log.contains(&format!("ok      {case}")), "{case} passed:\n{log}");
            let wasm = format!("plugins/{lang}/{name}/build/{}.wasm", name.replace('-', "_"));
            assert!(clone.dir.join(&wasm).is_file(), "{wasm} was built");
        }
    }
    assert_eq!(
        clone.git_status(),
        "",
        "the commands leave the clone clean (committed lockfiles unchanged, builds ignored)"
    );
}
