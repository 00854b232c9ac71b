//! The two report APIs wink can write the same results to: the Policy
//! WG's `wgpolicyk8s.io/v1alpha2` PolicyReport / ClusterPolicyReport, and
//! its successor `openreports.io/v1alpha1` Report / ClusterReport (the
//! same shape under new names, with a report-level `source`). Owns the
//! names: group, version, kinds, plurals, short names, CRD names.

use std::fmt;

/// Which API the reports are written in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReportApi {
    /// `wgpolicyk8s.io/v1alpha2` PolicyReport and ClusterPolicyReport.
    #[default]
    Wgpolicyk8s,
    /// `openreports.io/v1alpha1` Report and ClusterReport.
    OpenReports,
}

impl ReportApi {
    /// Both, the default first.
    pub const ALL: [ReportApi; 2] = [ReportApi::Wgpolicyk8s, ReportApi::OpenReports];

    /// The name the command line gives it: `wgpolicyk8s` or `openreports`.
    pub fn name(self) -> &'static str {
        match self {
            ReportApi::Wgpolicyk8s => "wgpolicyk8s",
            ReportApi::OpenReports => "openreports",
        }
    }

    /// The API group.
    pub fn group(self) -> &'static str {
        match self {
            ReportApi::Wgpolicyk8s => "wgpolicyk8s.io",
            ReportApi::OpenReports => "openreports.io",
        }
    }

    /// The version wink writes.
    pub fn version(self) -> &'static str {
        match self {
            ReportApi::Wgpolicyk8s => "v1alpha2",
            ReportApi::OpenReports => "v1alpha1",
        }
    }

    /// `group/version`.
    pub fn api_version(self) -> &'static str {
        match self {
            ReportApi::Wgpolicyk8s => "wgpolicyk8s.io/v1alpha2",
            ReportApi::OpenReports => "openreports.io/v1alpha1",
        }
    }

    /// The kind of a namespaced report, or of a cluster one.
    pub fn kind(self, namespaced: bool) -> &'static str {
        match (self, namespaced) {
            (ReportApi::Wgpolicyk8s, true) => "PolicyReport",
            (ReportApi::Wgpolicyk8s, false) => "ClusterPolicyReport",
            (ReportApi::OpenReports, true) => "Report",
            (ReportApi::OpenReports, false) => "ClusterReport",
        }
    }

    /// The resource (plural) of a namespaced report, or of a cluster one.
    pub fn plural(self, namespaced: bool) -> &'static str {
        match (self, namespaced) {
            (ReportApi::Wgpolicyk8s, true) => "policyreports",
            (ReportApi::Wgpolicyk8s, false) => "clusterpolicyreports",
            (ReportApi::OpenReports, true) => "reports",
            (ReportApi::OpenReports, false) => "clusterreports",
        }
    }

    /// The short name `kubectl get` takes.
    pub fn short_name(self, namespaced: bool) -> &'static str {
        match (self, namespaced) {
            (ReportApi::Wgpolicyk8s, true) => "polr",
            (ReportApi::Wgpolicyk8s, false) => "cpolr",
            (ReportApi::OpenReports, true) => "reps",
            (ReportApi::OpenReports, false) => "creps",
        }
    }

    /// The CRD names, the namespaced kind's first.
    pub fn crd_names(self) -> [String; 2] {
        [true, false].map(|ns| format!("{}.{}", self.plural(ns), self.group()))
    }
}

impl fmt::Display for ReportApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_of_each_api() {
        let w = ReportApi::Wgpolicyk8s;
        assert_eq!(
            w.crd_names(),
            [
                "policyreports.wgpolicyk8s.io",
                "clusterpolicyreports.wgpolicyk8s.io"
            ]
        );
        assert_eq!(
            (w.kind(true), w.kind(false)),
            ("PolicyReport", "ClusterPolicyReport")
        );
        let o = ReportApi::OpenReports;
        assert_eq!(o.api_version(), "openreports.io/v1alpha1");
        assert_eq!(o.api_version(), format!("{}/{}", o.group(), o.version()));
        assert_eq!(
            o.crd_names(),
            ["reports.openreports.io", "clusterreports.openreports.io"]
        );
        assert_eq!((o.kind(true), o.kind(false)), ("Report", "ClusterReport"));
        assert_eq!((o.short_name(true), o.short_name(false)), ("reps", "creps"));
        assert_eq!(ReportApi::default(), w);
        assert_eq!(o.to_string(), "openreports");
    }
}
