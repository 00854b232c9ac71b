//! The one decision of what a plugin may have under the operator's grants,
//! made from its registration alone, before anything is listed: each watch
//! and read in its canonical spelling (Secrets only with a grant, namespaces
//! checked as the API server checks them), and which of the writes and
//! Events it declares are granted. `wink run` resolves a registration from
//! it ([`super::PluginManager`]'s `resolve`, which then checks what
//! discovery answers too) and `wink manifests` renders RBAC from it, so the
//! two cannot differ. Owns that decision only: no informer, no RBAC text.

use super::registration::{Source, declared_writes, sources};
use crate::bindings::types::Registration;
use crate::grants::{Declared, Grants, Missing, Permissions};
use wink_informer::canonical::{Gvk, names};

/// What a plugin may have: its watches and reads, and its writes.
pub struct Allowed<'a> {
    /// Each watch, then each read, with its type in the canonical spelling.
    pub sources: Vec<(Gvk, Source<'a>)>,
    /// The writes the registration declares.
    pub declared: Vec<Declared>,
    /// What of them (and of Events) is granted.
    pub permissions: Permissions,
    /// What it declares and is not granted.
    pub missing: Missing,
}

/// What `plugin` may have with `registration` under `grants`; an error, one
/// sentence naming the plugin, when `wink run` would not load it at all (a
/// watch or read it may not have, a namespace or a spelling the API server
/// would refuse).
pub fn allowed<'a>(
    grants: &Grants,
    plugin: &str,
    registration: &'a Registration,
) -> Result<Allowed<'a>, String> {
    let mut allowed_sources = Vec::new();
    for source in sources(registration) {
        let gvk = grants.may_read(plugin, &source.resource.api_version, &source.resource.kind)?;
        if let Some(ns) = source.namespace
            && let Err(e) = names::namespace(ns)
        {
            return Err(format!("plugin {plugin}: {gvk}: {e}"));
        }
        allowed_sources.push((gvk, source));
    }
    let declared = declared_writes(registration);
    for d in &declared {
        Gvk::parse(&d.api_version, &d.kind).map_err(|e| format!("plugin {plugin} declares writes: {e}"))?;
    }
    let (permissions, missing) = grants.permissions(plugin, &declared, registration.records_events);
    Ok(Allowed {
        sources: allowed_sources,
        declared,
        permissions,
        missing,
    })
}
