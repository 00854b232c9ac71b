//! The canonical resource type: the API server's spellings parse, nothing
//! else does, and discovery's answer is compared exactly.

use super::*;
use kube::core::GroupVersionKind;

#[test]
fn the_api_servers_spellings_parse() {
    let gvk = Gvk::parse("v1", "Secret").unwrap();
    assert_eq!((gvk.group.as_str(), gvk.version.as_str()), ("", "v1"));
    assert!(gvk.is_secret());
    assert_eq!(gvk.api_version(), "v1");
    let gvk = Gvk::parse("apps/v1", "Deployment").unwrap();
    assert_eq!((gvk.group.as_str(), gvk.version.as_str()), ("apps", "v1"));
    assert_eq!(gvk.to_string(), "apps/v1 Deployment");
    let gvk = Gvk::parse("wink.dev/v1alpha1", "Widget").unwrap();
    assert_eq!(gvk.api_version(), "wink.dev/v1alpha1");
    assert!(!Gvk::parse("apps/v1", "Secret").unwrap().is_secret());
}

#[test]
fn every_other_spelling_is_refused() {
    let long_group = format!("{}.io/v1", "a".repeat(260));
    let long_version = format!("v{}", "1".repeat(63));
    for bad in [
        "",
        "/v1",
        "v1/",
        "/",
        "//v1",
        "core/v1",
        "V1",
        "Apps/v1",
        "apps/V1",
        " v1",
        "v1 ",
        "v1\0",
        "v1%00",
        "%2Fv1",
        "apps%2Fv1",
        "apps/v1/x",
        "apps//v1",
        "apps/",
        ".apps/v1",
        "apps./v1",
        "a..b/v1",
        "1",
        "v1\n",
        "apps/v1#",
        "apps/v1?x",
        "é/v1",
        &long_group,
        &long_version,
    ] {
        let e = Gvk::parse(bad, "Secret").unwrap_err();
        assert!(e.0.starts_with("invalid apiVersion"), "{bad:?}: {e}");
    }
    for bad in [
        "",
        "Secret ",
        " Secret",
        "Se cret",
        "Secret\0",
        "Secret%00",
        "1Secret",
        "Secret/x",
        "Sécret",
    ] {
        let e = Gvk::parse("v1", bad).unwrap_err();
        assert!(e.0.starts_with("invalid kind"), "{bad:?}: {e}");
    }
    let e = Gvk::parse("/v1", "Secret").unwrap_err();
    assert!(e.0.contains("\"/v1\"") && e.0.contains("core group"), "{e}");
    let e = Gvk::parse("core/v1", "Secret").unwrap_err();
    assert!(
        e.0.contains("not \\\"core/v1\\\"") || e.0.contains("not \"core/v1\""),
        "{e}"
    );
    let e = Gvk::parse(&"v".repeat(100_000), "Secret").unwrap_err();
    assert!(e.0.len() < 400, "an overlong spelling is cut in the message: {e}");
}

#[test]
fn spellings_compare_only_when_both_parse() {
    assert!(same_type(("v1", "Secret"), ("v1", "Secret")));
    assert!(!same_type(("/v1", "Secret"), ("/v1", "Secret")));
    assert!(!same_type(("v1", "Secret"), ("v1", "secret")));
    assert!(!same_type(
        ("apps/v1", "Deployment"),
        ("apps/v1beta1", "Deployment")
    ));
}

#[test]
fn discovery_must_resolve_a_type_to_itself() {
    let ar = |g: &str, v: &str, k: &str, plural: &str| {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(g, v, k), plural)
    };
    let secret = Gvk::parse("v1", "Secret").unwrap();
    assert!(secret.check_resolved(&ar("", "v1", "Secret", "secrets")).is_ok());
    assert_eq!(Gvk::of_resource(&ar("", "v1", "Secret", "secrets")), secret);
    let asked = Gvk::parse("v1", "secret").unwrap();
    let e = asked
        .check_resolved(&ar("", "v1", "Secret", "secrets"))
        .unwrap_err();
    assert!(e.0.contains("resolved to v1 Secret"), "{e}");
}
