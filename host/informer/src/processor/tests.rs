//! The processor's unit tests, and the recording handler other tests use.

use super::*;
use crate::object::tests::pod;

/// Records what it receives as lines, for tests.
#[derive(Default)]
pub struct Recorder {
    pub lines: Mutex<Vec<String>>,
    pub gate: Mutex<()>,
}

impl Recorder {
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
    fn rec(&self, s: String) {
        let _g = self.gate.lock().unwrap();
        self.lines.lock().unwrap().push(s);
    }
}

impl EventHandler for Recorder {
    fn on_add(&self, obj: &ObjRef, initial: bool) {
        self.rec(format!("add {} {}", obj.key(), initial));
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        self.rec(format!(
            "update {} {}->{}",
            new.key(),
            old.resource_version(),
            new.resource_version()
        ));
    }
    fn on_delete(&self, obj: &ObjRef, unknown: bool) {
        self.rec(format!("delete {} {}", obj.key(), unknown));
    }
    fn on_synced(&self) {
        self.rec("synced".into());
    }
}

pub fn wait_for(mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "condition not met in 10 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn delivers_in_order_and_marks_synced() {
    let rec = Arc::new(Recorder::default());
    let l = Listener::start("t", rec.clone(), None);
    l.push(Notification::Add {
        obj: pod("d", "a", 1, &[]),
        in_initial_list: true,
    });
    l.push(Notification::Synced);
    l.push(Notification::Update {
        old: pod("d", "a", 1, &[]),
        new: pod("d", "a", 2, &[]),
    });
    l.push(Notification::Delete {
        obj: pod("d", "a", 2, &[]),
        final_state_unknown: true,
    });
    wait_for(|| rec.lines().len() == 4);
    assert_eq!(
        rec.lines(),
        vec!["add d/a true", "synced", "update d/a 1->2", "delete d/a true"]
    );
    assert!(l.has_synced());
    assert_eq!(l.delivered(), 3);
    l.stop();
}

#[test]
fn a_stuck_listener_does_not_block_another() {
    let stuck = Arc::new(Recorder::default());
    let free = Arc::new(Recorder::default());
    let gate = stuck.gate.lock().unwrap();
    let a = Listener::start("stuck", stuck.clone(), None);
    let b = Listener::start("free", free.clone(), None);
    for i in 0..100 {
        let n = Notification::Add {
            obj: pod("d", &format!("p{i}"), i, &[]),
            in_initial_list: false,
        };
        a.push(n.clone());
        b.push(n);
    }
    wait_for(|| free.lines().len() == 100);
    assert!(stuck.lines().is_empty());
    assert!(a.backlog() >= 99);
    drop(gate);
    wait_for(|| stuck.lines().len() == 100);
    assert_eq!(stuck.lines(), free.lines());
    a.stop();
    b.stop();
}

#[test]
fn listeners_stuck_on_every_worker_get_the_others_another_worker() {
    let stuck: Vec<Arc<Recorder>> = (0..4).map(|_| Arc::new(Recorder::default())).collect();
    let gates: Vec<_> = stuck.iter().map(|r| r.gate.lock().unwrap()).collect();
    let listeners: Vec<_> = stuck
        .iter()
        .enumerate()
        .map(|(i, r)| Listener::start(&format!("stuck-{i}"), r.clone(), None))
        .collect();
    for l in &listeners {
        l.push(Notification::Synced);
    }
    let free = Arc::new(Recorder::default());
    let f = Listener::start("free", free.clone(), None);
    f.push(Notification::Synced);
    wait_for(|| free.lines().len() == 1);
    assert!(
        super::super::pool::pool().workers() >= 5,
        "one worker per stuck listener, plus one"
    );
    drop(gates);
    wait_for(|| stuck.iter().all(|r| r.lines().len() == 1));
    for l in listeners {
        l.stop();
    }
    f.stop();
}

#[test]
fn drain_and_stop_delivers_what_was_queued_and_refuses_more() {
    let rec = Arc::new(Recorder::default());
    let gate = rec.gate.lock().unwrap();
    let l = Listener::start("d", rec.clone(), None);
    for i in 0..5 {
        l.push(Notification::Add {
            obj: pod("d", &format!("p{i}"), i, &[]),
            in_initial_list: false,
        });
    }
    l.drain_and_stop();
    l.push(Notification::Add {
        obj: pod("d", "late", 9, &[]),
        in_initial_list: false,
    });
    drop(gate);
    wait_for(|| l.is_finished());
    assert_eq!(rec.lines().len(), 5);
    assert!(!rec.lines().iter().any(|x| x.contains("late")));
}

