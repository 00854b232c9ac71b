//! Which field labels a field selector may name, per kind: the API server's
//! field label conversion functions for the built-in types (each registered
//! beside its type in Kubernetes' `pkg/apis/*/v1/conversion.go`), besides
//! `metadata.name` and `metadata.namespace`, which every kind accepts.
//!
//! Owns that table only; the simulated API server and the offline harness
//! both read it, so a selector the one accepts the other accepts too.

/// The field labels besides `metadata.name` and `metadata.namespace` that
/// the API server accepts in a field selector on `kind` of API `group`
/// (`""` for the core group). None for a kind with no others, and for
/// custom resources (which accept only those two).
pub fn field_labels(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("", "Pod") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "Event") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("events.k8s.io", "Event") => &[
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "type",
        ],
        ("", "Secret") => &["type"],
        ("", "Namespace") => &["status.phase"],
        ("", "Node") => &["spec.unschedulable"],
        ("", "ReplicationController") | ("apps", "ReplicaSet") => &["status.replicas"],
        ("batch", "Job") => &["status.successful"],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FieldSelector;

    #[test]
    fn a_kind_accepts_its_own_labels_and_refuses_others() {
        let pods = field_labels("", "Pod");
        assert!(FieldSelector::parse("spec.nodeName=n1,status.phase!=Failed", pods).is_ok());
        assert!(FieldSelector::parse("metadata.name=x", field_labels("example.com", "Widget")).is_ok());
        assert!(FieldSelector::parse("spec.nodeName=n1", field_labels("", "ConfigMap")).is_err());
        assert!(FieldSelector::parse("status.replicas=0", field_labels("apps", "ReplicaSet")).is_ok());
        // The same kind name in another group is another table.
        assert!(FieldSelector::parse("involvedObject.name=x", field_labels("", "Event")).is_ok());
        assert!(
            FieldSelector::parse("involvedObject.name=x", field_labels("events.k8s.io", "Event")).is_err()
        );
    }
}
