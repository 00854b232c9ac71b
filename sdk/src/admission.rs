//! Admission: the plugin as a validating or mutating webhook. Declare the
//! webhooks in the registration ([`Registration::admission`](crate::Registration::admission)),
//! implement [`Handler::validate`](crate::Handler::validate) and/or
//! [`Handler::mutate`](crate::Handler::mutate); wink serves them, registers
//! them with the API server and answers with the webhook's failure policy
//! when the plugin cannot.
//!
//! Admission calls run on instances of their own (the plugin's state there
//! is not the event handler's), may query the cache (the same informers as
//! the handler) and may not write.
//!
//! ```no_run
//! use wink_sdk::admission::{Operation, Request, Rule, Verdict, Webhook};
//! fn validate(req: &Request) -> Verdict {
//!     match req.object().and_then(|o| o.label("team").map(str::to_string)) {
//!         Some(_) => Verdict::allow(),
//!         None => Verdict::deny("every Deployment needs a team label"),
//!     }
//! }
//! let webhook = Webhook::validate()
//!     .rule(Rule::new(&[Operation::Create, Operation::Update], "apps", "v1", "deployments"));
//! # let _ = (validate, webhook);
//! ```

use crate::Object;
use crate::bindings::exports::wink::plugin::admission as wit;
use crate::bindings::wink::plugin::types;
use serde::de::DeserializeOwned;

pub use types::{FailurePolicy, MatchPolicy, Operation, Scope};

/// One rule of a webhook: operations on resources.
#[derive(Debug, Clone)]
pub struct Rule(types::AdmissionRule);

impl Rule {
    /// `operations` on `resources` (plural, lowercase; `*` for all, e.g.
    /// `pods/status` for a subresource) of `api_group` (`""` for core)
    /// `api_version`, in any scope.
    pub fn new(operations: &[Operation], api_group: &str, api_version: &str, resources: &str) -> Self {
        Rule(types::AdmissionRule {
            operations: operations.to_vec(),
            api_groups: vec![api_group.to_string()],
            api_versions: vec![api_version.to_string()],
            resources: resources.split(',').map(|r| r.trim().to_string()).collect(),
            scope: Scope::Any,
        })
    }

    /// Only resources of this scope.
    pub fn scope(mut self, scope: Scope) -> Self {
        self.0.scope = scope;
        self
    }
}

/// A webhook the plugin serves.
#[derive(Debug, Clone)]
pub struct Webhook(pub(crate) types::Webhook);

impl Webhook {
    fn new(hook: types::Hook) -> Self {
        Webhook(types::Webhook {
            hook,
            rules: Vec::new(),
            namespace_selector: None,
            object_selector: None,
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 10,
            match_policy: MatchPolicy::Equivalent,
        })
    }

    /// A validating webhook (answered by [`Handler::validate`](crate::Handler::validate)).
    pub fn validate() -> Self {
        Webhook::new(types::Hook::Validate)
    }

    /// A mutating webhook (answered by [`Handler::mutate`](crate::Handler::mutate)).
    pub fn mutate() -> Self {
        Webhook::new(types::Hook::Mutate)
    }

    /// Add a rule.
    pub fn rule(mut self, rule: Rule) -> Self {
        self.0.rules.push(rule.0);
        self
    }

    /// What the API server does when the plugin cannot answer (default: Fail).
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.0.failure_policy = policy;
        self
    }

    /// The API server's timeout, 1 to 30 seconds (default 10).
    pub fn timeout_seconds(mut self, seconds: u32) -> Self {
        self.0.timeout_seconds = seconds;
        self
    }

    /// Only objects in namespaces matching this label selector.
    pub fn namespace_selector(mut self, selector: impl Into<String>) -> Self {
        self.0.namespace_selector = Some(selector.into());
        self
    }

    /// Only objects matching this label selector.
    pub fn object_selector(mut self, selector: impl Into<String>) -> Self {
        self.0.object_selector = Some(selector.into());
        self
    }
}

/// An admission request (`admission.k8s.io/v1` AdmissionRequest).
pub struct Request {
    pub(crate) wit: RequestFields,
    pub(crate) object: Option<Object>,
    pub(crate) old_object: Option<Object>,
}

/// The request's fields, owned.
pub(crate) struct RequestFields {
    pub uid: String,
    pub kind: (String, String, String),
    pub resource: (String, String, String),
    pub sub_resource: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub operation: Operation,
    pub username: String,
    pub groups: Vec<String>,
    pub dry_run: bool,
}

