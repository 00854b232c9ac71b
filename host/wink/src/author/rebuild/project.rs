//! One plugin project `wink dev` rebuilds: its language (told by its
//! files), the command that builds it, which of its files are sources, and
//! installing the component it built. The build command is the one the
//! project's files document: `cargo build` for a Rust crate; for Python,
//! its `build.sh` (what `wink new --lang python` writes), else the SDK's
//! `wink_build.py` line the scaffold puts in it
//! ([`scaffold::PYTHON_BUILD`]); for JavaScript/TypeScript, its
//! `package.json`'s `build` script. Owns running a build and installing
//! its component; watching is [`super`]'s, loading the reload watcher's.

use crate::author::scaffold::{self, Lang};
use notify::RecursiveMode;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

/// How many lines of a failed build's output are shown.
const SHOWN_LINES: usize = 30;

/// Folders and files that are never sources: build output, installed
/// packages, caches, and generated bindings (componentize-py's).
const NOT_SOURCES: [&str; 8] = [
    "target",
    "build",
    "dist",
    "node_modules",
    "__pycache__",
    "wit_world",
    "componentize_py_async_support",
    "poll_loop.py",
];

/// One plugin project: its name (the crate's or package's, else its
/// folder's), absolute directory and language.
#[derive(Debug, Clone)]
pub struct Project {
    pub name: String,
    pub dir: PathBuf,
    pub lang: Lang,
}

/// The projects in `dir`: `dir` itself when it is one, else every
/// subdirectory that is one, by name.
pub fn projects_in(dir: &Path) -> Vec<Project> {
    if let Some(p) = Project::at(dir) {
        return vec![p];
    }
    let mut projects: Vec<Project> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Project::at(&e.path()))
        .collect();
    projects.sort_by(|a, b| a.name.cmp(&b.name));
    projects
}

impl Project {
    /// The project in `dir`, if it is one: a `Cargo.toml` makes it Rust, a
    /// `package.json` with a `build` script JavaScript/TypeScript, a
    /// `build.sh` or an `app.py` Python.
    pub fn at(dir: &Path) -> Option<Project> {
        // Absolute: file events name absolute paths.
        let dir = dir.canonicalize().ok()?;
        let folder = dir.file_name()?.to_str()?.to_string();
        let (name, lang) = if let Some(manifest) = read_project_file(&dir.join("Cargo.toml")) {
            let name = manifest
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = "))?
                .trim_matches('"')
                .to_string();
            (name, Lang::Rust)
        } else if let Some(package) = package_json(&dir) {
            package["scripts"]["build"].as_str()?;
            let name = package["name"].as_str().map_or(folder, str::to_string);
            (name, Lang::Js)
        } else if dir.join("build.sh").is_file() || dir.join("app.py").is_file() {
            (folder, Lang::Python)
        } else {
            return None;
        };
        Some(Project { name, dir, lang })
    }

    /// Whether a change to `path` is a change to this project's sources:
    /// under its directory and not build output, installed packages,
    /// caches, generated bindings, version control or an editor's hidden
    /// and backup files.
    pub fn is_source(&self, path: &Path) -> bool {
        let Ok(rel) = path.strip_prefix(&self.dir) else {
            return false;
        };
        let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
        !name.ends_with('~')
            && rel.components().all(|c| {
                let c = c.as_os_str().to_str().unwrap_or("");
                !c.starts_with('.') && !c.starts_with("componentize_py") && !NOT_SOURCES.contains(&c)
            })
    }

    /// The folders to watch: the project's own (not recursively) and each
    /// of its subfolders holding sources (recursively), never a build
    /// directory (it may be a link into a large shared one) or installed
    /// packages.
    pub fn watches(&self) -> Vec<(PathBuf, RecursiveMode)> {
        let mut watches = vec![(self.dir.clone(), RecursiveMode::NonRecursive)];
        let mut subdirs: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .filter(|p| self.is_source(p))
            .collect();
        subdirs.sort();
        watches.extend(subdirs.into_iter().map(|p| (p, RecursiveMode::Recursive)));
        watches
    }

