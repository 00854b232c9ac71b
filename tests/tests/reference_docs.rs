//! End-to-end: what the `wink` binary says about its own command line, and
//! the book's reference pages generated from it.
//!
//! - docs/src/reference/cli.md is every command's `--help`, exactly as the
//!   binary prints it (checked command by command against `wink CMD --help`);
//! - docs/src/reference/wit.md carries every doc comment, interface, type
//!   and function of wit/plugin.wit;
//! - both fail when stale; `WINK_BLESS=1 cargo test -p wink-e2e --test e2e
//!   reference_docs::` rewrites them (as does `cargo run -p wink -- reference
//!   cli > docs/src/reference/cli.md`, and `... reference wit > ...wit.md`);
//! - `wink --version` names the plugin contracts of wit/ it serves;
//! - `wink completions bash` is a script bash reads and that completes
//!   subcommands; `wink man` renders with `man -l` and names every command;
//! - `NO_COLOR` turns clap's colours off, even where `CLICOLOR_FORCE` asks
//!   for them.

use crate::common::{root, scratch, wink_bin};
use std::collections::BTreeSet;
use std::process::{Command, Output};

/// `wink ARGS` with a clean colour environment plus `env`, and the
/// environment variables the flags read set to values no page may show.
fn wink(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(wink_bin());
    c.args(args)
        .env("KUBECONFIG", "/nowhere/kubeconfig-of-the-test")
        .env("POD_NAME", "pod-of-the-test")
        .env_remove("POD_NAMESPACE");
    for var in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM"] {
        c.env_remove(var);
    }
    c.envs(env.iter().copied()).output().expect("run wink")
}

