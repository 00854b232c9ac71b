//! The plugin author's tools: `wink new` ([`scaffold`]: a project in Rust,
//! Python or TypeScript that builds and passes its case as generated),
//! `wink test` ([`harness`]: plugins run offline against recorded cases) and
//! the rebuilds of `wink dev` ([`rebuild`]: projects rebuilt on every save).
//! They use the runtime as the daemon does and are never part of a running
//! daemon's data path.

pub mod harness;
pub mod rebuild;
pub mod scaffold;
