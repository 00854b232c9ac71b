//! Requests to the API server, built from typed parts only: a resource
//! resolved through discovery, a namespace and a name checked as the API
//! server checks them (`wink_informer::canonical::names`), escaped path segments,
//! and a query serialised from fields, never from text a plugin gave.
//!
//! Owns the URL of every write and Event and [`check_sent`], the check
//! every request passes at the one place requests are sent: nothing cut off,
//! every query parameter once, and `dryRun=All` on every request that must
//! be a dry run.

use crate::bindings::types::WriteError;
use http::Method;
use kube::api::ApiResource;
use wink_informer::canonical::names::{self, escape_segment};

/// A write a plugin asks for, resolved to a request.
pub struct Request {
    pub method: Method,
    /// Path and query.
    pub uri: String,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

/// The query of a request: each parameter at most once, in this order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub field_manager: Option<String>,
    /// `dryRun=All`: a server-side dry run.
    pub dry_run: bool,
    /// `force=true` (a server-side apply taking fields over).
    pub force: bool,
}

impl Query {
    fn encode(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        if let Some(manager) = &self.field_manager {
            q.append_pair("fieldManager", manager);
        }
        if self.dry_run {
            q.append_pair("dryRun", "All");
        }
        if self.force {
            q.append_pair("force", "true");
        }
        q.finish()
    }
}

/// The path of `ar`'s collection, in `namespace` when given: every segment
/// escaped, none checked (see [`Target::uri`] for what a write sends).
pub fn collection_path(ar: &ApiResource, namespace: Option<&str>) -> String {
    let mut path = match ar.group.as_str() {
        "" => format!("/api/{}", escape_segment(&ar.version)),
        group => format!("/apis/{}/{}", escape_segment(group), escape_segment(&ar.version)),
    };
    if let Some(ns) = namespace {
        path.push_str("/namespaces/");
        path.push_str(&escape_segment(ns));
    }
    path.push('/');
    path.push_str(&escape_segment(&ar.plural));
    path
}

/// Where a request goes: a collection, or an object (and a subresource).
pub struct Target<'a> {
    pub ar: &'a ApiResource,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
    pub subresource: Option<&'static str>,
}

impl Target<'_> {
    /// The path and query, once the namespace and the name are checked.
    pub fn uri(&self, query: &Query) -> Result<String, WriteError> {
        let invalid = |e: wink_informer::canonical::Refused| WriteError::InvalidArgument(e.0);
        if let Some(ns) = self.namespace {
            names::namespace(ns).map_err(invalid)?;
        }
        let mut uri = collection_path(self.ar, self.namespace);
        if let Some(name) = self.name {
            names::object_name(&self.ar.group, name).map_err(invalid)?;
            uri.push('/');
            uri.push_str(&escape_segment(name));
        }
        if let Some(sub) = self.subresource {
            uri.push('/');
            uri.push_str(&escape_segment(sub));
        }
        let query = query.encode();
        if !query.is_empty() {
            uri.push('?');
            uri.push_str(&query);
        }
        Ok(uri)
    }
}

