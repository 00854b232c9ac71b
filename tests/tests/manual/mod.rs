//! The README and the manual (`docs/`, an mdBook) as tested documents:
//!
//! - every fenced code block is run or compiled by a test, or marked as not
//!   run (`text`, or `LANG,ignore`); every `wink` command line in them parses
//!   with the real command line, and a grants file it shows is one wink
//!   reads (`commands`); every cargo command names a package, target and
//!   suite that exist (`cargo_commands`); the troubleshooting page quotes
//!   messages the source has (`messages`);
//! - `mdbook build` passes without a warning, every page is in the summary,
//!   every relative link and `#anchor` of the built book and of the README
//!   resolves (`book`); the book renders and its search answers in headless
//!   Chromium (`browser`);
//! - the README's quick path (a plugin in Rust and in Python on `wink dev`)
//!   runs as written in a fresh clone, and its test command is what CI runs
//!   (`quick`);
//! - the SDKs' READMEs show the code their reconciler examples build
//!   (`sdk_readmes`).

mod book;
mod browser;
mod cargo_commands;
mod commands;
pub(crate) mod markdown;
mod messages;
mod quick;
mod sdk_readmes;
