//! Lists: one page of a collection (`limit`, `continue` tokens,
//! `resourceVersion` and `resourceVersionMatch` semantics), answered as a
//! `<Kind>List` or, when asked, as a `meta.k8s.io` Table; and the Table of
//! a single object.
//!
//! Owns: list query semantics, continue tokens, list and table responses.
//! Must not touch: the store's snapshot internals (goes through
//! `State::list`) or routing (`http`).

use super::Shared;
use super::meta::parse_rv;
use super::resources::ResourceDef;
use super::response::{Resp, json_response, qparam, selectors, value_response};
use super::status::ApiError;
use super::store::{ListQuery, Obj, State};
use super::table::{self, Printer, TableRequest};
use super::watch::json_as;
use base64::Engine;
use bytes::BytesMut;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// How rows of `def` are printed; a custom resource's columns come from its
/// CRD's `api_version` version.
pub fn printer(st: &State, def: &ResourceDef, api_version: &str) -> Printer {
    let columns = def.crd.as_deref().map(|crd| {
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        st.table("customresourcedefinitions.apiextensions.k8s.io")
            .and_then(|t| t.objects.get(crd))
            .map(|o| table::crd::printer_columns(&o.value, version))
            .unwrap_or_else(|| table::crd::printer_columns(&Value::Null, version))
    });
    Printer::of(def, columns)
}

/// The Table of `items`, read through `api_version`.
pub fn table_response(
    printer: &Printer,
    items: &[Arc<Obj>],
    api_version: &str,
    req: TableRequest,
    meta: Value,
) -> Resp {
    let values: Vec<Value> = items
        .iter()
        .map(|o| super::events::as_version(&o.value, api_version))
        .collect();
    let refs: Vec<&Value> = values.iter().collect();
    value_response(200, &table::table(printer, &refs, req, meta))
}

pub fn list_response(
    def: &ResourceDef,
    api_version: &str,
    items: &[Arc<Obj>],
    rv: u64,
    cont: Option<String>,
) -> Resp {
    let mut b = BytesMut::with_capacity(256 + items.iter().map(|o| o.json.len() + 1).sum::<usize>());
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    b.extend_from_slice(
        format!(
            "{{\"kind\":\"{}List\",\"apiVersion\":\"{api_version}\",\"metadata\":{meta},\"items\":[",
            def.kind
        )
        .as_bytes(),
    );
    for (i, o) in items.iter().enumerate() {
        if i > 0 {
            b.extend_from_slice(b",");
        }
        b.extend_from_slice(&json_as(o, api_version));
    }
    b.extend_from_slice(b"]}");
    json_response(200, b.freeze())
}

fn encode_continue(rv: u64, start: &str) -> String {
    let t = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{start}\u{0}")});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t.to_string())
}

fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad("invalid json"))?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(|| bad("no rv"))?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no start"))?;
    Ok((rv, start.trim_end_matches('\u{0}').to_string()))
}

pub fn list(
    shared: &Arc<Shared>,
    def: &ResourceDef,
    api_version: &str,
    ns: Option<&str>,
    q: &HashMap<String, String>,
    table: Option<TableRequest>,
) -> Result<Resp, ApiError> {
    let (labels, fields) = selectors(def, q)?;
    let limit = match qparam(q, "limit") {
        Some(l) => Some(
            l.parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?,
        ),
        None => None,
    };
    let rv = qparam(q, "resourceVersion");
    let rvm = qparam(q, "resourceVersionMatch");
    let st = shared.store.lock();
    let (snapshot, start, from_continue) = match (qparam(q, "continue"), rv, rvm) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        (Some(c), None, None) => {
            let (rv, start) = decode_continue(c)?;
            (Some(rv), Some(start), true)
        }
        (None, None, Some(_)) => {
            return Err(ApiError::bad_request(
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        (None, None, None) | (None, Some("0"), None | Some("NotOlderThan")) => (None, None, false),
        (None, Some(r), m @ (None | Some("NotOlderThan") | Some("Exact"))) => {
            let n = parse_rv(r)?;
            if n > st.rv {
                return Err(ApiError::too_large(n, st.rv));
            }
            (if m == Some("Exact") { Some(n) } else { None }, None, false)
        }
        (None, Some(_), Some(m)) => {
            return Err(ApiError::bad_request(format!(
                "resourceVersionMatch: Unsupported value: \"{m}\""
            )));
        }
    };
    let page = st
        .list(
            &def.storage(),
            &ListQuery {
                ns,
                labels: Some(&labels),
                fields: Some(&fields),
                snapshot,
                start_after: start.as_deref(),
                limit,
            },
        )
        .map_err(|e| match (from_continue, snapshot) {
            (false, Some(n)) if e.code == 410 => {
                ApiError::too_old(n, st.table(&def.storage()).map_or(0, |t| t.compacted_rv))
            }
            _ => e,
        })?;
    let printer = table.map(|_| printer(&st, def, api_version));
    drop(st);
    let cont = page.more_after.as_deref().map(|k| encode_continue(page.rv, k));
    if let (Some(req), Some(printer)) = (table, printer) {
        let mut meta = json!({"resourceVersion": page.rv.to_string()});
        if let Some(c) = cont {
            meta["continue"] = json!(c);
        }
        return Ok(table_response(&printer, &page.items, api_version, req, meta));
    }
    Ok(list_response(def, api_version, &page.items, page.rv, cont))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens() {
        let t = encode_continue(42, "default/a");
        assert_eq!(decode_continue(&t).unwrap(), (42, "default/a".to_string()));
        assert_eq!(decode_continue("!!").unwrap_err().code, 400);
    }
}
