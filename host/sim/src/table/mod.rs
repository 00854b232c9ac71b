//! Server-side Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`,
//! what `kubectl get` asks for): the `meta.k8s.io` Table of a list, an
//! object or a watch event, with the columns the real API server's printers
//! give each built-in type (`printers`), a CRD's `additionalPrinterColumns`
//! (`crd`, their paths read by `jsonpath`), and the default Name / Created
//! At otherwise. `includeObject` (`None`, `Metadata` (the default),
//! `Object`) says what each row carries.
//!
//! Owns: content negotiation of tables, the Table shape, age formatting.
//! Must not touch: the store (callers hand in objects and, for custom
//! resources, the CRD's columns) or HTTP routing.

mod cells;
pub mod crd;
mod jsonpath;
mod policy_cells;
mod policy_printers;
#[cfg(test)]
mod policy_tests;
pub mod printers;

use super::resources::ResourceDef;
use super::status::ApiError;
use serde_json::{Value, json};
use std::collections::HashMap;

/// What each row carries besides its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

/// A request for Table output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableRequest {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`, as accepted.
    pub api_version: &'static str,
    pub include: Include,
}

/// The Table the `Accept` header asks for, if any (the first media range
/// that is a Table wins; `v1` preferred when both are listed).
pub fn requested(
    accept: Option<&str>,
    q: &HashMap<String, String>,
) -> Result<Option<TableRequest>, ApiError> {
    let Some(accept) = accept else { return Ok(None) };
    let mut version = None;
    for range in accept.split(',') {
        let params: Vec<(&str, &str)> = range
            .split(';')
            .skip(1)
            .filter_map(|p| p.trim().split_once('='))
            .collect();
        let get = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        if get("as") == Some("Table") && get("g") == Some("meta.k8s.io") {
            match get("v") {
                Some("v1") => {
                    version = Some("meta.k8s.io/v1");
                    break;
                }
                Some("v1beta1") if version.is_none() => version = Some("meta.k8s.io/v1beta1"),
                _ => {}
            }
        }
    }
    let Some(api_version) = version else {
        return Ok(None);
    };
    let include = match q.get("includeObject").map(String::as_str) {
        None | Some("") | Some("Metadata") => Include::Metadata,
        Some("None") => Include::None,
        Some("Object") => Include::Object,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            )));
        }
    };
    Ok(Some(TableRequest { api_version, include }))
}

/// One column definition as the API server describes it.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub ty: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
}

impl Column {
    pub fn new(name: &str, ty: &str, format: &str, priority: i64, description: &str) -> Column {
        Column {
            name: name.into(),
            ty: ty.into(),
            format: format.into(),
            description: description.into(),
            priority,
        }
    }

    fn to_json(&self) -> Value {
        json!({"name": self.name, "type": self.ty, "format": self.format,
            "description": self.description, "priority": self.priority})
    }
}

