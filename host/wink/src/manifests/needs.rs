//! What `wink manifests` renders from: each plugin's declarations read from
//! its component, intersected with the operator's grants. Owns that reading;
//! the rendering is [`super::render`]'s.

use super::{Deployment, PluginNeeds, render, to_yaml};
use crate::runtime::grants::Grants;
use crate::runtime::manager::declared_writes;
use std::path::Path;

/// The deployment (YAML) for the plugins of `plugins` under the grants of
/// `grants`. What a plugin declares but is not granted is said on stderr
/// and left out of the RBAC.
pub fn read(
    plugins: &Path,
    grants: Option<&Path>,
    namespace: String,
    image: String,
) -> anyhow::Result<String> {
    let (grant_text, parsed) = match grants {
        Some(path) => (Some(std::fs::read_to_string(path)?), Grants::load(path)?),
        None => (None, Grants::default()),
    };
    let mut needs = Vec::new();
    for plugin in crate::runtime::offline::registrations(plugins)? {
        let (name, registration) = (plugin.name, plugin.registration);
        let declared = declared_writes(&registration);
        let (permissions, missing) = parsed.permissions(&name, &declared, registration.records_events);
        if !missing.is_empty() {
            eprintln!(
                "wink manifests: {name} declares what is not granted (not in the RBAC): {}",
                missing.snippet(&name)
            );
        }
        let watches = registration.watches.iter().map(|w| (&w.resource, &w.namespace));
        let reads = registration.reads.iter().map(|r| (&r.resource, &r.namespace));
        let reads = watches
            .chain(reads)
            .map(|(res, ns)| (res.api_version.clone(), res.kind.clone(), ns.clone()))
            .collect();
        needs.push(PluginNeeds {
            name,
            reads,
            permissions,
            reports: plugin.reports,
        });
    }
    let deployment = Deployment {
        namespace,
        image,
        grants: grant_text,
    };
    Ok(to_yaml(&render(&needs, &deployment)))
}
