//! End-to-end: tiered compilation (`--tier-up`, the default of `wink dev`).
//! A plugin whose compiled code is not cached comes up on Winch, is swapped
//! for its Cranelift build when the background compile is done, and events
//! keep flowing across both hand-overs exactly once; a restart finds the
//! Cranelift build in the compile cache and skips Winch.

mod common;
mod runtime_support;

use common::plugin;
use runtime_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_plugin_runs_on_winch_then_cranelift_and_no_event_is_lost_or_doubled() {
    let env = Env::new("tier_up").await;
    std::fs::copy(plugin("pod_logger"), env.plugins.join("pl.wasm")).unwrap();
    std::fs::write(
        env.plugins.join("pl.json"),
        r#"{"tag": "t", "instance_id": true}"#,
    )
    .unwrap();
    env.create("pre-0").await;

    // Pods keep coming, every 20 ms, while the plugin tiers up.
    let creator = Creator::start(env.pods.clone());

    let wink = env.wink(&["--tier-up"]);
    wait_for_log(&wink, &["plugin loaded from", "plugin=pl", "compiler=Winch"], 1);
    wait_for_log(
        &wink,
        &["plugin tiered up to Cranelift", "plugin=pl", "compiler=Cranelift"],
        1,
    );
    wait_for_log(&wink, &["plugin synced", "plugin=pl"], 2);
    creator.wait_created(&wink, creator.created() + 20);
    let total = creator.finish_after(0).await;
    let last = format!("ev-{:04}", total - 1);
    wink.wait_until(&last, WAIT, |w| {
        w.plugin_lines("pl").iter().any(|l| l.ends_with(&last))
    });

    // Each instance tags its lines `OnAdd:t#<id>`: split them by instance,
    // and each instance's lines at its "plugin synced" into replay and live.
    let lines = wink.lines();
    let synced = synced_at(&lines, "pl");
    assert_eq!(synced.len(), 2, "one sync per version");
    let adds: Vec<(usize, String, String)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let (_, m) = l.split_once("[pl] OnAdd:t#")?;
            let (id, name) = m.split_once(' ')?;
            Some((i, id.to_string(), name.to_string()))
        })
        .collect();
    let mut ids: Vec<&str> = Vec::new();
    for (_, id, _) in &adds {
        if !ids.contains(&id.as_str()) {
            ids.push(id);
        }
    }
    assert_eq!(ids.len(), 2, "two instances: Winch, then Cranelift: {ids:?}");
    let split = |id: &str, synced_at: usize| {
        let (mut replay, mut live) = (Vec::new(), Vec::new());
        for (i, _, name) in adds.iter().filter(|(_, x, _)| x == id) {
            if *i < synced_at { &mut replay } else { &mut live }.push(name.clone());
        }
        (replay, live)
    };
    let (winch_initial, winch_live) = split(ids[0], synced[0]);
    let (cranelift_replay, cranelift_live) = split(ids[1], synced[1]);
    assert!(winch_initial.contains(&"pre-0".to_string()));
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(cranelift_replay),
        sorted([winch_initial.clone(), winch_live.clone()].concat()),
        "the Cranelift build is replayed exactly what the Winch build got"
    );
    let mut live = [winch_live.clone(), cranelift_live.clone()].concat();
    let initial_events: Vec<String> = winch_initial
        .iter()
        .filter(|n| n.starts_with("ev-"))
        .cloned()
        .collect();
    live.splice(0..0, initial_events);
    let expected: Vec<String> = (0..total).map(|i| format!("ev-{i:04}")).collect();
    assert_eq!(
        live, expected,
        "every event reached exactly one version, in order"
    );
    assert!(!cranelift_live.is_empty(), "the Cranelift build got live events");
    drop(wink);

    // A restart finds the Cranelift build cached: no Winch, no tier-up.
    let again = env.wink(&["--tier-up"]);
    wait_for_log(
        &again,
        &[
            "plugin loaded from",
            "plugin=pl",
            "compiler=Cranelift",
            "cache_hit=true",
        ],
        1,
    );
    wait_for_log(&again, &["plugin synced", "plugin=pl"], 1);
    assert!(log_lines(&again, &["compiler=Winch"]).is_empty());
}
