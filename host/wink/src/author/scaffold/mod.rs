//! `wink new DIR --lang python|js`: a plugin project in Python or
//! TypeScript that builds and passes its `wink test` case as generated, like
//! the Rust crate of [`rust`]. Python: `app.py`, `build.sh`
//! (componentize-py through the SDK's `wink_build.py`); TypeScript:
//! `src/app.ts`, `package.json` (its `build` script runs the SDK's
//! `wink-build`; it lists the SDK's own dependencies, esbuild and
//! componentize-js, at the SDK's versions, beside the `file:` SDK: npm
//! installs none of a linked folder's dependencies, so the project's own
//! `npm install` brings them, as the examples of `plugins/js` do),
//! `tsconfig.json`. Both get `config.example.json`, `wink-test.yaml` and a
//! `.gitignore` for what the build makes.
//!
//! The SDK is `--sdk PATH`, else `sdk/python` or `sdk/js` of the wink
//! checkout DIR is in, else the copy this binary carries, installed once
//! per user ([`install`]). The name must suit the language ([`name`]).
//! Owns only the files it writes; it never overwrites one.

pub mod install;
pub mod name;
pub mod rust;

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};

/// A plugin's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// A Rust crate (wink-sdk).
    Rust,
    /// A Python module built with componentize-py (sdk/python).
    Python,
    /// A TypeScript module built with componentize-js (sdk/js).
    Js,
}

const APP_PY: &str = r#""""NAME: a wink plugin. It watches v1 Pods and logs each event; the
greeting comes from its config (``NAME.json`` beside the component; see
``config.example.json``).

