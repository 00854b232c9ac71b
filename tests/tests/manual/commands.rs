//! Every code block of the README and the manual is run or compiled by the
//! tests, or marked as not run; every `wink` command line in them parses with
//! the real command line.

use super::markdown::{self, Block};
use crate::common::wink_bin;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The reference pages generated from clap, `wit/` and the metrics'
/// registrations: the `reference_docs` suite fails when one is stale.
const GENERATED: [&str; 3] = [
    "docs/src/reference/cli.md",
    "docs/src/reference/wit.md",
    "docs/src/reference/metrics.md",
];

/// What a block may be, and who runs it:
/// - `sh`: every `wink` command in it is checked below; the README's and
///   the manual's walk-throughs are also run as written (`quick`,
///   `readme_paths`, `sdk_rust`);
/// - `rust`, `python`: a README plugin (the quick path compiles and runs
///   it), or one `{{#include}}` of a file under `plugins/` or `sdk/`, which
///   the end-to-end suites build;
/// - `yaml,grants`: a grants file, read by `wink manifests --grants` below;
/// - `yaml,wink-test`: a `wink test` case, played by `author_scope` and
///   `author_exceptions`;
/// - `text`, or any language with `,ignore`: shown, not run, said so;
/// - anything in a page generated from the code (`GENERATED`), which
///   `reference_docs` regenerates and compares.
fn allowed(doc: &str, block: &Block) -> Result<(), String> {
    match block.lang() {
        _ if GENERATED.contains(&doc) => Ok(()),
        "text" => Ok(()),
        _ if block.ignored() => Ok(()),
        "sh" => Ok(()),
        "yaml" if block.info == "yaml,grants" => Ok(()),
        "yaml" if block.info == "yaml,wink-test" => Ok(()),
        "rust" | "python" if doc == "README.md" => Ok(()),
        "rust" | "python" => {
            let body = block.body.trim();
            let includes = markdown::includes(body);
            let one = includes.len() == 1 && body.starts_with("{{#include") && body.ends_with("}}");
            let (path, _) = includes.first().ok_or("not an include")?;
            let built = ["../../../plugins/", "../../../sdk/"]
                .iter()
                .any(|p| path.starts_with(p));
            if one && built {
                Ok(())
            } else {
                Err(format!(
                    "a `{}` block must be one include of a built file",
                    block.lang()
                ))
            }
        }
        "" => Err("a block without a language: mark it `text` or `LANG,ignore`".into()),
        other => Err(format!("`{other}` blocks are not run: mark it `{other},ignore`")),
    }
}

#[test]
fn every_code_block_is_run_or_marked_as_not_run() {
    let mut wrong = Vec::new();
    let mut seen = 0;
    for doc in markdown::documents() {
        let text = markdown::read(&doc);
        for (path, anchor) in markdown::includes(&text) {
            // Exists, and has the anchor named.
            markdown::included(&doc, &path, anchor.as_deref());
        }
        for block in markdown::blocks(&doc, &text) {
            seen += 1;
            if let Err(why) = allowed(&doc, &block) {
                wrong.push(format!("{}: {why}", block.at()));
            }
        }
    }
    assert!(seen > 25, "the documents have their blocks: {seen}");
    assert!(
        wrong.is_empty(),
        "blocks neither run nor marked:\n{}",
        wrong.join("\n")
    );
}

