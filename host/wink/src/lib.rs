//! wink: Kubernetes shared informers and indexers, run natively, feeding
//! WebAssembly plugins.
//!
//! Data flows one way: API server -> [`informer`] (reflector, store,
//! processor) -> [`runtime`] (engine, plugin instances) -> guest. Guest
//! queries and writes come back only through the runtime's capabilities;
//! policy results go from the `report` capability to [`reports`], whose
//! writer keeps the reports (PolicyReports or OpenReports) current.

pub mod admin;
pub mod admission;
pub mod author;
// The informer layer is a crate of its own (`host/informer`): it cannot
// import anything above it. Its modules keep their names here.
pub use wink_informer as informer;
pub use wink_informer::{blocking, canonical, client};
// So is the plugin runtime (`host/runtime`), with the reports it feeds.
pub use wink_runtime as runtime;
pub use wink_runtime::{reports, text_log};
pub mod cache_view;
pub mod cli_docs;
pub mod daemon;
pub mod exceptions;
pub mod leader;
pub mod listener;
pub mod manifests;
pub mod observability;
pub mod winkplugins;