impl Request {
    #[doc(hidden)]
    /// # Safety
    /// The request's object handles must be borrows valid until the returned
    /// value is dropped, within the call.
    pub unsafe fn lent(r: wit::Request<'_>) -> Self {
        let key = match (&r.namespace, &r.name) {
            (Some(ns), Some(name)) => format!("{ns}/{name}"),
            (None, Some(name)) => name.clone(),
            _ => String::new(),
        };
        let lend = |o: Option<&types::Object>| {
            // SAFETY: as the caller guarantees.
            o.map(|o| unsafe { Object::lent(o.handle(), key.clone(), u32::MAX) })
        };
        let gvk = |g: &wit::GroupVersionKind| (g.group.clone(), g.version.clone(), g.kind.clone());
        let gvr = |g: &wit::GroupVersionResource| (g.group.clone(), g.version.clone(), g.resource.clone());
        Request {
            object: lend(r.object),
            old_object: lend(r.old_object),
            wit: RequestFields {
                uid: r.uid,
                kind: gvk(&r.kind),
                resource: gvr(&r.resource),
                sub_resource: r.sub_resource,
                name: r.name,
                namespace: r.namespace,
                operation: r.operation,
                username: r.user_info.username,
                groups: r.user_info.groups,
                dry_run: r.dry_run,
            },
        }
    }

    /// The request's uid.
    pub fn uid(&self) -> &str {
        &self.wit.uid
    }
    /// Create, update, delete or connect.
    pub fn operation(&self) -> Operation {
        self.wit.operation
    }
    /// The object's kind: (group, version, kind).
    pub fn kind(&self) -> (&str, &str, &str) {
        (&self.wit.kind.0, &self.wit.kind.1, &self.wit.kind.2)
    }
    /// The resource: (group, version, resource).
    pub fn resource(&self) -> (&str, &str, &str) {
        (&self.wit.resource.0, &self.wit.resource.1, &self.wit.resource.2)
    }
    /// `status`, `scale`, ... when a subresource is written.
    pub fn sub_resource(&self) -> Option<&str> {
        self.wit.sub_resource.as_deref()
    }
    /// The object's name (none on a create with `generateName`).
    pub fn name(&self) -> Option<&str> {
        self.wit.name.as_deref()
    }
    /// The object's namespace.
    pub fn namespace(&self) -> Option<&str> {
        self.wit.namespace.as_deref()
    }
    /// Who asks.
    pub fn username(&self) -> &str {
        &self.wit.username
    }
    /// The groups of who asks.
    pub fn groups(&self) -> &[String] {
        &self.wit.groups
    }
    /// The request will not be persisted.
    pub fn dry_run(&self) -> bool {
        self.wit.dry_run
    }
    /// The new object (create, update).
    pub fn object(&self) -> Option<&Object> {
        self.object.as_ref()
    }
    /// The stored object (update, delete).
    pub fn old_object(&self) -> Option<&Object> {
        self.old_object.as_ref()
    }
    /// The new object, decoded.
    pub fn decode<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        self.object.as_ref().map(Object::decode)
    }
}

/// The plugin's answer.
#[derive(Debug, Clone)]
pub struct Verdict(pub(crate) wit::Verdict);

impl Verdict {
    /// Allow.
    pub fn allow() -> Self {
        Verdict(crate::batch::allowed())
    }

    /// Deny, with the message the client sees (HTTP 403, reason Forbidden,
    /// unless [`Verdict::code`] and [`Verdict::reason`] say otherwise).
    pub fn deny(message: impl Into<String>) -> Self {
        let mut v = Verdict::allow();
        v.0.allowed = false;
        v.0.message = message.into();
        v
    }

    /// A denial's HTTP code.
    pub fn code(mut self, code: u16) -> Self {
        self.0.code = Some(code);
        self
    }

    /// A denial's reason, e.g. `Forbidden`.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.0.reason = Some(reason.into());
        self
    }

    /// A warning for the client (`kubectl` prints it), allowed or not.
    pub fn warn(mut self, warning: impl Into<String>) -> Self {
        self.0.warnings.push(warning.into());
        self
    }

    /// An audit annotation.
    pub fn annotate(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.audit_annotations.push((key.into(), value.into()));
        self
    }

    /// Whether it allows.
    pub fn is_allowed(&self) -> bool {
        self.0.allowed
    }
}

/// A mutating answer: the verdict and, when the object changes, the whole
/// changed object (wink sends the API server the JSON Patch to it).
#[derive(Debug, Clone)]
pub struct Mutation {
    pub verdict: Verdict,
    pub object: Option<serde_json::Value>,
}

impl Mutation {
    /// Allow, changing nothing.
    pub fn unchanged() -> Self {
        Mutation {
            verdict: Verdict::allow(),
            object: None,
        }
    }

    /// Allow, with the object changed to `object`.
    pub fn changed(object: serde_json::Value) -> Self {
        Mutation {
            verdict: Verdict::allow(),
            object: Some(object),
        }
    }

    /// Deny.
    pub fn deny(message: impl Into<String>) -> Self {
        Mutation {
            verdict: Verdict::deny(message),
            object: None,
        }
    }

    #[doc(hidden)]
    pub fn into_wit(self) -> wit::Mutation {
        wit::Mutation {
            verdict: self.verdict.0,
            object: self.object.map(|o| o.to_string()),
        }
    }
}

impl Verdict {
    #[doc(hidden)]
    pub fn into_wit(self) -> wit::Verdict {
        self.0
    }
}
