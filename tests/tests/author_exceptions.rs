//! End-to-end: `wink test` with the operator's WinkExceptions. The
//! `yaml,wink-test` case of `docs/src/running/exceptions.md` passes as
//! written (pod-security with the worked example's exception: the excepted
//! Pod holds a `skip` and no result of the plugin's, a Pod a step labels
//! into the exception is a delete for the plugin, a review of an excepted
//! Pod is allowed with the daemon's warning); the same case without its
//! exceptions fails, with what the exception kept from the plugin.

use crate::author_scope::wink_test;
use crate::manual::markdown;
use serde_json::Value;

#[test]
fn the_manuals_case_with_an_exception_passes_and_fails_without_it() {
    let case = markdown::pod_security_case("docs/src/running/exceptions.md");
    // What the case claims: the excepted Pods hold the host's skip alone,
    // the review is let in with the warning.
    for claim in [
        "team/legacy pod-security wink-exception skip",
        "team/web pod-security wink-exception skip",
        "team/web fails baseline:latest: privileged",
        "'validate team/legacy-2: allowed'",
        "'  warning: excepted by WinkException wink-exceptions/legacy-batch: legacy-batch loads",
    ] {
        assert!(case.contains(claim), "{claim}\n{case}");
    }
    assert!(!case.contains("team/legacy pod-security privileged"), "{case}");
    let (out, said) = wink_test(&case, "author_exceptions");
    assert!(out.status.success(), "{said}");
    assert!(said.contains("ok      case.yaml"), "{said}");

    // Without its exceptions the plugin sees and reviews every Pod.
    let mut plain: Value = serde_norway::from_str(&case).unwrap();
    plain.as_object_mut().unwrap().remove("exceptions");
    let (out, said) = wink_test(
        &serde_norway::to_string(&plain).unwrap(),
        "author_exceptions_none",
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    for want in [
        "+ team/legacy pod-security privileged fail",
        "- team/legacy pod-security wink-exception skip",
        "+ validate team/legacy-2: denied 403",
    ] {
        assert!(said.contains(want), "{want}\n{said}");
    }

    // An exception that does not parse refuses the case, saying where.
    let mut bad: Value = serde_norway::from_str(&case).unwrap();
    bad["exceptions"][0]["spec"]["reason"] = Value::from("");
    let (out, said) = wink_test(&serde_norway::to_string(&bad).unwrap(), "author_exceptions_bad");
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("the case's exceptions[0]: spec.reason"), "{said}");
}
