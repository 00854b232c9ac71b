//! Bounds on untrusted input, shared by the daemon (`wink`) and the
//! simulated API server (`wink-sim`), which both read files and text that a
//! careless or hostile user controls.
//!
//! Owns: [`file`], the one safe-file reader (regular files only, a size cap
//! checked before reading and enforced while reading), and [`depth`], the
//! nesting-depth pre-scan of JSON and YAML (the YAML scanner's work grows
//! with the square of the nesting depth). Knows nothing of what the bytes
//! mean: parsing is the callers'.

pub mod depth;
pub mod file;

pub use file::{FileError, read_file, read_text};
