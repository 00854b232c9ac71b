//! The built book in a real browser: Debian's Chromium, headless, installed
//! by `debian_support` when missing. mdBook's search reads the `search` query
//! parameter, so one page load runs a search.

use super::book::book;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn chromium() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let find = || {
            ["chromium", "chromium-browser"].iter().find_map(|name| {
                let path = std::env::var_os("PATH")?;
                std::env::split_paths(&path)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        };
        find().unwrap_or_else(|| crate::debian_support::ensure("chromium", "chromium"))
    })
}

/// The DOM of `url` once its scripts ran (up to 5 s of virtual time).
fn dom(url: &str) -> String {
    let profile = std::env::temp_dir().join(format!("wink-docs-chromium-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", "--virtual-time-budget=5000", url])
        .output()
        .expect("run chromium");
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        out.status.success(),
        "chromium failed on {url}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The search results' list of a page's DOM.
fn search_results(dom: &str) -> &str {
    let at = dom
        .find("id=\"mdbook-searchresults\"")
        .or_else(|| dom.find("id=\"searchresults\""));
    let list = &dom[at.expect("a search results list")..];
    &list[..list.find("</ul>").unwrap_or(list.len())]
}

#[test]
fn the_book_renders_and_its_search_answers_in_chromium() {
    let book = book();
    let url = |page: &str, query: &str| format!("file://{}/{page}{query}", book.display());

    let home = dom(&url("index.html", "?search=informer"));
    assert!(
        home.contains("<title>Introduction - wink</title>"),
        "the title:\n{home}"
    );
    // The sidebar is drawn by a script: its chapters are in the DOM.
    for chapter in [
        "Run wink dev",
        "The handler contract",
        "On a cluster",
        "Architecture",
    ] {
        assert!(home.contains(chapter), "the sidebar lists {chapter:?}");
    }
    let results = search_results(&home);
    let hits = results.matches("<li").count();
    assert!(hits >= 3, "a search for `informer` finds pages: {results}");
    assert!(
        results.contains("<em>informer"),
        "the hits mark the word: {results}"
    );

    // A query of a page's own words finds that page.
    let hits = dom(&url("index.html", "?search=tombstones"));
    assert!(
        search_results(&hits).contains("writing/handlers.html"),
        "`tombstones` finds the handler contract"
    );

    // A page with an included example renders it, highlighted.
    let rust = dom(&url("getting-started/rust.html", ""));
    assert!(rust.contains("<h1"), "the page has its title");
    assert!(
        rust.contains("export_plugin!"),
        "the included example is on the page"
    );
    assert!(rust.contains("hljs"), "its code is highlighted");
}
