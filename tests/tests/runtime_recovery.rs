//! End-to-end: the plugin runtime's crash recovery, hot reload and compile
//! cache, with the real `wink run` binary, real plugins built for
//! wasm32-wasip2 and the simulated API server. One test per acceptance point:
//!
//! - a plugin that loops, allocates 1 GiB, panics or overflows its stack is
//!   stopped, restarted (with the cache replayed) and finally quarantined,
//!   while a well-behaved plugin on the same informer sees every event;
//! - a reload while events flow delivers every event exactly once to the old
//!   or the new version, apart from the new version's initial replay;
//! - a truncated file and a component of another world never replace a
//!   working plugin; each error is logged once with the file and reason;
//! - a restart with unchanged plugins compiles nothing (compile cache), and
//!   a directory over its size limit gives entries up;
//! - removing a file unregisters the plugin and stops an unused informer.

use crate::common;
use crate::runtime_support;

use common::{Wink, plugin};
use kube::api::{DeleteParams, Patch, PatchParams};
use runtime_support::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const MODES: [(&str, &str); 4] = [
    ("loop", "wasm trap: interrupt"),
    ("alloc", "wasm trap: wasm `unreachable` instruction executed"),
    ("panic", "wasm trap: wasm `unreachable` instruction executed"),
    // The Rust shadow stack lives in linear memory: overflowing it is an
    // out-of-bounds access, unless the wasm call stack runs out first.
    (
        "stack",
        "wasm trap: out of bounds memory access|wasm trap: call stack exhausted",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_plugins_are_restarted_then_quarantined_while_a_good_one_sees_every_event() {
    let env = Env::new("recovery_misbehave").await;
    std::fs::copy(plugin("pod_logger"), env.plugins.join("good.wasm")).unwrap();
    for (mode, _) in MODES {
        std::fs::copy(
            plugin("misbehave"),
            env.plugins.join(format!("misbehave-{mode}.wasm")),
        )
        .unwrap();
        std::fs::write(
            env.plugins.join(format!("misbehave-{mode}.json")),
            format!(r#"{{"mode": "{mode}", "trigger": "bomb", "on": "add"}}"#),
        )
        .unwrap();
    }
    // These sort before `bomb`: every replay shows them before it traps again.
    for name in ["a0", "a1", "a2"] {
        env.create(name).await;
    }
    // A short deadline keeps the loop's three crashes quick; a small memory
    // cap lets the allocation fail long before that deadline, even on a
    // loaded machine (the deadline is wall-clock).
    let wink = env.wink(&[
        "--max-restarts",
        "2",
        "--call-deadline-ms",
        "500",
        "--memory-mib",
        "16",
    ]);
    wait_for_log(&wink, &["plugin synced", "plugin=good"], 1);
    for (mode, _) in MODES {
        wait_for_log(&wink, &["plugin synced", &format!("plugin=misbehave-{mode}")], 1);
    }

    env.create("bomb").await;
    for name in ["b0", "b1", "b2"] {
        env.create(name).await;
    }
    let patch = serde_json::json!({"metadata": {"labels": {"stage": "two"}}});
    env.pods
        .patch("a0", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    env.pods.delete("a1", &DeleteParams::default()).await.unwrap();
    env.create("c0").await;
    for (mode, _) in MODES {
        wait_for_log(
            &wink,
            &["plugin quarantined", &format!("plugin=misbehave-{mode}")],
            1,
        );
    }
    env.create("after").await;
    wink.wait_for_line("[good] OnAdd: after", WAIT);

    // The good plugin on the same informer got every event, in order.
    assert_eq!(
        on_lines(&wink, "good"),
        [
            "OnAdd: a0",
            "OnAdd: a1",
            "OnAdd: a2",
            "OnAdd: bomb",
            "OnAdd: b0",
            "OnAdd: b1",
            "OnAdd: b2",
            "OnUpdate: a0",
            "OnDelete: a1",
            "OnAdd: c0",
            "OnAdd: after",
        ]
    );

    let lines = wink.lines();
    for (mode, summary) in MODES {
        let name = format!("misbehave-{mode}");
        let me = format!("plugin={name}");
        // Stopped: three traps (the first, then one per restart's replay),
        // each naming the trap and the object that caused it.
        let traps = log_lines(&wink, &["plugin trapped", &me]);
        assert_eq!(traps.len(), 3, "{mode}: {traps:#?}");
        for t in &traps {
            assert!(
                summary
                    .split('|')
                    .any(|s| t.contains(&format!("plugin trapped: {s} "))),
                "{mode}: {t}"
            );
            assert!(t.contains("call=on-add object=default/bomb"), "{mode}: {t}");
            // The wasm backtrace is on the same line: the text log escapes
            // the line breaks of every message.
            assert!(
                t.contains("\\nerror while executing at wasm backtrace:\\n"),
                "{mode}: {t}"
            );
            assert!(t.contains("misbehave.wasm!"), "{mode}: {t}");
        }
        // Restarted twice, with the exponential backoff.
        let restarting = log_lines(&wink, &["restarting plugin after a crash", &me]);
        assert_eq!(restarting.len(), 2, "{mode}: {restarting:#?}");
        assert!(restarting[0].contains("delay_ms=100"), "{}", restarting[0]);
        assert!(restarting[1].contains("delay_ms=200"), "{}", restarting[1]);
        let restarted = log_lines(&wink, &["plugin restarted; the cache is replayed to it", &me]);
        assert_eq!(restarted.len(), 2, "{mode}: {restarted:#?}");
        // The replay: a0 reached the first instance and both fresh ones.
        let adds_a0 = on_lines(&wink, &name)
            .iter()
            .filter(|l| *l == "OnAdd: a0")
            .count();
        assert_eq!(adds_a0, 3, "{mode}: {:#?}", on_lines(&wink, &name));
        // Quarantined after the third crash in a row, with the reason.
        let quarantined = log_lines(&wink, &["plugin quarantined", &me]);
        assert_eq!(quarantined.len(), 1, "{mode}");
        assert!(
            summary
                .split('|')
                .any(|s| quarantined[0].contains(&format!("3 consecutive crashes; last: {s})"))),
            "{}",
            quarantined[0]
        );
        // Nothing reached it after the quarantine.
        let at = lines.iter().position(|l| *l == quarantined[0]).unwrap();
        let tag = format!("[{name}] ");
        assert!(
            !lines[at..].iter().any(|l| l.contains(&tag)),
            "{mode}: output after the quarantine"
        );
    }
    // What each limit looked like from inside.
    let said = |name: &str, what: &str| wink.plugin_lines(name).iter().any(|l| l.contains(what));
    assert!(
        said("misbehave-alloc", "memory allocation of"),
        "{:#?}",
        wink.plugin_lines("misbehave-alloc")
    );
    assert!(said("misbehave-panic", "misbehave: panicking on bomb"));
    assert_eq!(log_lines(&wink, &["plugin quarantined"]).len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_while_events_flow_delivers_each_event_to_exactly_one_version() {
    let env = Env::new("recovery_reload_flow").await;
    let pl = env.plugins.join("pl.wasm");
    std::fs::copy(plugin("pod_logger"), &pl).unwrap();
    std::fs::write(env.plugins.join("pl.json"), r#"{"tag": "v1", "mode": "none"}"#).unwrap();
    env.create("pre-0").await;
    let wink = env.wink(&[]);
    wait_for_log(&wink, &["plugin synced", "plugin=pl"], 1);

    // A pod every 20 ms until told where to stop.
    let creator = Creator::start(env.pods.clone());

    // Reload 1: a new config (the component is unchanged).
    creator.wait_created(&wink, 30);
    std::fs::write(env.plugins.join("pl.json"), r#"{"tag": "v2", "mode": "none"}"#).unwrap();
    wait_for_log(&wink, &["plugin reloaded from", "plugin=pl"], 1);
    wait_for_log(&wink, &["plugin synced", "plugin=pl"], 2);
    // Reload 2: another component, which must be compiled; it prints untagged.
    creator.wait_created(&wink, creator.created() + 20);
    env.put("pl.wasm", &read(&plugin("misbehave")));
    wait_for_log(&wink, &["plugin reloaded from", "plugin=pl"], 2);
    wait_for_log(&wink, &["plugin synced", "plugin=pl"], 3);
    let total = creator.finish_after(20).await;
    let last = format!("[pl] OnAdd: ev-{:04}", total - 1);
    wink.wait_for_line(&last, WAIT);

    // Split each version's lines into its initial replay (before its
    // "plugin synced") and what it got live.
    let lines = wink.lines();
    let synced = synced_at(&lines, "pl");
    assert_eq!(synced.len(), 3, "one sync per version");
    let version = |prefix: &str, synced_at: usize| {
        let mut replay = Vec::new();
        let mut live = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if let Some((_, m)) = l.split_once("[pl] ")
                && let Some(name) = m.strip_prefix(prefix)
                && !name.contains(' ')
            {
                if i < synced_at {
                    replay.push(name.to_string())
                } else {
                    live.push(name.to_string())
                }
            }
        }
        (replay, live)
    };
    let (v1_initial, v1_live) = version("OnAdd:v1 ", synced[0]);
    let (v2_replay, v2_live) = version("OnAdd:v2 ", synced[1]);
    let (v3_replay, v3_live) = version("OnAdd: ", synced[2]);
    assert_eq!(v1_initial, ["pre-0"]);
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    // Each new version's replay is exactly what the versions before it got.
    let before_v2 = sorted([v1_initial.clone(), v1_live.clone()].concat());
    assert_eq!(sorted(v2_replay), before_v2);
    let before_v3 = sorted([before_v2.clone(), v2_live.clone()].concat());
    assert_eq!(sorted(v3_replay), before_v3);
    // Every live event reached exactly one version, in order.
    let expected: Vec<String> = (0..total).map(|i| format!("ev-{i:04}")).collect();
    assert_eq!(
        [v1_live.clone(), v2_live.clone(), v3_live.clone()].concat(),
        expected
    );
    assert!(
        !v1_live.is_empty() && !v2_live.is_empty() && !v3_live.is_empty(),
        "each version got live events: {} {} {}",
        v1_live.len(),
        v2_live.len(),
        v3_live.len()
    );
    assert!(log_lines(&wink, &["plugin not reloaded"]).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_replacements_never_replace_a_working_plugin() {
    let env = Env::new("recovery_broken_files").await;
    let good = read(&plugin("pod_logger"));
    env.put("pl.wasm", &good);
    std::fs::write(env.plugins.join("pl.json"), r#"{"tag": "v1", "mode": "none"}"#).unwrap();
    env.create("x1").await;
    let wink = env.wink(&[]);
    wink.wait_for_line("[pl] OnAdd:v1 x1", WAIT);
    let pl = env.plugins.join("pl.wasm");
    let pl = pl.to_str().unwrap();

    // A half-written component.
    env.put("pl.wasm", &good[..good.len() / 2]);
    wait_for_log(&wink, &["plugin not reloaded", pl], 1);
    env.create("x2").await;
    wink.wait_for_line("[pl] OnAdd:v1 x2", WAIT);
    // The same bad content again is not reported again. (The barrier file
    // sorts after pl.wasm, so its error comes after pl.wasm was handled.)
    env.put("pl.wasm", &good[..good.len() / 2]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    env.put("zz-barrier.wasm", b"not wasm");
    wait_for_log(&wink, &["plugin not loaded", "zz-barrier.wasm"], 1);

    // A valid component of another world.
    env.put("pl.wasm", EMPTY_COMPONENT);
    wait_for_log(&wink, &["plugin not reloaded", pl], 2);
    env.create("x3").await;
    wink.wait_for_line("[pl] OnAdd:v1 x3", WAIT);

    // A good new version (it prints untagged) takes over.
    env.put("pl.wasm", &read(&plugin("misbehave")));
    wait_for_log(&wink, &["plugin reloaded from", pl], 1);
    env.create("x4").await;
    wink.wait_for_line("[pl] OnAdd: x4", WAIT);

    let errors = log_lines(&wink, &["plugin not reloaded", pl]);
    assert_eq!(errors.len(), 2, "each error once: {errors:#?}");
    assert!(
        errors[0].contains(&format!("{pl}: not a valid WebAssembly component")),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains(&format!("{pl}: not a wink:plugin@0.4.0 (or @0.3.0) component")),
        "{}",
        errors[1]
    );
    assert!(
        errors[1].contains("handler"),
        "the reason names what is missing: {}",
        errors[1]
    );
    let on = on_lines(&wink, "pl");
    assert_eq!(
        names(&on, "OnAdd:v1 "),
        ["x1", "x2", "x3"],
        "the old version ran until then"
    );
    assert_eq!(
        names(&on, "OnAdd: "),
        ["x1", "x2", "x3", "x4"],
        "the new version: replay, then live"
    );
    assert_eq!(log_lines(&wink, &["plugin reloaded from"]).len(), 1);
}

/// The compile cache's files with their inodes and modification times.
fn cache_entries(dir: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let mut entries: Vec<(PathBuf, u64, SystemTime)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let md = std::fs::metadata(&p).unwrap();
            (p, md.ino(), md.modified().unwrap())
        })
        .collect();
    entries.sort();
    entries
}

fn is_seal(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "seal")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_unchanged_plugins_compiles_nothing() {
    let env = Env::new("recovery_compile_cache").await;
    std::fs::copy(plugin("pod_logger"), env.plugins.join("pl.wasm")).unwrap();
    std::fs::copy(plugin("misbehave"), env.plugins.join("mb.wasm")).unwrap();
    std::fs::write(env.plugins.join("mb.json"), r#"{"mode": "none"}"#).unwrap();
    env.create("p0").await;

    // Each plugin was loaded once, from the directory (`hit`) or compiled.
    let loaded = |w: &Wink, hit: bool| {
        for file in ["pl.wasm", "mb.wasm"] {
            let lines = log_lines(w, &["plugin loaded from", file]);
            assert_eq!(lines.len(), 1, "{lines:#?}");
            assert!(lines[0].contains(&format!("cache_hit={hit}")), "{}", lines[0]);
        }
    };
    let first = env.wink(&[]);
    first.wait_for_line("plugins loaded", WAIT);
    first.wait_for_line("[pl] OnAdd: p0", WAIT);
    loaded(&first, false);
    drop(first);
    let entries = cache_entries(&env.dir.join("cache"));
    assert_eq!(
        entries.len(),
        4,
        "one entry (compiled code and its seal) per component: {entries:#?}"
    );
    let seals = entries.iter().filter(|(p, _, _)| is_seal(p));
    assert_eq!(seals.count(), 2, "{entries:#?}");

    let second = env.wink(&[]);
    second.wait_for_line("plugins loaded", WAIT);
    second.wait_for_line("[pl] OnAdd: p0", WAIT);
    second.wait_for_line("[mb] OnAdd: p0", WAIT);
    loaded(&second, true);
    // Nothing recompiled or rewritten: the same files, the code untouched;
    // each seal's time moved on, marking its entry used (the order in which
    // a directory over its limit gives entries up).
    let after = cache_entries(&env.dir.join("cache"));
    assert_eq!(after.len(), entries.len(), "{after:#?}");
    for ((path, inode, time), (path2, inode2, time2)) in entries.iter().zip(&after) {
        assert_eq!((path, inode), (path2, inode2), "nothing rewritten");
        match is_seal(path) {
            true => assert!(time2 > time, "{} marked used", path.display()),
            false => assert_eq!(time2, time, "{} untouched", path.display()),
        }
    }
    drop(second);

    // Under a limit nothing fits in, opening the directory gives up every
    // entry: both plugins compile again, and of their entries at most the
    // one compiled last stays.
    let third = env.wink(&["--precompiled-max-mib", "0"]);
    third.wait_for_line("plugins loaded", WAIT);
    third.wait_for_line("[pl] OnAdd: p0", WAIT);
    let swept = log_lines(&third, &["precompiled directory swept", "evicted=2"]);
    assert_eq!(swept.len(), 1, "{swept:#?}");
    loaded(&third, false);
    let left = cache_entries(&env.dir.join("cache"));
    assert!(
        left.iter().filter(|(p, _, _)| is_seal(p)).count() <= 1,
        "{left:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_file_unregisters_the_plugin_and_stops_an_unused_informer() {
    let env = Env::new("recovery_remove").await;
    for tag in ["a", "b"] {
        std::fs::copy(plugin("pod_logger"), env.plugins.join(format!("{tag}.wasm"))).unwrap();
        std::fs::write(
            env.plugins.join(format!("{tag}.json")),
            format!(r#"{{"tag": "{tag}"}}"#),
        )
        .unwrap();
    }
    env.create("p0").await;
    let wink = env.wink(&[]);
    wait_for_log(&wink, &["plugin synced", "plugin=a"], 1);
    wait_for_log(&wink, &["plugin synced", "plugin=b"], 1);

    std::fs::remove_file(env.plugins.join("a.wasm")).unwrap();
    wait_for_log(&wink, &["plugin unloaded", "plugin=a"], 1);
    env.create("p1").await;
    wink.wait_for_line("[b] OnAdd:b p1", WAIT);
    assert_eq!(on_lines(&wink, "a"), ["OnAdd:a p0"], "no more lines once removed");
    assert!(
        log_lines(&wink, &["informer stopped"]).is_empty(),
        "b still uses it"
    );

    // The last listener goes: the informer stops, its watch closes.
    std::fs::remove_file(env.plugins.join("b.wasm")).unwrap();
    wait_for_log(&wink, &["plugin unloaded", "plugin=b"], 1);
    wait_for_log(&wink, &["informer stopped", "v1/Pod"], 1);
    wink.wait_until("the pod watch to close", WAIT, |_| {
        env.sim.open_watches("pods") == 0
    });
    env.create("p2").await;
    // A plugin added afterwards starts a new informer and sees p2, which
    // the removed ones never do.
    std::fs::copy(plugin("pod_logger"), env.plugins.join("c.wasm")).unwrap();
    wink.wait_for_line("[c] OnAdd: p2", WAIT);
    assert_eq!(on_lines(&wink, "a"), ["OnAdd:a p0"]);
    assert_eq!(on_lines(&wink, "b"), ["OnAdd:b p0", "OnAdd:b p1"]);
    assert_eq!(log_lines(&wink, &["informer started", "v1/Pod"]).len(), 2);
}
