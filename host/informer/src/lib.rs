//! The informer side of wink, named after client-go's `tools/cache` so a
//! reader of client-go finds their way:
//!
//! - [`object`]: the cached representation of one object version (shared JSON
//!   bytes, with its metadata as ranges of them);
//! - [`store`]: the thread-safe store and its indexes (client-go's Indexer);
//! - [`reflector`]: turns `kube::runtime::watcher` events into store deltas;
//! - [`processor`]: per-handler queues (sharedProcessor / processorListener),
//!   delivered as runtime tasks (async handlers: plugins) or on a small pool
//!   of threads that grows when handlers get stuck (native handlers);
//! - [`queue`]: one listener's pending notifications, coalescing per object
//!   past a backlog;
//! - [`shared_informer`]: one list+watch with its store and listeners;
//! - [`factory`]: shares one informer per distinct watch;
//! - [`runtime`]: the one-worker runtime every informer's watch runs on;
//! - `release`: gives the heap's free pages back to the OS after a list;
//! - [`client`]: the client informers list and watch with (kube's own
//!   stack; watches read in windows);
//! - [`canonical`]: the one spelling of a resource type, namespace and name
//!   that the API server accepts;
//! - [`blocking`]: runs blocking work off a runtime's worker threads;
//! - [`repeated`]: how a retry loop logs its failures (short lines, a
//!   repeating failure said once per interval).
//!
//! Data flows one way: API server -> reflector -> informer/store -> processor
//! -> handler. Nothing here knows about WebAssembly.

pub mod blocking;
pub mod canonical;
pub mod client;
pub mod factory;
pub mod fallback;
pub mod field_path;
pub mod index;
pub mod object;
mod pool;
pub mod processor;
pub mod queue;
pub mod reflector;
mod release;
pub mod repeated;
pub mod runtime;
pub mod shared_informer;
pub mod stats;
pub mod store;

pub use factory::{SharedInformerFactory, WatchSpec};
pub use object::{CachedObject, ObjRef};
pub use processor::{EventHandler, Notification};
pub use shared_informer::SharedInformer;
pub use store::Store;
