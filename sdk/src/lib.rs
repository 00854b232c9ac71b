//! # wink-sdk: write wink plugins in Rust
//!
//! A wink plugin is a WebAssembly component that reacts to Kubernetes events
//! delivered by the wink host's shared informers, with client-go's
//! `ResourceEventHandler` meaning. This crate hides the WIT bindings
//! (`wink:plugin@0.4.0`, see `wit/plugin.wit`) behind a [`Handler`] trait,
//! an [`Object`] handle whose accessors copy only what they return and never
//! parse JSON, typed decoding through serde, [`cache`] queries,
//! [writes](mod@write), [`events`], policy results ([`report`]) and log
//! macros.
//!
//! ```no_run
//! use wink_sdk::{Handler, Object, Registration, Watch};
//!
//! struct PodLogger {
//!     adds: u64,
//! }
//!
//! impl Handler for PodLogger {
//!     fn init(_config: &str) -> Result<(Self, Registration), String> {
//!         let registration = Registration::new().watch(Watch::new("v1", "Pod"));
//!         Ok((PodLogger { adds: 0 }, registration))
//!     }
//!
//!     fn on_add(&mut self, obj: &Object, _in_initial_list: bool) {
//!         self.adds += 1;
//!         wink_sdk::info!("OnAdd: {} ({} so far)", obj.name(), self.adds);
//!     }
//!
//!     fn on_update(&mut self, _old: &Object, new: &Object) {
//!         // Typed decoding, only when the handler needs the body:
//!         #[derive(serde::Deserialize)]
//!         struct Pod { spec: serde_json::Value }
//!         if let Ok(pod) = new.decode::<Pod>() {
//!             wink_sdk::debug!("spec has {} fields", pod.spec.as_object().map_or(0, |m| m.len()));
//!         }
//!         wink_sdk::info!("OnUpdate: {}", new.name());
//!     }
//!
//!     fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) {
//!         wink_sdk::info!("OnDelete: {}", obj.name());
//!     }
//! }
//!
//! wink_sdk::export_plugin!(PodLogger);
//! # fn main() {}
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2` (crate type
//! `cdylib`) and drop the `.wasm` into wink's plugin directory.

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "plugin",
        pub_export_macro: true,
        default_bindings_module: "wink_sdk::bindings",
        export_macro_name: "__export_bindings",
    });
}

mod keys;
mod loose;
mod object;
mod registration;
mod selector;

#[doc(hidden)]
pub mod batch;

pub mod admission;
pub mod cache;
pub mod events;
pub mod log;
pub mod policy;
pub mod queue;
pub mod report;
pub mod workload;
pub mod write;

pub use object::Object;
pub use registration::{Change, IndexBy, Registration, Resource, Verb, Watch};
pub use selector::Selector;

/// k8s-openapi, as this crate's `k8s-openapi` feature enables it (the
/// `latest` API version): the typed queries' types, with no dependency of
/// the plugin's own.
#[cfg(feature = "k8s-openapi")]
pub use k8s_openapi;
/// serde, as this crate uses it (with `derive`): a plugin needs no serde
/// dependency of its own. Derives through this path name it:
/// `#[derive(wink_sdk::serde::Deserialize)]` plus
/// `#[serde(crate = "wink_sdk::serde")]` (the derive's code otherwise looks
/// for a crate called `serde`).
pub use serde;
/// serde_json, as this crate uses it (`Value`, `json!`, `from_str`).
pub use serde_json;

/// A Kubernetes kind known at compile time: its apiVersion and kind.
/// Implemented for every `k8s-openapi` type with the `k8s-openapi` feature;
/// implement it for your own custom resource types.
pub trait Kind {
    /// e.g. `apps/v1`.
    const API_VERSION: &'static str;
    /// e.g. `Deployment`.
    const KIND: &'static str;
}

#[cfg(feature = "k8s-openapi")]
impl<T: k8s_openapi::Resource> Kind for T {
    const API_VERSION: &'static str = T::API_VERSION;
    const KIND: &'static str = T::KIND;
}