Build: ``sh build.sh``; test offline: ``wink test wink-test.yaml``; run:
drop ``build/CRATE.wasm`` into wink's plugin directory.
"""

import logging

import wink_sdk
from wink_sdk import Object, Registration, Watch

log = logging.getLogger("NAME")


class Plugin(wink_sdk.Handler):
    """Logs every Pod event with the configured greeting."""

    greeting = "hello"

    def init(self, config: str) -> Registration:
        self.greeting = wink_sdk.config(config, {"greeting": "hello"})["greeting"]
        # Deliveries start once every watch has listed (wait_for_sync=True,
        # the default); obj.watch in a handler is the index of its watch.
        return Registration(watches=[Watch("v1", "Pod")])

    def on_add(self, obj: Object, in_initial_list: bool) -> None:
        when = "listed" if in_initial_list else "added"
        log.info("%s %s: %s", self.greeting, obj.key, when)

    def on_update(self, old: Object, new: Object) -> None:
        log.info("%s %s: updated", self.greeting, new.key)

    def on_delete(self, obj: Object, final_state_unknown: bool) -> None:
        how = " (missed while the watch was down)" if final_state_unknown else ""
        log.info("%s %s: deleted%s", self.greeting, obj.key, how)


Handler = wink_sdk.export(Plugin)
"#;

/// The line building a Python project in its directory (`SDK`: the Python
/// SDK's folder; `CRATE`: the name with `_`): `build.sh` runs it, and
/// `wink dev` runs it for a project without `build.sh` (the examples).
pub const PYTHON_BUILD: &str = "python3 SDK/wink_build.py -o build/CRATE.wasm";

const BUILD_SH: &str = r#"#!/bin/sh
# Build build/CRATE.wasm with componentize-py (pip install componentize-py==0.25.1).
set -e
cd "$(dirname "$0")"
exec PYTHON_BUILD "$@"
"#;

const APP_TS: &str = r#"/**
 * NAME: a wink plugin. It watches v1 Pods and logs each event; the greeting
 * comes from its config (`NAME.json` beside the component; see
 * `config.example.json`).
 *
 * Build: `npm install && npm run build`; test offline: `wink test
 * wink-test.yaml`; run: drop `build/CRATE.wasm` into wink's plugin directory.
 */

import { Handler, type KubeObject, type Registration, config, log, plugin } from "wink-sdk";

class Plugin extends Handler {
  greeting = "hello";

  init(text: string): Registration {
    this.greeting = config(text, { greeting: "hello" }).greeting;
    // Deliveries start once every watch has listed (waitForSync: true, the
    // default); obj.watch in a handler is the index of its watch.
    return { watches: [{ apiVersion: "v1", kind: "Pod" }] };
  }

  onAdd(obj: KubeObject, inInitialList: boolean): void {
    log.info(`${this.greeting} ${obj.key}: ${inInitialList ? "listed" : "added"}`);
  }

  onUpdate(_old: KubeObject, obj: KubeObject): void {
    log.info(`${this.greeting} ${obj.key}: updated`);
  }

  onDelete(obj: KubeObject, finalStateUnknown: boolean): void {
    const how = finalStateUnknown ? " (missed while the watch was down)" : "";
    log.info(`${this.greeting} ${obj.key}: deleted${how}`);
  }
}

export const handler = plugin(Plugin);
"#;

const PACKAGE_JSON: &str = r#"{
  "name": "NAME",
  "private": true,
  "type": "module",
  "scripts": {
    "build": "wink-build src/app.ts -o build/CRATE.wasm --wit \"SDK/../../wit\"",
    "check": "tsc --noEmit -p ."
  },
  "devDependencies": {
TOOLS    "typescript": "^5.9.0",
    "wink-sdk": "file:SDK"
  }
}
"#;

const TSCONFIG: &str = r#"{
  "extends": "SDK/tsconfig.json",
  "compilerOptions": {
    "paths": { "wink-sdk": ["SDK/src/index.ts"] }
  },
  "include": ["src/**/*.ts", "SDK/src/wit.d.ts"]
}
"#;

const CASE: &str = r#"# wink test case: `BUILD && wink test wink-test.yaml` (`--bless` records what happened)
plugin: build/CRATE.wasm
"#;

/// The SDK folder of `lang` for a project in `dir`: `--sdk`, else the one of
/// the wink checkout `dir` is in, else the installed copy this binary
/// carries; as written into the project (relative when found in the
/// checkout, so the project moves with it).
pub(crate) fn sdk_for(dir: &Path, lang: Lang, sdk: Option<&Path>) -> anyhow::Result<String> {
    let sub = if lang == Lang::Python {
        "sdk/python"
    } else {
        "sdk/js"
    };
    if let Some(sdk) = sdk {
        let sdk = sdk
            .canonicalize()
            .with_context(|| format!("--sdk {}", sdk.display()))?;
        return Ok(sdk.display().to_string());
    }
    let parent = dir.parent().context("no parent directory")?;
    for (up, ancestor) in parent.ancestors().enumerate() {
        if ancestor.join(sub).join("README.md").is_file() && ancestor.join("wit").is_dir() {
            return Ok(format!("{}{sub}", "../".repeat(up + 1)));
        }
    }
    Ok(install::installed()?.join(sub).display().to_string())
}

/// The JavaScript SDK's own dependencies (its `package.json`), as lines of
/// the project's `devDependencies`.
fn js_tools(sdk: &Path) -> anyhow::Result<String> {
    let file = sdk.join("package.json");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("the JavaScript SDK's {}", file.display()))?;
    let package: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("the JavaScript SDK's {}", file.display()))?;
    let mut lines = String::new();
    if let Some(deps) = package["dependencies"].as_object() {
        for (name, version) in deps {
            lines.push_str(&format!("    {}: {version},\n", serde_json::to_string(name)?));
        }
    }
    Ok(lines)
}

/// `template` with each of `words` replaced by its value, in one pass (a
/// value is not searched again: a name or a path may hold "SDK").
pub(crate) fn fill_in(template: &str, words: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    'text: while !rest.is_empty() {
        for (word, value) in words {
            if let Some(after) = rest.strip_prefix(word) {
                out.push_str(value);
                rest = after;
                continue 'text;
            }
        }
        let c = rest.chars().next().unwrap();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Write the new Python or TypeScript plugin project into `dir` (which must
/// not exist); answers its name.
pub fn create(dir: &Path, lang: Lang, sdk: Option<&Path>) -> anyhow::Result<String> {
    if dir.exists() {
        bail!("{} exists: wink new writes a new directory", dir.display());
    }
    let (name, parent) = rust::name_and_parent(dir, lang)?;
    let dir: PathBuf = parent.join(&name);
    let sdk = sdk_for(&dir, lang, sdk)?;
    let krate = name.replace('-', "_");
    // In JSON files the SDK's path is a JSON string's text.
    let json = serde_json::to_string(&sdk)?;
    let json = &json[1..json.len() - 1];
    let fill_with = |t: &str, sdk: &str| fill_in(t, &[("NAME", &name), ("CRATE", &krate), ("SDK", sdk)]);
    let fill = |t: &str| fill_with(t, &sdk);
    std::fs::create_dir_all(&dir)?;
    let build = match lang {
        Lang::Python => {
            std::fs::write(dir.join("app.py"), fill(APP_PY))?;
            let quoted = PYTHON_BUILD.replace("SDK/wink_build.py", "'SDK/wink_build.py'");
            std::fs::write(
                dir.join("build.sh"),
                fill(&BUILD_SH.replace("PYTHON_BUILD", &quoted)),
            )?;
            std::fs::write(dir.join(".gitignore"), "build/\n__pycache__/\n")?;
            "sh build.sh"
        }
        Lang::Js => {
            std::fs::create_dir_all(dir.join("src"))?;
            std::fs::write(dir.join("src/app.ts"), fill(APP_TS))?;
            let package = PACKAGE_JSON.replace("TOOLS", &js_tools(&dir.join(&sdk))?);
            std::fs::write(dir.join("package.json"), fill_with(&package, json))?;
            std::fs::write(dir.join("tsconfig.json"), fill_with(TSCONFIG, json))?;
            std::fs::write(dir.join(".gitignore"), "build/\nnode_modules/\n")?;
            "npm install && npm run build"
        }
        Lang::Rust => bail!("Rust crates are scaffolded by wink::scaffold"),
    };
    std::fs::write(dir.join("config.example.json"), "{\"greeting\": \"hello\"}\n")?;
    std::fs::write(
        dir.join("wink-test.yaml"),
        fill_in(
            &format!("{CASE}{}", rust::CASE_STEPS),
            &[("CRATE", &krate), ("BUILD", build)],
        ),
    )?;
    Ok(name)
}

/// `wink new DIR [--lang L] [--sdk PATH]`: the project written, and the
/// next steps printed.
pub fn new(dir: &Path, lang: Lang, sdk: Option<&Path>) -> anyhow::Result<()> {
    let (name, build) = match lang {
        Lang::Rust => (
            rust::create(dir, sdk)?,
            "cargo build --release --target wasm32-wasip2",
        ),
        Lang::Python => (create(dir, lang, sdk)?, "sh build.sh"),
        Lang::Js => (create(dir, lang, sdk)?, "npm install && npm run build"),
    };
    let dir = dir.display();
    println!("created {name} in {dir}: cd {dir} && {build} && wink test wink-test.yaml");
    Ok(())
}
