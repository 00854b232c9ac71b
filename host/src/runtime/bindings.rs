//! Host bindings generated from `wit/plugin.wit` (`wink:plugin@0.1.0`).
//! Borrowing ownership: objects are handed to the guest straight from the
//! cache's shared bytes, with no per-plugin copy on the host.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "plugin",
    ownership: Borrowing { duplicate_if_necessary: true },
});

pub use self::wink::plugin::types;