/// A plugin's event handler: client-go's `ResourceEventHandler` plus `init`.
///
/// Every method but `init` has a no-op default, so a plugin implements only
/// what it reacts to. Calls never overlap; `&mut self` is the plugin's state.
pub trait Handler: Sized + 'static {
    /// Build the handler from its config text (the `<name>.json` file beside
    /// the component, or empty) and say what it watches.
    fn init(config: &str) -> Result<(Self, Registration), String>;

    /// An object was added; `in_initial_list` when replayed from the cache
    /// because this plugin joined a running informer, or from the initial list.
    fn on_add(&mut self, obj: &Object, in_initial_list: bool) {
        let _ = (obj, in_initial_list);
    }

    /// An object changed. On a resync `old` and `new` are the same version:
    /// see [`is_resync`].
    fn on_update(&mut self, old: &Object, new: &Object) {
        let _ = (old, new);
    }

    /// An object was deleted. With `final_state_unknown` the deletion was
    /// missed while the watch was down and `obj` is the last known state.
    fn on_delete(&mut self, obj: &Object, final_state_unknown: bool) {
        let _ = (obj, final_state_unknown);
    }

    /// Every object of the initial lists of all watches and reads has been
    /// delivered (client-go's HasSynced): the moment to act on the whole
    /// picture. Called once per instance.
    fn on_synced(&mut self) {}

    /// Answer an admission request of the plugin's validating webhook
    /// ([`admission::Webhook::validate`]). Default: allow. Runs on an
    /// instance of its own (see [`admission`]).
    fn validate(&mut self, request: &admission::Request) -> admission::Verdict {
        let _ = request;
        admission::Verdict::allow()
    }

    /// Answer an admission request of the plugin's mutating webhook
    /// ([`admission::Webhook::mutate`]): the verdict and the changed object.
    /// Default: allow, unchanged.
    fn mutate(&mut self, request: &admission::Request) -> admission::Mutation {
        let _ = request;
        admission::Mutation::unchanged()
    }

    /// Make the object under `key` (of the [`queue`]'s resource) right:
    /// read its current state from [`cache`], write what must change, and
    /// say when to look again. An error is retried with backoff. Called on
    /// the leader only, one key at a time, never during another call.
    /// Default: done.
    fn reconcile(&mut self, key: &str) -> Result<queue::Action, String> {
        let _ = key;
        Ok(queue::Action::Done)
    }

    /// The keys of the queue's resource that `obj`, from a watch whose
    /// events are [`queue::Enqueue::Mapped`], concerns (`obj.watch()` says
    /// which watch). Default: none.
    fn map_to_keys(&mut self, obj: &Object) -> Vec<String> {
        let _ = obj;
        Vec::new()
    }
}

/// A plugin's config (the text `init` gets) as `T`: `T::default()` when the
/// text is empty (no `<name>.json`, or `wink dev`), else parsed as JSON, with
/// the error worded for the host's log (`bad config: ...`).
pub fn config<T: serde::de::DeserializeOwned + Default>(text: &str) -> Result<T, String> {
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    serde_json::from_str(text).map_err(|e| format!("bad config: {e}"))
}

/// True when an update is a resync: the same object version delivered again.
pub fn is_resync(old: &Object, new: &Object) -> bool {
    old.uid() == new.uid() && old.resource_version() == new.resource_version()
}

