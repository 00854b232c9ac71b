//! End-to-end: tiered compilation (`--tier-up`, the default of `wink dev`).
//! A plugin whose compiled code is not cached comes up on Winch and stays
//! on it for this load, while its Cranelift build is compiled in the
//! background into the precompiled directory: it is handed its initial list
//! once, and every live event once, in order. A restart finds the Cranelift
//! build cached and skips Winch.

use crate::common;
use crate::runtime_support;

use common::plugin;
use runtime_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_plugin_runs_on_winch_gets_its_initial_list_once_and_its_cranelift_build_serves_the_next_load()
{
    let env = Env::new("tier_up").await;
    std::fs::copy(plugin("pod_logger"), env.plugins.join("pl.wasm")).unwrap();
    std::fs::write(
        env.plugins.join("pl.json"),
        r#"{"tag": "t", "instance_id": true}"#,
    )
    .unwrap();
    for i in 0..5 {
        env.create(&format!("pre-{i}")).await;
    }

    // Pods keep coming, every 20 ms, while the Cranelift build compiles; not
    // while wink is built (thousands would be in the initial list, past the
    // plugin's log budget).
    common::wink_bin();
    let creator = Creator::start(env.pods.clone());

    let wink = env.wink(&["--tier-up"]);
    wait_for_log(&wink, &["plugin loaded from", "plugin=pl", "compiler=Winch"], 1);
    wait_for_log(
        &wink,
        &["Cranelift build cached for the next load", "plugin=pl"],
        1,
    );
    creator.wait_created(&wink, creator.created() + 20);
    let total = creator.finish_after(0).await;
    let last = format!("ev-{:04}", total - 1);
    wink.wait_until(&last, WAIT, |w| {
        w.plugin_lines("pl").iter().any(|l| l.ends_with(&last))
    });

    // One load: one instance, one sync, each object added once.
    let lines = wink.lines();
    assert_eq!(synced_at(&lines, "pl").len(), 1, "one initial list per load");
    let adds: Vec<(String, String)> = lines
        .iter()
        .filter_map(|l| {
            let (_, m) = l.split_once("[pl] OnAdd:t#")?;
            let (id, name) = m.split_once(' ')?;
            Some((id.to_string(), name.to_string()))
        })
        .collect();
    let mut ids: Vec<&str> = adds.iter().map(|(id, _)| id.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 1, "one instance: no hand-over to the Cranelift build");
    let names: Vec<&str> = adds.iter().map(|(_, n)| n.as_str()).collect();
    for i in 0..5 {
        let pre = format!("pre-{i}");
        assert_eq!(names.iter().filter(|n| **n == pre).count(), 1, "{pre} added once");
    }
    let live: Vec<&str> = names.iter().copied().filter(|n| n.starts_with("ev-")).collect();
    let expected: Vec<String> = (0..total).map(|i| format!("ev-{i:04}")).collect();
    assert_eq!(live, expected, "every event exactly once, in order");
    // Loaded on Winch only (the Cranelift build compiles beside it, for the
    // next load).
    assert!(log_lines(&wink, &["plugin loaded from", "compiler=Cranelift"]).is_empty());
    drop(wink);

    // The next load finds the Cranelift build cached: no Winch.
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
    assert!(log_lines(&again, &["plugin loaded from", "compiler=Winch"]).is_empty());
}

/// Without a precompiled directory there is nowhere to keep a Cranelift
/// build: a plugin comes up on Winch, is running (not tiering up), and no
/// build is made in the background.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_precompiled_directory_a_plugin_stays_on_winch_and_nothing_is_built_behind_it() {
    let env = Env::new("tier_up_no_precompiled").await;
    std::fs::copy(plugin("pod_logger"), env.plugins.join("pl.wasm")).unwrap();
    let wink = env.wink(&["--tier-up", "--no-precompiled"]);
    wait_for_log(&wink, &["plugin loaded from", "plugin=pl", "compiler=Winch"], 1);
    wait_for_log(&wink, &["plugin synced", "plugin=pl"], 1);
    // An event's round trip: a background build would have begun by then.
    env.create("after").await;
    wink.wait_until("pl told of after", WAIT, |w| {
        on_lines(w, "pl").iter().any(|l| l.ends_with("after"))
    });
    assert_eq!(
        log_lines(&wink, &["compiler=Cranelift"]),
        Vec::<String>::new(),
        "a Cranelift build with nowhere to keep it"
    );
}
