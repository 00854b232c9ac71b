//! A minimal OpenAPI v3 surface (`/openapi/v3` and one document per group
//! version) describing each resource's paths, operations (with their
//! `x-kubernetes-group-version-kind`) and query parameters, schemaless.
//! kubectl reads it to learn that the server validates fields itself
//! (`fieldValidation`), so `kubectl create -f` needs no client-side schema.
//! `/openapi/v2` is served too, without paths or definitions (see [`v2`]).
//!
//! Owns: the OpenAPI JSON. Must not touch: storage or routing.

use super::authz;
use super::proto;
use super::resources::{Registry, ResourceDef};
use axum::body::Body;
use axum::http::{Response, header};
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
    gvs.push((authz::GROUP.into(), authz::VERSION.into()));
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
    if (group, version) == (authz::GROUP, authz::VERSION) {
        authz::openapi_paths(&mut paths);
        any = true;
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

const V2_TITLE: &str = "Kubernetes";
const V2_VERSION: &str = "v1.32.0-wink-sim";
/// The media types `/openapi/v2` is served in, the real handler's order:
/// JSON, protobuf under its deprecated name (what kubectl asks for; the
/// answer is labelled with the current one, as `@` is not valid in a
/// `Content-Type`) and protobuf.
const V2_TYPES: [&str; 3] = [
    "application/json",
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    V2_PROTOBUF,
];
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `GET /openapi/v2`: a Swagger 2.0 document with no paths and no
/// definitions, as JSON or (gnostic `openapi_v2.Document`) protobuf by
/// `Accept` (none: JSON; nothing acceptable: 406, as the real handler).
/// kubectl validates client-side what it cannot leave to the server's field
/// validation (the items of a `List`) against these definitions: with none,
/// it leaves them to the server.
pub fn v2(accept: Option<&str>) -> Response<Body> {
    let accept = accept.filter(|a| !a.trim().is_empty()).unwrap_or("*/*");
    let matched = accept.split(',').find_map(|clause| {
        let want = clause.split(';').next().unwrap_or("").trim();
        let (wt, ws) = want.split_once('/')?;
        V2_TYPES.into_iter().find(|t| {
            let (tt, ts) = t.split_once('/').expect("type/subtype");
            (wt == "*" || wt == tt) && (ws == "*" || ws == ts)
        })
    });
    let Some(ct) = matched else {
        return Response::builder()
            .status(406)
            .body(Body::empty())
            .expect("response");
    };
    let body = if ct == V2_TYPES[0] {
        json!({"swagger": "2.0", "info": {"title": V2_TITLE, "version": V2_VERSION}, "paths": {}})
            .to_string()
            .into_bytes()
    } else {
        let mut info = Vec::new();
        proto::put(&mut info, 1, V2_TITLE.as_bytes());
        proto::put(&mut info, 2, V2_VERSION.as_bytes());
        let mut doc = Vec::new();
        proto::put(&mut doc, 1, b"2.0");
        proto::put(&mut doc, 2, &info);
        proto::put(&mut doc, 8, b""); // paths
        doc
    };
    Response::builder()
        .status(200)
        .header(
            header::CONTENT_TYPE,
            if ct == V2_TYPES[0] { ct } else { V2_PROTOBUF },
        )
        .body(Body::from(body))
        .expect("response")
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
        let authz = group_version(&r, "authorization.k8s.io", "v1").unwrap();
        let ssar = &authz["paths"]["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"];
        assert_eq!(ssar["post"]["x-kubernetes-action"], "post");
    }

    #[tokio::test]
    async fn v2_is_negotiated() {
        let ct = |r: &Response<Body>| r.headers()[header::CONTENT_TYPE].to_str().unwrap().to_string();
        let r = v2(Some(V2_TYPES[1]));
        assert_eq!((r.status().as_u16(), ct(&r)), (200, V2_PROTOBUF.to_string()));
        let pb = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        assert_eq!(&pb[..5], b"\x0a\x032.0");
        let r = v2(None);
        assert_eq!(ct(&r), "application/json");
        let doc: Value =
            serde_json::from_slice(&axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap()).unwrap();
        assert_eq!((&doc["swagger"], &doc["paths"]), (&json!("2.0"), &json!({})));
        assert_eq!(v2(Some("application/*;q=0.9")).status(), 200);
        assert_eq!(v2(Some("text/html")).status(), 406);
    }
}