/// Export a [`Handler`] implementation as the plugin's exports: `handler`
/// (and its batches), `admission` and `reconciler`, each method through
/// the [`Handler`]'s (whose defaults allow and are done).
#[macro_export]
macro_rules! export_plugin {
    ($handler:ty) => {
        const _: () = {
            use $crate::bindings::exports::wink::plugin::admission as __wink_admission;
            use $crate::bindings::exports::wink::plugin::handler as __wink_handler;
            use $crate::bindings::exports::wink::plugin::reconciler as __wink_reconciler;
            use $crate::bindings::wink::plugin::types as __wink_types;

            ::std::thread_local! {
                static __WINK_STATE: ::std::cell::RefCell<::std::option::Option<$handler>> =
                    const { ::std::cell::RefCell::new(::std::option::Option::None) };
            }

            fn __wink_with(f: impl FnOnce(&mut $handler)) {
                __WINK_STATE.with(|state| {
                    if let Some(handler) = state.borrow_mut().as_mut() {
                        f(handler)
                    }
                })
            }

            struct __WinkGuest;

            impl __wink_handler::Guest for __WinkGuest {
                fn init(
                    config: ::std::string::String,
                ) -> ::std::result::Result<__wink_types::Registration, ::std::string::String> {
                    let (handler, registration) = <$handler as $crate::Handler>::init(&config)?;
                    __WINK_STATE.with(|state| *state.borrow_mut() = Some(handler));
                    Ok(registration.into_wit())
                }
                fn on_add(
                    watch: u32,
                    key: ::std::string::String,
                    obj: &__wink_types::Object,
                    in_initial_list: bool,
                ) {
                    // SAFETY: the borrow is valid for this call and `obj` is
                    // dropped before it returns.
                    let obj = unsafe { $crate::Object::lent(obj.handle(), key, watch) };
                    __wink_with(|h| $crate::Handler::on_add(h, &obj, in_initial_list));
                }
                fn on_update(
                    watch: u32,
                    key: ::std::string::String,
                    old: &__wink_types::Object,
                    new: &__wink_types::Object,
                ) {
                    // SAFETY: as in `on_add`.
                    let (old, new) = unsafe {
                        (
                            $crate::Object::lent(old.handle(), key.clone(), watch),
                            $crate::Object::lent(new.handle(), key, watch),
                        )
                    };
                    __wink_with(|h| $crate::Handler::on_update(h, &old, &new));
                }
                fn on_delete(
                    watch: u32,
                    key: ::std::string::String,
                    obj: &__wink_types::Object,
                    final_state_unknown: bool,
                ) {
                    // SAFETY: as in `on_add`.
                    let obj = unsafe { $crate::Object::lent(obj.handle(), key, watch) };
                    __wink_with(|h| $crate::Handler::on_delete(h, &obj, final_state_unknown));
                }
                fn on_synced() {
                    __wink_with(|h| $crate::Handler::on_synced(h));
                }
                fn on_batch(
                    events: ::std::vec::Vec<__wink_handler::Event>,
                    objects: ::std::vec::Vec<__wink_types::Object>,
                ) {
                    $crate::batch::deliver(events, objects, |event| match event {
                        $crate::batch::One::Add {
                            watch,
                            key,
                            obj,
                            in_initial_list,
                        } => {
                            <__WinkGuest as __wink_handler::Guest>::on_add(watch, key, &obj, in_initial_list)
                        }
                        $crate::batch::One::Update {
                            watch,
                            key,
                            old,
                            new,
                        } => <__WinkGuest as __wink_handler::Guest>::on_update(watch, key, &old, &new),
                        $crate::batch::One::Delete {
                            watch,
                            key,
                            obj,
                            final_state_unknown,
                        } => <__WinkGuest as __wink_handler::Guest>::on_delete(
                            watch,
                            key,
                            &obj,
                            final_state_unknown,
                        ),
                    });
                }
            }

            impl __wink_admission::Guest for __WinkGuest {
                fn validate(request: __wink_admission::Request<'_>) -> __wink_admission::Verdict {
                    // SAFETY: the request's borrows are valid for this call,
                    // and `request` is dropped before it returns.
                    let request = unsafe { $crate::admission::Request::lent(request) };
                    let mut verdict = $crate::admission::Verdict::allow();
                    __wink_with(|h| verdict = $crate::Handler::validate(h, &request));
                    verdict.into_wit()
                }
                fn mutate(request: __wink_admission::Request<'_>) -> __wink_admission::Mutation {
                    // SAFETY: as in `validate`.
                    let request = unsafe { $crate::admission::Request::lent(request) };
                    let mut mutation = $crate::admission::Mutation::unchanged();
                    __wink_with(|h| mutation = $crate::Handler::mutate(h, &request));
                    mutation.into_wit()
                }
            }

            impl __wink_reconciler::Guest for __WinkGuest {
                fn reconcile(
                    key: ::std::string::String,
                ) -> ::std::result::Result<__wink_reconciler::Action, ::std::string::String> {
                    let mut answer = Ok($crate::queue::Action::Done);
                    __wink_with(|h| answer = $crate::Handler::reconcile(h, &key));
                    answer.map($crate::queue::Action::into_wit)
                }
                fn map_to_keys(
                    watch: u32,
                    obj: &__wink_types::Object,
                ) -> ::std::vec::Vec<::std::string::String> {
                    // SAFETY: as in `on_add`.
                    let obj =
                        unsafe { $crate::Object::lent(obj.handle(), ::std::string::String::new(), watch) };
                    let mut keys = ::std::vec::Vec::new();
                    __wink_with(|h| keys = $crate::Handler::map_to_keys(h, &obj));
                    keys
                }
            }

    $crate::bindings::__export_bindings!(__WinkGuest with_types_in $crate::bindings);
        };
    };
}
