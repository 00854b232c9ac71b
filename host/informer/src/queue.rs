//! [`PendingQueue`]: the notifications one listener has not yet delivered.
//!
//! client-go's processorListener buffer grows without bound while its handler
//! is stuck. This queue does the same up to a configurable backlog; past it,
//! pending notifications for the same object coalesce (old = the state the
//! handler saw last, new = the latest), so a stuck handler costs memory in the
//! number of distinct objects, not in the number of events. Per object, the
//! handler still sees its changes in watch order.
//!
//! Owns queue order and coalescing only: no threads, no locking (the
//! [`Listener`](super::processor::Listener) guards it), no store access.

use super::object::ObjRef;
use std::collections::{HashMap, VecDeque};

/// One notification, with client-go's meaning.
#[derive(Debug, Clone)]
pub enum Notification {
    /// Added (or replayed from the cache for a joining handler).
    Add { obj: ObjRef, in_initial_list: bool },
    /// Changed; a resync has `old` and `new` the same version.
    Update { old: ObjRef, new: ObjRef },
    /// Deleted; `final_state_unknown` for a tombstone from a relist.
    Delete { obj: ObjRef, final_state_unknown: bool },
    /// Everything of the initial list (or replay) before this was delivered.
    Synced,
}

/// Pending notifications, in order, coalescing per object past a backlog.
#[derive(Default)]
pub struct PendingQueue {
    /// Slots in order; `None` where a notification was coalesced away.
    slots: VecDeque<Option<Notification>>,
    /// Sequence number of `slots[0]`.
    head: u64,
    /// Live (`Some`) slots.
    live: usize,
    /// Backlog at which coalescing starts; `None` never coalesces.
    coalesce_after: Option<usize>,
    /// While coalescing: object key -> sequence of its newest pending slot.
    newest: Option<HashMap<String, u64>>,
    /// Notifications merged into (or cancelled with) an earlier one.
    coalesced: u64,
}

/// What became of an incoming notification when one for the same object is pending.
enum Merge {
    /// The pending slot now holds this instead (the incoming one is absorbed).
    Into(Notification),
    /// Both cancel out: an add the handler never saw, then its delete.
    Cancel,
    /// Cannot merge (e.g. a re-create after a pending delete): enqueue it.
    Keep(Notification),
}

fn merge(pending: &Notification, incoming: Notification) -> Merge {
    use Notification::*;
    match (pending, incoming) {
        (Add { in_initial_list, .. }, Update { new, .. }) => Merge::Into(Add {
            obj: new,
            in_initial_list: *in_initial_list,
        }),
        (Add { .. }, Delete { .. }) => Merge::Cancel,
        (Update { old, .. }, Update { new, .. }) => Merge::Into(Update {
            old: old.clone(),
            new,
        }),
        (Update { .. }, d @ Delete { .. }) => Merge::Into(d),
        (_, other) => Merge::Keep(other),
    }
}

fn key_of(n: &Notification) -> Option<String> {
    match n {
        Notification::Add { obj, .. } | Notification::Delete { obj, .. } => Some(obj.key()),
        Notification::Update { new, .. } => Some(new.key()),
        Notification::Synced => None,
    }
}

impl PendingQueue {
    /// An empty queue that coalesces once `coalesce_after` notifications wait.
    pub fn new(coalesce_after: Option<usize>) -> Self {
        PendingQueue {
            coalesce_after,
            ..Default::default()
        }
    }

    /// Notifications waiting.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Drop everything pending (a stopped listener's).
    pub fn clear(&mut self) {
        *self = PendingQueue {
            coalesce_after: self.coalesce_after,
            coalesced: self.coalesced,
            ..Default::default()
        };
    }

    /// Notifications absorbed by coalescing so far.
    pub fn coalesced(&self) -> u64 {
        self.coalesced
    }

    /// Whether the queue is past its backlog and coalescing.
    pub fn is_coalescing(&self) -> bool {
        self.newest.is_some()
    }

    /// Enqueue at the back, or merge into a pending notification for the
    /// same object while coalescing. Returns true when this push started
    /// coalescing.
    pub fn push(&mut self, n: Notification) -> bool {
        let started = self.start_coalescing_if_due();
        let Some(newest) = self.newest.as_mut() else {
            self.append(n, None);
            return started;
        };
        let Some(key) = key_of(&n) else {
            self.append(n, None);
            return started;
        };
        let n = match newest.get(&key) {
            Some(&seq) => {
                let idx = (seq - self.head) as usize;
                let pending = self.slots[idx].as_ref().expect("newest slot is live");
                match merge(pending, n) {
                    Merge::Into(m) => {
                        self.slots[idx] = Some(m);
                        self.coalesced += 1;
                        return started;
                    }
                    Merge::Cancel => {
                        self.slots[idx] = None;
                        self.live -= 1;
                        newest.remove(&key);
                        self.coalesced += 2;
                        self.compact_if_sparse();
                        return started;
                    }
                    Merge::Keep(n) => n,
                }
            }
            None => n,
        };
        self.append(n, Some(key));
        started
    }

    /// Take the oldest pending notification.
    pub fn pop(&mut self) -> Option<Notification> {
        while let Some(slot) = self.slots.pop_front() {
            let seq = self.head;
            self.head += 1;
            let Some(n) = slot else { continue };
            self.live -= 1;
            if let Some(newest) = self.newest.as_mut() {
                if let Some(key) = key_of(&n)
                    && newest.get(&key) == Some(&seq)
                {
                    newest.remove(&key);
                }
                // Leave coalescing once the backlog is well under the limit.
                if self.coalesce_after.is_some_and(|limit| self.live <= limit / 2) {
                    self.newest = None;
                }
            }
            return Some(n);
        }
        None
    }

