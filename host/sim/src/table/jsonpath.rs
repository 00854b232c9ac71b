//! The JSONPath of CRD printer columns, read as the API server's parser
//! reads `{<jsonPath>}`: fields (`.spec.replicas`, `.metadata.labels.app`,
//! `['a.b']`, `a\.b`) and list indexes (`[0]`, `[-1]`) are evaluated; the
//! rest of JSONPath (wildcards, slices, filters, recursive descent, unions,
//! literals) parses but finds nothing here; anything else is a parse error.
//!
//! Owns: parsing and evaluating these paths. Must not touch: columns,
//! cells or the Table shape (`crd`).

use serde_json::Value;

/// One step of a simple path.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Field(String),
    /// A list index; negative counts from the end.
    Index(i64),
}

/// Characters that end a field name (the parser's terminators).
fn terminator(c: char) -> bool {
    c.is_whitespace() || ".,[]$@{}".contains(c)
}

/// Parse a path: `Ok(Some)` for fields and indexes, `Ok(None)` for other
/// JSONPath, `Err` with the parser's complaint for what does not parse.
pub fn parse(path: &str) -> Result<Option<Vec<Step>>, String> {
    let chars: Vec<char> = path.chars().collect();
    let mut steps = Vec::new();
    let mut simple = true;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            c if c.is_whitespace() => i += 1,
            '.' if chars.get(i + 1) == Some(&'.') => {
                simple = false; // recursive descent
                i += 1;
            }
            '.' => {
                i += 1;
                let mut name = String::new();
                while i < chars.len() && !terminator(chars[i]) {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    name.push(chars[i]);
                    i += 1;
                }
                match name.as_str() {
                    "*" => simple = false,
                    _ => steps.push(Step::Field(name)),
                }
            }
            '[' => {
                let Some(len) = chars[i + 1..].iter().position(|c| *c == ']') else {
                    return Err("unterminated array".into());
                };
                let inside: String = chars[i + 1..i + 1 + len].iter().collect();
                i += len + 2;
                match bracket(inside.trim())? {
                    Some(step) => steps.push(step),
                    None => simple = false,
                }
            }
            '$' | '@' if i == 0 => i += 1,
            c if c == ',' || c == '"' || c == '\'' || c.is_alphanumeric() || c == '+' || c == '-' => {
                // Unions, literals, identifiers and numbers: valid, not evaluated here.
                simple = false;
                i += 1;
                while i < chars.len() && !terminator(chars[i]) {
                    i += 1;
                }
            }
            c => {
                return Err(format!(
                    "unrecognized character in action: U+{:04X} '{c}'",
                    c as u32
                ));
            }
        }
    }
    Ok(simple.then_some(steps))
}

/// What is inside `[...]`: an index, a quoted field name, or other JSONPath.
fn bracket(inside: &str) -> Result<Option<Step>, String> {
    let quoted = |q: char| inside.len() >= 2 && inside.starts_with(q) && inside.ends_with(q);
    if quoted('\'') || quoted('"') {
        let name = &inside[1..inside.len() - 1];
        return Ok((!name.contains(['\'', '"'])).then(|| Step::Field(name.to_string())));
    }
    if inside.starts_with('?') || inside == "*" {
        return Ok(None); // filters and wildcards
    }
    let parts: Vec<&str> = inside.split(':').collect();
    let int = |p: &&str| p.trim().is_empty() || p.trim().parse::<i64>().is_ok();
    if inside.is_empty() || parts.len() > 3 || !parts.iter().all(int) {
        return Err(format!("invalid array index {inside}"));
    }
    match parts.as_slice() {
        [one] => Ok(one.trim().parse().ok().map(Step::Index)),
        _ => Ok(None), // slices
    }
}

/// The value a parsed path finds, if any.
pub fn lookup<'a>(obj: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    steps.iter().try_fold(obj, |cur, step| match step {
        Step::Field(f) => cur.as_object()?.get(f),
        Step::Index(i) => {
            let a = cur.as_array()?;
            let at = match usize::try_from(*i) {
                Ok(i) => i,
                Err(_) => a.len().checked_sub(usize::try_from(i.unsigned_abs()).ok()?)?,
            };
            a.get(at)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_and_indexes_are_evaluated() {
        let o = json!({"a": {"b": [{"c": 1}, {"c": [5, 6]}]}, "m": {"k.x": "v"}});
        let at = |p: &str| lookup(&o, &parse(p).unwrap().unwrap()).cloned();
        assert_eq!(at(".a.b[0].c"), Some(json!(1)));
        assert_eq!(at(".a.b[1].c[1]"), Some(json!(6)));
        assert_eq!(at(".a.b[-1].c[0]"), Some(json!(5)));
        assert_eq!(at(".m['k.x']"), Some(json!("v")));
        assert_eq!(at(r".m.k\.x"), Some(json!("v")));
        assert_eq!(at(".a.z"), None);
        assert_eq!(at(".a.b[7]"), None);
        assert_eq!(at(".a.b[-7]"), None);
        assert_eq!(at(".a.b.c"), None, "a field of a list finds nothing");
    }

    #[test]
    fn other_jsonpath_parses_and_bad_paths_do_not() {
        for other in [
            ".a.b[*].c",
            ".a..c",
            ".a.b[0:1]",
            ".a.b[?(@.c==1)]",
            ".a.*",
            ".a,.b",
        ] {
            assert_eq!(parse(other), Ok(None), "{other}");
        }
        for bad in [
            ".spec.a[0]]",
            ".a[",
            ".a[x]",
            ".a}",
            ".a[]",
            ".a[0]]]",
            ".a[1:2:3:4]",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse(".spec.a[0]]").unwrap_err(),
            "unrecognized character in action: U+005D ']'"
        );
    }

    #[test]
    fn no_path_panics() {
        let alphabet: Vec<char> = ".[]'\"\\*?@$:,-0129az{} ()é".chars().collect();
        let o = json!({"a": [{"b": 1}], "z": {"0": [1, 2]}});
        for _ in 0..20_000 {
            let len = rand::random_range(0..12);
            let p: String = (0..len)
                .map(|_| alphabet[rand::random_range(0..alphabet.len())])
                .collect();
            if let Ok(Some(steps)) = parse(&p) {
                let _ = lookup(&o, &steps);
            }
        }
    }
}
