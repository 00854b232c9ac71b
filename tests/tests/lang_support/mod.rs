//! Plugins in Python and JavaScript for the end-to-end tests and benches:
//! the build tools installed from PyPI and npm into `target/lang-tools`
//! (reused when present), and each component built from source once per
//! test binary run with the documented commands (`sdk/python/wink_build.py`,
//! `sdk/js/bin/wink-build.mjs`), in the source folder's `build/`, where the
//! examples' `wink test` cases find them.
#![allow(dead_code)]

use crate::common::root;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// componentize-py, from PyPI.
pub const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";
/// componentize-js and esbuild (the build), TypeScript (`tsc --noEmit`), from npm;
/// preview2-shim, which componentize-js imports without declaring it (`sdk/js/README.md`).
pub const NPM_TOOLS: [&str; 4] = [
    "@bytecodealliance/componentize-js@0.23.0",
    "@bytecodealliance/preview2-shim@0.25.0",
    "esbuild@0.25.12",
    "typescript@5.9.3",
];

/// A plugin's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lang {
    Python,
    Js,
}

impl Lang {
    /// The suffix of its plugins' names in the tests (`pod-logger-py`).
    pub fn suffix(self) -> &'static str {
        match self {
            Lang::Python => "py",
            Lang::Js => "js",
        }
    }
}

fn tools() -> PathBuf {
    root().join("target/lang-tools")
}

fn run(what: &str, cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The folder componentize-py was installed into (`pip install --target`).
pub fn python_tools() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tools().join("python");
        if !dir.join("componentize_py").is_dir() {
            let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
            run(
                "pip install componentize-py",
                Command::new(python)
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                        "--target",
                    ])
                    .arg(&dir)
                    .arg(COMPONENTIZE_PY),
            );
        }
        dir
    })
}

/// The folder whose `node_modules` holds componentize-js and esbuild.
pub fn js_tools() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tools().join("js");
        let have = |p: &str| dir.join("node_modules").join(p).join("package.json").is_file();
        let all = [
            "@bytecodealliance/componentize-js",
            "@bytecodealliance/preview2-shim",
            "esbuild",
            "typescript",
        ];
        if !all.iter().all(|p| have(p)) {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("package.json"), "{\"private\": true}\n").unwrap();
            run(
                "npm install componentize-js esbuild",
                Command::new("npm")
                    .args([
                        "install",
                        "--no-audit",
                        "--no-fund",
                        "--loglevel=error",
                        "--prefix",
                    ])
                    .arg(&dir)
                    .args(NPM_TOOLS),
            );
        }
        dir
    })
}

/// A folder with `wink-build` (the SDK's `bin/wink-build.mjs`), for PATH:
/// what `npm install` links into a project's `node_modules/.bin`.
pub fn js_bin() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tools().join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("wink-build");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(root().join("sdk/js/bin/wink-build.mjs"), &link).unwrap();
        dir
    })
}

/// The command building the project in `dir` (its `app.py`, or its
/// `src/app.ts`) into `out`, as an author runs it.
pub fn build_command(lang: Lang, dir: &Path, out: &Path) -> Command {
    let mut cmd = match lang {
        Lang::Python => {
            let mut c = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()));
            c.arg(root().join("sdk/python/wink_build.py"))
                .arg("-o")
                .arg(out)
                .env("PYTHONPATH", python_tools());
            c
        }
        Lang::Js => {
            let mut c = Command::new("node");
            c.arg(root().join("sdk/js/bin/wink-build.mjs"))
                .arg("src/app.ts")
                .arg("-o")
                .arg(out)
                .env("WINK_JS_TOOLS", js_tools());
            c
        }
    };
    cmd.current_dir(dir);
    cmd
}

/// The built component of the project `rel` (under the repository, e.g.
/// `plugins/python/pod-logger`), as `build/<name with _>.wasm` in it; built
/// once per test binary run.
pub fn component(lang: Lang, rel: &str) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    if let Some(p) = BUILT.lock().unwrap().get(rel) {
        return p.clone();
    }
    let dir = root().join(rel);
    let name = dir.file_name().unwrap().to_str().unwrap().replace('-', "_");
    let out = dir.join("build").join(format!("{name}.wasm"));
    run(&format!("building {rel}"), &mut build_command(lang, &dir, &out));
    assert!(out.is_file(), "{} was not built", out.display());
    BUILT.lock().unwrap().insert(rel.to_string(), out.clone());
    out
}

/// Build `projects` (language, folder) two at a time (a Python and a
/// JavaScript build use a core each); their components, in order.
pub fn components(projects: &[(Lang, &str)]) -> Vec<PathBuf> {
    python_tools();
    js_tools();
    let (py, js): (Vec<_>, Vec<_>) = projects.iter().partition(|(l, _)| *l == Lang::Python);
    std::thread::scope(|s| {
        let a = s.spawn(|| py.iter().for_each(|(l, r)| drop(component(*l, r))));
        js.iter().for_each(|(l, r)| drop(component(*l, r)));
        a.join().unwrap();
    });
    projects.iter().map(|(l, r)| component(*l, r)).collect()
}

/// The names of the examples in `lang` (the folders of `plugins/python`
/// holding an `app.py`, of `plugins/js` holding a `package.json`), sorted:
/// a new example is built and checked with no change to the tests.
pub fn examples(lang: Lang) -> Vec<String> {
    examples_in(&root(), lang)
}

/// `examples` of the checkout at `checkout`.
pub fn examples_in(checkout: &Path, lang: Lang) -> Vec<String> {
    let (dir, marker) = match lang {
        Lang::Python => ("python", "app.py"),
        Lang::Js => ("js", "package.json"),
    };
    let mut names: Vec<String> = std::fs::read_dir(checkout.join("plugins").join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join(marker).is_file())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// Every example (`examples`) and the test plugins that crash, in both
/// languages, built.
pub fn all_built() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let mut projects = Vec::new();
        for (lang, dir) in [(Lang::Python, "python"), (Lang::Js, "js")] {
            for ex in examples(lang) {
                projects.push((lang, format!("plugins/{dir}/{ex}")));
            }
            projects.push((lang, format!("tests/lang/{dir}/misbehave")));
        }
        let refs: Vec<(Lang, &str)> = projects.iter().map(|(l, p)| (*l, p.as_str())).collect();
        components(&refs);
    });
}

/// An example's component: `example(Lang::Python, "pod-logger")`.
pub fn example(lang: Lang, name: &str) -> PathBuf {
    all_built();
    let dir = if lang == Lang::Python { "python" } else { "js" };
    component(lang, &format!("plugins/{dir}/{name}"))
}

/// The test plugin that raises (Python) or throws (JavaScript).
pub fn misbehave(lang: Lang) -> PathBuf {
    all_built();
    let dir = if lang == Lang::Python { "python" } else { "js" };
    component(lang, &format!("tests/lang/{dir}/misbehave"))
}
