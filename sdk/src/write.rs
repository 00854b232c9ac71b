//! Writes to the API server, as this plugin: create, replace, patch and
//! delete (and the `status` subresource). A write must be declared in the
//! registration ([`Registration::writes`](crate::Registration::writes)) and
//! granted by the operator, else it answers [`WriteError::NotPermitted`].
//! Failures are values, never traps: match on [`WriteError`] (`AlreadyExists`,
//! `Conflict`, `NotFound`, `Invalid` with its causes, `TooManyRequests` with
//! its retry-after, ...). A success says whether anything changed: a plugin
//! the operator runs in audit mode gets [`Written::DryRun`] (the server
//! validated the write and stored nothing), so it can say "would label"
//! rather than "labeled".
//!
//! When to make a write conditional: a merge patch that sets a few fields
//! (a label, an annotation) is safe without a precondition, since it changes
//! only what it names, whatever else changed since the plugin read the
//! object. Put `metadata.resourceVersion` in the body (a replace, or a patch
//! that must not act on a newer version) only when the write depends on
//! the whole object as read: the server answers `Conflict` when it changed,
//! and the plugin reads the newer version from the cache and decides again.
//! Objects fresh from their controllers (a Deployment right after its
//! creation) change several times in their first second: expect conflicts
//! there. The host retries a conflict's write once the plugin asks again
//! without counting it against the plugin's write rate.
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

/// What a write answered: the object as the API server returned it, and
/// whether the write was applied or only a dry run (audit mode: validated,
/// nothing changed).
#[derive(Debug, Clone)]
pub enum Written<T = Object> {
    /// The write was applied.
    Applied(T),
    /// The write was a server-side dry run: nothing changed.
    DryRun(T),
}

impl<T> Written<T> {
    /// The object, applied or not.
    pub fn object(&self) -> &T {
        match self {
            Written::Applied(o) | Written::DryRun(o) => o,
        }
    }

    /// The object, applied or not.
    pub fn into_object(self) -> T {
        match self {
            Written::Applied(o) | Written::DryRun(o) => o,
        }
    }

    /// Whether nothing changed (audit mode).
    pub fn is_dry_run(&self) -> bool {
        matches!(self, Written::DryRun(_))
    }

    /// The same outcome for another value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Written<U> {
        match self {
            Written::Applied(o) => Written::Applied(f(o)),
            Written::DryRun(o) => Written::DryRun(f(o)),
        }
    }

    fn new(object: T, dry_run: bool) -> Self {
        if dry_run {
            Written::DryRun(object)
        } else {
            Written::Applied(object)
        }
    }
}

fn object(w: wit::Written) -> Written {
    Written::new(Object::from_owned(w.object, None), w.dry_run)
}

/// Create an object from its JSON (apiVersion, kind, name and namespace set).
pub fn create_json(resource: &Resource, body: &str) -> Result<Written, WriteError> {
    wit::create(resource.as_wit(), body).map(object)
}

/// Replace an object (a stale `metadata.resourceVersion` answers `Conflict`).
pub fn replace_json(resource: &Resource, body: &str) -> Result<Written, WriteError> {
    wit::replace(resource.as_wit(), body).map(object)
}

/// Patch the object under `key` (`namespace/name`, or `name`).
pub fn patch_json(
    resource: &Resource,
    key: &str,
    patch_type: PatchType,
    body: &str,
) -> Result<Written, WriteError> {
    wit::patch(resource.as_wit(), key, patch_type, body).map(object)
}

/// Merge-patch (RFC 7386) the object under `key` with `patch`.
pub fn merge_patch(resource: &Resource, key: &str, patch: &serde_json::Value) -> Result<Written, WriteError> {
    patch_json(resource, key, PatchType::Merge, &patch.to_string())
}

/// Delete the object under `key`: the object while it is being finalized,
/// none once it is gone.
pub fn delete(
    resource: &Resource,
    key: &str,
    options: &DeleteOptions,
) -> Result<Written<Option<Object>>, WriteError> {
    wit::delete(resource.as_wit(), key, options)
        .map(|d| Written::new(d.object.map(|o| Object::from_owned(o, None)), d.dry_run))
}

/// Replace the `status` subresource.
pub fn replace_status_json(resource: &Resource, body: &str) -> Result<Written, WriteError> {
    wit::replace_status(resource.as_wit(), body).map(object)
}

/// Patch the `status` subresource of the object under `key`.
pub fn patch_status_json(
    resource: &Resource,
    key: &str,
    patch_type: PatchType,
    body: &str,
) -> Result<Written, WriteError> {
    wit::patch_status(resource.as_wit(), key, patch_type, body).map(object)
}

fn typed<K: Kind + Serialize + DeserializeOwned>(
    obj: &K,
    write: impl FnOnce(&Resource, &str) -> Result<Written, WriteError>,
) -> Result<Written<K>, Error> {
    let body = serde_json::to_string(obj).map_err(Error::Json)?;
    let written = write(&Resource::of::<K>(), &body)?;
    let dry_run = written.is_dry_run();
    let object = written.object().decode().map_err(Error::Json)?;
    Ok(Written::new(object, dry_run))
}

/// Create a typed object (e.g. a `k8s-openapi` struct); answers it as written.
pub fn create<K: Kind + Serialize + DeserializeOwned>(obj: &K) -> Result<Written<K>, Error> {
    typed(obj, create_json)
}

/// Replace a typed object; answers it as written.
pub fn replace<K: Kind + Serialize + DeserializeOwned>(obj: &K) -> Result<Written<K>, Error> {
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
