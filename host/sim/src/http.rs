//! HTTP front of the simulated API server: parses Kubernetes REST paths and
//! query parameters, applies injected faults, dispatches to discovery, the
//! store (get/list/create/update/patch/delete/deletecollection), watch and
//! the access reviews (`authz`), and renders objects, lists and `Status` errors.
//!
//! Owns: request -> response. Must not touch: store internals (goes
//! through `write`/`State::list`), watch stream internals, the accept loop.

use super::Shared;
use super::admission::{self, flow};
use super::authz;
use super::decode;
use super::delete_options;
use super::discovery;
use super::events;
use super::limits;
use super::list;
use super::openapi;
use super::patch::{Patch, PatchType, undecodable};
use super::resources::ResourceDef;
use super::response::{Resp, error_response, json_response, qparam, selectors, value_response};
use super::scale;
use super::status::ApiError;
use super::store::{ListQuery, Obj, WriteMode};
use super::table::{self, TableRequest};
use super::watch::{self, WatchQuery, json_as};
use super::write::{self, Preconditions};
use super::write_mode;
use axum::body::Body;
use axum::http::{Method, Request, Response, header};
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// A parsed resource path.
#[derive(Debug, Clone, PartialEq)]
struct ResourcePath {
    group: String,
    version: String,
    ns: Option<String>,
    plural: String,
    name: Option<String>,
    sub: Option<String>,
}

fn parse_resource(group: &str, version: &str, rest: &[&str]) -> Option<ResourcePath> {
    let mk = |ns: Option<&str>, r: &[&str]| -> Option<ResourcePath> {
        if r.is_empty() || r.len() > 3 {
            return None;
        }
        Some(ResourcePath {
            group: group.into(),
            version: version.into(),
            ns: ns.map(String::from),
            plural: r[0].into(),
            name: r.get(1).map(|s| s.to_string()),
            sub: r.get(2).map(|s| s.to_string()),
        })
    };
    match rest {
        ["namespaces", _, "status" | "finalize"] => mk(None, rest),
        ["namespaces", ns, r @ ..] if !r.is_empty() => mk(Some(ns), r),
        r => mk(None, r),
    }
}

