//! Plugin files: which files of the plugin directory are plugins, their
//! names, and reading them safely.
//!
//! A plugin is `<name>.wasm` with an optional `<name>.json` config; its
//! name is the file's stem with each `_` made a `-` (cargo writes
//! `pod_security.wasm` for the crate `pod-security`), and must then be a
//! DNS-1123 label, as every place Kubernetes shows it requires (webhook
//! names, field managers, Lease names, label values). Files
//! are read with the one safe-file reader ([`wink_input::read_file`]): only
//! regular files (a FIFO, device or directory is refused without blocking; a
//! symlink is followed and its target checked), up to a size cap ([`MAX_COMPONENT_BYTES`], [`MAX_CONFIG_BYTES`]). A name
//! must be printable UTF-8 of a safe alphabet, so no file name can forge a
//! log line or alias another plugin; a refused name is shown escaped. Errors
//! never echo a file's content. Owns no state; callers run it off the async
//! threads and outside their locks.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The largest component file read (64 MiB).
pub const MAX_COMPONENT_BYTES: u64 = 64 << 20;

/// The largest config file read (1 MiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The longest plugin name (a DNS label's 63 characters).
pub const MAX_NAME_LEN: usize = 63;

/// Why a plugin file was refused.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(
        "{0}: not a valid plugin name: the file's stem, each '_' read as '-', must be a DNS label as Kubernetes \
         names webhooks, field managers and Leases with it (lowercase letters, digits and '-', starting and \
         ending with a letter or digit, at most {MAX_NAME_LEN} characters)"
    )]
    BadName(String),
    #[error(transparent)]
    File(#[from] wink_input::FileError),
}

/// The file name as the user should see it: escaped (`"a\nb.wasm"`,
/// `"\xFF.wasm"`) so that it can neither forge a log line nor hide.
pub fn escaped(path: &Path) -> String {
    format!("{:?}", path.file_name().unwrap_or(path.as_os_str()))
}

/// Whether `name` is a DNS-1123 label: lowercase letters, digits and `-`,
/// starting and ending with a letter or digit, at most [`MAX_NAME_LEN`].
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// Whether a directory entry's name claims to be a component (ends in
/// `.wasm`, the bare `.wasm` included), whatever else is wrong with it.
pub fn is_component_name(file_name: &OsStr) -> bool {
    file_name.as_encoded_bytes().ends_with(b".wasm")
}

/// Whether a directory entry's name is a component's or a config's.
pub fn is_plugin_file_name(file_name: &OsStr) -> bool {
    is_component_name(file_name) || file_name.as_encoded_bytes().ends_with(b".json")
}

/// The plugin name of `<name>.wasm` (or `<name>.json`): the stem with each
/// `_` made a `-`, refused unless that is a DNS label.
pub fn plugin_name(path: &Path) -> Result<String, FileError> {
    let bad = || FileError::BadName(escaped(path));
    let stem = file_stem(path).ok_or_else(bad)?;
    let name = stem.replace('_', "-");
    is_dns_label(&name).then_some(name).ok_or_else(bad)
}

/// The stem of `<stem>.wasm` or `<stem>.json`, when the file name is UTF-8.
pub fn file_stem(path: &Path) -> Option<&str> {
    let file_name = path.file_name().and_then(OsStr::to_str)?;
    file_name
        .strip_suffix(".wasm")
        .or_else(|| file_name.strip_suffix(".json"))
}

/// The config file of a component: `<name>.wasm` -> `<name>.json`.
pub fn config_path(component: &Path) -> PathBuf {
    swap_suffix(component, b".wasm", ".json")
}

/// The component of a plugin file: `<name>.json` -> `<name>.wasm` (a
/// component is its own).
pub fn component_of(file: &Path) -> PathBuf {
    swap_suffix(file, b".json", ".wasm")
}

/// `path` with the suffix `from` of its file name replaced by `to`, on the
/// raw name (so `.json` and `..wasm` map as their names say).
fn swap_suffix(path: &Path, from: &[u8], to: &str) -> PathBuf {
    let name = path.file_name().unwrap_or_default().as_encoded_bytes();
    match name.strip_suffix(from) {
        Some(stem) => {
            let mut swapped = std::ffi::OsString::from(String::new());
            // SAFETY: `stem` is a prefix of an OsStr's encoded bytes ending
            // where an ASCII suffix began, so it is itself valid.
            swapped.push(unsafe { OsStr::from_encoded_bytes_unchecked(stem) });
            swapped.push(to);
            path.with_file_name(swapped)
        }
        None => path.to_path_buf(),
    }
}

/// Read a regular file of at most `limit` bytes (the one safe-file reader,
/// [`wink_input::read_file`]).
pub fn read_regular(path: &Path, limit: u64, kind: &'static str) -> Result<Vec<u8>, FileError> {
    Ok(wink_input::read_file(path, limit, kind)?)
}

/// The text of a component's config: `<name>.json` beside it, or empty when
/// there is none.
pub fn read_config(component: &Path) -> Result<String, FileError> {
    match wink_input::read_text(&config_path(component), MAX_CONFIG_BYTES, "config") {
        Ok(text) => Ok(text),
        Err(e) if e.is_not_found() => Ok(String::new()),
        Err(e) => Err(e.into()),
    }
}

/// A component and its config, read.
pub struct PluginFiles {
    pub name: String,
    pub component: Vec<u8>,
    pub config: String,
}

/// Read the component `path` and its config, checked and capped.
pub fn read_plugin(path: &Path) -> Result<PluginFiles, FileError> {
    let name = plugin_name(path)?;
    let component = read_regular(path, MAX_COMPONENT_BYTES, "component")?;
    let config = read_config(path)?;
    Ok(PluginFiles {
        name,
        component,
        config,
    })
}

/// The component files of a directory (every name ending in `.wasm`, the
/// invalid ones included so that they get their error), sorted.
pub fn component_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| is_component_name(&e.file_name()))
        .map(|e| e.path())
        .collect();
    files.sort();
    Ok(files)
}

/// The component file of `dir` that is the plugin `name` (`pod_security.wasm`
/// is `pod-security`), if there is one.
pub fn file_of(dir: &Path, name: &str) -> Option<PathBuf> {
    component_files(dir)
        .ok()?
        .into_iter()
        .find(|f| plugin_name(f).is_ok_and(|n| n == name))
}

#[cfg(test)]
mod tests;
