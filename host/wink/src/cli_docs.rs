//! What `wink` says about itself, all generated from its clap definitions:
//! `--version` (with the plugin contract versions this host serves), shell
//! completions (`wink completions SHELL`), the man pages (`wink man`), and
//! the book's generated reference pages (`wink reference cli|wit`, hidden).
//!
//! The binary builds its parser with [`prepare`]: the reference page, the
//! man page and `--help` then come from the same `clap::Command`.

use clap::{Command, FromArgMatches, Subcommand};
use std::io::Write;
use std::path::PathBuf;

pub mod wit;

/// The commands that print what wink knows about its own command line.
#[derive(Subcommand)]
pub enum DocsCommand {
    /// Print a shell completion script, e.g. `wink completions bash >
    /// ~/.local/share/bash-completion/completions/wink`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page of wink (roff; read it with `wink man | man -l -`),
    /// or write one page per command into a directory.
    Man {
        /// Write wink.1, wink-run.1, ... into this directory instead.
        #[arg(long)]
        out_dir: Option<PathBuf>,
    },
    /// Print a generated page of the book's reference (Markdown).
    #[command(hide = true)]
    Reference {
        /// Which page.
        #[arg(value_enum)]
        page: Page,
    },
}

/// The generated pages of the book's reference.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Page {
    /// docs/src/reference/cli.md: every command's `--help`.
    Cli,
    /// docs/src/reference/wit.md: the `wink:plugin` package's doc comments.
    Wit,
}

/// The plugin contract versions this host serves, newest first.
pub fn contract_versions() -> [&'static str; 2] {
    use crate::runtime::loader::{CONTRACT_VERSION, PREVIOUS_CONTRACT_VERSION};
    [CONTRACT_VERSION, PREVIOUS_CONTRACT_VERSION]
}

/// `wink --version`'s text after the name: wink's version, then the
/// `wink:plugin` versions whose components it runs.
pub fn long_version() -> String {
    let contracts: Vec<String> = contract_versions()
        .iter()
        .map(|v| format!("wink:plugin@{v}"))
        .collect();
    format!(
        "{}\nplugin contracts (WIT): {}",
        env!("CARGO_PKG_VERSION"),
        contracts.join(", ")
    )
}

/// The command as every output shows it: the long version, and the
/// names (not the values) of environment variables in help, so that help,
/// the reference page and the man page do not depend on the environment.
pub fn prepare(cmd: Command) -> Command {
    fn env_names_only(cmd: Command) -> Command {
        cmd.mut_args(|a| a.hide_env_values(true))
            .mut_subcommands(env_names_only)
    }
    static LONG_VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    env_names_only(cmd).long_version(LONG_VERSION.get_or_init(long_version).as_str())
}

/// Parse the command line of `T` built with [`prepare`] (exits on an error
/// or on `--help`, as clap's `Parser::parse` does).
pub fn parse<T: clap::CommandFactory + FromArgMatches>() -> T {
    let mut cmd = prepare(T::command());
    let matches = cmd.get_matches_mut();
    T::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut cmd).exit())
}

/// Run one of the [`DocsCommand`]s; `cmd` is the whole command line's
/// definition.
pub fn run(docs: DocsCommand, cmd: Command) -> anyhow::Result<()> {
    let mut cmd = prepare(cmd);
    let name = cmd.get_name().to_string();
    let mut out = std::io::stdout().lock();
    match docs {
        DocsCommand::Completions { shell } => clap_complete::generate(shell, &mut cmd, name, &mut out),
        DocsCommand::Man { out_dir: Some(dir) } => {
            std::fs::create_dir_all(&dir)?;
            clap_mangen::generate_to(cmd, &dir)?;
        }
        DocsCommand::Man { out_dir: None } => clap_mangen::Man::new(cmd).render(&mut out)?,
        DocsCommand::Reference { page: Page::Cli } => out.write_all(cli_reference(cmd).as_bytes())?,
        DocsCommand::Reference { page: Page::Wit } => out.write_all(wit::reference().as_bytes())?,
    }
    out.flush()?;
    Ok(())
}

/// Every visible command with its full name (`wink run`), the root first,
/// then depth first in definition order. `cmd` must be built.
pub fn commands(cmd: &Command) -> Vec<(String, Command)> {
    fn walk(cmd: &Command, path: String, all: &mut Vec<(String, Command)>) {
        all.push((path.clone(), cmd.clone()));
        let visible = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help");
        for sub in visible {
            walk(sub, format!("{path} {}", sub.get_name()), all);
        }
    }
    let mut all = Vec::new();
    walk(cmd, cmd.get_name().to_string(), &mut all);
    all
}

/// The CLI reference page: each command's `--help`, exactly as printed
/// (clap's own answer to `wink ... --help`, without its styles).
pub fn cli_reference(cmd: Command) -> String {
    let mut cmd = cmd;
    cmd.build();
    let mut page = String::from(
        "# Command-line reference\n\n\
         <!-- Generated by `wink reference cli` from wink's clap definitions: do not edit.\n     \
         Regenerate: cargo run -p wink -- reference cli > docs/src/reference/cli.md -->\n\n\
         Each section is what `wink ... --help` prints.\n\n\
         - `wink --version` prints wink's version and the plugin contracts (WIT package\n  \
         versions) it runs; `-V` only the version.\n\
         - `wink completions SHELL` prints a completion script for bash, zsh, fish, elvish\n  \
         or PowerShell, e.g. `wink completions bash > ~/.local/share/bash-completion/completions/wink`.\n\
         - `wink man` prints the man page (`wink man | man -l -`); `wink man --out-dir DIR`\n  \
         writes one page per command (`wink.1`, `wink-run.1`, ...).\n\
         - Colours: help and usage errors are coloured on a terminal, never when `NO_COLOR`\n  \
         is set (to anything but empty), and always when `CLICOLOR_FORCE` is; logs are never\n  \
         coloured.\n\
         - Progress: compiling a plugin's component (seconds for a Python or JavaScript one;\n  \
         precompiled components load in milliseconds) is logged when it starts and when it\n  \
         ends, with `compile_ms`; `wink dev` says which project it builds before it builds it\n  \
         and how long the build took after.\n",
    );
    for (path, _) in commands(&cmd) {
        let args = path.split(' ').chain(["--help"]);
        let help = match cmd.clone().try_get_matches_from(args) {
            Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.render().to_string(),
            _ => panic!("`{path} --help` prints no help"),
        };
        page.push_str(&format!("\n## `{path}`\n\n```text\n{}\n```\n", help.trim_end()));
    }
    page
}