    /// Build the project and install its component into `out` (renamed
    /// into place, so the reload watcher sees one complete file). Returns
    /// the first lines of the errors when it fails.
    pub fn build(&self, out: &Path) -> Result<Duration, String> {
        let started = Instant::now();
        let since = SystemTime::now() - Duration::from_secs(2);
        let mut command = self.command()?;
        let output = command
            .current_dir(&self.dir)
            .output()
            .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
        if !output.status.success() {
            let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
            if self.lang != Lang::Rust {
                text.push_str(&String::from_utf8_lossy(&output.stdout));
            }
            return Err(first_errors(&text));
        }
        let artifact = match self.lang {
            Lang::Rust => cargo_artifact(&self.name, &output.stdout)?,
            Lang::Python | Lang::Js => {
                let built = self.dir.join(self.output());
                let fresh = std::fs::metadata(&built)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t >= since);
                if !fresh {
                    return Err(format!("the build wrote no new {}", built.display()));
                }
                built
            }
        };
        let target = out.join(artifact.file_name().unwrap_or_default());
        if artifact.canonicalize().ok() != target.canonicalize().ok() {
            let tmp = out.join(format!(".{}.tmp", self.name));
            std::fs::copy(&artifact, &tmp).map_err(|e| format!("copy {}: {e}", artifact.display()))?;
            std::fs::rename(&tmp, &target).map_err(|e| format!("install {}: {e}", target.display()))?;
        }
        Ok(started.elapsed())
    }

    /// The build command, run in the project's directory.
    fn command(&self) -> Result<Command, String> {
        let mut c;
        match self.lang {
            Lang::Rust => {
                c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
                c.args([
                    "build",
                    "--release",
                    "--target",
                    "wasm32-wasip2",
                    "--message-format=json-render-diagnostics",
                    "-p",
                    &self.name,
                ]);
            }
            Lang::Python => {
                c = Command::new("sh");
                match self.dir.join("build.sh").is_file() {
                    true => c.arg("build.sh"),
                    false => c.arg("-c").arg(self.python_build()?),
                };
                // componentize-py's errors without a Rust backtrace.
                c.env("RUST_LIB_BACKTRACE", "0");
            }
            Lang::Js => {
                c = Command::new("npm");
                c.args(["run", "--silent", "build"]);
            }
        }
        Ok(c)
    }

    /// The scaffold's Python build line for a project without `build.sh`,
    /// with the SDK of the wink checkout the project is in.
    fn python_build(&self) -> Result<String, String> {
        let sdk = scaffold::sdk_for(&self.dir, Lang::Python, None).map_err(|e| e.to_string())?;
        Ok(scaffold::PYTHON_BUILD
            .replace("SDK", &sdk)
            .replace("CRATE", &self.crate_name()))
    }

    /// The component a Python or JavaScript build writes: the `-o` of its
    /// build command, else `build/<name with _>.wasm` (the scaffold's).
    fn output(&self) -> PathBuf {
        let script = match self.lang {
            Lang::Js => {
                package_json(&self.dir).and_then(|p| p["scripts"]["build"].as_str().map(str::to_string))
            }
            _ => read_project_file(&self.dir.join("build.sh")),
        };
        let named = script.and_then(|s| {
            let mut words = s.split_whitespace();
            words.find(|w| *w == "-o" || *w == "--out")?;
            Some(words.next()?.trim_matches(['"', '\'']).to_string())
        });
        named.map_or_else(
            || PathBuf::from(format!("build/{}.wasm", self.crate_name())),
            PathBuf::from,
        )
    }

    /// The name with `-` as `_`, as components are named.
    fn crate_name(&self) -> String {
        let folder = self.dir.file_name().and_then(|n| n.to_str());
        folder.unwrap_or(&self.name).replace('-', "_")
    }
}

fn package_json(dir: &Path) -> Option<serde_json::Value> {
    let text = read_project_file(&dir.join("package.json"))?;
    wink_input::depth::check_json(text.as_bytes()).ok()?;
    serde_json::from_str(&text).ok()
}

/// The largest project file read (`Cargo.toml`, `package.json`, `build.sh`).
pub(crate) const MAX_PROJECT_FILE_BYTES: u64 = 1 << 20;

/// A project file's text, when it is a regular file of at most
/// [`MAX_PROJECT_FILE_BYTES`] (the one safe-file reader).
pub(crate) fn read_project_file(path: &Path) -> Option<String> {
    wink_input::read_text(path, MAX_PROJECT_FILE_BYTES, "project file").ok()
}

