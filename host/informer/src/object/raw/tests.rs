//! The raw decoding's and the text rewrites' unit tests.

use super::super::CachedObject;
use super::*;
use kube::core::WatchEvent;

fn type_name() -> TypeName {
    TypeName {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
    }
}

#[test]
fn a_watch_event_keeps_the_servers_text_and_the_watchers_metadata() {
    let line = r#"{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"7","uid":"u","generation":3},"data":{"k":"v \u00e9"}}}"#;
    let WatchEvent::Modified(o) = serde_json::from_slice::<WatchEvent<RawObject>>(line.as_bytes()).unwrap()
    else {
        panic!("a MODIFIED event")
    };
    // The raw path: the text is exactly the server's, escapes included.
    assert!(o.json.contains(r#""k":"v \u00e9""#), "{}", o.json);
    assert_eq!(o.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(o.types.as_ref().unwrap().kind, "ConfigMap");
    assert!(!o.untyped);
    let text = cached_of(&o, None);
    let Cached::AsSent(text) = text else {
        panic!("typed and nothing to strip: used as it is")
    };
    assert_eq!(text, &*o.json);
    // The pass that read the watcher's metadata located the cache's too.
    let Some(Found {
        meta: Meta::Spans { name, generation, .. },
        ..
    }) = &o.found
    else {
        panic!("located in the same pass")
    };
    assert_eq!(&text[name.start as usize..name.end as usize], "a");
    assert_eq!(*generation, 3, "the generation read in the same pass");
}

/// What the cache holds for a list's item (no types) under the default policy.
/// What the cache keeps of a decoded `o`, with `cut` cut out.
fn cached_of(o: &RawObject, cut: Option<Span>) -> Cached {
    cached_text(
        o.json.clone(),
        o.types.as_ref(),
        o.untyped,
        cut,
        &type_name(),
        CachePolicy::default(),
    )
    .unwrap()
}

/// The metadata the cache reads of `c`: namespace, name, uid,
/// resourceVersion and the `app` label.
fn metadata_of(c: &CachedObject) -> (Option<&str>, &str, &str, &str, Option<&str>) {
    (
        c.namespace(),
        c.name(),
        c.uid(),
        c.resource_version(),
        c.label("app"),
    )
}

fn list_item_text(json: &str) -> String {
    cached_text(
        json.into(),
        None,
        true,
        None,
        &type_name(),
        CachePolicy::default(),
    )
    .unwrap()
    .into_string()
}

#[test]
fn a_list_item_decodes_through_serdes_buffering_too() {
    let list = r#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"3"},"data":{"k":"v"}}]}"#;
    let list: kube::core::ObjectList<RawObject> = serde_json::from_str(list).unwrap();
    let item = &list.items[0];
    assert!(item.types.is_none() && item.untyped);
    assert_eq!(item.metadata.name.as_deref(), Some("a"));
    let text = list_item_text(&item.json);
    // Its types go in front of the members as they came.
    assert_eq!(
        text,
        format!(r#"{{"apiVersion":"v1","kind":"ConfigMap",{}"#, &item.json[1..])
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["data"]["k"], "v");
    // An item with something to strip is rewritten instead.
    let json = r#"{"metadata":{"name":"a","managedFields":[{}]},"data":{"k":"v"}}"#;
    let text = list_item_text(json);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (v["kind"].as_str(), v["metadata"].get("managedFields")),
        (Some("ConfigMap"), None)
    );
    // An empty object gets its types alone.
    let text = list_item_text("{ }");
    assert_eq!(text, r#"{"apiVersion":"v1","kind":"ConfigMap"}"#);
}

#[test]
fn buffered_items_are_transcoded_exactly_and_in_order() {
    let item = r#"{"metadata":{"name":"b","namespace":"ns","resourceVersion":"4","labels":{"z":"1","a":"2"}},"spec":{"n":-3,"big":18446744073709551615,"f":1.5,"ok":true,"none":null,"list":[1,[2,{"x":"q\"uote\u00e9\n"}],[]],"empty":{}}}"#;
    let list = format!(r#"{{"apiVersion":"v1","kind":"PodList","metadata":{{}},"items":[{item}]}}"#);
    let list: kube::core::ObjectList<RawObject> = serde_json::from_str(&list).unwrap();
    let text = &*list.items[0].json;
    let want: serde_json::Value = serde_json::from_str(item).unwrap();
    let got: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(got, want);
    // Members keep the server's order (labels z before a).
    assert!(
        text.find("\"z\"").unwrap() < text.find("\"a\"").unwrap(),
        "{text}"
    );
    assert!(text.starts_with(r#"{"metadata":"#), "{text}");
}

#[test]
fn managed_fields_and_last_applied_are_cut_from_the_text() {
    let json = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a","managedFields":[{{"manager":"kubectl"}}],"annotations":{{"{LAST_APPLIED}":"{{}}","keep":"x"}}}},"data":{{"k":"v"}}}}"#
    );
    let typed = TypeMeta {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
    };
    let text = cached_text(
        json.clone().into(),
        Some(&typed),
        false,
        None,
        &type_name(),
        CachePolicy::default(),
    )
    .unwrap()
    .into_string();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(v["metadata"].get("managedFields").is_none());
    assert_eq!(v["metadata"]["annotations"], serde_json::json!({"keep": "x"}));
    assert_eq!(v["data"]["k"], "v");
    let keep = CachePolicy {
        managed_fields: false,
        last_applied: false,
        compress: false,
    };
    assert_eq!(
        cached_text(json.clone().into(), Some(&typed), false, None, &type_name(), keep)
            .unwrap()
            .into_string(),
        json
    );
}

#[test]
fn the_cache_reads_the_right_metadata_however_the_text_was_decoded() {
    let tn = std::sync::Arc::new(type_name());
    let event = |object: &str| -> RawObject {
        let line = format!(r#"{{"type":"MODIFIED","object":{object}}}"#);
        match serde_json::from_str::<WatchEvent<RawObject>>(&line).unwrap() {
            WatchEvent::Modified(o) => o,
            _ => panic!("a MODIFIED event"),
        }
    };
    let check = |o: RawObject, located: bool, name: &str| {
        assert_eq!(o.found.is_some(), located, "{}", o.json);
        let c = CachedObject::from_raw(o, &tn, CachePolicy::default());
        assert_eq!(metadata_of(&c), (Some("ns"), name, "u", "7", Some("web")));
    };
    let meta =
        r#""metadata":{"name":"a","namespace":"ns","resourceVersion":"7","uid":"u","labels":{"app":"web"}"#;
    // Sent as cached: located while decoding, used as located.
    check(
        event(&format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap",{meta}}},"data":{{}}}}"#
        )),
        true,
        "a",
    );
    // Rewritten (managedFields cut): located again in the new text.
    check(
        event(&format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap",{meta},"managedFields":[{{}}]}}}}"#
        )),
        true,
        "a",
    );
    // A list's item gets its types in front: located again too.
    let list =
        format!(r#"{{"apiVersion":"v1","kind":"ConfigMapList","metadata":{{}},"items":[{{{meta}}}}}]}}"#);
    let list: kube::core::ObjectList<RawObject> = serde_json::from_str(&list).unwrap();
    let item = list.items.into_iter().next().unwrap();
    check(item, true, "a");
    // An escaped name cannot be sliced: the second reading unescapes it.
    let escaped = meta.replace(r#""name":"a""#, r#""name":"\u0062""#);
    check(
        event(&format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap",{escaped}}}}}"#
        )),
        false,
        "b",
    );
}

#[test]
fn managed_fields_are_cut_where_the_decoding_found_them() {
    let tn = std::sync::Arc::new(type_name());
    let rest = r#""name":"a","namespace":"ns","uid":"u","resourceVersion":"7","labels":{"app":"web"}"#;
    for meta in [
        format!(r#"{{"managedFields":[{{"manager":"m","fieldsV1":{{"f:data":{{}}}}}}],{rest}}}"#),
        format!(
            r#"{{"name":"a", "managedFields" : [ {{"manager":"m"}} ] ,{}}}"#,
            &rest[11..]
        ),
        format!(r#"{{{rest},"managedFields":[]}}"#),
        r#"{ "managedFields": [] }"#.to_string(),
    ] {
        let object = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{meta},"data":{{"managedFields":"kept"}}}}"#
        );
        let line = format!(r#"{{"type":"MODIFIED","object":{object}}}"#);
        let WatchEvent::Modified(o) = serde_json::from_str::<WatchEvent<RawObject>>(&line).unwrap() else {
            panic!("a MODIFIED event")
        };
        let cut = o.found.as_ref().and_then(|f| f.managed_fields);
        assert!(cut.is_some(), "{object}");
        let text = cached_of(&o, cut);
        assert!(matches!(text, Cached::Cut(..)), "{object}");
        let mut want: serde_json::Value = serde_json::from_str(&object).unwrap();
        want["metadata"].as_object_mut().unwrap().remove("managedFields");
        let c = CachedObject::from_raw(o, &tn, CachePolicy::default());
        let got: serde_json::Value = serde_json::from_str(&c.json()).unwrap();
        assert_eq!(got, want, "{object}");
        if meta.contains("\"name\"") {
            assert_eq!(
                metadata_of(&c),
                (Some("ns"), "a", "u", "7", Some("web")),
                "{object}"
            );
        }
    }
}
