//! wink: Kubernetes shared informers and indexers, run natively, feeding
//! WebAssembly plugins.
//!
//! Data flows one way: API server -> [`informer`] (reflector, store,
//! processor) -> [`runtime`] (engine, plugin instances) -> guest. Guest
//! queries and writes come back only through the runtime's capabilities;
//! policy results go from the `report` capability to [`reports`], whose
//! writer keeps the PolicyReports current.

pub mod admin;
pub mod blocking;
pub mod cache_view;
pub mod canonical;
pub mod client;
pub mod daemon;
pub mod harness;
pub mod informer;
pub mod leader;
pub mod listener;
pub mod manifests;
pub mod rebuild;
pub mod reports;
pub mod runtime;
pub mod scaffold;
pub mod scaffold_lang;
pub mod text_log;
