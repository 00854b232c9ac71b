//! The troubleshooting page quotes the messages wink prints: each message
//! of its table, its placeholders (`...`, `NAME`, `PATH`, numbers) taken
//! out, is made of pieces that are in the daemon's source, so a reworded
//! message fails here until the page follows.

use super::markdown;
use crate::common::root;

/// The text of every `.rs` file under `host/`, string continuations
/// (`\` at a line's end) joined.
fn host_source() -> String {
    let mut out = String::new();
    let mut stack = vec![root().join("host")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let mut joined = String::with_capacity(text.len());
                let mut lines = text.lines().peekable();
                while let Some(line) = lines.next() {
                    match line.strip_suffix('\\') {
                        Some(head) => {
                            joined.push_str(head);
                            if let Some(next) = lines.peek_mut() {
                                *next = next.trim_start();
                            }
                        }
                        None => {
                            joined.push_str(line);
                            joined.push('\n');
                        }
                    }
                }
                out.push_str(&joined);
            }
        }
    }
    out
}

/// The message of a table row: its first cell's code span.
fn message(row: &str) -> Option<String> {
    let cell = row.strip_prefix("| ")?;
    if let Some(rest) = cell.strip_prefix("``") {
        return rest.split("``").next().map(|m| m.trim().to_string());
    }
    let rest = cell.strip_prefix('`')?;
    rest.split('`').next().map(str::to_string)
}

/// The pieces of a quoted message between its placeholders and where
/// messages are joined (`: `), those long enough to say something.
fn pieces(message: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut piece = String::new();
    let words: Vec<&str> = message.split(' ').collect();
    let flush = |piece: &mut String, out: &mut Vec<String>| {
        let p = piece.trim().to_string();
        if p.chars().filter(|c| c.is_alphabetic()).count() >= 4 {
            out.push(p);
        }
        piece.clear();
    };
    for (i, word) in words.iter().enumerate() {
        let mut rest = *word;
        if i > 0 {
            piece.push(' ');
        }
        // Placeholders and numbers end a piece, inside a word too.
        while !rest.is_empty() {
            let holder = ["...", "NAME", "PATH", "FILE"]
                .iter()
                .filter_map(|h| rest.find(h).map(|at| (at, h.len())))
                .chain(rest.find(|c: char| c.is_ascii_digit()).map(|at| {
                    let len = rest[at..]
                        .find(|c: char| !c.is_ascii_digit() && c != '.')
                        .unwrap_or(rest.len() - at);
                    (at, len)
                }))
                .min();
            match holder {
                Some((at, len)) => {
                    piece.push_str(&rest[..at]);
                    flush(&mut piece, &mut out);
                    rest = &rest[at + len..];
                }
                None => {
                    piece.push_str(rest);
                    rest = "";
                }
            }
        }
        if piece.ends_with(':') {
            piece.pop();
            flush(&mut piece, &mut out);
        }
    }
    flush(&mut piece, &mut out);
    out
}

#[test]
fn every_message_the_troubleshooting_page_quotes_is_in_the_source() {
    let source = host_source();
    let page = markdown::read("docs/src/running/troubleshooting.md");
    let mut quoted = 0;
    let mut missing = Vec::new();
    for row in page.lines().filter(|l| l.starts_with("| `")) {
        let message = message(row).unwrap_or_else(|| panic!("a message in {row}"));
        quoted += 1;
        let pieces = pieces(&message);
        assert!(!pieces.is_empty(), "{row}: a message with words of its own");
        for piece in pieces {
            if !source.contains(&piece) {
                missing.push(format!("{message:?}: {piece:?}"));
            }
        }
    }
    assert!(quoted >= 10, "the page quotes messages: {quoted}");
    assert!(
        missing.is_empty(),
        "quoted, and not in the source:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_message_is_cut_at_its_placeholders() {
    assert_eq!(
        pieces("[NAME] dropped ... log lines in the last 1 s (limit 200 lines/s, 1000 at once)"),
        vec![
            "] dropped",
            "log lines in the last",
            "s (limit",
            "lines/s,",
            "at once)"
        ]
    );
    assert_eq!(
        pieces("PATH: not a wink:plugin@0.4.0 (or @0.3.0) component: a module"),
        vec!["not a wink:plugin@", ") component", "a module"]
    );
}
