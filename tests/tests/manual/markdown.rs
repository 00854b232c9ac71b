//! Reading the documents: fenced code blocks, mdBook's `{{#include}}`,
//! headings and their anchors, links.

use crate::common::root;
use std::path::{Path, PathBuf};

/// One fenced code block.
#[derive(Debug, Clone)]
pub struct Block {
    /// The file, relative to the workspace root.
    pub file: String,
    /// Its opening fence's line, from 1.
    pub line: usize,
    /// The info string (` ```sh ` gives `sh`).
    pub info: String,
    /// The lines between the fences, their block's indentation removed.
    pub body: String,
}

impl Block {
    /// The language: the info string up to its first comma or space.
    pub fn lang(&self) -> &str {
        self.info.split([',', ' ']).next().unwrap_or("")
    }

    /// Whether the info string marks it as not run (` ```yaml,ignore `).
    pub fn ignored(&self) -> bool {
        self.info.split([',', ' ']).skip(1).any(|a| a == "ignore")
    }

    /// `file:line`, for messages.
    pub fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// The fenced blocks of `text` (from `file`), in order.
pub fn blocks(file: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, usize, String, usize, Vec<String>)> = None;
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        let ticks = trimmed.chars().take_while(|&c| c == '`').count();
        match &mut open {
            None if ticks >= 3 => {
                open = Some((
                    i + 1,
                    ticks,
                    trimmed[ticks..].trim().to_string(),
                    indent,
                    Vec::new(),
                ))
            }
            None => {}
            Some((start, n, info, ind, body)) => {
                if ticks >= *n && trimmed[ticks..].trim().is_empty() {
                    out.push(Block {
                        file: file.to_string(),
                        line: *start,
                        info: info.clone(),
                        body: body.join("\n"),
                    });
                    open = None;
                } else {
                    let cut = line.len() - line.trim_start().len();
                    body.push(line[cut.min(*ind)..].to_string());
                }
            }
        }
    }
    assert!(open.is_none(), "{file}: a code block is not closed");
    out
}

/// The README and every page of the manual, relative to the root.
pub fn documents() -> Vec<String> {
    let mut out = vec!["README.md".to_string()];
    let mut stack = vec![root().join("docs/src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(relative(&path));
            }
        }
    }
    out.sort();
    out
}

/// `path` relative to the workspace root.
pub fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

pub fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The `{{#include PATH[:ANCHOR]}}` directives of `text`: (path, anchor).
pub fn includes(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("{{#include ") {
        let after = &rest[at + "{{#include ".len()..];
        let end = after.find("}}").expect("an include's closing braces");
        let spec = after[..end].trim();
        let (path, anchor) = match spec.split_once(':') {
            Some((p, a)) => (p.to_string(), Some(a.to_string())),
            None => (spec.to_string(), None),
        };
        out.push((path, anchor));
        rest = &after[end..];
    }
    out
}

/// The file an include of `doc` names, and its text (the anchor's part).
pub fn included(doc: &str, path: &str, anchor: Option<&str>) -> (PathBuf, String) {
    let base = root().join(doc);
    let file = base.parent().unwrap().join(path);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{doc} includes {path}: {e}"));
    let Some(anchor) = anchor else { return (file, text) };
    let (begin, end) = (format!("ANCHOR: {anchor}"), format!("ANCHOR_END: {anchor}"));
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.iter().position(|l| l.contains(&begin));
    let to = lines.iter().position(|l| l.contains(&end));
    match (from, to) {
        (Some(from), Some(to)) if from < to => (file, lines[from + 1..to].join("\n")),
        _ => panic!("{doc} includes {path}:{anchor}, which has no such anchor"),
    }
}

/// `text` with its includes replaced by what they include.
pub fn expanded(doc: &str, text: &str) -> String {
    let mut out = text.to_string();
    for (path, anchor) in includes(text) {
        let directive = match &anchor {
            Some(a) => format!("{{{{#include {path}:{a}}}}}"),
            None => format!("{{{{#include {path}}}}}"),
        };
        let (_, body) = included(doc, &path, anchor.as_deref());
        out = out.replace(&directive, &body);
    }
    out
}

/// GitHub's and mdBook's anchor for a heading: lowercase, punctuation
/// dropped, spaces to `-`.
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown text's headings (outside code blocks).
pub fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#').replace('`', "").as_str()));
        }
    }
    out
}

/// The inline links `[text](target)` of a markdown text (outside code
/// blocks and code spans), with their line.
pub fn links(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans are not links.
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((i + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// The one `yaml,wink-test` case of the manual page `doc` (a path from
/// the repository's root), its component path pointed at the
/// `pod_security.wasm` the tests built.
pub fn pod_security_case(doc: &str) -> String {
    let text = std::fs::read_to_string(root().join(doc)).unwrap();
    let cases: Vec<String> = blocks(doc, &text)
        .into_iter()
        .filter(|b| b.info == "yaml,wink-test")
        .map(|b| b.body)
        .collect();
    assert_eq!(cases.len(), 1, "{doc}'s case");
    let component = crate::common::plugins_dir().join("pod_security.wasm");
    cases[0].replace(
        "target/wasm32-wasip2/release/pod_security.wasm",
        component.to_str().unwrap(),
    )
}
