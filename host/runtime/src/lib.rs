//! The plugin side of wink: everything that knows about WebAssembly.
//!
//! - [`bindings`]: the host side of the WIT world `wink:plugin/plugin`;
//! - [`engine`]: the shared wasmtime engine;
//! - [`ticker`]: its epoch ticker, which ticks only while a call is in progress;
//! - [`plugin_file`]: which files are plugins, their names, reading them safely;
//! - [`loader`]: turns a component's bytes into a checked, instantiable component;
//! - [`precompiled`]: compiled components on disk, trusted only when private;
//! - [`capabilities`]: what a guest may do (log, cache queries, closed WASI);
//! - [`cpu_share`], [`cpu_time`]: teams' shares of CPU, and the CPU time calls take;
//! - [`instance`]: one running plugin, delivering events into the guest;
//! - [`manager`]: the set of loaded plugins, their lifecycle and their informer
//!   registrations;
//! - [`reload`]: the reload watcher on the plugin directory;
//! - [`reports`]: what plugins report, aggregated and written as PolicyReports
//!   or OpenReports Reports;
//! - [`scope`]: where the operator lets a plugin apply (`match`, `exclude`);
//! - [`exceptions`]: the operator's exceptions to a plugin's policy (`WinkException`s);
//! - [`leadership`]: whether this replica leads (deliveries and writes read it);
//! - [`text_log`]: the text log's escaping of what plugins control;
//! - [`workqueue`]: client-go's workqueue for the keys plugins reconcile.
//!
//! Events come in only through [`wink_informer::EventHandler`]; guest
//! queries go out only through the cache capability.

pub mod admission;
pub mod bindings;
pub mod call_times;
pub mod capabilities;
pub mod compat;
pub mod cpu_share;
pub mod cpu_time;
pub mod engine;
pub mod exceptions;
pub mod filter;
pub mod grants;
pub mod instance;
pub mod language;
pub mod leadership;
pub mod loader;
pub mod manager;
pub mod offline;
pub mod plugin_file;
pub mod precompiled;
pub mod rate;
pub mod reload;
pub mod reports;
pub mod scope;
pub mod stdio;
pub mod text_log;
pub mod ticker;
pub mod workqueue;

pub use engine::{Limits, WinkEngine};
pub use instance::PluginInstance;
pub use language::Language;
pub use loader::{LoadError, LoadedComponent};
pub use manager::PluginManager;
