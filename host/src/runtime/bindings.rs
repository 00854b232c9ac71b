//! Host bindings generated from `wit/plugin.wit` (`wink:plugin@0.2.0`).
//! The WIT `object` resource is backed by [`ObjectHandle`]: a handle the guest
//! holds points at the cache's shared object version, with no per-plugin copy
//! on the host. Every import may trap (a bad handle, the handle cap), which
//! the plugin runtime treats like any other trap.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "plugin",
    ownership: Borrowing { duplicate_if_necessary: true },
    imports: { default: trappable },
    with: { "wink:plugin/types.object": super::capabilities::ObjectHandle },
});

pub use self::wink::plugin::types;
