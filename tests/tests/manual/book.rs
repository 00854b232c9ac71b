//! The manual as a book: `mdbook build` passes, every page is in the
//! summary, every relative link and `#anchor` of the built HTML and of the
//! README resolves, and the HTML renders with a working search in a real
//! browser (Debian's Chromium, headless).

use super::markdown;
use crate::common::root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The mdBook release the book is built with (it builds with the pinned
/// toolchain), installed into `target/docs-tools` when missing from `PATH`.
const MDBOOK: &str = "0.5.2";

fn on_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

fn mdbook() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let ours = root().join("target/docs-tools/bin/mdbook");
        let found = on_path("mdbook").or_else(|| ours.is_file().then(|| ours.clone()));
        let version_ok = |bin: &Path| {
            Command::new(bin)
                .arg("--version")
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(MDBOOK))
        };
        if let Some(bin) = found.filter(|b| version_ok(b)) {
            return bin;
        }
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["install", "--locked", "mdbook", "--version", MDBOOK])
            .args(["--no-default-features", "--features", "search", "--root"])
            .arg(root().join("target/docs-tools"))
            .status()
            .expect("run cargo install");
        assert!(status.success(), "cargo install mdbook {MDBOOK} failed");
        ours
    })
}

/// The book, built once per test run into `target/docs-book`.
pub fn book() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = root().join("target/docs-book");
        let _ = std::fs::remove_dir_all(&out);
        let run = Command::new(mdbook())
            .arg("build")
            .arg(root().join("docs"))
            .arg("--dest-dir")
            .arg(&out)
            .output()
            .expect("run mdbook");
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(run.status.success(), "mdbook build failed:\n{log}");
        assert!(
            !log.contains("WARN") && !log.contains("ERROR"),
            "mdbook build warned:\n{log}"
        );
        out
    })
}

/// The pages `SUMMARY.md` links to.
fn summary_pages() -> BTreeSet<String> {
    let summary = markdown::read("docs/src/SUMMARY.md");
    markdown::links(&summary)
        .into_iter()
        .map(|(_, l)| format!("docs/src/{l}"))
        .collect()
}

#[test]
fn every_page_of_the_manual_is_in_its_summary_and_has_a_title() {
    let pages = summary_pages();
    let files: BTreeSet<String> = markdown::documents()
        .into_iter()
        .filter(|d| d.starts_with("docs/src/") && d != "docs/src/SUMMARY.md")
        .collect();
    assert_eq!(pages, files, "the summary lists exactly the pages of docs/src");
    for page in &pages {
        let text = markdown::expanded(page, &markdown::read(page));
        assert!(
            text.trim_start().starts_with("# "),
            "{page} starts with its title"
        );
    }
}

/// Every `id="..."` of an HTML text.
fn ids(html: &str) -> BTreeSet<String> {
    attributes(html, "id").into_iter().collect()
}

/// The values of attribute `name` in an HTML text, entities decoded.
fn attributes(html: &str, name: &str) -> Vec<String> {
    let needle = format!(" {name}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&needle) {
        let after = &rest[at + needle.len()..];
        let end = after.find('"').unwrap_or(after.len());
        out.push(after[..end].replace("&amp;", "&").replace("&quot;", "\""));
        rest = &after[end..];
    }
    out
}

/// The HTML files of the book, relative to it.
fn html_files(book: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![book.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Broken relative links of the built book: `(page, href, why)`.
pub fn broken_links(book: &Path) -> Vec<String> {
    let files = html_files(book);
    let mut id_cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    // 404.html is served at any path by a web server: its links are
    // relative to the site's root (`<base href="/">`), not to the file.
    for page in files.iter().filter(|p| !p.ends_with("404.html")) {
        let html = std::fs::read_to_string(page).unwrap();
        id_cache.entry(page.clone()).or_insert_with(|| ids(&html));
        for href in attributes(&html, "href") {
            if href.contains("://") || href.starts_with("mailto:") || href.starts_with("javascript:") {
                continue;
            }
            let (path, fragment) = match href.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (href.as_str(), None),
            };
            let path = path.split('?').next().unwrap();
            let target = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            let target = normalize(&target);
            let rel = page.strip_prefix(book).unwrap().display().to_string();
            if !target.starts_with(book) || !target.exists() {
                broken.push(format!("{rel}: {href}: no such file"));
                continue;
            }
            let Some(fragment) = fragment.filter(|f| !f.is_empty()) else {
                continue;
            };
            if target.extension().is_some_and(|e| e == "html") {
                let ids = id_cache
                    .entry(target.clone())
                    .or_insert_with(|| ids(&std::fs::read_to_string(&target).unwrap()));
                if !ids.contains(fragment) {
                    broken.push(format!("{rel}: {href}: no anchor #{fragment}"));
                }
            }
        }
    }
    broken
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn the_book_builds_and_every_link_and_anchor_in_it_resolves() {
    let book = book();
    for page in summary_pages() {
        let html = page.trim_start_matches("docs/src/").replace(".md", ".html");
        assert!(book.join(&html).is_file(), "{html} was built");
    }
    let broken = broken_links(book);
    assert!(
        broken.is_empty(),
        "broken links in the book:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_link_check_finds_a_missing_page_and_a_missing_anchor() {
    let dir = std::env::temp_dir().join(format!("wink-docs-links-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    let index = r##"<h1 id="top">x</h1><a href="a/b.html#there">b</a> <a href="gone.html">g</a>
<a href="a/b.html#nowhere">n</a> <a href="#top">t</a>"##;
    std::fs::write(dir.join("index.html"), index).unwrap();
    std::fs::write(
        dir.join("a/b.html"),
        r#"<h2 id="there">b</h2><a href="../index.html">i</a>"#,
    )
    .unwrap();
    let broken = broken_links(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        broken,
        vec![
            "index.html: gone.html: no such file".to_string(),
            "index.html: a/b.html#nowhere: no anchor #nowhere".to_string(),
        ]
    );
}

#[test]
fn every_link_of_the_readme_resolves() {
    let readme = markdown::read("README.md");
    let mut broken = Vec::new();
    let mut manual = 0;
    for (line, link) in markdown::links(&readme) {
        if link.contains("://") {
            continue;
        }
        let (path, fragment) = match link.split_once('#') {
            Some((p, f)) => (p.to_string(), Some(f.to_string())),
            None => (link.clone(), None),
        };
        let target = if path.is_empty() {
            "README.md".to_string()
        } else {
            path
        };
        manual += usize::from(target.starts_with("docs/src/"));
        let Ok(text) = std::fs::read_to_string(root().join(&target)) else {
            broken.push(format!("README.md:{line}: {link}: no such file"));
            continue;
        };
        if let Some(f) = fragment {
            let text = markdown::expanded(&target, &text);
            if !markdown::anchors(&text).contains(&f) {
                broken.push(format!("README.md:{line}: {link}: no heading #{f}"));
            }
        }
    }
    assert!(
        manual >= 20,
        "the README links into the manual by task: {manual} links"
    );
    assert!(
        broken.is_empty(),
        "broken links in the README:\n{}",
        broken.join("\n")
    );
}
