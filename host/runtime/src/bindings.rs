//! Host bindings generated from `wit/plugin.wit` (`wink:plugin@0.3.0`).
//! The WIT `object` and `object-list` resources are backed by slots of the
//! Store's host state (see `capabilities`): a handle the guest holds points
//! at the cache's shared object versions, with no per-plugin copy on the host. Every import may trap (a bad handle, the handle cap), which
//! the plugin runtime treats like any other trap.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "plugin",
    ownership: Borrowing { duplicate_if_necessary: true },
    imports: { default: trappable },
    // Calls into the guest run on a fiber, so a long one yields to the
    // runtime at epoch ticks (see `instance`).
    exports: { default: async },
    with: {
        "wink:plugin/types.object": super::capabilities::ObjectHandle,
        "wink:plugin/types.object-list": super::capabilities::ObjectListHandle,
    },
});

pub use self::wink::plugin::types;
