//! Guest output: stdout/stderr line-buffered into the host's `tracing`
//! output, prefixed with the plugin's name, and the [`LogBudget`] that
//! bounds every line a plugin logs (these streams and the `log` import): a
//! burst, then a steady rate; the excess is dropped and counted, and said
//! once per [`DROP_WINDOW`] with its count, so a plugin printing megabytes
//! per second costs the daemon (and its log) nothing. The plugins of one
//! team (a grant's `team`: a NamespacedWinkPlugin's namespace) share one
//! budget ([`TeamLogBudgets`]), so a team logs at most what one plugin may
//! however many it runs. Control characters are shown escaped, so a line
//! can forge no other line. Owns nothing else of WASI.

use super::rate::TokenBucket;
use std::borrow::Cow;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Lines a plugin (or all plugins of one team together) may log at once.
pub const LOG_BURST: u32 = 1000;

/// Lines per second a plugin (or all plugins of one team together) may
/// log, sustained.
pub const LOG_RATE: f64 = 200.0;

/// At most this many teams' budgets are kept (one per team).
pub const MAX_TEAM_BUDGETS: usize = 4096;

/// How often, at most, the host says how many of a plugin's lines it dropped.
pub const DROP_WINDOW: Duration = Duration::from_secs(1);

/// One plugin's log lines, or one team's: admitted within the rate, else
/// dropped and counted. Drops are said in one line per window, by the
/// first line logged (admitted or not) once the window is over.
#[derive(Clone)]
pub struct LogBudget {
    owner: Owner,
    bucket: Arc<TokenBucket>,
    /// The window's first drop, and the drops since (not yet said).
    window: Arc<Mutex<Option<(Instant, u64)>>>,
    dropped: Arc<AtomicU64>,
}

/// The drops of one window, to be said.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dropped {
    pub lines: u64,
    /// From the window's first drop to the line that closed it.
    pub over: Duration,
}

/// Whose lines a budget counts.
#[derive(Clone)]
enum Owner {
    Plugin(Arc<str>),
    /// Every plugin of the team (its name).
    Team(Arc<str>),
}

impl LogBudget {
    /// The budget of `plugin`: [`LOG_BURST`] lines, then [`LOG_RATE`] a second.
    pub fn new(plugin: Arc<str>) -> Self {
        Self::of(Owner::Plugin(plugin))
    }

    /// The budget all plugins of `team` share: [`LOG_BURST`] lines, then
    /// [`LOG_RATE`] a second, for them together.
    pub fn for_team(team: &str) -> Self {
        Self::of(Owner::Team(team.into()))
    }

