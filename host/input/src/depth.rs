//! Nesting-depth pre-scan of JSON and YAML: one linear pass over the
//! bytes that lexes only what decides nesting, so that text nested too deep
//! is refused before a parser sees it (the YAML scanner's work grows with
//! the square of the flow nesting depth: 60,000 levels of `{a: ` cost
//! seconds of CPU; the parsers themselves refuse more than 128 levels, but
//! only after scanning).
//!
//! JSON: strings and brackets, exactly. YAML: flow brackets, quoted
//! scalars, comments, block scalars (`|`, `>`), multi-line plain scalars,
//! block indentation and `- ` entries; a bracket or quote inside a plain
//! scalar is text, as in YAML. Owns the scan and the limit for files
//! ([`FILE_MAX_DEPTH`]); what a caller answers (an HTTP status, a file
//! error) is the caller's.

/// The deepest nesting a JSON or YAML file may have: past what the parsers
/// accept (128), with room for the block-style estimate's overcount.
pub const FILE_MAX_DEPTH: usize = 256;

/// Text nested deeper than a limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nested deeper than {max} levels")]
pub struct TooDeep {
    pub max: usize,
}

/// Refuse YAML (or JSON, which is YAML) nested deeper than
/// [`FILE_MAX_DEPTH`].
pub fn check_yaml(text: &[u8]) -> Result<(), TooDeep> {
    match yaml_too_deep(text, FILE_MAX_DEPTH) {
        true => Err(TooDeep { max: FILE_MAX_DEPTH }),
        false => Ok(()),
    }
}

/// Refuse JSON nested deeper than [`FILE_MAX_DEPTH`].
pub fn check_json(text: &[u8]) -> Result<(), TooDeep> {
    match json_too_deep(text, FILE_MAX_DEPTH) {
        true => Err(TooDeep { max: FILE_MAX_DEPTH }),
        false => Ok(()),
    }
}

