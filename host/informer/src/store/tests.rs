//! The store's unit tests.

use super::*;
use crate::object::tests::pod;

fn label_index(label: &'static str) -> IndexFunc {
    Arc::new(move |o: &CachedObject| Ok(o.label(label).map(str::to_string).into_iter().collect()))
}

#[test]
fn first_is_the_first_of_what_list_answers() {
    let w = Writer::new();
    let s = w.reader();
    for (ns, name, app) in [
        ("b", "p3", "web"),
        ("a", "p9", "web"),
        ("a", "p2", "db"),
        ("a", "p5", "web"),
    ] {
        w.upsert(pod(ns, name, 1, &[("app", app)]));
    }
    let web = LabelSelector::parse("app=web").unwrap();
    let none = LabelSelector::parse("app=cache").unwrap();
    for ns in [Some("a"), Some("b"), Some("c"), None] {
        for selector in [None, Some(&web), Some(&none)] {
            let listed = s.list(ns, selector).first().map(|o| o.key().to_string());
            let first = s.first(ns, selector).map(|o| o.key().to_string());
            assert_eq!(first, listed, "namespace {ns:?}, selector {selector:?}");
        }
    }
    assert_eq!(s.first(Some("a"), Some(&web)).unwrap().key(), "a/p5");
    assert_eq!(s.first(None, None).unwrap().key(), "a/p2");
    assert!(s.first(Some("a"), Some(&none)).is_none());
}

#[test]
fn upsert_get_remove_and_namespace_index() {
    let w = Writer::new();
    let s = w.reader();
    assert!(w.upsert(pod("a", "p1", 1, &[])).is_none());
    w.upsert(pod("b", "p2", 2, &[]));
    let old = w.upsert(pod("a", "p1", 3, &[])).unwrap();
    assert_eq!(old.resource_version(), "1");
    assert_eq!(s.get("a/p1").unwrap().resource_version(), "3");
    assert_eq!(s.index_keys(NAMESPACE_INDEX, "a").unwrap(), vec!["a/p1"]);
    assert_eq!(s.list_index_values(NAMESPACE_INDEX).unwrap(), vec!["a", "b"]);
    // A namespace's query answers the version the update stored.
    let rv = |objects: Vec<ObjRef>| -> Vec<String> {
        objects.iter().map(|o| o.resource_version().into()).collect()
    };
    assert_eq!(rv(s.list(Some("a"), None)), vec!["3"]);
    assert_eq!(rv(s.by_index(NAMESPACE_INDEX, "a").unwrap()), vec!["3"]);
    assert_eq!(s.first(Some("a"), None).unwrap().resource_version(), "3");
    assert!(w.remove("a/p1").is_some());
    assert!(w.remove("a/p1").is_none());
    assert_eq!(s.list_index_values(NAMESPACE_INDEX).unwrap(), vec!["b"]);
    assert!(s.list(Some("a"), None).is_empty() && s.first(Some("a"), None).is_none());
    assert_eq!(s.list_keys(), vec!["b/p2"]);
    // A relist rebuilds it; the namespace index is built in and cannot be
    // added again.
    w.replace(vec![
        pod("c", "p9", 5, &[]),
        pod("c", "p3", 5, &[]),
        pod("b", "p2", 6, &[]),
    ]);
    assert_eq!(s.index_keys(NAMESPACE_INDEX, "c").unwrap(), vec!["c/p3", "c/p9"]);
    assert_eq!(rv(s.list(Some("b"), None)), vec!["6"]);
    assert!(s.has_index(NAMESPACE_INDEX));
    assert_eq!(
        w.add_index(NAMESPACE_INDEX, label_index("app")),
        Err(StoreError::IndexExists(NAMESPACE_INDEX.into()))
    );
}

#[test]
fn index_moves_when_label_changes_and_empty_sets_go() {
    let w = Writer::new();
    let s = w.reader();
    w.add_index("app", label_index("app")).unwrap();
    w.upsert(pod("d", "p1", 1, &[("app", "web")]));
    w.upsert(pod("d", "p2", 2, &[("app", "web")]));
    w.upsert(pod("d", "p1", 3, &[("app", "db")]));
    assert_eq!(s.index_keys("app", "web").unwrap(), vec!["d/p2"]);
    assert_eq!(s.index_keys("app", "db").unwrap(), vec!["d/p1"]);
    w.upsert(pod("d", "p2", 4, &[]));
    assert_eq!(s.list_index_values("app").unwrap(), vec!["db"]);
    assert_eq!(s.by_index("app", "db").unwrap()[0].name(), "p1");
}