    fn of(owner: Owner) -> Self {
        LogBudget {
            owner,
            bucket: Arc::new(TokenBucket::new(LOG_RATE, LOG_BURST)),
            window: Arc::new(Mutex::new(None)),
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Whether one more line may be logged now; says the drops of a window
    /// that is over (before the line, when it is admitted).
    pub fn admit(&self) -> bool {
        let (admitted, said) = self.admit_at(Instant::now());
        if let Some(d) = said {
            let notice = self.notice(d);
            match &self.owner {
                Owner::Plugin(plugin) => {
                    tracing::warn!(target: "wink::plugin", plugin = %plugin, dropped = d.lines, "{notice}")
                }
                Owner::Team(team) => {
                    tracing::warn!(target: "wink::plugin", team = %team, dropped = d.lines, "{notice}")
                }
            }
        }
        admitted
    }

    /// What the host says of the drops `d`: whose lines, how many, over
    /// how long, and the limit.
    pub fn notice(&self, d: Dropped) -> String {
        let secs = d.over.as_secs_f64().max(1.0);
        let lines = d.lines;
        match &self.owner {
            Owner::Plugin(plugin) => format!(
                "[{plugin}] dropped {lines} log lines in the last {secs:.0} s (limit {LOG_RATE} lines/s, {LOG_BURST} at once)"
            ),
            Owner::Team(team) => format!(
                "[team {team}] dropped {lines} log lines of the team's plugins in the last {secs:.0} s (limit {LOG_RATE} lines/s, {LOG_BURST} at once, for all of the team's plugins together)"
            ),
        }
    }

    /// [`LogBudget::admit`] at `now`: whether the line is admitted, and the
    /// drops to say, once per window.
    pub fn admit_at(&self, now: Instant) -> (bool, Option<Dropped>) {
        let admitted = self.bucket.try_take_at(now);
        let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let said = match *window {
            Some((since, lines)) if now.saturating_duration_since(since) >= DROP_WINDOW => {
                *window = None;
                Some(Dropped {
                    lines,
                    over: now.saturating_duration_since(since),
                })
            }
            _ => None,
        };
        if !admitted {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            window.get_or_insert((now, 0)).1 += 1;
        }
        (admitted, said)
    }

    /// Lines dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The budgets of teams, each shared by all plugins of one team.
#[derive(Default)]
pub struct TeamLogBudgets(Mutex<std::collections::BTreeMap<String, LogBudget>>);

impl TeamLogBudgets {
    /// The budget of `team` (made when new). When [`MAX_TEAM_BUDGETS`]
    /// are kept, those no plugin holds any more are dropped; past that
    /// many teams in use, a new team's plugin gets a budget of its own,
    /// not kept.
    pub fn get(&self, team: &str) -> LogBudget {
        let mut budgets = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = budgets.get(team) {
            return b.clone();
        }
        let budget = LogBudget::for_team(team);
        if budgets.len() >= MAX_TEAM_BUDGETS {
            budgets.retain(|_, b| Arc::strong_count(&b.bucket) > 1);
        }
        if budgets.len() < MAX_TEAM_BUDGETS {
            budgets.insert(team.to_string(), budget.clone());
        }
        budget
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
    crate::text_log::escape_controls(line, true)
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

    /// 10,000 lines in one instant, then 10,000 more over the next 2.5 s
    /// (800 lines/s): one notice per window, each with the exact count of
    /// the lines dropped since the one before.
    #[test]
    fn drops_are_said_once_per_window_with_their_count() {
        let budget = LogBudget::new("p".into());
        let start = Instant::now();
        let mut notices: Vec<(Duration, Dropped)> = Vec::new();
        let mut unsaid = 0;
        let times = (0..10_000)
            .map(|_| start)
            .chain((1..=10_000u64).map(|i| start + Duration::from_micros(250 * i)));
        for (n, at) in times.enumerate() {
            let (admitted, said) = budget.admit_at(at);
            if let Some(d) = said {
                assert_eq!(d.lines, unsaid, "the count of the window");
                notices.push((at - start, d));
                unsaid = 0;
            }
            unsaid += u64::from(!admitted);
            if n == 9_999 {
                assert!(notices.is_empty(), "nothing said within the window");
                assert_eq!(unsaid, 10_000 - u64::from(LOG_BURST));
            }
        }
        assert_eq!(notices.len(), 2, "one notice per window: {notices:?}");
        assert_eq!(notices[0].0, DROP_WINDOW, "{notices:?}");
        assert!(notices[1].0 - notices[0].0 >= DROP_WINDOW, "{notices:?}");
        assert!(notices[0].1.lines > 10_000 - u64::from(LOG_BURST), "{notices:?}");
        assert_eq!(budget.window.lock().unwrap().map(|(_, n)| n), Some(unsaid));
    }

    /// The plugins of one team draw on one budget: two of them flooding
    /// together are admitted what one alone is, another team and a plugin
    /// of no team keep their own, and the notice names the team.
    #[test]
    fn a_teams_plugins_share_one_budget() {
        let start = Instant::now();
        let budgets = TeamLogBudgets::default();
        let (a1, a2) = (budgets.get("team-a"), budgets.get("team-a"));
        let admitted = (0..2 * LOG_BURST)
            .filter(|i| match i % 2 {
                0 => a1.admit_at(start).0,
                _ => a2.admit_at(start).0,
            })
            .count();
        assert_eq!(admitted, LOG_BURST as usize, "one burst for the team");
        assert_eq!(a1.dropped(), u64::from(LOG_BURST));
        assert!(!a2.admit_at(start).0, "the team's budget is spent");
        assert!(
            budgets.get("team-b").admit_at(start).0,
            "another team's is its own"
        );
        assert!(
            LogBudget::new("p".into()).admit_at(start).0,
            "a plugin of no team has its own"
        );
        let (_, said) = a2.admit_at(start + DROP_WINDOW);
        let said = said.expect("the drops are said");
        assert_eq!(said.lines, u64::from(LOG_BURST) + 1);
        let notice = a1.notice(said);
        assert!(
            notice.starts_with("[team team-a] dropped 1001 log lines of the team's plugins"),
            "{notice}"
        );
        assert!(
            notice.contains("for all of the team's plugins together"),
            "{notice}"
        );
        assert!(
            LogBudget::new("p".into())
                .notice(said)
                .starts_with("[p] dropped 1001 log lines in the last 1 s"),
        );
    }

    #[test]
    fn past_the_most_teams_a_new_team_gets_a_budget_of_its_own() {
        let budgets = TeamLogBudgets::default();
        let held: Vec<_> = (0..MAX_TEAM_BUDGETS)
            .map(|i| budgets.get(&format!("t{i}")))
            .collect();
        let start = Instant::now();
        let spend = |b: &LogBudget| (0..LOG_BURST).all(|_| b.admit_at(start).0);
        let (x1, x2) = (budgets.get("x"), budgets.get("x"));
        assert!(spend(&x1));
        assert!(x2.admit_at(start).0, "not kept: not shared");
        assert_eq!(budgets.0.lock().unwrap().len(), MAX_TEAM_BUDGETS);
        drop(held);
        let (y1, y2) = (budgets.get("y"), budgets.get("y"));
        assert!(spend(&y1));
        assert!(
            !y2.admit_at(start).0,
            "the budgets no plugin held were dropped: shared"
        );
        assert_eq!(budgets.0.lock().unwrap().len(), 1);
    }

    /// A plugin that floods, then goes quiet, hears of its drops with its
    /// next line, however late.
    #[test]
    fn a_flood_that_stops_is_said_with_the_next_line() {
        let budget = LogBudget::new("p".into());
        let start = Instant::now();
        let said: Vec<_> = (0..1_500).filter_map(|_| budget.admit_at(start).1).collect();
        assert!(said.is_empty());
        let (admitted, said) = budget.admit_at(start + Duration::from_secs(30));
        assert!(admitted, "the budget refilled");
        let said = said.expect("the drops are said");
        assert_eq!(said.lines, 500);
        assert_eq!(said.over, Duration::from_secs(30));
        assert_eq!(
            budget.admit_at(start + Duration::from_secs(31)).1,
            None,
            "said once"
        );
    }
}
