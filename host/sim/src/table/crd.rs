//! Custom resources' tables: a CRD version's `additionalPrinterColumns`
//! (or, without any, the Age column the real server adds), their paths
//! read by `jsonpath`. As the API server does, the columns stop before the
//! first path that does not parse (it keeps the columns it built and logs
//! the printer specification as invalid); a CRD is refused only for what
//! the API server's validation refuses ([`validate`]).
//!
//! Owns: reading printer columns out of a CRD, checking and evaluating
//! them. Must not touch: the store (callers find the CRD) or the Table shape.

use super::jsonpath::{self, Step};
use super::{Column, age, name_column};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// One printer column of a CRD version.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    pub ty: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
    /// The parsed path; `None` for JSONPath beyond fields and indexes.
    pub steps: Option<Vec<Step>>,
}

/// The types and formats a printer column may declare (the API server's
/// `printerColumnDatatypes`, `customResourceColumnDefinitionFormats`).
const TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
const FORMATS: [&str; 8] = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// What the API server's CRD validation says of a version's printer
/// columns (`ValidateCustomResourceColumnDefinition`): `field: detail`
/// messages under `spec.versions[i].additionalPrinterColumns[j]`, the path
/// named `JSONPath` as the API server names it (its internal field name). A
/// path that starts with `.` passes, whether or not it parses.
pub fn validate(version_index: usize, version: &Value) -> Vec<String> {
    let Some(cols) = version.get("additionalPrinterColumns").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    for (j, c) in cols.iter().enumerate() {
        let at = format!("spec.versions[{version_index}].additionalPrinterColumns[{j}]");
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        let one_of = |set: &[&str]| format!("must be one of {}", set.join(","));
        if s("name").is_empty() {
            errs.push(format!("{at}.name: Required value"));
        }
        match s("type") {
            "" => errs.push(format!("{at}.type: Required value: {}", one_of(&TYPES))),
            t if !TYPES.contains(&t) => {
                errs.push(format!("{at}.type: Invalid value: {t:?}: {}", one_of(&TYPES)))
            }
            _ => {}
        }
        match s("format") {
            f if !f.is_empty() && !FORMATS.contains(&f) => {
                errs.push(format!("{at}.format: Invalid value: {f:?}: {}", one_of(&FORMATS)))
            }
            _ => {}
        }
        match s("jsonPath") {
            "" => errs.push(format!("{at}.JSONPath: Required value")),
            p if !p.starts_with('.') => errs.push(format!(
                "{at}.JSONPath: Invalid value: {p:?}: must be a simple json path starting with ."
            )),
            _ => {}
        }
    }
    errs
}

/// The printer columns of `version` in a CRD object, up to the first whose
/// path does not parse; the Age column when it declares none.
pub fn printer_columns(crd: &Value, version: &str) -> Vec<PrinterColumn> {
    let declared = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v["name"] == version))
        .and_then(|v| v.get("additionalPrinterColumns"))
        .and_then(Value::as_array)
        .filter(|cols| !cols.is_empty());
    let s = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match declared {
        Some(cols) => cols
            .iter()
            .map_while(|c| {
                let json_path = s(c, "jsonPath");
                let steps = jsonpath::parse(&json_path).ok()?;
                Some(PrinterColumn {
                    name: s(c, "name"),
                    ty: s(c, "type"),
                    format: s(c, "format"),
                    description: s(c, "description"),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                    json_path,
                    steps,
                })
            })
            .collect(),
        None => vec![PrinterColumn {
            name: "Age".into(),
            ty: "date".into(),
            format: String::new(),
            description:
                "CreationTimestamp is a timestamp representing the server time when this object was created."
                    .into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
            steps: Some(vec![
                Step::Field("metadata".into()),
                Step::Field("creationTimestamp".into()),
            ]),
        }],
    }
}

pub fn columns(cols: &[PrinterColumn]) -> Vec<Column> {
    let mut out = vec![name_column()];
    out.extend(
        cols.iter()
            .map(|c| Column::new(&c.name, &c.ty, &c.format, c.priority, &c.description)),
    );
    out
}

/// One cell: the value as the column's type wants it (`date` as an age),
/// `null` when the path finds nothing.
fn cell(c: &PrinterColumn, obj: &Value, now: DateTime<Utc>) -> Value {
    let Some(v) = c.steps.as_deref().and_then(|steps| jsonpath::lookup(obj, steps)) else {
        return Value::Null;
    };
    match (c.ty.as_str(), v) {
        ("date", _) => json!(age(Some(v), now)),
        ("integer", Value::Number(_)) | ("number", Value::Number(_)) | ("boolean", Value::Bool(_)) => {
            v.clone()
        }
        ("string", Value::String(_)) => v.clone(),
        (_, Value::String(s)) => json!(s),
        (_, other) => json!(other.to_string()),
    }
}

pub fn cells(cols: &[PrinterColumn], obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    cols.iter().map(|c| cell(c, obj, now)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_from_the_crd_version_or_age() {
        let crd = json!({"spec": {"versions": [
            {"name": "v1", "additionalPrinterColumns": [
                {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                {"name": "Phase", "type": "string", "jsonPath": ".status.conditions[0].type", "priority": 1},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]},
            {"name": "v2"}]}});
        let cols = printer_columns(&crd, "v1");
        assert_eq!(cols.len(), 3);
        assert_eq!((cols[1].name.as_str(), cols[1].priority), ("Phase", 1));
        let obj = json!({"metadata": {"name": "w", "creationTimestamp": Utc::now().to_rfc3339()},
            "spec": {"replicas": 2}, "status": {"conditions": [{"type": "Ready"}]}});
        let c = cells(&cols, &obj, Utc::now());
        assert_eq!(c[..2], [json!(2), json!("Ready")]);
        assert!(c[2].as_str().unwrap().ends_with('s'));
        assert_eq!(cells(&cols, &json!({}), Utc::now())[0], Value::Null);
        let age_only = printer_columns(&crd, "v2");
        assert_eq!(
            columns(&age_only)
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["Name", "Age"]
        );
    }

    #[test]
    fn columns_stop_before_a_path_that_does_not_parse() {
        let crd = json!({"spec": {"versions": [{"name": "v1", "additionalPrinterColumns": [
            {"name": "A", "type": "string", "jsonPath": ".spec.a"},
            {"name": "Bad", "type": "string", "jsonPath": ".spec.a[0]]"},
            {"name": "C", "type": "string", "jsonPath": ".spec.c"}]}]}});
        let cols = printer_columns(&crd, "v1");
        assert_eq!(cols.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["A"]);
        let obj = json!({"spec": {"a": "x"}});
        assert_eq!(cells(&cols, &obj, Utc::now()), [json!("x")]);
    }

    #[test]
    fn validation_as_the_api_server_does() {
        let v = json!({"additionalPrinterColumns": [
            {"name": "A", "type": "string", "jsonPath": ".spec.a[0]]"},
            {"name": "", "type": "text", "format": "x", "jsonPath": "spec.a"},
            {"name": "C", "type": "integer"}]});
        assert_eq!(
            validate(0, &v),
            [
                "spec.versions[0].additionalPrinterColumns[1].name: Required value",
                "spec.versions[0].additionalPrinterColumns[1].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string",
                "spec.versions[0].additionalPrinterColumns[1].format: Invalid value: \"x\": must be one of byte,date,date-time,double,float,int32,int64,password",
                "spec.versions[0].additionalPrinterColumns[1].JSONPath: Invalid value: \"spec.a\": must be a simple json path starting with .",
                "spec.versions[0].additionalPrinterColumns[2].JSONPath: Required value",
            ]
        );
    }
}