fn stdout(args: &[&str]) -> String {
    let out = wink(args, &[]);
    assert!(
        out.status.success(),
        "wink {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Compare a generated page with the committed one; under `WINK_BLESS=1`,
/// write it instead.
fn check_page(rel: &str, generated: &str) {
    let path = root().join(rel);
    if std::env::var_os("WINK_BLESS").is_some() {
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(generated.lines().count()));
        panic!(
            "{rel} is stale (first difference at line {}: committed {:?}, generated {:?}); regenerate it with \
             `WINK_BLESS=1 cargo test -p wink-e2e --test e2e reference_docs::`",
            line + 1,
            committed.lines().nth(line),
            generated.lines().nth(line),
        );
    }
}

/// The subcommands `wink --help` lists, `help` aside.
fn listed_commands() -> Vec<String> {
    let help = stdout(&["--help"]);
    let list = help.split("Commands:\n").nth(1).expect("a Commands section");
    list.lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn the_cli_reference_is_every_help_as_printed() {
    let page = stdout(&["reference", "cli"]);
    let commands = listed_commands();
    for want in [
        "run",
        "dev",
        "sim",
        "manifests",
        "new",
        "test",
        "completions",
        "man",
    ] {
        assert!(
            commands.iter().any(|c| c == want),
            "`wink --help` lists no {want}: {commands:?}"
        );
    }
    assert!(
        !commands.iter().any(|c| c == "reference"),
        "the page generator is hidden"
    );
    // Every section is one command, and every command has its section.
    let sections: BTreeSet<&str> = page
        .lines()
        .filter_map(|l| l.strip_prefix("## `")?.strip_suffix('`'))
        .collect();
    let mut expected: BTreeSet<String> = commands.iter().map(|c| format!("wink {c}")).collect();
    expected.insert("wink".into());
    assert_eq!(sections, expected.iter().map(String::as_str).collect());
    for command in &expected {
        let mut args: Vec<&str> = command.split(' ').skip(1).collect();
        args.push("--help");
        let help = stdout(&args);
        let block = format!("## `{command}`\n\n```text\n{}\n```\n", help.trim_end());
        assert!(
            page.contains(&block),
            "the page's `{command}` is not `{command} --help`:\n{help}"
        );
    }
    assert!(page.contains("[env: KUBECONFIG]") && !page.contains("kubeconfig-of-the-test"));
    assert!(!page.contains('\u{1b}'), "no terminal styles on the page");
    check_page("docs/src/reference/cli.md", &page);
}

#[test]
fn the_wit_reference_carries_every_doc_comment_and_declaration() {
    let page = stdout(&["reference", "wit"]);
    let wit = std::fs::read_to_string(root().join("wit/plugin.wit")).unwrap();
    let mut missing = Vec::new();
    for line in wit.lines().map(str::trim) {
        if let Some(doc) = line.strip_prefix("///") {
            if !doc.trim().is_empty() && !page.contains(doc.trim()) {
                missing.push(format!("doc {doc:?}"));
            }
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let heading = match words.as_slice() {
            [
                kind @ ("interface" | "world" | "record" | "variant" | "enum" | "flags" | "resource"),
                name,
                "{",
            ] => Some(format!("{kind} `{name}`")),
            _ => None,
        };
        if let Some(h) = heading
            && !page.contains(&format!("## {h}\n"))
        {
            missing.push(h);
        }
        if let Some((name, rest)) = line.split_once(": func(")
            && !page.contains(format!("{name}: func({rest}").trim_end_matches(';'))
        {
            missing.push(format!("func {name}"));
        }
    }
    assert!(missing.is_empty(), "wit.md lacks {missing:#?}");
    let package = wit.lines().find_map(|l| l.strip_prefix("package ")).unwrap();
    assert!(page.starts_with(&format!("# WIT reference: `{}`", package.trim_end_matches(';'))));
    check_page("docs/src/reference/wit.md", &page);
}

/// The version of the `wink:plugin` package a WIT file declares.
fn package_version(rel: &str) -> String {
    let wit = std::fs::read_to_string(root().join(rel)).unwrap();
    let line = wit
        .lines()
        .find_map(|l| l.strip_prefix("package wink:plugin@"))
        .unwrap();
    line.trim_end_matches(';').to_string()
}

#[test]
fn version_names_the_contracts_it_serves() {
    let (current, previous) = (
        package_version("wit/plugin.wit"),
        package_version("wit/0.3.0/plugin.wit"),
    );
    assert_ne!(current, previous);
    let long = stdout(&["--version"]);
    assert_eq!(
        long,
        format!(
            "wink {}\nplugin contracts (WIT): wink:plugin@{current}, wink:plugin@{previous}\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(stdout(&["-V"]), format!("wink {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn bash_completion_parses_and_completes_subcommands() {
    let script = stdout(&["completions", "bash"]);
    let dir = scratch("reference_docs_bash");
    let file = dir.join("wink.bash");
    std::fs::write(&file, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&file).output().unwrap();
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    // What bash offers after `wink ma<TAB>` and `wink run --lea<TAB>`.
    let complete = |words: &str| {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"{words}\"; COMP_POINT=${{#COMP_LINE}}; \
             _wink wink \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display()
        );
        let out = Command::new("bash").arg("-c").arg(program).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut offered: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        offered.sort();
        offered
    };
    assert_eq!(complete("wink ma"), ["man", "manifests"]);
    assert!(complete("wink run --lea").contains(&"--leader-elect".to_string()));
    for command in listed_commands() {
        assert!(script.contains(&command), "the script never names {command}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let s = stdout(&["completions", shell]);
        assert!(
            s.contains("manifests") && s.contains("leader-elect"),
            "{shell}: {s}"
        );
    }
}

#[test]
fn man_pages_render_and_name_every_command() {
    let roff = stdout(&["man"]);
    let dir = scratch("reference_docs_man");
    let page = dir.join("wink.1");
    std::fs::write(&page, &roff).unwrap();
    let out = Command::new("man")
        .args(["-l", "-P", "cat"])
        .arg(&page)
        .env("MANWIDTH", "100")
        .output()
        .expect("man (Debian's man-db)");
    assert!(
        out.status.success(),
        "man -l: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("NAME") && text.contains("SYNOPSIS") && text.contains("SUBCOMMANDS"),
        "{text}"
    );
    let commands = listed_commands();
    for command in &commands {
        assert!(
            text.contains(&format!("wink-{command}(1)")),
            "the page names no {command}:\n{text}"
        );
    }
    // One page per command in a directory, hidden ones aside.
    let out_dir = dir.join("pages");
    stdout(&["man", "--out-dir", out_dir.to_str().unwrap()]);
    let files: BTreeSet<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut expected: BTreeSet<String> = commands.iter().map(|c| format!("wink-{c}.1")).collect();
    expected.insert("wink.1".into());
    assert_eq!(files, expected);
    let run = std::fs::read_to_string(out_dir.join("wink-run.1")).unwrap();
    assert!(
        run.contains("leader\\-elect"),
        "wink-run.1 has the flags of `wink run`"
    );
}

#[test]
fn no_color_turns_colours_off() {
    const ESC: char = '\u{1b}';
    // A usage error goes to stderr, styled when colour is wanted.
    let forced = wink(&["--no-such-flag"], &[("CLICOLOR_FORCE", "1")]);
    assert!(!forced.status.success());
    let forced = String::from_utf8_lossy(&forced.stderr).into_owned();
    assert!(
        forced.contains(ESC),
        "CLICOLOR_FORCE=1 colours the error: {forced:?}"
    );
    let plain = wink(&["--no-such-flag"], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    let plain = String::from_utf8_lossy(&plain.stderr).into_owned();
    assert!(!plain.contains(ESC), "NO_COLOR wins: {plain:?}");
    assert!(plain.contains("--no-such-flag"), "{plain}");
    let help = wink(&["run", "--help"], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!String::from_utf8_lossy(&help.stdout).contains(ESC));
    let coloured = wink(&["run", "--help"], &[("CLICOLOR_FORCE", "1")]);
    assert!(String::from_utf8_lossy(&coloured.stdout).contains(ESC));
    // Logs and errors of a run are never coloured.
    let run = wink(
        &["run", "--plugins", "/nonexistent-dir"],
        &[("CLICOLOR_FORCE", "1")],
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(!run.status.success() && !all.contains(ESC), "{all:?}");
}
