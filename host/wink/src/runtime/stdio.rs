//! Guest output: stdout/stderr line-buffered into the host's `tracing`
//! output, prefixed with the plugin's name, and the [`LogBudget`] that
//! bounds every line a plugin logs (these streams and the `log` import): a
//! burst, then a steady rate; the excess is dropped and counted, so a plugin
//! printing megabytes per second costs the daemon nothing. Control
//! characters are shown escaped, so a line can forge no other line. Owns
//! nothing else of WASI.

use super::rate::TokenBucket;
use std::borrow::Cow;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Lines a plugin may log at once.
pub const LOG_BURST: u32 = 1000;

/// Lines per second a plugin may log, sustained.
pub const LOG_RATE: f64 = 200.0;

/// One plugin's log lines: admitted within the rate, else dropped and counted.
#[derive(Clone)]
pub struct LogBudget {
    plugin: Arc<str>,
    bucket: Arc<TokenBucket>,
    dropped: Arc<AtomicU64>,
}

impl LogBudget {
    /// The budget of `plugin`: [`LOG_BURST`] lines, then [`LOG_RATE`] a second.
    pub fn new(plugin: Arc<str>) -> Self {
        LogBudget {
            plugin,
            bucket: Arc::new(TokenBucket::new(LOG_RATE, LOG_BURST)),
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Whether one more line may be logged now. The first line dropped says
    /// so; the first line admitted after drops says how many were dropped.
    pub fn admit(&self) -> bool {
        if self.bucket.try_take() {
            let dropped = self.dropped.swap(0, Ordering::Relaxed);
            if dropped > 0 {
                tracing::warn!(target: "wink::plugin", plugin = %self.plugin, dropped, "[{}] {dropped} log lines were dropped", self.plugin);
            }
            return true;
        }
        if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
            tracing::warn!(
                target: "wink::plugin",
                plugin = %self.plugin,
                "[{}] logs more than {LOG_RATE} lines/s: lines are dropped until it slows down",
                self.plugin
            );
        }
        false
    }

    /// Lines dropped since the last one admitted.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Whether the log is read by machines (`--log-format json`): guest lines
/// then carry the plugin as a field instead of a `[plugin]` prefix.
static STRUCTURED: AtomicBool = AtomicBool::new(false);

/// Log guest lines for machines (the plugin as a field) or for people.
pub fn set_structured(on: bool) {
    STRUCTURED.store(on, Ordering::Relaxed);
}

/// Whether guest lines are also kept for `wink test`.
static CAPTURING: AtomicBool = AtomicBool::new(false);

/// The guest lines kept, as (plugin, `LEVEL line`).
static CAPTURED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// Keep every guest line from now on, for [`take_captured`] (`wink test`).
pub fn capture_guest_lines() {
    CAPTURING.store(true, Ordering::Relaxed);
}

/// The guest lines kept since the last call, as (plugin, `LEVEL line`).
pub fn take_captured() -> Vec<(String, String)> {
    std::mem::take(&mut *CAPTURED.lock().unwrap_or_else(|e| e.into_inner()))
}

/// One guest line into the host's log, at `level`, escaped, with its
/// plugin: every guest line (stdout, stderr, the `log` import) goes here.
pub fn guest_line(plugin: &str, level: tracing::Level, line: &str) {
    let line = printable(line);
    if CAPTURING.load(Ordering::Relaxed) {
        let kept = (plugin.to_string(), format!("{level} {line}"));
        CAPTURED.lock().unwrap_or_else(|e| e.into_inner()).push(kept);
    }
    macro_rules! emit {
        ($mac:ident) => {
            if STRUCTURED.load(Ordering::Relaxed) {
                tracing::$mac!(target: "wink::plugin", plugin, "{line}")
            } else {
                tracing::$mac!(target: "wink::plugin", "[{plugin}] {line}")
            }
        };
    }
    match level {
        tracing::Level::TRACE => emit!(trace),
        tracing::Level::DEBUG => emit!(debug),
        tracing::Level::INFO => emit!(info),
        tracing::Level::WARN => emit!(warn),
        _ => emit!(error),
    }
}

/// `line` with control characters (but tab) escaped: one log line stays one.
pub fn printable(line: &str) -> Cow<'_, str> {
    if !line.chars().any(|c| c.is_control() && c != '\t') {
        return Cow::Borrowed(line);
    }
    Cow::Owned(
        line.chars()
            .map(|c| match c {
                '\t' => "\t".to_string(),
                c if c.is_control() => c.escape_default().to_string(),
                c => c.to_string(),
            })
            .collect(),
    )
}

/// Which stream a line came from.
#[derive(Clone, Copy, Debug)]
pub enum Channel {
    Stdout,
    Stderr,
}

/// A guest output stream that logs complete lines.
#[derive(Clone)]
pub struct GuestOutput {
    plugin: Arc<str>,
    channel: Channel,
    pending: Arc<Mutex<Vec<u8>>>,
    budget: LogBudget,
}

impl GuestOutput {
    pub fn new(plugin: Arc<str>, channel: Channel, budget: LogBudget) -> Self {
        GuestOutput {
            plugin,
            channel,
            pending: Arc::new(Mutex::new(Vec::new())),
            budget,
        }
    }

    fn emit(&self, line: &[u8]) {
        if !self.budget.admit() {
            return;
        }
        let line = String::from_utf8_lossy(line);
        let level = match self.channel {
            Channel::Stdout => tracing::Level::INFO,
            Channel::Stderr => tracing::Level::WARN,
        };
        guest_line(&self.plugin, level, line.trim_end_matches('\r'));
    }

    fn write_bytes(&self, bytes: &[u8]) {
        let mut pending = self.pending.lock().unwrap();
        pending.extend_from_slice(bytes);
        while let Some(pos) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=pos).collect();
            self.emit(&line[..line.len() - 1]);
        }
        // Bound a guest that never writes a newline.
        if pending.len() > 64 * 1024 {
            let line = std::mem::take(&mut *pending);
            self.emit(&line);
        }
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for GuestOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.write_bytes(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(1 << 20)
    }
}

impl tokio::io::AsyncWrite for GuestOutput {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.write_bytes(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_tabs_kept() {
        assert_eq!(printable("plain\tline"), "plain\tline");
        assert_eq!(printable("a\nERROR forged"), "a\\nERROR forged");
        assert_eq!(printable("esc\u{1b}[31m"), "esc\\u{1b}[31m");
    }

    #[test]
    fn a_flood_is_cut_to_the_budget_and_counted() {
        let budget = LogBudget::new("p".into());
        let admitted = (0..20_000).filter(|_| budget.admit()).count();
        assert!(
            admitted >= LOG_BURST as usize && admitted < LOG_BURST as usize + 200,
            "{admitted}"
        );
        assert!(budget.dropped() >= 18_000);
    }
}
