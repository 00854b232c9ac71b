//! Plugins from OCI registries. A plugin component travels as a Wasm OCI
//! artifact ([`artifact`]); it is pulled by digest through a kept client
//! ([`registry`], `oci-client`), checked against the digest before anything
//! else, and kept in a content-addressed local store ([`store`]) from which
//! a restart loads it with no registry reachable; with cosign keys, its
//! manifest's signatures are verified first ([`cosign`]). [`fetch::Fetcher::fetch`]
//! is the entry point from a source (a reference and the digest it must
//! have) to a verified local file; [`plugins`] feeds `wink run
//! --plugin-ref NAME=REF` through it into the plugin manager, and [`cli`]
//! is `wink push` and `wink pull`.

pub mod artifact;
pub mod auth;
pub mod cli;
pub mod collect;
pub mod cosign;
pub mod digest;
pub mod fetch;
pub mod https;
pub mod plugins;
pub mod registry;
pub mod store;
pub mod wire;

pub use digest::Digest;
pub use fetch::{Fetched, Fetcher};