/// Answer one request.
pub async fn handle(shared: Arc<Shared>, req: Request<hyper::body::Incoming>) -> Resp {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query: HashMap<String, String> = parts
        .uri
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segs.first() == Some(&"_sim") {
        return super::admin::handle(&shared, &parts.method, &segs[1..], &query).await;
    }
    let resource = match segs.as_slice() {
        ["api", v, rest @ ..] if !rest.is_empty() => parse_resource("", v, rest),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => parse_resource(g, v, rest),
        _ => None,
    };
    let watching = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
    let mut request: Option<(&str, String)> = None;
    if let Some(rp) = &resource {
        let verb = match (&parts.method, rp.name.is_some()) {
            (&Method::GET, false) if watching => "watch",
            (&Method::GET, false) => "list",
            (&Method::GET, true) => "get",
            (&Method::POST, _) => "create",
            (&Method::PUT, _) => "update",
            (&Method::PATCH, _) => "patch",
            (&Method::DELETE, false) => "deletecollection",
            (&Method::DELETE, true) => "delete",
            _ => "other",
        };
        let res = match &rp.sub {
            Some(s) => format!("{}/{s}", rp.plural),
            None => rp.plural.clone(),
        };
        shared.stats.count(verb, &res);
        if verb == "watch" {
            let rv = query.get("resourceVersion").cloned().unwrap_or_default();
            shared.stats.watch_requested(&rp.plural, &rv);
        }
        request = Some((verb, res));
    }
    shared.faults.wait_unpaused().await;
    if let Some(d) = shared.faults.delay() {
        tokio::time::sleep(d).await;
    }
    let refused = resource.as_ref().filter(|_| !parts.method.is_safe());
    let refused = refused.and_then(|rp| shared.faults.refused_write(&rp.plural));
    let request = request.as_ref().map(|(v, r)| (*v, r.as_str()));
    if let Some(e) = shared
        .faults
        .take_failure(request)
        .map(ApiError::injected)
        .or(refused)
    {
        return error_response(&e);
    }
    let ct = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let result = match (segs.as_slice(), resource) {
        (_, Some(rp)) => {
            let bytes = match limits::read_body(Body::new(body)).await {
                Ok(b) => b,
                Err(e) => return error_response(&e),
            };
            // Admission webhooks are called from the blocking thread a write is served on.
            let writing = matches!(
                parts.method,
                Method::POST | Method::PUT | Method::PATCH | Method::DELETE
            );
            let adm = writing.then(|| admission::Ctx::new(&shared)).flatten();
            let off_thread = limits::off_thread(&ct, bytes.len()) || adm.is_some();
            let text = |h| parts.headers.get(h).and_then(|v| v.to_str().ok());
            let media = match table::requested(text(header::ACCEPT), &query) {
                Ok(table) => Media {
                    ct,
                    table,
                    watching,
                    user_agent: text(header::USER_AGENT).unwrap_or("").into(),
                },
                Err(e) => return error_response(&e),
            };
            let (shared, method, ctx) = (shared.clone(), parts.method, adm.clone());
            let serve = move || {
                super::depth::check(&media.ct, &bytes)?;
                serve_resource(&shared, &method, rp, &query, &media, bytes, ctx.as_deref())
            };
            let served = limits::serve_body(off_thread, serve).await;
            Ok(admission::with_warnings(
                served.unwrap_or_else(|e| error_response(&e)),
                adm.as_deref(),
            ))
        }
        (["version"], _) => Ok(value_response(200, &discovery::version())),
        (["healthz" | "livez" | "readyz", ..], _) => Ok(Response::new(Body::from("ok"))),
        (["api"], _) => Ok(value_response(
            200,
            &discovery::api_versions(&format!("127.0.0.1:{}", shared.port)),
        )),
        (["api", v], _) => discovery::resource_list(&shared.store.lock().registry, "", v)
            .map(|v| value_response(200, &v))
            .ok_or_else(ApiError::no_route),
        (["apis"], _) => Ok(value_response(
            200,
            &discovery::group_list(&shared.store.lock().registry),
        )),
        (["apis", g], _) => discovery::group(&shared.store.lock().registry, g)
            .map(|v| value_response(200, &v))
            .ok_or_else(ApiError::no_route),
        (["apis", g, v], _) => discovery::resource_list(&shared.store.lock().registry, g, v)
            .map(|v| value_response(200, &v))
            .ok_or_else(ApiError::no_route),
        (["openapi", "v2"], _) => Ok(openapi::v2(
            parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()),
        )),
        (["openapi", "v3"], _) => Ok(value_response(200, &openapi::root(&shared.store.lock().registry))),
        (["openapi", "v3", "api", v], _) => openapi::group_version(&shared.store.lock().registry, "", v)
            .map(|v| value_response(200, &v))
            .ok_or_else(ApiError::no_route),
        (["openapi", "v3", "apis", g, v], _) => openapi::group_version(&shared.store.lock().registry, g, v)
            .map(|v| value_response(200, &v))
            .ok_or_else(ApiError::no_route),
        _ => Err(ApiError::no_route()),
    };
    result.unwrap_or_else(|e| error_response(&e))
}

fn parse_body(ct: &str, bytes: &[u8]) -> Result<Value, ApiError> {
    let v: Value = if ct.contains("yaml") {
        serde_norway::from_slice(bytes).map_err(|e| ApiError::bad_request(e.to_string()))?
    } else if ct.starts_with("application/vnd.kubernetes.protobuf") {
        super::proto::object(bytes)?
    } else if ct.contains("protobuf") || ct.contains("cbor") {
        return Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml; got {ct}"
        )));
    } else {
        serde_json::from_slice(bytes)
            .map_err(|e| ApiError::bad_request(format!("the object provided is unrecognized: {e}")))?
    };
    if !v.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    Ok(v)
}

