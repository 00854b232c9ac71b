//! The SDK's side of batches (`handler.on-batch`): the events of one call
//! handed to the plugin's handler one by one, in order, each announced to
//! the host with `delivery.begin`, so results, writes and a trap belong to
//! the event being handled. Used by [`export_plugin!`](crate::export_plugin);
//! not a plugin author's API.

use crate::bindings::exports::wink::plugin::admission::Verdict;
use crate::bindings::exports::wink::plugin::handler::Event;
use crate::bindings::wink::plugin::{delivery, types};

/// One event of a batch with its objects.
pub enum One {
    Add {
        watch: u32,
        key: String,
        obj: types::Object,
        in_initial_list: bool,
    },
    Update {
        watch: u32,
        key: String,
        old: types::Object,
        new: types::Object,
    },
    Delete {
        watch: u32,
        key: String,
        obj: types::Object,
        final_state_unknown: bool,
    },
}

/// Hand each event of a batch to `handle`, in order; `objects` holds each
/// event's object (an update's old then new), owned: each is dropped after
/// its event (unless the handler kept a clone). A batch whose objects do not
/// match its events is the host's bug: the events past the last whole one
/// are not handled.
pub fn deliver(events: Vec<Event>, objects: Vec<types::Object>, mut handle: impl FnMut(One)) {
    let mut next = objects.into_iter();
    for (i, event) in events.into_iter().enumerate() {
        let one = match event {
            Event::Add(a) => next.next().map(|obj| One::Add {
                watch: a.watch,
                key: a.key,
                obj,
                in_initial_list: a.in_initial_list,
            }),
            Event::Update(u) => next.next().zip(next.next()).map(|(old, new)| One::Update {
                watch: u.watch,
                key: u.key,
                old,
                new,
            }),
            Event::Delete(d) => next.next().map(|obj| One::Delete {
                watch: d.watch,
                key: d.key,
                obj,
                final_state_unknown: d.final_state_unknown,
            }),
        };
        let Some(one) = one else { return };
        delivery::begin(i as u32);
        handle(one);
    }
}

/// The verdict that allows a request and says nothing more.
pub fn allowed() -> Verdict {
    Verdict {
        allowed: true,
        code: None,
        reason: None,
        message: String::new(),
        warnings: Vec::new(),
        audit_annotations: Vec::new(),
    }
}
