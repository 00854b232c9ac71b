//! Host bindings generated from the WIT contract: `wit/plugin.wit`
//! (`wink:plugin@0.4.0`, this module) and the previous minor version kept in
//! `wit/0.3.0/` ([`v3`]), which the host keeps serving (see
//! [`crate::compat`]). The WIT `object` and `object-list` resources of both
//! are backed by slots of the Store's host state (see `capabilities`): a
//! handle the guest holds points at the cache's shared object versions, with
//! no per-plugin copy on the host. Every import may trap (a bad handle, the
//! handle cap), which the plugin runtime treats like any other trap.

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

pub use self::exports::wink::plugin::{admission, handler, reconciler};
pub use self::wink::plugin::types;

/// `wink:plugin@0.3.0`, as released: its components are served through the
/// current host implementation ([`crate::compat`]).
pub mod v3 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.3.0",
        world: "plugin",
        ownership: Borrowing { duplicate_if_necessary: true },
        imports: { default: trappable },
        exports: { default: async },
        with: {
            "wink:plugin/types.object": crate::capabilities::ObjectHandle,
            "wink:plugin/types.object-list": crate::capabilities::ObjectListHandle,
        },
    });

    pub use self::wink::plugin::types;
}
