//! The end-to-end suites, one module each, in one test binary: each would
//! otherwise link its own copy of wasmtime, kube and the simulator (about
//! 40 MB apiece on disk, and a link each). Run one suite with its module's
//! name as the filter: `cargo test -p wink-e2e --test e2e dev::`.
//!
//! The `*_support` modules and `common` are what the suites share; the
//! benchmarks include `common` by path.

mod cache_support;
mod common;
mod debian_support;
mod envtest;
mod informer_support;
mod kubectl_support;
mod lang_support;
mod registry_support;
mod report_support;
mod runtime_support;

mod admin;
mod admin_limits;
mod admission;
mod admission_examples;
mod admission_metrics;
mod author;
mod author_exceptions;
mod author_scope;
mod batches;
mod cache_plugins;
mod cache_scope;
mod contract;
mod daemon_start;
mod dev;
mod exceptions;
mod exceptions_webhooks;
mod grant_escapes;
mod grants_reload;
mod hostile_admission;
mod hostile_admission_audit;
mod hostile_files;
mod hostile_network;
mod hostile_queue;
mod hostile_registry;
mod informer_scenarios;
mod informer_watch;
mod lang_memory;
mod languages;
mod leader;
mod library;
mod manifests;
mod manual;
mod new_anywhere;
mod observability;
mod oci_registry;
mod oci_wkg;
mod plugins_act;
mod policy_reports;
mod pss_conformance;
mod readme_paths;
mod real_admission;
mod real_deploy;
mod real_differential;
mod real_exceptions;
mod real_informer;
mod real_kubectl;
mod real_leader;
mod real_library;
mod real_reconcile;
mod real_reports;
mod real_scope;
mod real_team_plugins;
mod real_winkplugins;
mod real_writes;
mod reconcile;
mod reconcile_acceptance;
mod reference_docs;
mod repeated_errors;
mod runtime_limits;
mod runtime_recovery;
mod runtime_tier_up;
mod sandbox;
mod scope;
mod sdk_rust;
mod sim_admission;
mod sim_builtins;
mod sim_control;
mod sim_decode;
mod sim_events;
mod sim_faults;
mod sim_kubectl;
mod sim_paging;
mod sim_semantics;
mod sim_watcher;
mod skeleton;
mod team_caps;
mod team_plugins;
mod team_selector;
mod winkplugins;
