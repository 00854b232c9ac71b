//! Policy reports: plugins' pass/fail results about objects, kept current in
//! `wgpolicyk8s.io/v1alpha2` PolicyReports and ClusterPolicyReports, or in
//! `openreports.io/v1alpha1` Reports and ClusterReports ([`ReportApi`]):
//! one layout, the same results and batching, rendered in either API.
//!
//! Data flows one way: the `report` capability (in the plugin runtime) puts
//! each call's results into the [`Aggregator`]; the [`ReportWriter`] task
//! lays them out into reports ([`layout`]) and writes what changed, batched,
//! as the leader only. The CRDs are in [`crd`].
//!
//! Layout: one set of reports per namespace (and one for cluster-scoped
//! subjects), split before the size limit, as Kyverno's per-namespace
//! reports were, rather than one report per subject as Kubewarden and
//! Kyverno now write them. Measured with the `reports` benchmark: batched
//! per namespace, a churn of 1,000 pod changes takes a few dozen writes,
//! where one report per subject takes one write per changed subject (about
//! one per change); the price is a larger body per write, bounded by the
//! split.

pub mod aggregate;
pub mod api;
pub mod crd;
pub mod layout;
pub mod stats;
pub mod writer;

pub use aggregate::{Aggregator, Held, Outcome, PolicyResult, Scope, Severity, Subject};
pub use api::ReportApi;
pub use stats::WriteStats;
pub use writer::{Census, CensusFn, Phase, ReportWriter, WriterOptions};