/// Whether JSON `text` nests collections deeper than `max`: exact (strings
/// and brackets lexed as JSON).
pub fn json_too_deep(body: &[u8], max: usize) -> bool {
    let (mut depth, mut in_str, mut esc) = (0usize, false, false);
    for &c in body {
        if in_str {
            match c {
                _ if esc => esc = false,
                b'\\' => esc = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Whether YAML `text` (JSON included) nests collections deeper than `max`:
/// exact for flow style, an estimate for block style that may count up to
/// twice the real depth (plus two), never less.
pub fn yaml_too_deep(body: &[u8], max: usize) -> bool {
    let mut y = Yaml::default();
    body.split(|&c| c == b'\n').any(|line| y.line(line, max))
}

/// A block scalar's body: lines indented at least `indent` (known once the
/// first non-blank line is seen, unless the header gave it), and blank lines.
#[derive(Clone, Copy)]
enum BlockScalar {
    Pending { min: usize },
    Body { indent: usize },
}

/// What carries from one YAML line to the next.
#[derive(Default)]
struct Yaml {
    /// Open flow collections (`[`, `{`).
    flow: usize,
    /// The block nesting around the outermost open flow collection.
    flow_base: usize,
    /// Indentation of the open block collections.
    indents: Vec<usize>,
    /// Inside a quoted scalar (`"` or `'`) that goes on past the line end.
    quote: Option<u8>,
    block_scalar: Option<BlockScalar>,
    /// A plain scalar in block context goes on to lines indented past this column.
    plain_parent: Option<isize>,
    /// In flow context: the next character starts a node.
    node_start: bool,
}

fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn ends_token(line: &[u8], i: usize) -> bool {
    line.get(i).is_none_or(|&c| is_blank(c))
}

impl Yaml {
    /// Scan one line; true when the nesting goes past `max`.
    fn line(&mut self, line: &[u8], max: usize) -> bool {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let indent = line.iter().take_while(|&&c| c == b' ').count();
        let blank = line.iter().all(|&c| is_blank(c));
        let marker = (line.starts_with(b"---") || line.starts_with(b"...")) && ends_token(line, 3);
        if marker {
            // A document marker ends whatever was open.
            *self = Yaml::default();
            return self.scan(line, 3, -1, 0, max);
        }
        match self.block_scalar {
            Some(BlockScalar::Pending { min }) if blank || indent >= min => {
                if !blank {
                    self.block_scalar = Some(BlockScalar::Body { indent });
                }
                return false;
            }
            Some(BlockScalar::Body { indent: at }) if blank || indent >= at => return false,
            _ => self.block_scalar = None,
        }
        if self.quote.is_some() || self.flow > 0 {
            return self.scan(line, 0, indent as isize, 0, max);
        }
        if blank {
            return false;
        }
        if line[indent] == b'#' {
            self.plain_parent = None;
            return false;
        }
        if self.plain_parent.is_some_and(|p| indent as isize > p) {
            // The continuation of a multi-line plain scalar: text.
            self.node_start = false;
            return self.scan_from(line, indent, false, indent as isize, 0, max);
        }
        while self.indents.last().is_some_and(|&i| i > indent) {
            self.indents.pop();
        }
        if self.indents.last() != Some(&indent) {
            self.indents.push(indent);
        }
        // The collections this line is nested in: at most two per indentation
        // level above (a mapping and a `- ` sequence at the mapping's own
        // column), and a mapping at its own column when it is a `- ` entry;
        // its own collections count at its key and entries.
        let entry = line[indent] == b'-' && ends_token(line, indent + 1);
        let block = 2 * (self.indents.len() - 1) + usize::from(entry);
        if block > max {
            return true;
        }
        self.scan(line, indent, indent as isize, block, max)
    }

    /// A block collection opens at `column` (a `- ` entry, a key): lines
    /// below indented past it are nested in it.
    fn open_block(&mut self, column: isize) {
        if column >= 0 && self.indents.last().is_none_or(|&top| column as usize > top) {
            self.indents.push(column as usize);
        }
    }

    /// Scan from `start` at the start of a node (block context) or in the
    /// carried state (flow context, quoted scalar); `block` is the block
    /// nesting around the line.
    fn scan(&mut self, line: &[u8], start: usize, parent: isize, block: usize, max: usize) -> bool {
        let node_start = if self.flow > 0 { self.node_start } else { true };
        self.scan_from(line, start, node_start, parent, block, max)
    }

    fn scan_from(
        &mut self,
        line: &[u8],
        start: usize,
        mut node_start: bool,
        mut parent: isize,
        block: usize,
        max: usize,
    ) -> bool {
        let (mut entries, mut key_seen, mut in_plain) = (0usize, false, false);
        // Column where this line's innermost block node (after `- `) begins.
        let mut content = parent;
        let mut i = start;
        while i < line.len() {
            let c = line[i];
            if let Some(q) = self.quote {
                if q == b'"' && c == b'\\' {
                    i += 2;
                    continue;
                }
                if c == q {
                    if q == b'\'' && line.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    self.quote = None;
                    node_start = false;
                }
                i += 1;
                continue;
            }
            let block_ctx = self.flow == 0;
            match c {
                _ if is_blank(c) => {}
                b'#' if i == 0 || is_blank(line[i - 1]) => {
                    in_plain = false;
                    break;
                }
                b'"' | b'\'' if node_start => {
                    self.quote = Some(c);
                    in_plain = false;
                }
                b'[' | b'{' if node_start || !block_ctx => {
                    if self.flow == 0 {
                        self.flow_base = block + entries + usize::from(key_seen);
                    }
                    self.flow += 1;
                    if self.flow_base + self.flow > max {
                        return true;
                    }
                    node_start = true;
                    in_plain = false;
                }
                b']' | b'}' if !block_ctx => {
                    self.flow -= 1;
                    node_start = false;
                }
                b',' if !block_ctx => node_start = true,
                b':' if !block_ctx || ends_token(line, i + 1) => {
                    if block_ctx && !key_seen {
                        key_seen = true;
                        parent = content;
                        self.open_block(content);
                        if block + entries + 1 > max {
                            return true;
                        }
                    }
                    node_start = true;
                    in_plain = false;
                }
                b'-' | b'?' if node_start && block_ctx && ends_token(line, i + 1) => {
                    entries += 1;
                    if block + entries > max {
                        return true;
                    }
                    if !key_seen {
                        parent = i as isize;
                        content = i as isize + 2;
                        self.open_block(parent);
                    }
                }
                b'|' | b'>' if node_start && block_ctx => {
                    if let Some(explicit) = block_header(line, i + 1) {
                        // The body is indented past the enclosing collection (`parent`).
                        self.block_scalar = Some(match explicit {
                            Some(n) => BlockScalar::Body {
                                indent: parent.max(0) as usize + n,
                            },
                            None => BlockScalar::Pending {
                                min: (parent + 1).max(0) as usize,
                            },
                        });
                        self.plain_parent = None;
                        return false;
                    }
                    node_start = false;
                    in_plain = true;
                }
                b'&' | b'!' | b'*' if node_start => {
                    // Anchors, aliases and tags: skip the name; a node may follow.
                    let extra: &[u8] = if c == b'!' { b"-_!./:%~" } else { b"-_" };
                    i += 1;
                    while line
                        .get(i)
                        .is_some_and(|d| d.is_ascii_alphanumeric() || extra.contains(d))
                    {
                        i += 1;
                    }
                    node_start = c != b'*';
                    continue;
                }
                _ => {
                    if node_start && block_ctx && !key_seen {
                        content = i as isize;
                    }
                    node_start = false;
                    in_plain = block_ctx;
                }
            }
            i += 1;
        }
        self.node_start = node_start;
        self.plain_parent = (in_plain && self.flow == 0 && self.quote.is_none()).then_some(parent);
        false
    }
}

/// A block scalar header after `|`/`>`: indentation (1-9) and chomping
/// (`+`/`-`) indicators, then only blanks or a comment. `Some(explicit
/// indentation)` when it is one.
fn block_header(line: &[u8], mut i: usize) -> Option<Option<usize>> {
    let (mut explicit, mut chomping) = (None, false);
    loop {
        match line.get(i) {
            Some(d @ b'1'..=b'9') if explicit.is_none() => explicit = Some((d - b'0') as usize),
            Some(b'+' | b'-') if !chomping => chomping = true,
            _ => break,
        }
        i += 1;
    }
    let rest = &line[i..];
    match rest.iter().position(|&c| !is_blank(c)) {
        None => Some(explicit),
        Some(p) if p > 0 && rest[p] == b'#' => Some(explicit),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deep(body: &str) -> bool {
        yaml_too_deep(body.as_bytes(), 100)
    }

    #[test]
    fn json_depth_counts_brackets_outside_strings() {
        assert!(!json_too_deep("[".repeat(100).as_bytes(), 100));
        assert!(json_too_deep("[".repeat(101).as_bytes(), 100));
        let strings = format!("[{}]", r#""[[{{\"[[", "#.repeat(500));
        assert!(!json_too_deep(strings.as_bytes(), 100));
    }

    #[test]
    fn yaml_depth_counts_flow_block_and_entries() {
        assert!(!deep(&"[".repeat(100)));
        assert!(deep(&"[".repeat(101)));
        assert!(deep(&"{a: ".repeat(101)));
        assert!(deep(&format!("k: {}", "[".repeat(100))));
        assert!(deep(&format!("{}x", "- ".repeat(101))));
        let indented: String = (0..101).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        assert!(deep(&indented));
        let flat: String = (0..500)
            .map(|i| format!("k{i}:\n  - a: [1, {{b: 2}}]\n"))
            .collect();
        assert!(!deep(&flat));
        let json = format!("{{\"a\":{}1{}}}", "[".repeat(60), "]".repeat(60));
        assert!(!deep(&json.repeat(10)));
    }

    fn real_depth(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::Array(a) => 1 + a.iter().map(real_depth).max().unwrap_or(0),
            serde_json::Value::Object(o) => 1 + o.values().map(real_depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// A value nested `depth` levels, its shapes and texts picked by `seed`.
    fn nested(seed: &mut u64, depth: usize) -> serde_json::Value {
        use serde_json::json;
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = (*seed >> 33) as usize;
        if depth == 0 {
            let texts = [
                "a [b] {c} 'd' \"e\" #f: g - h | i",
                "- x",
                "multi\nline [x\n  {y",
                "|",
                "42",
            ];
            return json!(texts[r % texts.len()]);
        }
        let inner = nested(seed, depth - 1);
        match r % 4 {
            0 => json!([inner, "[s"]),
            1 => json!({"k": inner, "l": "{x: [", "m": "a: b"}),
            2 => json!([{"n": "x", "v": inner}]).pointer("/0").cloned().unwrap(),
            _ => json!({"- a": inner, "? b": "'"}),
        }
    }

    #[test]
    fn yaml_estimate_bounds_the_real_depth() {
        let mut seed = 7;
        for round in 0..300 {
            let v = nested(&mut seed, 1 + round % 40);
            let d = real_depth(&v);
            let yaml = serde_norway::to_string(&v).unwrap();
            let json = serde_json::to_string(&v).unwrap();
            let pretty = serde_json::to_string_pretty(&v).unwrap();
            for (text, slack) in [(&yaml, d + 2), (&json, 0), (&pretty, 0)] {
                assert!(yaml_too_deep(text.as_bytes(), d - 1), "under {d}:\n{text}");
                assert!(
                    !yaml_too_deep(text.as_bytes(), d + slack),
                    "over {d}+{slack}:\n{text}"
                );
            }
            assert!(json_too_deep(json.as_bytes(), d - 1) && !json_too_deep(json.as_bytes(), d));
        }
    }

    #[test]
    fn yaml_text_is_not_nesting() {
        let brackets = "[[[[{{{{".repeat(50);
        for body in [
            format!("k: \"{brackets}\"\n"),
            format!("k: '{brackets}''{brackets}'\n"),
            format!("k: \"a\n  {brackets}\n  \\\"{brackets}\"\n"),
            format!("# {brackets}\nk: v # {brackets}\n"),
            format!("k: echo {brackets}\n"),
            format!("k: a\n  {brackets}\n  \"{brackets}\n"),
            format!("data:\n  s: |\n    {brackets}\n\n    {brackets}\n  t: >-\n   {brackets}\n"),
            format!("- |2\n    {brackets}\n   {brackets}\n- x\n"),
        ] {
            assert!(!deep(&body), "{body}");
        }
    }

    #[test]
    fn yaml_text_does_not_hide_nesting() {
        let flow = "{a: ".repeat(200);
        for body in [
            // A quote inside a plain scalar opens nothing.
            format!("k: x \"\nj: {flow}"),
            format!("k: it's\nj: {flow}"),
            // A block scalar ends at the first line indented less than its body.
            format!("- |\n  \"\n- {flow}"),
            format!("- key: |\n   x\n  other: {flow}"),
            format!("k: |1\n  \"\n j\nl: {flow}"),
            format!("--- |\nx\n---\n{flow}"),
            // Anchors and tags come before a node.
            format!("k: &a {flow}"),
            format!("k: !!map {flow}"),
            format!("k: !t{flow}"),
            // A comment after a plain scalar ends it.
            format!("k: a # \"\n  {flow}"),
        ] {
            assert!(deep(&body), "{body}");
        }
    }

    #[test]
    fn files_nested_deeper_than_the_limit_are_refused_at_once() {
        let started = std::time::Instant::now();
        let brackets = "[".repeat(128 << 10);
        assert_eq!(
            check_yaml(brackets.as_bytes()),
            Err(TooDeep { max: FILE_MAX_DEPTH })
        );
        assert_eq!(
            check_json(brackets.as_bytes()),
            Err(TooDeep { max: FILE_MAX_DEPTH })
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(TooDeep { max: 256 }.to_string(), "nested deeper than 256 levels");
        // What the parsers accept (128 levels) passes, block style included.
        let block: String = (0..128).map(|i| format!("{}a:\n", "  ".repeat(i))).collect();
        assert!(check_yaml(block.as_bytes()).is_ok());
        let flow = format!("{}{}", "[".repeat(128), "]".repeat(128));
        assert!(check_yaml(flow.as_bytes()).is_ok() && check_json(flow.as_bytes()).is_ok());
    }
}
