//! A minimal OpenAPI v3 surface (`/openapi/v3` and one document per group
//! version) describing each resource's paths, operations (with their
//! `x-kubernetes-group-version-kind`) and query parameters, schemaless.
//! kubectl reads it to learn that the server validates fields itself
//! (`fieldValidation`), so `kubectl create -f` needs no client-side schema.
//!
//! Owns: the OpenAPI JSON. Must not touch: storage or routing.

use super::resources::{Registry, ResourceDef};
use serde_json::{Map, Value, json};

/// `group/version` path keys of the root document: `api/v1`, `apis/apps/v1`.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The root document listing one document per served group version.
pub fn root(reg: &Registry) -> Value {
    let mut paths = Map::new();
    let mut gvs: Vec<(String, String)> = reg
        .all()
        .flat_map(|d| d.versions.iter().map(|v| (d.group.clone(), v.clone())))
        .collect();
    gvs.sort();
    gvs.dedup();
    for (g, v) in gvs {
        let p = gv_path(&g, &v);
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}")}),
        );
    }
    json!({"paths": paths})
}

fn param(name: &str, location: &str) -> Value {
    json!({"name": name, "in": location, "required": location == "path",
        "schema": {"type": "string", "uniqueItems": true}})
}

fn op(def: &ResourceDef, version: &str, action: &str) -> Value {
    // Real documents list the query parameters on the operation.
    let params: Vec<Value> = match action {
        "post" | "put" | "patch" => ["dryRun", "fieldManager", "fieldValidation"]
            .iter()
            .map(|p| param(p, "query"))
            .collect(),
        _ => vec![],
    };
    json!({
        "parameters": params,
        "operationId": format!("{action}{}", def.kind),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": def.group, "version": version, "kind": def.kind},
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}}
    })
}

/// The document of one group version; None when nothing is served there.
pub fn group_version(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut paths = Map::new();
    let prefix = format!("/{}", gv_path(group, version));
    let mut any = false;
    for d in reg
        .all()
        .filter(|d| d.group == group && d.versions.iter().any(|v| v == version))
    {
        any = true;
        let base = if d.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", d.plural)
        } else {
            format!("{prefix}/{}", d.plural)
        };
        let mut scope = vec![];
        if d.namespaced {
            scope.push(param("namespace", "path"));
        }
        let write_params = ["dryRun", "fieldManager", "fieldValidation", "pretty"];
        let mut coll_params = scope.clone();
        coll_params.extend(write_params.iter().map(|p| param(p, "query")));
        for p in [
            "labelSelector",
            "fieldSelector",
            "limit",
            "continue",
            "resourceVersion",
            "resourceVersionMatch",
            "watch",
            "allowWatchBookmarks",
            "sendInitialEvents",
            "timeoutSeconds",
        ] {
            coll_params.push(param(p, "query"));
        }
        paths.insert(
            base.clone(),
            json!({
                "parameters": coll_params,
                "get": op(d, version, "list"),
                "post": op(d, version, "post"),
                "delete": op(d, version, "deletecollection"),
            }),
        );
        let mut item_params = vec![param("name", "path")];
        item_params.extend(scope.iter().cloned());
        item_params.extend(write_params.iter().map(|p| param(p, "query")));
        item_params.push(param("force", "query"));
        let item = json!({
            "parameters": item_params,
            "get": op(d, version, "get"),
            "put": op(d, version, "put"),
            "patch": op(d, version, "patch"),
            "delete": op(d, version, "delete"),
        });
        if d.has_status {
            paths.insert(format!("{base}/{{name}}/status"), item.clone());
        }
        paths.insert(format!("{base}/{{name}}"), item);
    }
    any.then(|| {
        json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0-wink-sim"},
            "paths": paths,
            "components": {"schemas": {}}
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_name_every_group_version_and_patch_operation() {
        let r = Registry::with_builtins();
        let root = root(&r);
        assert_eq!(
            root["paths"]["apis/apps/v1"]["serverRelativeURL"],
            "/openapi/v3/apis/apps/v1"
        );
        let core = group_version(&r, "", "v1").unwrap();
        let cm = &core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
        assert_eq!(
            cm["patch"]["x-kubernetes-group-version-kind"]["kind"],
            "ConfigMap"
        );
        assert!(
            cm["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(group_version(&r, "nope", "v1").is_none());
    }
}
