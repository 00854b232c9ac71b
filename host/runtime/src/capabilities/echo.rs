//! Echoes: events a plugin receives that are the results of its own
//! writes. A plugin that keeps rewriting the objects it watches (a feedback
//! loop) is held at its rate limit by the write capability; this says so
//! in the log, once per window of events, when most of its events are echoes.

use std::collections::VecDeque;

/// Written versions remembered at most.
const REMEMBERED: usize = 256;

/// Events per window.
const WINDOW: u64 = 200;

/// Events a window needs before it can tell a loop.
const MIN_EVENTS: u64 = 40;

/// One plugin's recent writes and the share of its events they echo.
#[derive(Debug, Default)]
pub struct EchoTracker {
    written: VecDeque<String>,
    events: u64,
    echoes: u64,
    warned: bool,
}

impl EchoTracker {
    /// The plugin wrote an object, now at `resource_version`.
    pub fn written(&mut self, resource_version: &str) {
        if self.written.len() == REMEMBERED {
            self.written.pop_front();
        }
        self.written.push_back(resource_version.to_string());
    }

    /// The plugin is handed an object at `resource_version`: the warning to
    /// log, the first time in a window that most events were echoes.
    pub fn delivered(&mut self, resource_version: &str) -> Option<String> {
        if self.events == WINDOW {
            *self = EchoTracker {
                written: std::mem::take(&mut self.written),
                ..EchoTracker::default()
            };
        }
        self.events += 1;
        if let Some(i) = self.written.iter().position(|rv| rv == resource_version) {
            self.written.remove(i);
            self.echoes += 1;
        }
        (self.events >= MIN_EVENTS && self.echoes * 2 > self.events && !self.warned).then(|| {
            self.warned = true;
            format!(
                "{} of its last {} events were echoes of its own writes: a feedback loop? (it is held at its write rate)",
                self.echoes, self.events
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_is_told_once_per_window_and_ordinary_traffic_never() {
        let mut t = EchoTracker::default();
        let mut warnings = 0;
        for i in 0..1000u64 {
            // Every event echoes the plugin's previous write.
            t.written(&i.to_string());
            warnings += t.delivered(&i.to_string()).is_some() as usize;
        }
        assert_eq!(warnings, 5, "once per window of {WINDOW}");
        let mut quiet = EchoTracker::default();
        for i in 0..1000u64 {
            if i % 10 == 0 {
                quiet.written(&format!("w{i}"));
            }
            assert!(
                quiet.delivered(&format!("w{i}")).is_none(),
                "one in ten is no loop"
            );
        }
    }
}
