//! A `wink test` case's exceptions: the WinkExceptions an operator would
//! apply (`exceptions:`, each a whole `wink.dev/v1alpha1` WinkException as
//! `kubectl apply` takes it), played offline as `wink run
//! --exception-namespaces` honours them. An object an exception excepts
//! is not delivered to the plugin (becoming excepted is a delete for it)
//! and holds the host's `skip` result naming the exception; an `admit`
//! step about it is allowed without the plugin, with the warning the
//! daemon gives.
//!
//! Owns only parsing the case's list into an [`ExceptionSet`]: the
//! decisions are the runtime's ([`crate::runtime::exceptions`],
//! [`crate::runtime::scope::excepting`]) and the webhook server's
//! ([`crate::exceptions::review`]).

use crate::exceptions::crd::{API_VERSION, KIND};
use crate::runtime::exceptions::{Exception, ExceptionSet, MAX_EXCEPTIONS};
use anyhow::{Context, bail};
use serde_json::Value;

/// The case's exceptions in force, none when it gives none. Each must
/// parse as the daemon parses a WinkException (there, one that does not is
/// said in the log and not in force; here the case is refused).
pub(super) fn set(objects: &[Value]) -> anyhow::Result<Option<ExceptionSet>> {
    if objects.is_empty() {
        return Ok(None);
    }
    if objects.len() > MAX_EXCEPTIONS {
        bail!(
            "the case's exceptions: {} (at most {MAX_EXCEPTIONS})",
            objects.len()
        );
    }
    let set = ExceptionSet::default();
    for (i, obj) in objects.iter().enumerate() {
        let at = || format!("the case's exceptions[{i}]");
        for (field, want) in [("apiVersion", API_VERSION), ("kind", KIND)] {
            match obj.get(field) {
                None => {}
                Some(v) if v == want => {}
                Some(v) => bail!("{}: {field} is {v}, not {want:?}", at()),
            }
        }
        let e = Exception::from_object(obj)
            .map_err(anyhow::Error::msg)
            .with_context(at)?;
        let key = e.key();
        if set.all().iter().any(|held| held.key() == key) {
            bail!("{}: a second WinkException {key}", at());
        }
        set.put(e);
    }
    Ok(Some(set))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exception(name: &str) -> Value {
        json!({"apiVersion": API_VERSION, "kind": KIND,
               "metadata": {"namespace": "ops", "name": name},
               "spec": {"plugins": [{"name": "p"}], "match": {"kinds": ["Pod"]}, "reason": "r"}})
    }

    fn refused(objects: &[Value]) -> String {
        match set(objects) {
            Ok(_) => panic!("taken: {objects:?}"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn a_case_gives_whole_winkexceptions_checked_as_the_daemon_checks_them() {
        assert!(set(&[]).unwrap().is_none());
        let held = set(&[exception("a"), exception("b")]).unwrap().unwrap();
        let keys: Vec<String> = held.all().iter().map(|e| e.key()).collect();
        assert_eq!(keys, ["ops/a", "ops/b"]);

        let mut no_reason = exception("a");
        no_reason["spec"]["reason"] = json!(" ");
        let why = refused(&[no_reason]);
        assert!(why.contains("exceptions[0]: spec.reason"), "{why}");
        let mut wrong = exception("a");
        wrong["kind"] = json!("WinkPlugin");
        let why = refused(&[wrong]);
        assert!(why.contains("kind is \"WinkPlugin\""), "{why}");
        let why = refused(&[exception("a"), exception("a")]);
        assert!(
            why.contains("exceptions[1]: a second WinkException ops/a"),
            "{why}"
        );
        let many = vec![exception("a"); MAX_EXCEPTIONS + 1];
        refused(&many);
    }
}