#[test]
fn adding_an_index_indexes_existing_objects_and_duplicates_fail() {
    let w = Writer::new();
    let s = w.reader();
    w.upsert(pod("d", "p1", 1, &[("app", "web")]));
    w.add_index("app", label_index("app")).unwrap();
    assert_eq!(s.index_keys("app", "web").unwrap(), vec!["d/p1"]);
    assert_eq!(
        w.add_index("app", label_index("app")),
        Err(StoreError::IndexExists("app".into()))
    );
    assert_eq!(
        s.by_index("nope", "x").unwrap_err(),
        StoreError::UnknownIndex("nope".into())
    );
}

#[test]
fn ensure_index_shares_same_definition_and_rejects_another() {
    let w = Writer::new();
    w.ensure_index("app", "label:app", label_index("app")).unwrap();
    w.ensure_index("app", "label:app", label_index("app")).unwrap();
    assert!(matches!(
        w.ensure_index("app", "label:tier", label_index("tier")),
        Err(StoreError::IndexConflict { .. })
    ));
    assert!(matches!(
        w.ensure_index(NAMESPACE_INDEX, "label:x", label_index("x")),
        Err(StoreError::IndexConflict { .. })
    ));
}

#[test]
fn failing_index_function_is_counted_not_fatal() {
    let w = Writer::new();
    let s = w.reader();
    w.add_index("bad", Arc::new(|_: &CachedObject| Err("boom".to_string())))
        .unwrap();
    w.upsert(pod("d", "p1", 1, &[]));
    assert_eq!(s.len(), 1);
    assert!(s.index_errors() >= 1);
    assert!(s.list_index_values("bad").unwrap().is_empty());
}

#[test]
fn replace_swaps_content_and_rebuilds_indexes() {
    let w = Writer::new();
    let s = w.reader();
    w.add_index("app", label_index("app")).unwrap();
    w.upsert(pod("d", "gone", 1, &[("app", "web")]));
    let old = w.replace(vec![pod("d", "new", 2, &[("app", "db")])]);
    assert!(old.contains_key("d/gone"));
    assert_eq!(s.list_keys(), vec!["d/new"]);
    assert_eq!(s.list_index_values("app").unwrap(), vec!["db"]);
}

#[test]
fn a_namespace_query_answers_what_a_filter_of_every_object_answers() {
    // The namespace index passes over objects by their label summary: what
    // it answers must be exactly what filtering every object answers, after
    // updates that change labels, removals and a relist alike.
    let w = Writer::new();
    let s = w.reader();
    let apps = ["web", "db", "cache", "none"];
    let selectors: Vec<LabelSelector> = [
        "app=web",
        "app=db,tier=1",
        "app in (cache)",
        "app in (web, db)",
        "app!=web",
        "tier",
        "!tier",
        "app=absent",
    ]
    .iter()
    .map(|t| LabelSelector::parse(t).unwrap())
    .collect();
    let check = |s: &Store, when: &str| {
        let all = s.list(None, None);
        for ns in ["a", "b", "c"] {
            for selector in &selectors {
                let filtered: Vec<String> = all
                    .iter()
                    .filter(|o| selected(o, Some(ns), Some(selector)))
                    .map(|o| o.key())
                    .collect();
                let listed: Vec<String> = s.list(Some(ns), Some(selector)).iter().map(|o| o.key()).collect();
                assert_eq!(listed, filtered, "{when}: {ns} {selector:?}");
                let first = s.first(Some(ns), Some(selector)).map(|o| o.key());
                assert_eq!(
                    first,
                    filtered.first().cloned(),
                    "{when}: first {ns} {selector:?}"
                );
            }
        }
    };
    for i in 0..60 {
        let ns = ["a", "b"][i % 2];
        let tier = (i % 3).to_string();
        let labels: Vec<(&str, &str)> = if i % 5 == 0 {
            vec![("app", apps[i % 4])]
        } else {
            vec![("app", apps[i % 4]), ("tier", &tier)]
        };
        w.upsert(pod(ns, &format!("p{i}"), 1, &labels));
    }
    check(&s, "inserted");
    // Labels change under the same key: the summary follows.
    for i in (0..60).step_by(4) {
        let ns = ["a", "b"][i % 2];
        w.upsert(pod(ns, &format!("p{i}"), 2, &[("app", "db"), ("tier", "1")]));
    }
    check(&s, "updated");
    for i in (1..60).step_by(7) {
        w.remove(&format!("{}/p{i}", ["a", "b"][i % 2]));
    }
    check(&s, "removed");
    let kept = s.list(None, None);
    w.replace(kept);
    check(&s, "relisted");
    assert!(
        !s.list(Some("a"), Some(&selectors[1])).is_empty(),
        "the updated objects are found"
    );
}
