//! Custom resources' tables: a CRD version's `additionalPrinterColumns`
//! (or, without any, the Age column the real server adds), with their
//! `jsonPath` read through a subset of JSONPath: dotted fields and list
//! indexes (`.spec.replicas`, `.status.conditions[0].type`, `.metadata.labels.app`).
//!
//! Owns: reading printer columns out of a CRD and evaluating them. Must
//! not touch: the store (callers find the CRD) or the Table shape.

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
}

/// The printer columns of `version` in a CRD object; the Age column when
/// it declares none.
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
            .map(|c| PrinterColumn {
                name: s(c, "name"),
                ty: s(c, "type"),
                format: s(c, "format"),
                description: s(c, "description"),
                priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                json_path: s(c, "jsonPath"),
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

/// The value at a simple JSONPath (`.a.b[0].c`), if any.
pub fn lookup<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut cur = obj;
    for part in path.trim_start_matches('$').split('.').filter(|p| !p.is_empty()) {
        let (field, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !field.is_empty() {
            cur = cur.get(field)?;
        }
        while let Some(close) = rest.find(']') {
            let index: usize = rest[1..close].trim().parse().ok()?;
            cur = cur.get(index)?;
            rest = &rest[close + 1..];
        }
    }
    Some(cur)
}

/// One cell: the value as the column's type wants it (`date` as an age),
/// `null` when the path finds nothing.
fn cell(c: &PrinterColumn, obj: &Value, now: DateTime<Utc>) -> Value {
    let Some(v) = lookup(obj, &c.json_path) else {
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
    fn json_paths() {
        let o = json!({"a": {"b": [{"c": 1}, {"c": [5, 6]}]}, "m": {"k.x": "v"}});
        assert_eq!(lookup(&o, ".a.b[0].c"), Some(&json!(1)));
        assert_eq!(lookup(&o, "{.a.b[1].c[1]}"), Some(&json!(6)));
        assert_eq!(lookup(&o, ".a.z"), None);
        assert_eq!(lookup(&o, ".a.b[7]"), None);
    }
}
