//! How a retry loop speaks of its failures: an error as one short line
//! ([`short_error`]: a Kubernetes API error as its code, reason and message,
//! never a `Debug` dump, and at most [`MAX_LINE`] bytes), and a failure
//! that repeats said once, then at most once per interval with the count
//! of repeats since, and once more when it recovers ([`RepeatedFailure`]).
//! Owns only the wording and the throttle; each loop logs what it is told
//! to, at the level it is told, with its own fields.

use std::time::{Duration, Instant};

/// The longest error text said, in bytes.
pub const MAX_LINE: usize = 512;

/// How often a failure that keeps repeating is said again, by default.
pub const INTERVAL: Duration = Duration::from_secs(60);

/// `err` and its causes as one short line: each cause once (a cause whose
/// text its parent already shows is skipped), a Kubernetes API error as
/// `code reason: message` (which ends the chain: its causes are itself),
/// line breaks as spaces, cut at [`MAX_LINE`] bytes.
pub fn short_error(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(err);
    while let Some(e) = next {
        let status = match e.downcast_ref::<kube::Error>() {
            Some(kube::Error::Api(status)) => Some(&**status),
            _ => e.downcast_ref::<kube::core::Status>(),
        };
        if let Some(status) = status {
            parts.push(status_line(status));
            break;
        }
        let text = e.to_string();
        if !parts.last().is_some_and(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    cut(parts.join(": ").replace(['\n', '\r'], " "))
}

/// A text already made of an error, as one line of at most [`MAX_LINE`]
/// bytes.
pub fn short_text(text: &str) -> String {
    cut(text.replace(['\n', '\r'], " "))
}

/// An anyhow error (and its context) as [`short_error`] says it.
pub fn short_anyhow(err: &anyhow::Error) -> String {
    short_error(err.as_ref())
}

/// A Status as `422 Invalid: message`.
fn status_line(status: &kube::core::Status) -> String {
    let mut line = String::new();
    if status.code != 0 {
        line.push_str(&status.code.to_string());
    }
    for part in [&status.reason, &status.message] {
        if part.is_empty() {
            continue;
        }
        if !line.is_empty() {
            line.push_str(if line.ends_with(|c: char| c.is_ascii_digit()) {
                " "
            } else {
                ": "
            });
        }
        line.push_str(part);
    }
    if line.is_empty() {
        "the API server answered with an empty Status".into()
    } else {
        line
    }
}

fn cut(mut line: String) -> String {
    if line.len() > MAX_LINE {
        let mut end = MAX_LINE - 3;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push_str("...");
    }
    line
}

/// A retry loop's failures: what to say of each failure and success. The
/// first failure is said; the same error again is not, until `interval`
/// has passed since it was last said (then it is said with the number of
/// repeats since); a different error is said at once; a success after a
/// failure said is said once. Times are given (`*_at`), so a test needs no
/// clock; the plain forms read [`Instant::now`].
#[derive(Debug)]
pub struct RepeatedFailure {
    interval: Duration,
    failing: Option<Failing>,
}

#[derive(Debug)]
struct Failing {
    /// The error last said.
    said: String,
    /// When it was last said.
    at: Instant,
    /// Failures since then, not said.
    repeats: u64,
    /// Failures since the last success, and when the first was.
    total: u64,
    since: Instant,
}

impl Default for RepeatedFailure {
    fn default() -> Self {
        RepeatedFailure::new(INTERVAL)
    }
}

impl RepeatedFailure {
    /// Repeats said at most once per `interval`.
    pub fn new(interval: Duration) -> Self {
        RepeatedFailure {
            interval,
            failing: None,
        }
    }

    /// Whether the last attempt failed.
    pub fn is_failing(&self) -> bool {
        self.failing.is_some()
    }

    /// A failure with `error` (a short line): the line to say at WARN, or
    /// nothing.
    pub fn failed(&mut self, error: &str) -> Option<String> {
        self.failed_at(Instant::now(), error)
    }

    /// [`Self::failed`] at `now`.
    pub fn failed_at(&mut self, now: Instant, error: &str) -> Option<String> {
        let Some(f) = self.failing.as_mut() else {
            self.failing = Some(Failing {
                said: error.to_string(),
                at: now,
                repeats: 0,
                total: 1,
                since: now,
            });
            return Some(error.to_string());
        };
        f.total += 1;
        let due = now.saturating_duration_since(f.at) >= self.interval;
        if f.said != error || due {
            let line = match f.repeats {
                0 => error.to_string(),
                n => format!(
                    "{error} (failed {n} more time{} in the last {}s)",
                    if n == 1 { "" } else { "s" },
                    now.saturating_duration_since(f.at).as_secs()
                ),
            };
            f.said = error.to_string();
            f.at = now;
            f.repeats = 0;
            return Some(line);
        }
        f.repeats += 1;
        None
    }

    /// A success: the line to say at INFO when it ends failures, or
    /// nothing.
    pub fn succeeded(&mut self) -> Option<String> {
        // No clock read on a loop's usual path.
        self.failing.as_ref()?;
        self.succeeded_at(Instant::now())
    }

    /// [`Self::succeeded`] at `now`.
    pub fn succeeded_at(&mut self, now: Instant) -> Option<String> {
        let f = self.failing.take()?;
        Some(format!(
            "recovered after {} failure{} in {}s",
            f.total,
            if f.total == 1 { "" } else { "s" },
            now.saturating_duration_since(f.since).as_secs()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeating_failure_is_said_once_then_once_per_interval_then_its_recovery() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut r = RepeatedFailure::new(Duration::from_secs(60));
        assert_eq!(r.succeeded_at(at(0)), None, "nothing failed");
        assert_eq!(r.failed_at(at(0), "refused").as_deref(), Some("refused"));
        let said: Vec<_> = (1..30)
            .filter_map(|i| r.failed_at(at(2 * i), "refused"))
            .collect();
        assert!(said.is_empty(), "{said:?}");
        assert_eq!(
            r.failed_at(at(60), "refused").as_deref(),
            Some("refused (failed 29 more times in the last 60s)")
        );
        assert_eq!(r.failed_at(at(62), "refused"), None);
        assert!(r.is_failing());
        assert_eq!(
            r.succeeded_at(at(70)).as_deref(),
            Some("recovered after 32 failures in 70s")
        );
        assert!(!r.is_failing());
        assert_eq!(r.succeeded_at(at(72)), None, "said once");
        assert_eq!(
            r.failed_at(at(74), "refused").as_deref(),
            Some("refused"),
            "a new run"
        );
    }

    #[test]
    fn a_different_error_is_said_at_once() {
        let t0 = Instant::now();
        let mut r = RepeatedFailure::default();
        assert!(r.failed_at(t0, "a").is_some());
        assert!(r.failed_at(t0 + Duration::from_secs(1), "a").is_none());
        assert_eq!(
            r.failed_at(t0 + Duration::from_secs(2), "b").as_deref(),
            Some("b (failed 1 more time in the last 2s)")
        );
        assert!(r.failed_at(t0 + Duration::from_secs(3), "b").is_none());
    }

    fn invalid() -> kube::Error {
        kube::Error::Api(
            kube::core::Status {
                code: 422,
                reason: "Invalid".into(),
                message: "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"wink\" is invalid: webhooks[0].name: Invalid value".into(),
                ..Default::default()
            }
            .boxed(),
        )
    }

    #[test]
    fn an_api_error_is_its_code_reason_and_message_once() {
        let line = short_error(&invalid());
        assert_eq!(
            line,
            "422 Invalid: ValidatingWebhookConfiguration.admissionregistration.k8s.io \"wink\" is invalid: webhooks[0].name: Invalid value"
        );
        let wrapped = anyhow::Error::new(invalid()).context("webhook configuration not written");
        let line = short_anyhow(&wrapped);
        assert_eq!(
            line,
            "webhook configuration not written: 422 Invalid: ValidatingWebhookConfiguration.admissionregistration.k8s.io \"wink\" is invalid: webhooks[0].name: Invalid value"
        );
        assert!(!line.contains("Status {") && !line.contains("ApiError"), "{line}");
        // What kube's own Display says, for contrast: the Status's Debug.
        assert!(format!("{:#}", anyhow::Error::new(invalid())).contains("Status {"));
    }

    #[test]
    fn causes_are_said_once_and_a_long_line_is_cut() {
        let io = std::io::Error::other("connection refused");
        let wrapped = anyhow::Error::new(io).context("list pods").context("list pods");
        assert_eq!(short_anyhow(&wrapped), "list pods: connection refused");
        let long = anyhow::anyhow!("{}\nsecond line", "x".repeat(2000));
        let line = short_anyhow(&long);
        assert!(line.len() <= MAX_LINE && line.ends_with("..."), "{}", line.len());
        assert!(!line.contains('\n'));
    }
}