/// The `.wasm` a cargo build of `krate` made, from its JSON messages.
fn cargo_artifact(krate: &str, stdout: &[u8]) -> Result<PathBuf, String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| {
            m["reason"] == "compiler-artifact"
                && m["target"]["name"].as_str().map(|n| n.replace('_', "-")) == Some(krate.replace('_', "-"))
        })
        .flat_map(|m| m["filenames"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .find(|f| f.extension().is_some_and(|e| e == "wasm"))
        .ok_or_else(|| format!("{krate} built no .wasm (crate-type = [\"cdylib\"]?)"))
}

/// The first lines of a failed build's output, without progress lines
/// (cargo's `Compiling`), Python tracebacks of the build tool's own frames
/// and Node.js stack frames: what is left is the author's errors.
fn first_errors(text: &str) -> String {
    let mut shown = Vec::new();
    let mut in_traceback = false;
    for line in text.lines() {
        if line.starts_with("Traceback (most recent call last)") {
            in_traceback = true;
            continue;
        }
        if in_traceback && line.starts_with(' ') {
            continue;
        }
        in_traceback = false;
        let trimmed = line.trim_start();
        if trimmed.starts_with("Compiling ") || (trimmed.starts_with("at ") && line.starts_with("    ")) {
            continue;
        }
        shown.push(line);
        if shown.len() == SHOWN_LINES {
            break;
        }
    }
    while shown.last().is_some_and(|l| l.trim().is_empty()) {
        shown.pop();
    }
    shown.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    #[test]
    fn the_examples_are_told_apart_by_their_files() {
        let at = |rel: &str| Project::at(&repo().join(rel)).unwrap();
        let rust = at("plugins/pod-logger");
        assert_eq!((rust.name.as_str(), rust.lang), ("pod-logger", Lang::Rust));
        let py = at("plugins/python/pod-logger");
        assert_eq!((py.name.as_str(), py.lang), ("pod-logger", Lang::Python));
        let js = at("plugins/js/app-index");
        assert_eq!((js.name.as_str(), js.lang), ("app-index", Lang::Js));
        assert!(Project::at(&repo().join("plugins/python")).is_none());
        let pys = projects_in(&repo().join("plugins/python"));
        let names: Vec<&str> = pys.iter().map(|p| p.name.as_str()).collect();
        for name in [
            "app-index",
            "pod-logger",
            "require-labels",
            "service-selector-guard",
        ] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
        assert!(names.is_sorted(), "{names:?}");
    }

    #[test]
    fn a_python_example_builds_with_the_line_its_test_case_documents() {
        let py = Project::at(&repo().join("plugins/python/pod-logger")).unwrap();
        let line = py.python_build().unwrap();
        assert_eq!(
            line,
            "python3 ../../../sdk/python/wink_build.py -o build/pod_logger.wasm"
        );
        let case = std::fs::read_to_string(py.dir.join("wink-test.yaml")).unwrap();
        assert!(case.contains(&line), "{case}");
        assert_eq!(py.output(), Path::new("build/pod_logger.wasm"));
        let js = Project::at(&repo().join("plugins/js/require-labels")).unwrap();
        assert_eq!(js.output(), Path::new("build/require_labels.wasm"));
    }

    #[test]
    fn build_output_packages_caches_and_bindings_are_not_sources() {
        let py = Project::at(&repo().join("plugins/python/pod-logger")).unwrap();
        let d = &py.dir;
        for source in [
            "app.py",
            "build.sh",
            "helpers/util.py",
            "src/app.ts",
            "package.json",
        ] {
            assert!(py.is_source(&d.join(source)), "{source}");
        }
        for not in [
            "build/pod_logger.wasm",
            "build/pod_logger.bundle.js",
            "__pycache__/app.cpython-311.pyc",
            "helpers/__pycache__/util.pyc",
            "node_modules/esbuild/lib/main.js",
            "wit_world/__init__.py",
            "componentize_py_types.py",
            "componentize_py_async_support/__init__.py",
            "poll_loop.py",
            ".app.py.swp",
            "app.py~",
            ".git/index",
            "target/release/x.wasm",
        ] {
            assert!(!py.is_source(&d.join(not)), "{not}");
        }
        assert!(!py.is_source(Path::new("/elsewhere/app.py")));
    }

    #[test]
    fn a_failed_build_shows_the_authors_errors_first() {
        let python = "Traceback (most recent call last):\n  File \"wink_build.py\", line 54, in <module>\n    sys.exit(main())\nAssertionError:   File \"/0/app.py\", line 46\n    this is not python(\nSyntaxError: '(' was never closed\n\n";
        assert_eq!(
            first_errors(python),
            "AssertionError:   File \"/0/app.py\", line 46\n    this is not python(\nSyntaxError: '(' was never closed"
        );
        let node = "✘ [ERROR] Expected \";\" but found \"is\"\n\n    src/app.ts:50:5:\nError: Build failed\n    at failureErrorWithLog (main.js:1467:15)\n    at main.js:926:25\nNode.js v20";
        assert_eq!(
            first_errors(node),
            "✘ [ERROR] Expected \";\" but found \"is\"\n\n    src/app.ts:50:5:\nError: Build failed\nNode.js v20"
        );
        let cargo = "   Compiling dev-echo v0.1.0\nerror: expected item\n";
        assert_eq!(first_errors(cargo), "error: expected item");
        let long: String = (0..100).map(|i| format!("e{i}\n")).collect();
        assert_eq!(first_errors(&long).lines().count(), SHOWN_LINES);
    }
}
