//! Panics in `wink test`'s own code, caught where the harness's work runs
//! on a thread it does not own (a delivery thread, a plugin's call into the
//! captured API server), so that a bug there fails the case with its
//! message instead of leaving a delivery unfinished. Owns the list of what
//! panicked in one case.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

/// What panicked so far in one case.
#[derive(Clone, Default)]
pub struct Faults(Arc<Mutex<Vec<String>>>);

impl Faults {
    /// Run `f`; a panic is recorded as `what` and its message, and is `None`.
    pub fn guard<R>(&self, what: &str, f: impl FnOnce() -> R) -> Option<R> {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(r) => Some(r),
            Err(payload) => {
                let fault = format!("{what}: {}", message(payload.as_ref()));
                self.0.lock().unwrap_or_else(|e| e.into_inner()).push(fault);
                None
            }
        }
    }

    /// What panicked, in order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A panic's message.
pub fn message(payload: &(dyn Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => s.to_string(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_recorded_with_its_message_and_the_caller_goes_on() {
        let faults = Faults::default();
        assert_eq!(faults.guard("adding", || 1 + 1), Some(2));
        let on_another_thread = faults.clone();
        std::thread::spawn(move || {
            let got: Option<()> =
                on_another_thread.guard("answering PATCH", || panic!("cannot access key {:?}", "metadata"));
            assert!(got.is_none());
        })
        .join()
        .expect("the thread did not die");
        assert_eq!(faults.take(), ["answering PATCH: cannot access key \"metadata\""]);
        assert!(faults.take().is_empty());
    }
}
