//! Discovery documents in the legacy (unaggregated) format: `/version`,
//! `/api`, `/api/v1`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`.
//! Clients asking for aggregated discovery (apidiscovery.k8s.io/v2) get these
//! with `Content-Type: application/json` and fall back, as they do against
//! servers without aggregated discovery.
//!
//! Owns: the JSON of those documents. Must not touch: storage or routing.

use super::authz;
use super::resources::Registry;
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-wink-sim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs[0].clone()})
}

/// The registry's groups and the authorization.k8s.io reviews.
fn groups(reg: &Registry) -> BTreeMap<String, Vec<String>> {
    let mut groups = reg.groups();
    let vs = groups.entry(authz::GROUP.to_string()).or_default();
    if !vs.iter().any(|v| v == authz::VERSION) {
        vs.push(authz::VERSION.to_string());
    }
    groups
}

pub fn group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = groups(reg).iter().map(|(g, vs)| group_json(g, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn group(reg: &Registry, name: &str) -> Option<Value> {
    let groups = groups(reg);
    let vs = groups.get(name)?;
    let mut g = group_json(name, vs);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

/// `APIResourceList` of one group version; None when nothing is served there.
pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for d in reg
        .all()
        .filter(|d| d.group == group && d.versions.iter().any(|v| v == version))
    {
        let mut verbs = vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ];
        if d.plural == "namespaces" {
            verbs.retain(|v| *v != "deletecollection");
        }
        let mut r = json!({
            "name": d.plural,
            "singularName": d.singular,
            "namespaced": d.namespaced,
            "kind": d.kind,
            "verbs": verbs,
        });
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        if !d.categories.is_empty() {
            r["categories"] = json!(d.categories);
        }
        resources.push(r);
        if d.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", d.plural),
                "singularName": "",
                "namespaced": d.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
        if d.has_status {
            resources.push(json!({
                "name": format!("{}/status", d.plural),
                "singularName": "",
                "namespaced": d.namespaced,
                "kind": d.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    if (group, version) == (authz::GROUP, authz::VERSION) {
        resources.extend(authz::discovery_resources());
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents() {
        let r = Registry::with_builtins();
        let core = resource_list(&r, "", "v1").unwrap();
        let pods = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == "pods")
            .unwrap();
        assert_eq!(pods["shortNames"][0], "po");
        assert!(resource_list(&r, "", "v2").is_none());
        let groups = group_list(&r);
        assert!(
            groups["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["name"] == "apps")
        );
        assert_eq!(
            group(&r, "apps").unwrap()["preferredVersion"]["groupVersion"],
            "apps/v1"
        );
        let authz = resource_list(&r, "authorization.k8s.io", "v1").unwrap();
        let ssar = &authz["resources"][0];
        assert_eq!(
            (&ssar["name"], &ssar["kind"], &ssar["namespaced"], &ssar["verbs"]),
            (
                &json!("selfsubjectaccessreviews"),
                &json!("SelfSubjectAccessReview"),
                &json!(false),
                &json!(["create"])
            )
        );
        assert!(group(&r, "authorization.k8s.io").is_some());
    }
}
