//! The names `wink new` accepts for a project (its directory's name): one
//! that is at once a valid Cargo package name, npm package name and
//! component file name in the project's language, so the build the
//! scaffold writes does not fail on it later.

use super::Lang;

/// Rust's keywords (strict and reserved), which Cargo refuses as package
/// names, and the crates a plugin crate's name would shadow.
#[rustfmt::skip]
const RUST_RESERVED: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in",
    "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield", "std", "core", "alloc",
    "proc_macro", "test",
];

/// Why `name` cannot name a new `lang` project, if it cannot.
pub fn problem(name: &str, lang: Lang) -> Option<String> {
    let first = name.chars().next()?;
    if !first.is_ascii_alphabetic() {
        return Some("it must start with a letter".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Some(format!("{c:?} is not allowed: letters, digits, '-' and '_' only"));
    }
    if name.len() > 64 {
        return Some("it is longer than 64 characters".into());
    }
    let krate = name.replace('-', "_");
    if krate == "wink_sdk" {
        return Some("it is the SDK's own name".into());
    }
    match lang {
        Lang::Rust if RUST_RESERVED.contains(&krate.as_str()) => Some(format!(
            "Cargo refuses {krate:?} (a Rust keyword or standard crate)"
        )),
        Lang::Js if name.chars().any(|c| c.is_ascii_uppercase()) => {
            Some("npm package names are lowercase".into())
        }
        _ => None,
    }
}

/// `Ok` when `name` can name a new `lang` project, else the error saying
/// why and what is allowed.
pub fn check(name: &str, lang: Lang) -> anyhow::Result<()> {
    let why = if name.is_empty() {
        Some("it is empty".to_string())
    } else {
        problem(name, lang)
    };
    match why {
        None => Ok(()),
        Some(why) => anyhow::bail!(
            "{name:?} is not a valid plugin name: {why} (the directory's name is the plugin's {}: a letter, then letters, digits, '-' and '_'{})",
            match lang {
                Lang::Rust => "crate name",
                Lang::Python => "component name",
                Lang::Js => "npm package name",
            },
            if lang == Lang::Js { ", lowercase" } else { "" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_pass_and_invalid_ones_say_why() {
        for ok in ["p", "hello-plugin", "my_plugin2", "A1"] {
            assert!(check(ok, Lang::Rust).is_ok(), "{ok}");
            assert!(check(ok, Lang::Python).is_ok(), "{ok}");
        }
        assert!(check("hello-plugin", Lang::Js).is_ok());
        for (bad, lang, why) in [
            ("", Lang::Rust, "empty"),
            ("1abc", Lang::Rust, "start with a letter"),
            ("-x", Lang::Python, "start with a letter"),
            ("a.b", Lang::Rust, "'.' is not allowed"),
            ("héllo", Lang::Js, "is not allowed"),
            ("fn", Lang::Rust, "Rust keyword"),
            ("test", Lang::Rust, "Rust keyword"),
            ("wink-sdk", Lang::Js, "SDK's own name"),
            ("wink_sdk", Lang::Python, "SDK's own name"),
            ("Hello", Lang::Js, "lowercase"),
        ] {
            let err = check(bad, lang).unwrap_err().to_string();
            assert!(
                err.contains(why) && err.contains("not a valid plugin name"),
                "{bad}: {err}"
            );
        }
        assert!(check(&"a".repeat(65), Lang::Rust).is_err());
    }
}
