//! Embeds the SDKs and the WIT this `wink` is built with, for `wink new`
//! anywhere (`src/author/scaffold/install.rs` installs them): the Rust SDK
//! crate (`sdk/`, its `Cargo.toml` with the workspace's inherited values
//! written out), the Python SDK (`sdk/python`: package, build script), the
//! JavaScript SDK (`sdk/js`: sources, `bin/`, `package.json`, no
//! `node_modules` or build output) and `wit/`, each under the path it has in
//! a checkout, so the SDKs' own relative paths to `wit/` hold. Only source
//! files: no tests, caches or build output.
//!
//! Writes `$OUT_DIR/embedded_sdk.rs`: `SDK_HASH` (a short hash of the
//! files' paths, modes and contents) and `SDK_FILES` (path, executable,
//! bytes via `include_bytes!`). Reruns when an embedded file changes, or a
//! file appears in one of the source folders other than Python's (those
//! get `__pycache__` written into them by every build, which would rebuild
//! wink: a new Python module is picked up with the next change to an
//! embedded file, such as the `__init__.py` that imports it).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The embedded tree: (folder or file in the checkout, file suffixes kept;
/// empty: every file). Folders are walked recursively, skipping caches.
const TREE: &[(&str, &[&str])] = &[
    ("sdk/src", &[".rs"]),
    ("sdk/python/README.md", &[]),
    ("sdk/python/pyproject.toml", &[]),
    ("sdk/python/wink_build.py", &[]),
    ("sdk/python/wink_sdk", &[".py"]),
    ("sdk/js/README.md", &[]),
    ("sdk/js/package.json", &[]),
    ("sdk/js/tsconfig.json", &[]),
    ("sdk/js/bin", &[".mjs", ".js"]),
    ("sdk/js/src", &[".ts"]),
    ("wit", &[".wit"]),
];

/// Folders never embedded (caches, dependencies, build output).
const SKIP: &[&str] = &["__pycache__", "node_modules", "build", "target", ".git"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("../..");
    let root = root
        .canonicalize()
        .unwrap_or_else(|e| panic!("the wink checkout at {}: {e}", root.display()));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());

    // (path in the tree, absolute source, executable)
    let mut files: Vec<(String, PathBuf, bool)> = Vec::new();
    for (rel, suffixes) in TREE {
        let src = root.join(rel);
        // A folder is watched as a whole (cargo looks at every file under
        // it) only where no cache is written: Python's `__pycache__` would
        // rebuild wink after every Python build. Every embedded file is
        // watched on its own.
        if src.is_dir() && !rel.starts_with("sdk/python") {
            println!("cargo:rerun-if-changed={}", src.display());
        }
        walk(&root, &src, suffixes, &mut files);
    }
    let cargo_toml = out.join("sdk-Cargo.toml");
    for f in ["sdk/Cargo.toml", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }
    let sdk = read(&root.join("sdk/Cargo.toml"));
    let ws = read(&root.join("Cargo.toml"));
    write_if_changed(&cargo_toml, &standalone_manifest(&sdk, &ws));
    files.push(("sdk/Cargo.toml".into(), cargo_toml, false));
    files.sort();

    let mut hash = Fnv::default();
    let mut list = String::new();
    for (rel, src, exec) in &files {
        println!("cargo:rerun-if-changed={}", src.display());
        hash.add(rel.as_bytes());
        hash.add(&[0, *exec as u8]);
        let bytes = std::fs::read(src).unwrap();
        hash.add(&(bytes.len() as u64).to_le_bytes());
        hash.add(&bytes);
        let src = src.to_str().expect("a UTF-8 path");
        writeln!(list, "    ({rel:?}, {exec}, include_bytes!({src:?})),").unwrap();
    }
    let code = format!(
        "/// A short hash of the embedded files (paths, modes, contents).\n\
         pub const SDK_HASH: &str = \"{:012x}\";\n\
         /// The embedded files: (path in the tree, executable, contents).\n\
         pub static SDK_FILES: &[(&str, bool, &[u8])] = &[\n{list}];\n",
        hash.0 >> 16
    );
    write_if_changed(&out.join("embedded_sdk.rs"), &code);
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn write_if_changed(p: &Path, text: &str) {
    if std::fs::read_to_string(p).ok().as_deref() != Some(text) {
        std::fs::write(p, text).unwrap();
    }
}

/// Collect the files of `src` (a file, or a folder walked recursively)
/// whose names end in one of `suffixes` (any, when empty).
fn walk(root: &Path, src: &Path, suffixes: &[&str], files: &mut Vec<(String, PathBuf, bool)>) {
    let meta = std::fs::metadata(src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    if meta.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(src)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for e in entries {
            let name = e.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || SKIP.contains(&name.as_str()) {
                continue;
            }
            if e.is_dir() || suffixes.is_empty() || suffixes.iter().any(|s| name.ends_with(s)) {
                walk(root, &e, suffixes, files);
            }
        }
    } else {
        use std::os::unix::fs::PermissionsExt;
        let rel = src.strip_prefix(root).unwrap().to_str().unwrap().to_string();
        files.push((rel, src.to_path_buf(), meta.permissions().mode() & 0o111 != 0));
    }
}

