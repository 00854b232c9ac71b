//! The informers' runtime: one tokio worker of its own, on which every
//! informer's watch runs (kube-runtime's watcher, the HTTP connection under
//! it, the reflector, the store writes, and the plugin batches started in
//! place).
//!
//! A watch delivers its events through two tasks (hyper's connection and
//! the watch's reader) that wake each other once per event. On a runtime
//! with a second, idle worker, tokio answers such a ping-pong, and any
//! wake-up that finds more than one task ready, by waking that worker to
//! share the work: under a steady stream that is a second thread woken for
//! every batch of events, to find nothing. Here there is no second worker to
//! wake. Plugin batches that wait go on as tasks of the runtime their
//! listener started on (the daemon's), so a slow plugin never holds this
//! thread beyond one epoch tick; host I/O inside a call hands this
//! runtime's other tasks to another thread first (`block_in_place`).
//!
//! Owns only the runtime; what runs on it is the informers'.

use std::sync::OnceLock;
use tokio::runtime::{Builder, Handle, Runtime};

/// The process's informer runtime, started on first use.
pub fn handle() -> &'static Handle {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("wink-informer")
                .enable_all()
                .build()
                .expect("the informer runtime starts")
        })
        .handle()
}