/// How the rows of a type are printed.
pub enum Printer {
    /// A built-in type's printer.
    Builtin(&'static printers::Printer),
    /// A custom resource's columns (additionalPrinterColumns, or Age).
    Crd(Vec<crd::PrinterColumn>),
    /// Name and Created At.
    Default,
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, \
    although some resources may allow a client to request the generation of an appropriate name \
    automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot \
    be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATED_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this \
    object was created. It is not guaranteed to be set in happens-before order across separate operations. \
    Clients may not set this value. It is represented in RFC3339 form and is in UTC.";

/// The Name column every printer starts with.
pub fn name_column() -> Column {
    Column::new("Name", "string", "name", 0, NAME_DESCRIPTION)
}

impl Printer {
    /// The printer of a type; `crd_columns` are the CRD's columns of the
    /// version asked for (custom resources only).
    pub fn of(def: &ResourceDef, crd_columns: Option<Vec<crd::PrinterColumn>>) -> Printer {
        if def.crd.is_some() {
            return Printer::Crd(crd_columns.unwrap_or_default());
        }
        match printers::find(&def.group, &def.plural) {
            Some(p) => Printer::Builtin(p),
            None => Printer::Default,
        }
    }

    fn columns(&self) -> Vec<Column> {
        match self {
            Printer::Builtin(p) => {
                let mut c = match p.named() {
                    true => vec![name_column()],
                    false => vec![],
                };
                c.extend(
                    p.columns.iter().map(|(n, t, pr, d)| {
                        Column::new(n, t, if *n == "Name" { "name" } else { "" }, *pr, d)
                    }),
                );
                c
            }
            Printer::Crd(cols) => crd::columns(cols),
            Printer::Default => vec![
                name_column(),
                Column::new("Created At", "date", "", 0, CREATED_DESCRIPTION),
            ],
        }
    }

    fn cells(&self, obj: &Value, now: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
        let name = json!(
            obj.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
        );
        let mut cells = vec![name];
        match self {
            Printer::Builtin(p) if !p.named() => return (p.cells)(obj, now),
            Printer::Builtin(p) => {
                cells[0] = json!(p.name(obj));
                cells.extend((p.cells)(obj, now))
            }
            Printer::Crd(cols) => cells.extend(crd::cells(cols, obj, now)),
            Printer::Default => cells.push(
                obj.pointer("/metadata/creationTimestamp")
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
        }
        cells
    }
}

fn row(printer: &Printer, obj: &Value, req: TableRequest, now: chrono::DateTime<chrono::Utc>) -> Value {
    let mut r = json!({"cells": printer.cells(obj, now)});
    match req.include {
        Include::None => {}
        Include::Metadata => {
            // In the Table's own version of meta.k8s.io.
            r["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": req.api_version,
                "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))});
        }
        Include::Object => r["object"] = obj.clone(),
    }
    r
}

/// The Table of `objects` (a list, one object, or one watch event's object).
pub fn table(printer: &Printer, objects: &[&Value], req: TableRequest, list_meta: Value) -> Value {
    let now = chrono::Utc::now();
    json!({
        "kind": "Table",
        "apiVersion": req.api_version,
        "metadata": list_meta,
        "columnDefinitions": printer.columns().iter().map(Column::to_json).collect::<Vec<_>>(),
        "rows": objects.iter().map(|o| row(printer, o, req, now)).collect::<Vec<_>>(),
    })
}

/// The age of a timestamp as kubectl prints it (`<unknown>` when absent).
pub fn age(ts: Option<&Value>, now: chrono::DateTime<chrono::Utc>) -> String {
    let Some(t) = ts
        .and_then(Value::as_str)
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
    else {
        return "<unknown>".into();
    };
    human_duration((now - t.with_timezone(&chrono::Utc)).num_seconds())
}

/// apimachinery's `duration.HumanDuration`, from seconds.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return match secs % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiates_tables() {
        let q = HashMap::new();
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        let r = requested(Some(kubectl), &q).unwrap().unwrap();
        assert_eq!((r.api_version, r.include), ("meta.k8s.io/v1", Include::Metadata));
        let beta = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";
        assert_eq!(
            requested(Some(beta), &q).unwrap().unwrap().api_version,
            "meta.k8s.io/v1beta1"
        );
        assert_eq!(requested(Some("application/json"), &q).unwrap(), None);
        assert_eq!(requested(None, &q).unwrap(), None);
        let q: HashMap<_, _> = [("includeObject".to_string(), "Object".to_string())].into();
        assert_eq!(
            requested(Some(kubectl), &q).unwrap().unwrap().include,
            Include::Object
        );
        let q: HashMap<_, _> = [("includeObject".to_string(), "All".to_string())].into();
        assert_eq!(requested(Some(kubectl), &q).unwrap_err().code, 400);
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        let cases = [
            (-5, "<invalid>"),
            (59, "59s"),
            (119, "119s"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (30 * 3600, "30h"),
            (3 * 86400 + 3600, "3d1h"),
            (100 * 86400, "100d"),
            (3 * 365 * 86400 + 86400, "3y1d"),
            (10 * 365 * 86400, "10y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs}");
        }
        assert_eq!(age(None, chrono::Utc::now()), "<unknown>");
    }

    #[test]
    fn default_table_and_included_objects() {
        let obj = json!({"metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:00Z"}, "data": {}});
        let mut req = TableRequest {
            api_version: "meta.k8s.io/v1",
            include: Include::Metadata,
        };
        let t = table(&Printer::Default, &[&obj], req, json!({"resourceVersion": "7"}));
        assert_eq!(t["kind"], "Table");
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Name", "Created At"]);
        assert_eq!(t["rows"][0]["cells"], json!(["a", "2024-01-01T00:00:00Z"]));
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert!(t["rows"][0]["object"].get("data").is_none());
        req.include = Include::None;
        let t = table(&Printer::Default, &[&obj], req, json!({}));
        assert!(t["rows"][0].get("object").is_none());
        req.include = Include::Object;
        let t = table(&Printer::Default, &[&obj], req, json!({}));
        assert_eq!(t["rows"][0]["object"], obj);
    }
}
