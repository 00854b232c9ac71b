//! `wink new DIR`: a plugin crate that builds and passes its `wink test`
//! case as generated: `Cargo.toml` (wink-sdk its one dependency: serde
//! comes through its re-export, as in the examples), `src/lib.rs` (a
//! handler logging Pod events, with a config), `config.example.json` and
//! `wink-test.yaml`.
//! Inside the wink workspace's `plugins/` it is a workspace member; anywhere
//! else it is a workspace of its own, whose wink-sdk is `--sdk PATH`, else
//! the `sdk/` of the wink checkout it is in, else the crate this binary
//! carries, installed once per user ([`super::install`]).
//! Owns only the files it writes; it never overwrites one.

use super::{Lang, fill_in, install, name};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};

const LIB: &str = r#"//! NAME: a wink plugin. It watches v1 Pods and logs each event; the
//! greeting comes from its config (`NAME.json` beside the component; see
//! `config.example.json`).
//!
//! Build: `cargo build --release --target wasm32-wasip2`; test offline:
//! `wink test wink-test.yaml`; run: drop the `.wasm` into wink's plugin
//! directory.

use wink_sdk::serde::Deserialize;
use wink_sdk::{Handler, Object, Registration, Watch};

#[derive(Deserialize)]
#[serde(crate = "wink_sdk::serde", default, deny_unknown_fields)]
struct Config {
    greeting: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            greeting: "hello".into(),
        }
    }
}

struct Plugin {
    config: Config,
}

impl Handler for Plugin {
    fn init(config: &str) -> Result<(Self, Registration), String> {
        let config: Config = wink_sdk::config(config)?;
        Ok((Plugin { config }, Registration::new().watch(Watch::new("v1", "Pod"))))
    }

    fn on_add(&mut self, obj: &Object, in_initial_list: bool) {
        let when = if in_initial_list { "listed" } else { "added" };
        wink_sdk::info!("{} {}: {when}", self.config.greeting, obj.key());
    }

    fn on_update(&mut self, _old: &Object, new: &Object) {
        wink_sdk::info!("{} {}: updated", self.config.greeting, new.key());
    }

    fn on_delete(&mut self, obj: &Object, final_state_unknown: bool) {
        let how = if final_state_unknown { " (missed while the watch was down)" } else { "" };
        wink_sdk::info!("{} {}: deleted{how}", self.config.greeting, obj.key());
    }
}

wink_sdk::export_plugin!(Plugin);
"#;

const CASE: &str = r#"# wink test case: `cargo build --release --target wasm32-wasip2 && wink test wink-test.yaml` (`--bless` records what happened)
plugin: TARGET/wasm32-wasip2/release/CRATE.wasm
"#;

/// What every scaffolded plugin's case plays and expects (after its
/// header, which says how it is built and where its component is): the
/// generated handler in any language logs these lines.
pub(crate) const CASE_STEPS: &str = r#"config: {greeting: hi}
objects:
  - {apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: default}}
steps:
  - add: {apiVersion: v1, kind: Pod, metadata: {name: web-2, namespace: default}}
  - update: {apiVersion: v1, kind: Pod, metadata: {name: web-2, namespace: default, labels: {tier: front}}}
  - relist: []
expect:
  log:
    - "INFO hi default/web-1: listed"
    - "INFO hi default/web-2: added"
    - "INFO hi default/web-2: updated"
    - "INFO hi default/web-1: deleted (missed while the watch was down)"
    - "INFO hi default/web-2: deleted (missed while the watch was down)"
"#;

/// A new `lang` project's name (its directory's, checked by [`name`]) and
/// its parent directory, created and made absolute.
pub(crate) fn name_and_parent(dir: &Path, lang: Lang) -> anyhow::Result<(String, PathBuf)> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .with_context(|| {
            format!(
                "{}: give the new project's directory (its name is the plugin's)",
                dir.display()
            )
        })?;
    name::check(&name, lang)?;
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    Ok((name, parent.canonicalize()?))
}

/// The wink workspace `dir` is in (a folder above it with `sdk/` holding
/// wink-sdk and a `plugins/` folder), if any.
fn workspace_of(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().skip(1).find_map(|a| {
        let sdk = crate::author::rebuild::project::read_project_file(&a.join("sdk/Cargo.toml"))?;
        (sdk.contains("name = \"wink-sdk\"") && a.join("plugins").is_dir()).then(|| a.to_path_buf())
    })
}

/// Write the new plugin crate into `dir` (which must not exist).
pub fn create(dir: &Path, sdk: Option<&Path>) -> anyhow::Result<String> {
    if dir.exists() {
        bail!("{} exists: wink new writes a new directory", dir.display());
    }
    let (name, parent) = name_and_parent(dir, Lang::Rust)?;
    let checkout = workspace_of(&parent.join(&name));
    let member = checkout.clone().filter(|ws| parent == ws.join("plugins"));
    let (sdk_path, workspace, target) = match (&member, sdk) {
        (Some(_), None) => ("../../sdk".to_string(), "", "../../target"),
        (_, Some(sdk)) => {
            let sdk = sdk
                .canonicalize()
                .with_context(|| format!("--sdk {}", sdk.display()))?;
            let ws = if member.is_some() { "" } else { "\n[workspace]\n" };
            (
                sdk.display().to_string(),
                ws,
                if member.is_some() {
                    "../../target"
                } else {
                    "target"
                },
            )
        }
        // Elsewhere in a checkout its sdk/; outside one the installed copy.
        (None, None) => {
            let sdk = match checkout {
                Some(ws) => ws.join("sdk"),
                None => install::installed()?.join("sdk"),
            };
            (sdk.display().to_string(), "\n[workspace]\n", "target")
        }
    };
    // A TOML basic string holds the path as a JSON string would.
    let sdk_path = serde_json::to_string(&sdk_path)?;
    let cargo = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\nwink-sdk = {{ path = {sdk_path} }}\n{workspace}"
    );
    let krate = name.replace('-', "_");
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::write(dir.join("Cargo.toml"), cargo)?;
    std::fs::write(dir.join("src/lib.rs"), fill_in(LIB, &[("NAME", &name)]))?;
    std::fs::write(dir.join("config.example.json"), "{\"greeting\": \"hello\"}\n")?;
    std::fs::write(
        dir.join("wink-test.yaml"),
        fill_in(
            &format!("{CASE}{CASE_STEPS}"),
            &[("TARGET", target), ("CRATE", &krate)],
        ),
    )?;
    Ok(name)
}