/// Sections of `sdk/Cargo.toml` for developing the SDK in the checkout
/// (examples, tests, benches and their dependencies), whose files are not
/// embedded: left out of the installed manifest.
fn dropped(section: &str) -> bool {
    [
        "[[example]]",
        "[[test]]",
        "[[bench]]",
        "[[bin]]",
        "[dev-dependencies]",
    ]
    .contains(&section)
        || section.starts_with("[dev-dependencies.")
}

/// `sdk/Cargo.toml` with every `workspace = true` value replaced by the
/// workspace's own (`[workspace.package]`, `[workspace.dependencies]`), so
/// the crate builds outside the workspace, and without what [`dropped`]
/// names.
fn standalone_manifest(sdk: &str, ws: &str) -> String {
    let table = |name: &str| -> Vec<(String, String)> {
        let mut in_table = false;
        let mut entries = Vec::new();
        for line in ws.lines() {
            let t = line.trim();
            if t.starts_with('[') {
                in_table = t == format!("[{name}]");
            } else if in_table
                && !t.starts_with('#')
                && let Some((k, v)) = t.split_once('=')
            {
                entries.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        entries
    };
    let package = table("workspace.package");
    let deps = table("workspace.dependencies");
    let lookup = |entries: &[(String, String)], key: &str| -> String {
        let v = entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("sdk/Cargo.toml inherits {key}, which the workspace lacks"));
        assert!(
            v.starts_with('"') || (v.starts_with('{') && v.ends_with('}')),
            "the workspace's {key} is not on one line: write it out in build.rs's way"
        );
        v
    };
    let mut section = String::new();
    let mut out = String::from(
        "# wink-sdk as embedded in the wink binary (sdk/Cargo.toml with the\n\
         # workspace's values written out); installed by `wink new`.\n",
    );
    for line in sdk.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.to_string();
            if dropped(&section) {
                // With the comment lines that introduce it.
                while out.ends_with('\n') {
                    let last = out[..out.len() - 1].rfind('\n').map_or(0, |i| i + 1);
                    let prev = out[last..].trim();
                    if !(prev.starts_with('#') || prev.is_empty()) {
                        break;
                    }
                    out.truncate(last);
                }
                out.push('\n');
            }
        }
        if dropped(&section) {
            continue;
        }
        let inherits = t.contains("workspace = true") || t.contains(".workspace = true");
        let Some((key, value)) = t.split_once('=').filter(|_| inherits && !t.starts_with('#')) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let key = key.trim().trim_end_matches(".workspace").trim();
        let value = value.trim();
        if section == "[package]" {
            out.push_str(&format!("{key} = {}\n", lookup(&package, key)));
            continue;
        }
        let wsv = lookup(&deps, key);
        // The workspace's keys, then the member's besides `workspace = true`
        // (`optional`, ...); `features` add to the workspace's.
        let mut pairs = if wsv.starts_with('"') {
            vec![("version".to_string(), wsv.clone())]
        } else {
            inline_table(&wsv)
        };
        let own = if value.starts_with('{') {
            inline_table(value)
        } else {
            Vec::new()
        };
        for (k, v) in own.into_iter().filter(|(k, _)| k != "workspace") {
            match pairs.iter_mut().find(|(pk, _)| *pk == k) {
                Some((_, pv)) if k == "features" => {
                    let mut all = array_items(pv);
                    for f in array_items(&v) {
                        if !all.contains(&f) {
                            all.push(f);
                        }
                    }
                    *pv = format!("[{}]", all.join(", "));
                }
                Some((_, pv)) => *pv = v,
                None => pairs.push((k, v)),
            }
        }
        let inner: Vec<String> = pairs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let inner = inner.join(", ");
        out.push_str(&format!("{key} = {{ {inner} }}\n"));
    }
    out
}

/// The `key = value` pairs of a one-line TOML inline table (`{ ... }`),
/// splitting on the commas outside arrays and strings.
fn inline_table(text: &str) -> Vec<(String, String)> {
    let body = text.trim().trim_start_matches('{').trim_end_matches('}');
    let (mut parts, mut cur, mut depth, mut quoted) = (Vec::new(), String::new(), 0, false);
    for c in body.chars() {
        match c {
            '"' => quoted = !quoted,
            '[' if !quoted => depth += 1,
            ']' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    parts
        .iter()
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The items of a one-line TOML array of strings, as written (quoted).
fn array_items(text: &str) -> Vec<String> {
    let body = text.trim().trim_start_matches('[').trim_end_matches(']');
    body.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// FNV-1a, 64 bits: an identity for the embedded files, not a checksum
/// against tampering.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}