/// The arguments of each `wink` invocation in a shell line: `wink ARGS`,
/// `target/.../wink ARGS`, `cargo run [--release] -p wink -- ARGS`.
pub fn wink_invocations(line: &str) -> Vec<Vec<String>> {
    let line = match line.find(" #") {
        Some(at) => &line[..at],
        None if line.trim_start().starts_with('#') => "",
        None => line,
    };
    let mut out = Vec::new();
    for command in line.split(['&', '|', ';', '(', ')']) {
        let words = words(command);
        let args: Option<&[String]> = match words.first().map(String::as_str) {
            Some("wink") => Some(&words[1..]),
            Some(w) if w.ends_with("/wink") => Some(&words[1..]),
            Some("cargo") if words.get(1).is_some_and(|w| w == "run") => {
                let dash = words.iter().position(|w| w == "--");
                let is_wink = words.windows(2).any(|p| p[0] == "-p" && p[1] == "wink");
                match dash {
                    Some(d) if is_wink => Some(&words[d + 1..]),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(args) = args {
            // Redirections are the shell's.
            let mut kept = Vec::new();
            let mut skip = false;
            for a in args {
                if skip {
                    skip = false;
                } else if a == ">" || a == ">>" || a == "<" {
                    skip = true;
                } else if !(a.starts_with('>') || a.starts_with("2>")) {
                    kept.push(a.clone());
                }
            }
            out.push(kept);
        }
    }
    out
}

/// Shell words: spaces split, single and double quotes group.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut any = false;
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(word);
    }
    out
}

/// Whether `wink ARGS` gets past its command line: run in an empty folder
/// (nothing to load, so a daemon command stops at its first check), it
/// either ends without clap's usage error or is still running after a few
/// seconds (a server waiting for work), and is then stopped.
pub fn parses(args: &[String]) -> Result<(), String> {
    // One folder per call: the tests calling this run in parallel.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("wink-docs-cli-{}-{call}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(wink_bin())
        .args(args)
        .current_dir(&dir)
        .env("HOME", &dir)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("KUBECONFIG", dir.join("no-kubeconfig"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wink");
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    use std::io::Read;
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    let _ = std::fs::remove_dir_all(&dir);
    // clap's errors exit 2 and point at `--help` (an unknown flag with the
    // usage line, a bad value without); nothing else of wink's does both.
    let clap = stderr.contains("Usage:") || stderr.contains("try '--help'");
    match status {
        Some(s) if s.code() == Some(2) && clap => Err(stderr),
        _ => Ok(()),
    }
}

/// Every `wink` invocation in the `sh` blocks of the documents (includes
/// expanded: the SDKs' READMEs are pages of the manual), with where it is.
fn documented_commands() -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for doc in markdown::documents() {
        let text = markdown::expanded(&doc, &markdown::read(&doc));
        for block in markdown::blocks(&doc, &text) {
            if block.lang() != "sh" {
                continue;
            }
            for line in block.body.lines() {
                for args in wink_invocations(line) {
                    out.push((format!("{} ({line})", block.at()), args));
                }
            }
        }
    }
    out
}

#[test]
fn every_wink_command_in_the_docs_parses_with_the_real_command_line() {
    let commands = documented_commands();
    let subcommands: std::collections::BTreeSet<&str> = commands
        .iter()
        .filter_map(|(_, a)| a.first().map(String::as_str))
        .collect();
    for sub in ["dev", "run", "new", "test", "manifests", "sim"] {
        assert!(
            subcommands.contains(sub),
            "the docs show `wink {sub}`: {subcommands:?}"
        );
    }
    let mut wrong = Vec::new();
    let mut checked = std::collections::BTreeSet::new();
    for (at, args) in &commands {
        if checked.insert(args.clone())
            && let Err(e) = parses(args)
        {
            wrong.push(format!("{at}: wink {}\n{e}", args.join(" ")));
        }
    }
    println!(
        "{} wink command lines checked ({} distinct)",
        commands.len(),
        checked.len()
    );
    assert!(
        wrong.is_empty(),
        "documented commands the CLI refuses:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_command_check_refuses_a_renamed_flag_and_reads_every_spelling() {
    let line = "cargo run --release -p wink -- dev --churn 0 && target/release/wink run --plugins-dir x # c";
    let found = wink_invocations(line);
    assert_eq!(
        found,
        vec![
            vec!["dev".to_string(), "--churn".into(), "0".into()],
            vec!["run".to_string(), "--plugins-dir".into(), "x".into()],
        ]
    );
    assert!(parses(&found[0]).is_ok(), "wink dev --churn 0 parses");
    assert!(parses(&found[1]).is_err(), "a flag wink does not have is refused");
    assert!(parses(&["dev".into(), "--churn".into(), "many".into()]).is_err());
    assert_eq!(
        wink_invocations("(cd x && wink test 'a b.yaml' > out.txt)"),
        vec![vec!["test".to_string(), "a b.yaml".into()]]
    );
}

#[test]
fn every_grants_file_in_the_docs_is_one_wink_reads() {
    let dir = std::env::temp_dir().join(format!("wink-docs-grants-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    let grants = dir.join("grants.yaml");
    let read = |text: &str| {
        std::fs::write(&grants, text).unwrap();
        Command::new(wink_bin())
            .args(["manifests", "--plugins"])
            .arg(dir.join("plugins"))
            .arg("--grants")
            .arg(&grants)
            .output()
            .expect("run wink manifests")
    };
    let mut seen = 0;
    for doc in markdown::documents() {
        for block in markdown::blocks(&doc, &markdown::read(&doc)) {
            if block.info != "yaml,grants" {
                continue;
            }
            seen += 1;
            let out = read(&block.body);
            assert!(
                out.status.success(),
                "{}: wink refuses the grants file:\n{}",
                block.at(),
                String::from_utf8_lossy(&out.stderr)
            );
            // The check reads the file strictly: a misspelt field is refused.
            let misspelt = read(&block.body.replace("namespaces:", "namespace:"));
            assert!(!misspelt.status.success(), "a misspelt field is refused");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(seen >= 1, "the manual shows a grants file");
}