#[test]
fn resync_schedule_floors_at_one_second() {
    let l = Listener::start(
        "r",
        Arc::new(Recorder::default()),
        Some(Duration::from_millis(10)),
    );
    let now = Instant::now();
    assert!(!l.take_resync_due(now));
    assert!(l.take_resync_due(now + Duration::from_secs(1)));
    assert!(!l.take_resync_due(now + Duration::from_millis(1500)));
    l.stop();
}

/// An async handler: records each delivery, and waits (yielding its
/// thread) while `hold` is set.
struct AsyncRec {
    rec: Recorder,
    hold: Arc<tokio::sync::Semaphore>,
    /// The thread each delivery ran on.
    threads: Mutex<Vec<std::thread::ThreadId>>,
}

impl EventHandler for AsyncRec {
    fn on_add(&self, _: &ObjRef, _: bool) {
        unreachable!("delivered async")
    }
    fn on_update(&self, _: &ObjRef, _: &ObjRef) {
        unreachable!("delivered async")
    }
    fn on_delete(&self, _: &ObjRef, _: bool) {
        unreachable!("delivered async")
    }
    fn is_async(&self) -> bool {
        true
    }
    fn deliver_async(self: Arc<Self>, n: Notification) -> Option<DeliveryFuture> {
        Some(Box::pin(async move {
            let _permit = self.hold.acquire().await.unwrap();
            self.threads.lock().unwrap().push(std::thread::current().id());
            if let Notification::Add { obj, .. } = n {
                self.rec.rec(format!("add {}", obj.key()));
            }
        }))
    }
}

/// Async handlers run as runtime tasks: in order each, one waiting in a
/// call holds up no other, and stopping the waiting one from a runtime
/// thread returns once its call has ended.
#[test]
fn async_listeners_run_as_tasks_and_one_waiting_holds_up_no_other() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _enter = rt.enter();
    let stuck_gate = Arc::new(tokio::sync::Semaphore::new(0));
    let stuck = Arc::new(AsyncRec {
        rec: Recorder::default(),
        hold: stuck_gate.clone(),
        threads: Mutex::default(),
    });
    let free = Arc::new(AsyncRec {
        rec: Recorder::default(),
        hold: Arc::new(tokio::sync::Semaphore::new(1)),
        threads: Mutex::default(),
    });
    let ls = Listener::start("stuck", stuck.clone(), None);
    let lf = Listener::start("free", free.clone(), None);
    assert!(
        ls.runtime.is_some() && lf.runtime.is_some(),
        "async handlers start on the runtime"
    );
    rt.block_on(async {
        let mut starts = Starts::default();
        for i in 0..3 {
            let add = || Notification::Add {
                obj: pod("d", &format!("p{i}"), 1, &[]),
                in_initial_list: false,
            };
            ls.queue_all([add()], &mut starts);
            lf.queue_all([add()], &mut starts);
        }
        starts.run();
    });
    // The free one's batch ran in place, on the thread that started it,
    // before `run` returned; the stuck one's went on as a task.
    assert_eq!(free.rec.lines(), vec!["add d/p0", "add d/p1", "add d/p2"]);
    let here = std::thread::current().id();
    assert!(free.threads.lock().unwrap().iter().all(|t| *t == here));
    assert!(stuck.rec.lines().is_empty());
    assert!(!ls.is_idle());
    // Stop it from a runtime thread while its call waits; the call ends.
    let stopper = {
        let ls = ls.clone();
        rt.spawn(async move { ls.stop() })
    };
    std::thread::sleep(Duration::from_millis(50));
    stuck_gate.add_permits(1);
    rt.block_on(stopper).unwrap();
    assert_eq!(
        stuck.rec.lines(),
        vec!["add d/p0"],
        "the call in progress ends, the rest is dropped"
    );
    assert_ne!(
        stuck.threads.lock().unwrap()[0],
        here,
        "the waiting batch went on as a task"
    );
    wait_for(|| ls.is_finished());
}

/// An async handler that takes batches whole: records each call's events.
#[derive(Default)]
struct BatchRec {
    calls: Mutex<Vec<Vec<String>>>,
    synced: Mutex<Vec<usize>>,
}

