//! The text log's fields (`--log-format text`): every event's message and
//! field values, and every span's fields, with control characters escaped,
//! so that a value from a plugin, a test case or a server (a plugin's name,
//! a namespace it watches, an error message) can neither end its log line
//! nor forge another, nor send terminal escapes. Owns the escaping itself,
//! [`escape_controls`], which guest lines also go through; the JSON log
//! escapes by its own format.

use std::borrow::Cow;
use std::fmt;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};

/// `text` with every control character (C0, DEL, C1) escaped as Rust
/// escapes it (`\n`, `\u{1b}`), and the Unicode line and paragraph
/// separators too; a tab is kept when `keep_tabs`.
pub fn escape_controls(text: &str, keep_tabs: bool) -> Cow<'_, str> {
    let escaped =
        |c: char| (c.is_control() && !(keep_tabs && c == '\t')) || matches!(c, '\u{2028}' | '\u{2029}');
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// At most `max` bytes of `bytes` as text (cut at a character boundary,
/// invalid UTF-8 replaced), with `… (N bytes)` when cut: a request body in a
/// log line.
pub fn capped(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= max {
        return text.into_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], bytes.len())
}

/// The text log's fields: tracing-subscriber's default layout
/// (`message key=value ...`), then escaped.
#[derive(Debug, Default)]
pub struct EscapedFields {
    inner: DefaultFields,
}

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut plain = String::new();
        self.inner.format_fields(Writer::new(&mut plain), fields)?;
        writer.write_str(&escape_controls(&plain, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_cuts_at_a_character_and_says_how_long_the_whole_was() {
        assert_eq!(capped(b"{\"a\":1}", 100), "{\"a\":1}");
        let long = "é".repeat(10);
        assert_eq!(capped(long.as_bytes(), 5), "éé… (20 bytes)");
    }
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    #[test]
    fn control_characters_and_separators_are_escaped() {
        assert_eq!(escape_controls("plain line", false), "plain line");
        assert!(matches!(escape_controls("plain", false), Cow::Borrowed(_)));
        assert_eq!(escape_controls("a\nb\rc\td", false), "a\\nb\\rc\\td");
        assert_eq!(escape_controls("a\td", true), "a\td");
        assert_eq!(escape_controls("esc\u{1b}[31m", false), "esc\\u{1b}[31m");
        assert_eq!(escape_controls("c1\u{85}\u{9b}", false), "c1\\u{85}\\u{9b}");
        assert_eq!(
            escape_controls("ls\u{2028}ps\u{2029}", false),
            "ls\\u{2028}ps\\u{2029}"
        );
        assert_eq!(escape_controls("del\u{7f}", false), "del\\u{7f}");
    }

    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What a text-format subscriber with [`EscapedFields`] prints for `log`.
    fn printed(log: impl FnOnce()) -> String {
        let out = Lines::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .fmt_fields(EscapedFields::default())
            .finish();
        tracing::subscriber::with_default(subscriber, log);
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn a_forged_value_stays_on_its_line_in_every_position() {
        let forged = "a\"} 1\nwink_leader 1\r\n2026-01-01T00:00:00Z ERROR forged \u{1b}[2J";
        let text = printed(|| {
            tracing::info!(namespace = %forged, "watching {forged}");
            tracing::warn!(name = forged, error = ?forged, "plain");
            let span = tracing::info_span!("case", name = %forged);
            let _in = span.enter();
            tracing::error!("inside");
        });
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.ends_with('\n'));
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text}");
        assert!(text.contains("watching a\"} 1\\nwink_leader 1\\r\\n"), "{text}");
        assert!(
            text.lines()
                .all(|l| !l.starts_with("wink_leader") && !l.starts_with("2026-01-01"))
        );
    }
}
