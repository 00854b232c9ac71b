//! [`Language`]: what a component was written in, as its `producers`
//! custom sections say (the tool-conventions metadata every component
//! toolchain writes: `language` and `processed-by` fields) or, for
//! componentize-py, the CPython library it links, so the host can
//! give a runtime that needs it a default of its own. Owns only that
//! reading; the limits themselves are the engine's ([`super::Limits`]).

use wasmparser::{Chunk, KnownCustom, Parser, Payload, ProducersSectionReader};

/// The source language of a component, where its metadata tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Built by componentize-js: StarlingMonkey (SpiderMonkey) runs it.
    JavaScript,
    /// Built by componentize-py: CPython runs it.
    Python,
    /// Compiled from Rust.
    Rust,
    /// Nothing in its metadata says.
    Unknown,
}

impl Language {
    /// The language of the component `bytes`, from the `producers`
    /// sections of the component and its modules. An interpreter's build
    /// wins over what the interpreter itself was compiled from (a
    /// componentize-js component also holds Rust and C++ modules).
    pub fn of(bytes: &[u8]) -> Language {
        let (mut javascript, mut rust) = (false, false);
        let (sections, mut python) = walk(bytes);
        for section in sections {
            for field in section.into_iter().flatten() {
                for value in field.values.into_iter().flatten() {
                    let name = value.name.to_ascii_lowercase();
                    match field.name {
                        "language" if name == "javascript" => javascript = true,
                        "language" if name == "python" => python = true,
                        "language" if name == "rust" => rust = true,
                        "processed-by" if name == "componentizejs" => javascript = true,
                        "processed-by" if name == "componentize-py" => python = true,
                        "processed-by" if name == "rustc" => rust = true,
                        _ => {}
                    }
                }
            }
        }
        match (javascript, python, rust) {
            (true, _, _) => Language::JavaScript,
            (_, true, _) => Language::Python,
            (_, _, true) => Language::Rust,
            _ => Language::Unknown,
        }
    }

    /// Its name, as `/debug/plugins` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Language::JavaScript => "javascript",
            Language::Python => "python",
            Language::Rust => "rust",
            Language::Unknown => "unknown",
        }
    }
}

/// Every `producers` section of a component and of the modules and
/// components nested in it, and whether a module imports from CPython's
/// library (componentize-py links `libpython3.N.so` as a module of its own
/// and marks its producers with nothing Python). Code is skipped (a language
/// runtime's component holds megabytes of it). A malformed component yields
/// what was read before the fault.
fn walk(bytes: &[u8]) -> (Vec<ProducersSectionReader<'_>>, bool) {
    let (mut found, mut libpython) = (Vec::new(), false);
    let (mut parser, mut stack, mut data) = (Parser::new(0), Vec::new(), bytes);
    loop {
        let Ok(Chunk::Parsed { consumed, payload }) = parser.parse(data, true) else {
            return (found, libpython);
        };
        data = &data[consumed..];
        match payload {
            Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                let Some(rest) = data.get(size as usize..) else {
                    return (found, libpython);
                };
                data = rest;
            }
            Payload::ModuleSection { parser: inner, .. }
            | Payload::ComponentSection { parser: inner, .. } => {
                stack.push(std::mem::replace(&mut parser, inner));
            }
            Payload::CustomSection(section) => {
                if let KnownCustom::Producers(reader) = section.as_known() {
                    found.push(reader);
                }
            }
            Payload::ImportSection(imports) if !libpython => {
                libpython = imports
                    .into_imports()
                    .flatten()
                    .any(|i| i.module.starts_with("libpython"));
            }
            Payload::End(_) => match stack.pop() {
                Some(outer) => parser = outer,
                None => return (found, libpython),
            },
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component whose producers section has `fields`.
    fn with_producers(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut producers = wasm_encoder::ProducersSection::new();
        for (field, value) in fields {
            let mut values = wasm_encoder::ProducersField::new();
            values.value(value, "1.0");
            producers.field(field, &values);
        }
        let mut component = wasm_encoder::Component::new();
        component.section(&producers);
        component.finish()
    }

    #[test]
    fn the_producers_section_names_the_language() {
        let js = with_producers(&[("processed-by", "ComponentizeJS"), ("language", "JavaScript")]);
        assert_eq!(Language::of(&js), Language::JavaScript);
        // componentize-js's engine is itself compiled from Rust and C++.
        let js = with_producers(&[("processed-by", "rustc"), ("processed-by", "ComponentizeJS")]);
        assert_eq!(Language::of(&js), Language::JavaScript);
        assert_eq!(
            Language::of(&with_producers(&[("language", "Python")])),
            Language::Python
        );
        assert_eq!(
            Language::of(&with_producers(&[("processed-by", "rustc")])),
            Language::Rust
        );
        assert_eq!(Language::of(&with_producers(&[])), Language::Unknown);
        assert_eq!(Language::of(b"not wasm"), Language::Unknown);
    }

    #[test]
    fn a_module_linking_libpython_makes_a_python_component() {
        let python =
            wat::parse_str(r#"(component (core module (import "libpython3.14.so" "Py_Initialize" (func))))"#)
                .unwrap();
        assert_eq!(Language::of(&python), Language::Python);
        let other = wat::parse_str(r#"(component (core module (import "env" "f" (func))))"#).unwrap();
        assert_eq!(Language::of(&other), Language::Unknown);
    }
}
