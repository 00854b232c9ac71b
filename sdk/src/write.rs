//! Writes to the API server, as this plugin: create, replace, patch and
//! delete (and the `status` subresource). A write must be declared in the
//! registration ([`Registration::writes`](crate::Registration::writes)) and
//! granted by the operator, else it answers [`WriteError::NotPermitted`].
//! Failures are values, never traps: match on [`WriteError`] (`AlreadyExists`,
//! `Conflict`, `NotFound`, `Invalid` with its causes, `TooManyRequests` with
//! its retry-after, ...).
//!
//! ```no_run
//! # #[cfg(feature = "k8s-openapi")] {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use wink_sdk::write::{self, WriteError};
//! use wink_sdk::Resource;
//!
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("defaults".into());
//! cm.metadata.namespace = Some("team-a".into());
//! match write::create(&cm) {
//!     Ok(_) | Err(write::Error::Write(WriteError::AlreadyExists(_))) => {}
//!     Err(e) => wink_sdk::warn!("create failed: {e}"),
//! }
//! let patch = serde_json::json!({"metadata": {"labels": {"team": "unassigned"}}});
//! let _ = write::merge_patch(&Resource::new("apps/v1", "Deployment"), "default/web", &patch);
//! # }
//! ```

use crate::bindings::wink::plugin::types;
use crate::bindings::wink::plugin::write as wit;
use crate::{Kind, Object, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use types::{ApiStatus, StatusCause, WriteError};
pub use wit::{DeleteOptions, PatchType, Propagation};

impl WriteError {
    /// The server's Status, when the server answered.
    pub fn status(&self) -> Option<&ApiStatus> {
        match self {
            WriteError::AlreadyExists(s)
            | WriteError::Conflict(s)
            | WriteError::NotFound(s)
            | WriteError::Invalid(s)
            | WriteError::Forbidden(s)
            | WriteError::TooManyRequests(s)
            | WriteError::Timeout(s)
            | WriteError::InternalError(s)
            | WriteError::Other(s) => Some(s),
            WriteError::NotPermitted(_) | WriteError::InvalidArgument(_) | WriteError::Unavailable(_) => None,
        }
    }
}

/// A failed typed write.
#[derive(Debug)]
pub enum Error {
    /// The host refused, or the server answered with an error.
    Write(WriteError),
    /// The object did not encode, or the answer did not decode.
    Json(serde_json::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Write(e) => match e.status() {
                Some(s) => write!(f, "write failed: {} {}: {}", s.code, s.reason, s.message),
                None => write!(f, "write failed: {e:?}"),
            },
            Error::Json(e) => write!(f, "JSON: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<WriteError> for Error {
    fn from(e: WriteError) -> Self {
        Error::Write(e)
    }
}

fn object(handle: types::Object) -> Object {
    Object::from_owned(handle, None)
}

/// Create an object from its JSON (apiVersion, kind, name and namespace set).
pub fn create_json(resource: &Resource, body: &str) -> Result<Object, WriteError> {
    wit::create(resource.as_wit(), body).map(object)
}

/// Replace an object (a stale `metadata.resourceVersion` answers `Conflict`).
pub fn replace_json(resource: &Resource, body: &str) -> Result<Object, WriteError> {
    wit::replace(resource.as_wit(), body).map(object)
}

/// Patch the object under `key` (`namespace/name`, or `name`).
pub fn patch_json(
    resource: &Resource,
    key: &str,
    patch_type: PatchType,
    body: &str,
) -> Result<Object, WriteError> {
    wit::patch(resource.as_wit(), key, patch_type, body).map(object)
}

/// Merge-patch (RFC 7386) the object under `key` with `patch`.
pub fn merge_patch(resource: &Resource, key: &str, patch: &serde_json::Value) -> Result<Object, WriteError> {
    patch_json(resource, key, PatchType::Merge, &patch.to_string())
}

/// Delete the object under `key`: the object while it is being finalized,
/// none once it is gone.
pub fn delete(resource: &Resource, key: &str, options: &DeleteOptions) -> Result<Option<Object>, WriteError> {
    wit::delete(resource.as_wit(), key, options).map(|o| o.map(object))
}

/// Replace the `status` subresource.
pub fn replace_status_json(resource: &Resource, body: &str) -> Result<Object, WriteError> {
    wit::replace_status(resource.as_wit(), body).map(object)
}

/// Patch the `status` subresource of the object under `key`.
pub fn patch_status_json(
    resource: &Resource,
    key: &str,
    patch_type: PatchType,
    body: &str,
) -> Result<Object, WriteError> {
    wit::patch_status(resource.as_wit(), key, patch_type, body).map(object)
}

fn typed<K: Kind + Serialize + DeserializeOwned>(
    obj: &K,
    write: impl FnOnce(&Resource, &str) -> Result<Object, WriteError>,
) -> Result<K, Error> {
    let body = serde_json::to_string(obj).map_err(Error::Json)?;
    let written = write(&Resource::of::<K>(), &body)?;
    written.decode().map_err(Error::Json)
}

/// Create a typed object (e.g. a `k8s-openapi` struct); answers it as written.
pub fn create<K: Kind + Serialize + DeserializeOwned>(obj: &K) -> Result<K, Error> {
    typed(obj, create_json)
}

/// Replace a typed object; answers it as written.
pub fn replace<K: Kind + Serialize + DeserializeOwned>(obj: &K) -> Result<K, Error> {
    typed(obj, replace_json)
}

// The type is generated from the WIT, so it cannot derive it here.
#[allow(clippy::derivable_impls)]
impl Default for DeleteOptions {
    fn default() -> Self {
        DeleteOptions {
            uid: None,
            resource_version: None,
            propagation: None,
        }
    }
}
