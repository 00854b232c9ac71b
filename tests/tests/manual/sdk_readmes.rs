//! The reconcile sections of the Python and TypeScript SDKs' READMEs show
//! the code their `defaults-keeper` examples build (which `languages` builds
//! and runs through its `wink test` case): each anchored part of the
//! example, its indentation removed, is a block of the README, in order.

use super::markdown;

/// `text` with the indentation its non-blank lines share removed.
fn dedent(text: &str) -> String {
    let indent = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    text.lines()
        .map(|l| if l.trim().is_empty() { "" } else { &l[indent..] })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_sdk_readmes_reconcile_blocks_are_the_examples_code() {
    for (readme, example, lang) in [
        (
            "sdk/python/README.md",
            "../../plugins/python/defaults-keeper/app.py",
            "python",
        ),
        (
            "sdk/js/README.md",
            "../../plugins/js/defaults-keeper/src/app.ts",
            "ts",
        ),
    ] {
        let text = markdown::read(readme);
        let section = &text[text
            .find("\n## Reconcile\n")
            .unwrap_or_else(|| panic!("{readme} has a Reconcile section"))..];
        let section = &section[..section[1..].find("\n## ").map_or(section.len(), |e| e + 1)];
        let shown: Vec<String> = markdown::blocks(readme, section)
            .into_iter()
            .filter(|b| b.lang() == lang)
            .map(|b| b.body)
            .collect();
        let built: Vec<String> = ["queue", "reconcile"]
            .iter()
            .map(|anchor| dedent(&markdown::included(readme, example, Some(anchor)).1))
            .collect();
        assert!(
            built.iter().all(|b| b.lines().count() > 5),
            "{example}: {built:?}"
        );
        assert_eq!(
            shown, built,
            "{readme}: its Reconcile blocks are not {example}'s code"
        );
    }
}