impl EventHandler for BatchRec {
    fn on_add(&self, _: &ObjRef, _: bool) {
        unreachable!("delivered async")
    }
    fn on_update(&self, _: &ObjRef, _: &ObjRef) {
        unreachable!("delivered async")
    }
    fn on_delete(&self, _: &ObjRef, _: bool) {
        unreachable!("delivered async")
    }
    fn is_async(&self) -> bool {
        true
    }
    fn takes_batches(&self) -> bool {
        true
    }
    fn deliver_async(self: Arc<Self>, n: Notification) -> Option<DeliveryFuture> {
        assert!(matches!(n, Notification::Synced), "only the marker goes alone");
        Some(Box::pin(async move {
            let calls = self.calls.lock().unwrap().len();
            self.synced.lock().unwrap().push(calls);
        }))
    }
    fn deliver_batch_async(self: Arc<Self>, batch: Vec<Notification>) -> Option<DeliveryFuture> {
        Some(Box::pin(async move {
            let keys = batch
                .iter()
                .map(|n| match n {
                    Notification::Add { obj, .. } => obj.key(),
                    other => panic!("unexpected {other:?}"),
                })
                .collect();
            self.calls.lock().unwrap().push(keys);
        }))
    }
}

/// A handler that takes batches gets the queue in order, at most BATCH a
/// call, with the sync marker after the events before it, alone.
#[test]
fn a_handler_that_takes_batches_gets_them_whole_in_order() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _enter = rt.enter();
    let h = Arc::new(BatchRec::default());
    let l = Listener::start("batches", h.clone(), None);
    let add = |i: usize| Notification::Add {
        obj: pod("d", &format!("p{i:03}"), 1, &[]),
        in_initial_list: true,
    };
    rt.block_on(async {
        let mut starts = Starts::default();
        let initial = (0..BATCH + 10).map(add).chain([Notification::Synced]);
        l.queue_all(initial.chain((200..203).map(add)), &mut starts);
        starts.run();
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(l.is_idle() && h.calls.lock().unwrap().len() == 3) {
        assert!(
            Instant::now() < deadline,
            "delivered: {:?}",
            h.calls.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let calls = h.calls.lock().unwrap().clone();
    let sizes: Vec<usize> = calls.iter().map(Vec::len).collect();
    assert_eq!(sizes, [BATCH, 10, 3], "{calls:?}");
    let all: Vec<String> = calls.concat();
    let want: Vec<String> = (0..BATCH + 10)
        .chain(200..203)
        .map(|i| format!("d/p{i:03}"))
        .collect();
    assert_eq!(all, want, "in order, each once");
    assert_eq!(
        *h.synced.lock().unwrap(),
        [2],
        "after the initial list's two calls"
    );
    assert!(l.has_synced());
    assert_eq!(l.delivered(), (BATCH + 13) as u64);
    l.stop();
}

/// Takes only updates that change the `app` label; asked at enqueue.
struct AppChanges {
    rec: Recorder,
    asked: AtomicU64,
}

impl EventHandler for AppChanges {
    fn on_add(&self, obj: &ObjRef, initial: bool) {
        self.rec.on_add(obj, initial)
    }
    fn on_update(&self, old: &ObjRef, new: &ObjRef) {
        self.rec.on_update(old, new)
    }
    fn on_delete(&self, obj: &ObjRef, unknown: bool) {
        self.rec.on_delete(obj, unknown)
    }
    fn on_synced(&self) {
        self.rec.on_synced()
    }
    fn wants(&self, n: &Notification) -> bool {
        self.asked.fetch_add(1, Ordering::Relaxed);
        match n {
            Notification::Update { old, new } => old.label("app") != new.label("app"),
            _ => true,
        }
    }
}

#[test]
fn what_a_handler_does_not_want_is_never_queued() {
    let h = Arc::new(AppChanges {
        rec: Recorder::default(),
        asked: AtomicU64::new(0),
    });
    // Held: nothing is delivered while the updates are pushed, so what
    // waits is exactly what was queued.
    let gate = h.rec.gate.lock().unwrap();
    let l = Listener::start("t", h.clone(), None);
    l.push(Notification::Add {
        obj: pod("d", "a", 1, &[("app", "web")]),
        in_initial_list: false,
    });
    wait_for(|| l.backlog() == 0);
    for rv in 2..12 {
        // The label moves from web to db at version 7, once.
        let app = |v| if v >= 7 { "db" } else { "web" };
        let (old_app, app) = (app(rv - 1), app(rv));
        l.push(Notification::Update {
            old: pod("d", "a", rv - 1, &[("app", old_app)]),
            new: pod("d", "a", rv, &[("app", app)]),
        });
    }
    l.push(Notification::Synced);
    assert_eq!(
        l.backlog(),
        2,
        "the label change and the sync marker wait; nothing else"
    );
    drop(gate);
    wait_for(|| h.rec.lines().len() == 3);
    assert_eq!(h.rec.lines(), vec!["add d/a false", "update d/a 6->7", "synced"]);
    assert_eq!(
        h.asked.load(Ordering::Relaxed),
        11,
        "asked once per add and update, never for the marker"
    );
    assert_eq!(l.delivered(), 2);
    l.stop();
}