/// The media types of a request: its body's, and the Table it accepts.
struct Media {
    ct: String,
    table: Option<TableRequest>,
    /// A watch stream is asked for (`watch=true`).
    watching: bool,
    /// The User-Agent (what names the field manager of a write without `fieldManager`).
    user_agent: String,
}

fn serve_resource(
    shared: &Arc<Shared>,
    method: &Method,
    rp: ResourcePath,
    q: &HashMap<String, String>,
    media: &Media,
    body: Bytes,
    adm: Option<&admission::Ctx>,
) -> Result<Resp, ApiError> {
    let (ct, table) = (media.ct.as_str(), media.table);
    if let Some(review) = authz::review(&rp.group, &rp.version, &rp.plural) {
        let collection = rp.ns.is_none() && rp.name.is_none();
        let (code, v) = authz::serve(review, method, collection, || parse_body(ct, &body))?;
        return Ok(value_response(code, &v));
    }
    let def = shared
        .store
        .lock()
        .registry
        .by_path(&rp.group, &rp.version, &rp.plural)
        .ok_or_else(ApiError::no_route)?;
    if rp.ns.is_some() && !def.namespaced {
        return Err(ApiError::no_route());
    }
    match rp.sub.as_deref() {
        None => {}
        Some("status") if def.has_status => {}
        Some("scale") if def.scale.is_some() && rp.name.is_some() => {}
        Some(_) => return Err(ApiError::no_route()),
    }
    let mode = write_mode::of(q, method, ct, &media.user_agent)?;
    let timeout = match (method, &rp.name) {
        (&Method::GET | &Method::DELETE, None) => limits::timeout_seconds(q.get("timeoutSeconds"))?,
        _ => None,
    };
    let api_version = def.api_version(&rp.version);
    let mode = WriteMode {
        api_version: Some(api_version.clone()),
        ..mode
    };
    let ns = rp.ns.as_deref();
    let target = flow::Target {
        def: &def,
        version: &rp.version,
        sub: rp.sub.as_deref(),
        ns,
        mode: &mode,
    };
    if let (Some("scale"), Some(name)) = (rp.sub.as_deref(), rp.name.as_deref()) {
        return serve_scale(shared, method, &def, ns, name, ct, &body);
    }
    let status = rp.sub.is_some();
    match (method, rp.name.as_deref()) {
        (&Method::GET, None) if media.watching => {
            let (labels, fields) = selectors(&def, q)?;
            let wq = WatchQuery {
                resource_version: q.get("resourceVersion").cloned(),
                resource_version_match: q.get("resourceVersionMatch").cloned(),
                send_initial_events: q.get("sendInitialEvents").map(|s| s == "true" || s == "1"),
                bookmarks: matches!(qparam(q, "allowWatchBookmarks"), Some("true" | "1")),
                timeout,
                labels,
                fields,
                table,
            };
            let body = watch::start(shared.clone(), def, api_version, rp.ns, wq)?;
            Ok(Response::builder()
                .status(200)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::CACHE_CONTROL, "no-cache, private")
                .body(body)
                .expect("response"))
        }
        (&Method::GET, None) => list::list(shared, &def, &api_version, ns, q, table),
        (&Method::GET, Some(name)) => {
            let st = shared.store.lock();
            let key = super::store::key(ns, name);
            let o = st
                .table(&def.storage())
                .and_then(|t| t.objects.get(&key))
                .ok_or_else(|| ApiError::not_found(&def.qualified(), name))?;
            if let Some(req) = table {
                let printer = list::printer(&st, &def, &api_version);
                let meta = json!({"resourceVersion": o.rv.to_string()});
                return Ok(list::table_response(
                    &printer,
                    std::slice::from_ref(o),
                    &api_version,
                    req,
                    meta,
                ));
            }
            Ok(obj_response(200, o, &api_version))
        }
        (&Method::POST, None) => {
            let v = parse_body(ct, &body)?;
            let v = match adm {
                Some(a) => flow::create(shared, a, &target, v)?,
                None => v,
            };
            let o = write::create(
                &mut shared.store.lock_for_write(mode.clone()),
                &def,
                ns,
                &api_version,
                v,
            )?;
            Ok(obj_response(201, &o, &api_version))
        }
        (&Method::PUT, Some(name)) => {
            let v = parse_body(ct, &body)?;
            let v = match (adm, flow::current(shared, &target, name)) {
                (Some(a), Some(old)) => flow::update(shared, a, &target, name, &old.value, v, false)?,
                _ => v,
            };
            let mut st = shared.store.lock_for_write(mode.clone());
            let o = match write::update(&mut st, &def, ns, name, v.clone(), status) {
                // Events allow create on update (their strategy's AllowCreateOnUpdate).
                Err(e) if e.code == 404 && events::is_event(&def) && !status => {
                    let created = write::create(&mut st, &def, ns, &api_version, v)?;
                    return Ok(obj_response(201, &created, &api_version));
                }
                o => o?,
            };
            Ok(obj_response(200, &o, &api_version))
        }
        (&Method::PATCH, Some(name)) => {
            let ty = PatchType::from_content_type(ct)
                .ok_or_else(|| ApiError::unsupported_media_type("415: Unsupported Media Type"))?;
            // Parsed before locking the store; a malformed patch matters once the object exists.
            let parsed = Patch::parse(&body, ty);
            let key = super::store::key(ns.filter(|_| def.namespaced), name);
            let mut tries = 0;
            let o = loop {
                tries += 1;
                let mut st = shared.store.lock_for_write(mode.clone());
                let current = st
                    .table(&def.storage())
                    .and_then(|t| t.objects.get(&key))
                    .cloned();
                break match current {
                    Some(cur) => {
                        let p = parsed.as_ref().map_err(Clone::clone)?;
                        // Patched as the URL's version serves it (an Event through events.k8s.io).
                        let mut new = match events::is_events_group(&def) {
                            true => p.apply(&events::from_core(&cur.value))?,
                            false => p.apply(&cur.value)?,
                        };
                        decode::check(&def, &rp.version, &new).map_err(|why| undecodable(&new, &why))?;
                        // A patch without resourceVersion is unconditional.
                        if p.resource_version().is_none() {
                            new["metadata"]["resourceVersion"] = json!(cur.rv.to_string());
                        }
                        if let Some(a) = adm {
                            // Webhooks are called with the store unlocked: an unconditional
                            // patch that raced another write is made again (as the API server's
                            // patcher retries), a conditional one is a conflict.
                            drop(st);
                            new = flow::update(shared, a, &target, name, &cur.value, new, true)?;
                            st = shared.store.lock_for_write(mode.clone());
                        }
                        match write::update(&mut st, &def, ns, name, new, status) {
                            Err(e)
                                if e.code == 409
                                    && adm.is_some()
                                    && p.resource_version().is_none()
                                    && tries < 5 =>
                            {
                                continue;
                            }
                            r => (r?, 200),
                        }
                    }
                    None if ty == PatchType::Apply && !status => {
                        let mut v = parsed.as_ref().map_err(Clone::clone)?.apply(&json!({}))?;
                        decode::check(&def, &rp.version, &v).map_err(|why| undecodable(&v, &why))?;
                        v["metadata"]["name"] = json!(name);
                        if let Some(a) = adm {
                            drop(st);
                            v = flow::create(shared, a, &target, v)?;
                            st = shared.store.lock_for_write(mode.clone());
                        }
                        // An apply that creates answers 201 Created.
                        (write::create(&mut st, &def, ns, &api_version, v)?, 201)
                    }
                    None => return Err(ApiError::not_found(&def.qualified(), name)),
                };
            };
            Ok(obj_response(o.1, &o.0, &api_version))
        }
        (&Method::DELETE, Some(name)) => {
            let pre = delete_options::preconditions(&body, ct, q)?;
            let mode = write_mode::with_delete_options(mode.clone(), &body);
            if let Some(a) = adm {
                let target = flow::Target {
                    mode: &mode,
                    ..target
                };
                flow::delete(shared, a, &target, name, &body)?;
            }
            let (o, gone) = write::delete(&mut shared.store.lock_for_write(mode), &def, ns, name, &pre)?;
            let code = if gone { 200 } else { 202 };
            if returns_object(&def) || !gone {
                Ok(obj_response(code, &o, &api_version))
            } else {
                let mut d = json!({"name": name, "kind": def.plural, "uid": o.value["metadata"]["uid"]});
                if !def.group.is_empty() {
                    d["group"] = json!(def.group);
                }
                Ok(value_response(
                    code,
                    &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                    "status": "Success", "details": d}),
                ))
            }
        }
        (&Method::DELETE, None) => {
            let (labels, fields) = selectors(&def, q)?;
            let propagation = delete_options::preconditions(&body, ct, q)?.propagation;
            // Each object is admitted as its own DELETE; a refused one stays,
            // the others go, and the first refusal is the answer.
            let (refused, first_refusal) = match adm {
                Some(a) => {
                    let mode = write_mode::with_delete_options(mode.clone(), &body);
                    let query = ListQuery {
                        ns,
                        labels: Some(&labels),
                        fields: Some(&fields),
                        ..Default::default()
                    };
                    let items = shared.store.lock().list(&def.qualified(), &query)?.items;
                    flow::delete_each(
                        shared,
                        a,
                        &flow::Target {
                            mode: &mode,
                            ..target
                        },
                        &items,
                        &body,
                    )
                }
                None => Default::default(),
            };
            let mut st = shared.store.lock();
            let page = st.list(
                &def.qualified(),
                &ListQuery {
                    ns,
                    labels: Some(&labels),
                    fields: Some(&fields),
                    ..Default::default()
                },
            )?;
            let mut out = Vec::new();
            for o in page.items {
                let ons = o
                    .value
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .map(String::from);
                let pre = Preconditions {
                    propagation: propagation.clone(),
                    ..Default::default()
                };
                if refused.contains(&(ons.clone(), o.name().to_string())) {
                    continue;
                }
                if let Ok((d, _)) = write::delete(&mut st, &def, ons.as_deref(), o.name(), &pre) {
                    out.push(d);
                }
            }
            let rv = st.rv;
            if let Some(e) = first_refusal {
                return Err(e);
            }
            Ok(list::list_response(&def, &api_version, &out, rv, None))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn serve_scale(
    shared: &Arc<Shared>,
    method: &Method,
    def: &Arc<ResourceDef>,
    ns: Option<&str>,
    name: &str,
    ct: &str,
    body: &[u8],
) -> Result<Resp, ApiError> {
    let v = match *method {
        Method::GET => scale::get(&shared.store.lock(), def, ns, name)?,
        Method::PUT => scale::put(&mut shared.store.lock(), def, ns, name, &parse_body(ct, body)?)?,
        Method::PATCH => {
            let ty = PatchType::from_content_type(ct)
                .ok_or_else(|| ApiError::unsupported_media_type("415: Unsupported Media Type"))?;
            let parsed = Patch::parse(body, ty);
            scale::patch(&mut shared.store.lock(), def, ns, name, parsed)?
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    Ok(value_response(200, &v))
}

fn returns_object(def: &ResourceDef) -> bool {
    def.crd.is_some()
        || matches!(
            def.plural.as_str(),
            "pods" | "services" | "namespaces" | "customresourcedefinitions"
        )
}

fn obj_response(code: u16, o: &Obj, api_version: &str) -> Resp {
    json_response(code, json_as(o, api_version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_tokens() {
        let p = parse_resource("", "v1", &["namespaces", "default", "pods", "a"]).unwrap();
        assert_eq!(
            (p.ns.as_deref(), p.plural.as_str(), p.name.as_deref()),
            (Some("default"), "pods", Some("a"))
        );
        let n = parse_resource("", "v1", &["namespaces", "default"]).unwrap();
        assert_eq!(
            (n.ns, n.plural.as_str(), n.name.as_deref()),
            (None, "namespaces", Some("default"))
        );
        let s = parse_resource("", "v1", &["namespaces", "x", "status"]).unwrap();
        assert_eq!(
            (s.plural.as_str(), s.sub.as_deref()),
            ("namespaces", Some("status"))
        );
    }
}
