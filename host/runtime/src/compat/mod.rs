//! Serving `wink:plugin@0.3.0` components on the current host.
//!
//! A 0.3.0 component gets the same capabilities, scopes, grants and limits as
//! a current one: its imports are answered by the current implementation
//! (`capabilities`), with arguments and answers converted between the two
//! versions' types ([`convert`]), and its registration is read as a current
//! one that uses none of the newer features (no name, no update filters, no
//! admission or queue, initial lists delivered as they arrive). What 0.3.0
//! cannot say is dropped at the boundary: whether a write was a dry run, what
//! became of an Event. Owns only that translation; it never decides anything
//! a current component would not get decided the same way.

mod convert;

use crate::bindings::v3;
use crate::bindings::{self as current, types};
use crate::capabilities::{HostState, ObjectHandle, ObjectListHandle};
use wasmtime::component::Resource;

pub use convert::registration;

impl v3::types::Host for HostState {}

impl v3::types::HostObject for HostState {
    fn name(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        types::HostObject::name(self, obj)
    }
    fn namespace(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<Option<String>> {
        types::HostObject::namespace(self, obj)
    }
    fn key(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        types::HostObject::key(self, obj)
    }
    fn uid(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        types::HostObject::uid(self, obj)
    }
    fn resource_version(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        types::HostObject::resource_version(self, obj)
    }
    fn label(&mut self, obj: Resource<ObjectHandle>, key: String) -> wasmtime::Result<Option<String>> {
        types::HostObject::label(self, obj, key)
    }
    fn meta(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<v3::types::ObjectMeta> {
        types::HostObject::meta(self, obj).map(Into::into)
    }
    fn json(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<String> {
        types::HostObject::json(self, obj)
    }
    fn duplicate(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<Resource<ObjectHandle>> {
        types::HostObject::duplicate(self, obj)
    }
    fn drop(&mut self, obj: Resource<ObjectHandle>) -> wasmtime::Result<()> {
        types::HostObject::drop(self, obj)
    }
}

impl v3::types::HostObjectList for HostState {
    fn len(&mut self, list: Resource<ObjectListHandle>) -> wasmtime::Result<u32> {
        types::HostObjectList::len(self, list)
    }
    fn get(
        &mut self,
        list: Resource<ObjectListHandle>,
        index: u32,
    ) -> wasmtime::Result<Option<Resource<ObjectHandle>>> {
        types::HostObjectList::get(self, list, index)
    }
    fn drop(&mut self, list: Resource<ObjectListHandle>) -> wasmtime::Result<()> {
        types::HostObjectList::drop(self, list)
    }
}

impl v3::wink::plugin::log::Host for HostState {
    fn log(&mut self, level: v3::types::Level, message: String) -> wasmtime::Result<()> {
        current::wink::plugin::log::Host::log(self, level.into(), message)
    }
}

type CacheReply<T> = wasmtime::Result<Result<T, v3::types::CacheError>>;

fn cache_reply<T, U: From<T>>(r: wasmtime::Result<Result<T, types::CacheError>>) -> CacheReply<U> {
    r.map(|r| r.map(Into::into).map_err(Into::into))
}

impl v3::wink::plugin::cache::Host for HostState {
    fn get(
        &mut self,
        resource: v3::types::ResourceType,
        key: String,
    ) -> CacheReply<Option<Resource<ObjectHandle>>> {
        cache_reply(current::wink::plugin::cache::Host::get(
            self,
            resource.into(),
            key,
        ))
    }
    fn list(
        &mut self,
        resource: v3::types::ResourceType,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> CacheReply<v3::types::Answer> {
        cache_reply(current::wink::plugin::cache::Host::list(
            self,
            resource.into(),
            namespace,
            label_selector,
        ))
    }
    fn by_index(
        &mut self,
        resource: v3::types::ResourceType,
        index: String,
        value: String,
    ) -> CacheReply<v3::types::Answer> {
        cache_reply(current::wink::plugin::cache::Host::by_index(
            self,
            resource.into(),
            index,
            value,
        ))
    }
    fn index_keys(
        &mut self,
        resource: v3::types::ResourceType,
        index: String,
        value: String,
    ) -> CacheReply<String> {
        cache_reply(current::wink::plugin::cache::Host::index_keys(
            self,
            resource.into(),
            index,
            value,
        ))
    }
    fn list_index_values(
        &mut self,
        resource: v3::types::ResourceType,
        index: String,
    ) -> CacheReply<Vec<String>> {
        cache_reply(current::wink::plugin::cache::Host::list_index_values(
            self,
            resource.into(),
            index,
        ))
    }
}

type WriteReply<T> = wasmtime::Result<Result<T, v3::types::WriteError>>;

fn write_reply<T, U>(
    r: wasmtime::Result<Result<T, types::WriteError>>,
    f: impl FnOnce(T) -> U,
) -> WriteReply<U> {
    r.map(|r| r.map(f).map_err(Into::into))
}

use current::wink::plugin::write::Host as W4;
use v3::wink::plugin::write as w3;

impl w3::Host for HostState {
    fn create(
        &mut self,
        resource: v3::types::ResourceType,
        body: String,
    ) -> WriteReply<Resource<ObjectHandle>> {
        write_reply(W4::create(self, resource.into(), body), |w| w.object)
    }
    fn replace(
        &mut self,
        resource: v3::types::ResourceType,
        body: String,
    ) -> WriteReply<Resource<ObjectHandle>> {
        write_reply(W4::replace(self, resource.into(), body), |w| w.object)
    }
    fn patch(
        &mut self,
        resource: v3::types::ResourceType,
        key: String,
        patch_type: w3::PatchType,
        body: String,
    ) -> WriteReply<Resource<ObjectHandle>> {
        write_reply(
            W4::patch(self, resource.into(), key, patch_type.into(), body),
            |w| w.object,
        )
    }
    fn delete(
        &mut self,
        resource: v3::types::ResourceType,
        key: String,
        options: w3::DeleteOptions,
    ) -> WriteReply<Option<Resource<ObjectHandle>>> {
        write_reply(W4::delete(self, resource.into(), key, options.into()), |d| {
            d.object
        })
    }
    fn replace_status(
        &mut self,
        resource: v3::types::ResourceType,
        body: String,
    ) -> WriteReply<Resource<ObjectHandle>> {
        write_reply(W4::replace_status(self, resource.into(), body), |w| w.object)
    }
    fn patch_status(
        &mut self,
        resource: v3::types::ResourceType,
        key: String,
        patch_type: w3::PatchType,
        body: String,
    ) -> WriteReply<Resource<ObjectHandle>> {
        write_reply(
            W4::patch_status(self, resource.into(), key, patch_type.into(), body),
            |w| w.object,
        )
    }
}

impl v3::wink::plugin::events::Host for HostState {
    fn record_event(
        &mut self,
        regarding: Resource<ObjectHandle>,
        type_: v3::wink::plugin::events::EventType,
        reason: String,
        action: String,
        note: String,
    ) -> WriteReply<()> {
        let answer = current::wink::plugin::events::Host::record_event(
            self,
            regarding,
            type_.into(),
            reason,
            action,
            note,
        );
        write_reply(answer, drop)
    }
}

impl v3::wink::plugin::report::Host for HostState {
    fn set_results(
        &mut self,
        subject: Resource<ObjectHandle>,
        results: Vec<v3::wink::plugin::report::PolicyResult>,
    ) -> wasmtime::Result<Result<(), String>> {
        let results = results.into_iter().map(Into::into).collect();
        current::wink::plugin::report::Host::set_results(self, subject, results)
    }
}