    fn append(&mut self, n: Notification, key: Option<String>) {
        let seq = self.head + self.slots.len() as u64;
        if let (Some(newest), Some(key)) = (self.newest.as_mut(), key) {
            newest.insert(key, seq);
        }
        self.slots.push_back(Some(n));
        self.live += 1;
    }

    fn start_coalescing_if_due(&mut self) -> bool {
        match self.coalesce_after {
            Some(limit) if self.newest.is_none() && self.live >= limit => {
                self.rebuild_index();
                true
            }
            _ => false,
        }
    }

    /// Index the newest pending slot of every object.
    fn rebuild_index(&mut self) {
        let mut newest = HashMap::with_capacity(self.live);
        for (i, slot) in self.slots.iter().enumerate() {
            if let Some(key) = slot.as_ref().and_then(key_of) {
                newest.insert(key, self.head + i as u64);
            }
        }
        self.newest = Some(newest);
    }

    /// Drop cancelled slots once they outnumber the live ones.
    fn compact_if_sparse(&mut self) {
        if self.slots.len() <= 2 * self.live + 64 {
            return;
        }
        self.slots.retain(|s| s.is_some());
        self.head = 0;
        self.rebuild_index();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::tests::pod;

    fn add(name: &str, rv: u64) -> Notification {
        Notification::Add {
            obj: pod("d", name, rv, &[]),
            in_initial_list: false,
        }
    }
    fn update(name: &str, old: u64, new: u64) -> Notification {
        Notification::Update {
            old: pod("d", name, old, &[]),
            new: pod("d", name, new, &[]),
        }
    }
    fn delete(name: &str, rv: u64) -> Notification {
        Notification::Delete {
            obj: pod("d", name, rv, &[]),
            final_state_unknown: false,
        }
    }
    fn show(n: &Notification) -> String {
        match n {
            Notification::Add { obj, .. } => format!("add {} {}", obj.name(), obj.resource_version()),
            Notification::Update { old, new } => format!(
                "update {} {}->{}",
                new.name(),
                old.resource_version(),
                new.resource_version()
            ),
            Notification::Delete { obj, .. } => {
                format!("delete {} {}", obj.name(), obj.resource_version())
            }
            Notification::Synced => "synced".into(),
        }
    }
    fn drain(q: &mut PendingQueue) -> Vec<String> {
        std::iter::from_fn(|| q.pop()).map(|n| show(&n)).collect()
    }

    #[test]
    fn below_the_backlog_nothing_coalesces() {
        let mut q = PendingQueue::new(Some(100));
        for rv in 1..=10 {
            q.push(update("a", rv, rv + 1));
        }
        assert_eq!(q.len(), 10);
        assert_eq!(q.coalesced(), 0);
        assert_eq!(drain(&mut q).len(), 10);
    }

    #[test]
    fn past_the_backlog_updates_merge_keeping_old_and_latest() {
        let mut q = PendingQueue::new(Some(2));
        q.push(add("a", 1));
        q.push(add("b", 1));
        assert!(q.push(update("a", 1, 2)), "third push starts coalescing");
        q.push(update("a", 2, 3));
        q.push(update("b", 1, 2));
        q.push(Notification::Synced);
        q.push(update("b", 2, 3));
        assert_eq!(q.coalesced(), 4);
        assert_eq!(drain(&mut q), ["add a 3", "add b 3", "synced"]);
    }

    #[test]
    fn delete_absorbs_updates_and_cancels_an_unseen_add() {
        let mut q = PendingQueue::new(Some(1));
        q.push(add("keep", 1));
        q.push(update("x", 1, 2));
        q.push(update("x", 2, 3));
        q.push(delete("x", 3));
        q.push(add("gone", 5));
        q.push(update("gone", 5, 6));
        q.push(delete("gone", 6));
        assert_eq!(drain(&mut q), ["add keep 1", "delete x 3"]);
    }

    #[test]
    fn a_recreate_after_a_pending_delete_stays_separate() {
        let mut q = PendingQueue::new(Some(1));
        q.push(add("keep", 1));
        q.push(update("x", 1, 2));
        q.push(delete("x", 2));
        q.push(add("x", 7));
        q.push(update("x", 7, 8));
        assert_eq!(drain(&mut q), ["add keep 1", "delete x 2", "add x 8"]);
    }

    #[test]
    fn memory_is_bounded_by_distinct_objects_under_endless_churn() {
        let mut q = PendingQueue::new(Some(10));
        for i in 0..10 {
            q.push(add(&format!("p{i}"), 0));
        }
        // A stuck handler while 10 objects change 10,000 times each and
        // 10,000 short-lived objects come and go.
        for rv in 1..=10_000u64 {
            q.push(update(&format!("p{}", rv % 10), rv, rv + 1));
            q.push(add(&format!("tmp{rv}"), rv));
            q.push(delete(&format!("tmp{rv}"), rv));
        }
        assert_eq!(q.len(), 10);
        assert!(q.slots.len() <= 2 * 10 + 64 + 1, "slots {}", q.slots.len());
        let out = drain(&mut q);
        assert_eq!(out.len(), 10);
        assert!(out.iter().all(|l| l.starts_with("add p")), "{out:?}");
        assert!(!q.is_coalescing());
    }

    #[test]
    fn without_a_limit_it_never_coalesces() {
        let mut q = PendingQueue::new(None);
        for rv in 0..1000 {
            q.push(update("a", rv, rv + 1));
        }
        assert_eq!(q.len(), 1000);
        assert_eq!(q.coalesced(), 0);
    }
}
