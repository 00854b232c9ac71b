//! The README's Rust code is the examples' code: its main example is
//! `examples/pod_logger.rs` whole, and every other Rust block is a part of
//! `examples/team_labels.rs` as it is (both are built as components by
//! `cargo build --release --target wasm32-wasip2 -p wink-sdk --examples --features examples`;
//! the e2e suite `sdk_rust` passes their `wink test` cases).

use std::path::Path;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text of every fenced block of `lang` in `markdown`.
fn blocks(markdown: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = markdown;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```").expect("a closed block");
        out.push(body[..end].to_string());
        rest = &body[end + 3..];
    }
    out
}

#[test]
fn the_main_example_is_pod_logger_whole() {
    let readme = read("README.md");
    let rust = blocks(&readme, "rust");
    assert_eq!(
        rust.first(),
        Some(&read("examples/pod_logger.rs")),
        "README.md's first Rust block is not examples/pod_logger.rs as it is"
    );
}

#[test]
fn every_other_rust_block_is_part_of_team_labels() {
    let readme = read("README.md");
    let team_labels = read("examples/team_labels.rs");
    let rust = blocks(&readme, "rust");
    assert!(
        rust.len() >= 5,
        "the README's sections each show code: {}",
        rust.len()
    );
    for block in &rust[1..] {
        assert!(
            team_labels.contains(block.as_str()),
            "README.md shows code that examples/team_labels.rs does not hold as it is:\n{block}"
        );
    }
}

#[test]
fn the_manifest_shown_has_wink_sdk_as_its_one_dependency() {
    let readme = read("README.md");
    let toml = blocks(&readme, "toml");
    assert_eq!(toml.len(), 1, "one Cargo.toml");
    let deps = toml[0].split("[dependencies]\n").nth(1).expect("[dependencies]");
    let lines: Vec<&str> = deps.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines, ["wink-sdk = { path = \"../wink/sdk\" }"]);
    assert!(toml[0].contains("crate-type = [\"cdylib\"]"));
}
