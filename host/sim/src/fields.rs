//! Field selectors as the API server applies them to one resource type: the
//! selector of a request, its labels checked against the ones the type
//! accepts ([`ResourceDef::field_labels`]), matched against the type's
//! selectable fields. For most types those are the object's own fields; for
//! Events they are the set the event strategy builds, named as the group
//! the request went through names them (`events`).
//!
//! Owns: parsing a request's field selector for a type and matching it.
//! Must not touch: the store, HTTP, the selector grammar (`wink_selector`).

use super::events;
use super::resources::ResourceDef;
use serde_json::Value;
use wink_selector::FieldSelector;

/// A request's field selector on one resource type.
#[derive(Debug, Clone, Default)]
pub struct Fields {
    selector: FieldSelector,
    /// The selectable fields of a stored object, when not the object itself.
    selectable: Option<fn(&Value) -> Value>,
}

impl Fields {
    /// Parse `s` as a field selector on `def`; errors read as the API server's.
    pub fn parse(def: &ResourceDef, s: &str) -> Result<Fields, String> {
        let selectable: Option<fn(&Value) -> Value> = if events::is_core(def) {
            Some(events::core_selectable)
        } else if events::is_events_group(def) {
            Some(events::events_selectable)
        } else {
            None
        };
        Ok(Fields {
            selector: FieldSelector::parse(s, def.field_labels())?,
            selectable,
        })
    }

    /// Whether this selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.selector.is_empty()
    }

    /// Whether the stored object `obj` is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        if self.selector.is_empty() {
            return true;
        }
        match self.selectable {
            Some(f) => self.selector.matches(&f(obj)),
            None => self.selector.matches(obj),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use serde_json::json;

    #[test]
    fn events_match_their_selectable_fields_in_either_group() {
        let r = Registry::with_builtins();
        let core = r.get("events").unwrap();
        let group = r.by_path(events::GROUP, "v1", "events").unwrap();
        let stored = json!({"metadata": {"name": "e", "namespace": "d"}, "reason": "Scaled",
            "involvedObject": {"kind": "Deployment", "name": "web", "uid": "u"},
            "reportingComponent": "deployment-controller", "source": {}});
        let ok = |def: &ResourceDef, s: &str| Fields::parse(def, s).unwrap().matches(&stored);
        assert!(ok(
            core,
            "involvedObject.name=web,involvedObject.kind=Deployment,involvedObject.uid=u"
        ));
        assert!(ok(
            core,
            "source=deployment-controller,reportingComponent=deployment-controller"
        ));
        assert!(!ok(core, "involvedObject.name=api"));
        assert!(
            ok(core, "involvedObject.namespace="),
            "an empty field reads as empty"
        );
        assert!(ok(
            &group,
            "regarding.name=web,reportingController=deployment-controller,reason=Scaled"
        ));
        assert!(ok(&group, "source=deployment-controller,metadata.name=e"));
        assert!(!ok(&group, "regarding.kind=Pod"));
        let refused = Fields::parse(&group, "involvedObject.name=web").unwrap_err();
        assert_eq!(refused, "field label not supported: involvedObject.name");
        assert!(Fields::parse(core, "regarding.name=web").is_err());
        assert!(Fields::parse(core, "note=x").is_err());
        let cm = r.get("configmaps").unwrap();
        assert!(Fields::parse(cm, "metadata.name=e").unwrap().matches(&stored));
        assert!(Fields::parse(cm, "").unwrap().is_empty());
    }
}
