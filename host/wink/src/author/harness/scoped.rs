//! A `wink test` case's scope: the `match` and `exclude` an operator gives
//! a plugin (in its grants entry or WinkPlugin), played offline as `wink
//! run` enforces them. The plugin's cache, writes, Events and results get
//! the scope ([`crate::runtime::scope::ScopeCell`]); each watch's events go
//! through a [`Tracker`] (an object entering the scope is an add, one
//! leaving it a delete), re-decided after every step, so a Namespace
//! relabelled by a step moves its objects; an admission step about an
//! object outside the scope is answered without the plugin, as the API
//! server (whose webhook selectors carry the scope) or wink's own check
//! would.
//!
//! Owns only that wiring: the decisions are the runtime's
//! ([`crate::runtime::scope::Scope`]) and the webhook server's
//! ([`crate::admission::scope::in_scope`]).

use super::feed::Feed;
use crate::informer::{Notification, ObjRef, SharedInformer};
use crate::runtime::scope::{Scope, Selection, Tracker};
use anyhow::Context;
use serde_json::Value;
use std::sync::Arc;

/// The scope of a case's `match` and `exclude`, none when neither narrows:
/// checked as a grants entry's is, and reading namespace labels from a
/// Namespace watch of the case (its objects and steps) when a namespace
/// selector needs them.
pub(super) fn scope(
    include: Option<&Selection>,
    exclude: Option<&Selection>,
    feed: &mut Feed,
) -> anyhow::Result<Option<Scope>> {
    for (selection, at) in [(include, "match"), (exclude, "exclude")] {
        if let Some(s) = selection {
            s.check(at)
                .map_err(anyhow::Error::msg)
                .context("the case's scope")?;
        }
    }
    let Some(scope) = Scope::new(include, exclude) else {
        return Ok(None);
    };
    if !scope.needs_namespaces() {
        return Ok(Some(scope));
    }
    let namespaces = feed.watch("v1", "Namespace", &None, &None, &None)?;
    Ok(Some(scope.with_namespaces(namespaces.store().clone())))
}

/// The markers that re-decide every object of `informer` for `tracker`
/// (those that do not change side are told nothing).
pub(super) fn markers(tracker: &Tracker, informer: &SharedInformer) -> Vec<Notification> {
    let objects: Vec<ObjRef> = informer.store().list(None, None);
    tracker.rescope(objects)
}

/// Whether the admission request `request` reaches the plugin under
/// `scope`; else the line saying why it was answered without it.
pub(super) fn admitted(
    scope: Option<&Arc<Scope>>,
    door: &str,
    key: &str,
    request: &Value,
) -> Result<(), String> {
    let Some(scope) = scope else {
        return Ok(());
    };
    crate::admission::scope::in_scope(scope, request)
        .map_err(|why| format!("{door} {key}: allowed without the plugin: {why}"))
}