/// The check every request passes just before it is sent, on the URI as it
/// will go out (`sent`, as the HTTP stack parsed it) against the one it was
/// built as (`built`): nothing cut off or added, no `.` or `..` segment,
/// every query parameter at most once, and `dryRun=All` when `dry_run`.
/// A request failing it is not sent.
pub fn check_sent(built: &str, sent: &str, dry_run: bool) -> Result<(), WriteError> {
    let refuse = |why: String| {
        tracing::error!("a request was not sent: {why}");
        Err(WriteError::InvalidArgument(format!(
            "the request was not sent: {why}"
        )))
    };
    if built != sent || built.contains('#') {
        return refuse(format!("its URI {built:?} would go out as {sent:?}"));
    }
    let (path, query) = built.split_once('?').unwrap_or((built, ""));
    if path.split('/').any(|s| s == "." || s == "..") {
        return refuse(format!("its path {path:?} holds a dot segment"));
    }
    let mut seen: Vec<String> = Vec::new();
    for (key, _) in form_urlencoded::parse(query.as_bytes()) {
        if seen.iter().any(|k| *k == key) {
            return refuse(format!("its query {query:?} repeats {key:?}"));
        }
        seen.push(key.into_owned());
    }
    let dry_runs: Vec<_> = form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "dryRun")
        .collect();
    if dry_run && (dry_runs.len() != 1 || dry_runs[0].1 != "All") {
        return refuse(format!(
            "it must be a dry run (audit mode) and its query {query:?} does not say dryRun=All"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::GroupVersionKind;

    fn ar(group: &str, kind: &str, plural: &str) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
    }

    fn object<'a>(ar: &'a ApiResource, ns: &'a str, name: &'a str) -> Target<'a> {
        Target {
            ar,
            namespace: Some(ns),
            name: Some(name),
            subresource: None,
        }
    }

    #[test]
    fn uris_are_built_from_checked_escaped_parts() {
        let cms = ar("", "ConfigMap", "configmaps");
        let query = Query {
            field_manager: Some("wink-p&x=1".into()),
            dry_run: true,
            force: false,
        };
        assert_eq!(
            object(&cms, "default", "victim").uri(&query).unwrap(),
            "/api/v1/namespaces/default/configmaps/victim?fieldManager=wink-p%26x%3D1&dryRun=All"
        );
        let deploys = ar("apps", "Deployment", "deployments");
        let status = Target {
            subresource: Some("status"),
            ..object(&deploys, "team-a", "web")
        };
        assert_eq!(
            status.uri(&Query::default()).unwrap(),
            "/apis/apps/v1/namespaces/team-a/deployments/web/status"
        );
        let roles = ar("rbac.authorization.k8s.io", "ClusterRole", "clusterroles");
        let role = Target {
            namespace: None,
            ..object(&roles, "", "system:controller:x")
        };
        assert_eq!(
            role.uri(&Query::default()).unwrap(),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:x"
        );
    }

    #[test]
    fn keys_that_would_change_the_url_are_refused_before_it_is_built() {
        let cms = ar("", "ConfigMap", "configmaps");
        let q = Query {
            dry_run: true,
            ..Query::default()
        };
        for (ns, name) in [
            ("default", "victim#"),
            ("default", "victim3?fieldManager=kube-controller-manager&x="),
            ("default", "a/b"),
            ("default", ".."),
            ("default", "a%2Fb"),
            ("default", "a\0"),
            ("default", ""),
            ("default", &"a".repeat(254)),
            ("..", "victim"),
            ("kube-system/x", "victim"),
            ("default#", "victim"),
            ("Default", "victim"),
            ("", "victim"),
        ] {
            match object(&cms, ns, name).uri(&q) {
                Err(WriteError::InvalidArgument(why)) => assert!(why.starts_with("invalid"), "{why}"),
                other => panic!("{ns:?}/{name:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_request_that_lost_its_dry_run_is_not_sent() {
        let ok = "/api/v1/namespaces/default/configmaps/a?fieldManager=wink-p&dryRun=All";
        assert!(check_sent(ok, ok, true).is_ok());
        let plain = "/api/v1/namespaces/default/configmaps/a?fieldManager=wink-p";
        assert!(check_sent(plain, plain, false).is_ok());
        assert!(check_sent(plain, plain, true).is_err(), "no dryRun");
        let cut = "/api/v1/namespaces/default/configmaps/victim#?fieldManager=wink-p&dryRun=All";
        assert!(
            check_sent(cut, "/api/v1/namespaces/default/configmaps/victim", true).is_err(),
            "cut at the fragment"
        );
        assert!(check_sent(cut, cut, true).is_err(), "a fragment");
        let twice =
            "/api/v1/namespaces/default/configmaps/v?fieldManager=kcm&x=&fieldManager=wink-p&dryRun=All";
        assert!(check_sent(twice, twice, true).is_err(), "a repeated parameter");
        let none = "/api/v1/namespaces/default/configmaps/v?dryRun=None";
        assert!(check_sent(none, none, true).is_err(), "dryRun not All");
        let dots = "/api/v1/namespaces/default/configmaps/../secrets?dryRun=All";
        assert!(check_sent(dots, dots, true).is_err(), "a dot segment");
    }
}
