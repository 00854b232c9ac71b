//! The metric names a PromQL expression reads: every identifier that is not
//! a function, a keyword, a label (in `{...}` matchers or `by (...)`-style
//! lists), a string, a number or a duration.

/// Keywords that take a parenthesised list of label names.
const LABEL_LISTS: [&str; 6] = ["by", "without", "on", "ignoring", "group_left", "group_right"];
/// Keywords that stand alone, and the aggregations (which a `by (...)`
/// may separate from their parenthesis).
const KEYWORDS: [&str; 19] = [
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
    "nan",
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
];

/// The metric names of `expr`, in order, without repeats.
pub fn metric_names(expr: &str) -> Vec<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = after_string(&chars, i);
        } else if c == '{' || c == '[' {
            let close = if c == '{' { '}' } else { ']' };
            while i < chars.len() && chars[i] != close {
                i = match chars[i] {
                    '"' | '\'' | '`' => after_string(&chars, i),
                    _ => i + 1,
                };
            }
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next].is_whitespace() {
                next += 1;
            }
            let call = chars.get(next) == Some(&'(');
            if LABEL_LISTS.contains(&word.as_str()) {
                if call {
                    while i < chars.len() && chars[i] != ')' {
                        i += 1;
                    }
                }
            } else if !call && !KEYWORDS.contains(&word.to_lowercase().as_str()) && !names.contains(&word) {
                names.push(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

/// The index after the string literal that starts at `i`.
fn after_string(chars: &[char], i: usize) -> usize {
    let quote = chars[i];
    let mut j = i + 1;
    while j < chars.len() && chars[j] != quote {
        j += if chars[j] == '\\' { 2 } else { 1 };
    }
    j + 1
}

#[test]
fn names_only_the_metrics() {
    let expr = r#"histogram_quantile(0.99, sum by (plugin, le) (rate(wink_a_bucket{job=~"x", code!~"2.."}[5m])))
        / on (job) group_left (plugin) max without (instance) (wink_b offset 5m) > bool 1e3
        and time() - wink_c:rate5m unless absent(wink_d{s="}"}) or vector(0)"#;
    assert_eq!(
        metric_names(expr),
        ["wink_a_bucket", "wink_b", "wink_c:rate5m", "wink_d"]
    );
    assert_eq!(metric_names("up == 0"), ["up"]);
}
