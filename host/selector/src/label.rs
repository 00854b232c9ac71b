//! Label selectors: apimachinery's `labels.Parse` grammar, its validation of
//! keys and values, and its matching rules, within caps on a selector's size.
//!
//! apimachinery's parser has no caps of its own: the API server bounds a
//! selector only through the size of a request's URL (Go's `http.Server`
//! reads at most 1 MiB of request head). A selector of thousands of terms
//! then costs every object of a list thousands of lookups, so wink caps
//! selectors well below that and far above what people write
//! ([`MAX_SELECTOR_BYTES`], [`MAX_REQUIREMENTS`], [`MAX_VALUES`]); a
//! selector past a cap is refused with an error naming the cap.

use crate::Labels;
use crate::lexer::{Lexer, Token};

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` or `key==value`.
    Equals(String, String),
    /// `key!=value`: also true when the label is missing.
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)`: also true when the label is missing.
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
    /// `key>n`: the label is an integer greater than `n`.
    GreaterThan(String, i64),
    /// `key<n`: the label is an integer less than `n`.
    LessThan(String, i64),
}

impl Requirement {
    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &(impl Labels + ?Sized)) -> bool {
        let int = |k: &str| labels.label(k).and_then(|v| v.parse::<i64>().ok());
        match self {
            Requirement::Equals(k, v) => labels.label(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => labels.label(k) != Some(v.as_str()),
            Requirement::In(k, vs) => labels.label(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => labels.label(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => labels.label(k).is_some(),
            Requirement::DoesNotExist(k) => labels.label(k).is_none(),
            Requirement::GreaterThan(k, n) => int(k).is_some_and(|x| x > *n),
            Requirement::LessThan(k, n) => int(k).is_some_and(|x| x < *n),
        }
    }
}

/// The longest label selector accepted, in bytes.
pub const MAX_SELECTOR_BYTES: usize = 16 * 1024;
/// The most requirements (comma-separated terms) in one label selector.
pub const MAX_REQUIREMENTS: usize = 100;
/// The most values in all of one selector's `in` and `notin` sets together.
pub const MAX_VALUES: usize = 1_000;

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub requirements: Vec<Requirement>,
}

const NAME_MESSAGE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const PREFIX_MESSAGE: &str = "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, or empty when `allow_empty`.
fn is_name(s: &str, allow_empty: bool) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if s.is_empty() {
        return allow_empty;
    }
    edge(s.chars().next())
        && edge(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A lowercase RFC 1123 subdomain.
fn is_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|part| {
            let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            edge(part.chars().next())
                && edge(part.chars().last())
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

/// apimachinery's `IsQualifiedName`: `[prefix/]name`.
fn validate_key(key: &str) -> Result<(), String> {
    let invalid = |why: &str| Err(format!("key: Invalid value: {key:?}: {why}"));
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if name.is_empty() {
        return invalid("name part must be non-empty");
    }
    if name.len() > 63 {
        return invalid("name part must be no more than 63 characters");
    }
    if !is_name(name, false) {
        return invalid(NAME_MESSAGE);
    }
    match prefix {
        Some("") => invalid("prefix part must be non-empty"),
        Some(p) if !is_subdomain(p) => invalid(PREFIX_MESSAGE),
        _ => Ok(()),
    }
}

fn validate_value(key: &str, i: usize, value: &str) -> Result<(), String> {
    let why = if value.len() > 63 {
        "must be no more than 63 characters"
    } else if !is_name(value, true) {
        VALUE_MESSAGE
    } else {
        return Ok(());
    };
    Err(format!("values[{i}][{key}]: Invalid value: {value:?}: {why}"))
}

fn found(token: Token<'_>, expected: &str) -> String {
    format!("found '{}', expected: {expected}", token.literal())
}

/// The values of `key in (...)`: identifiers separated by commas, where an
/// empty place is the empty value.
fn parse_set<'a>(lexer: &mut Lexer<'a>) -> Result<Vec<String>, String> {
    let open = lexer.next_token();
    if open != Token::OpenPar {
        return Err(found(open, "'('"));
    }
    let mut values = Vec::new();
    let mut current: Option<&'a str> = None;
    loop {
        let token = lexer.next_token();
        match token {
            _ if current.is_none() && token.identifier().is_some() => current = token.identifier(),
            Token::Comma => values.push(current.take().unwrap_or("").to_string()),
            Token::ClosedPar => {
                values.push(current.take().unwrap_or("").to_string());
                return Ok(values);
            }
            t if current.is_some() => return Err(found(t, "',' or ')'")),
            t => return Err(found(t, "',', ')' or identifier")),
        }
    }
}

/// The value after `=`, `==`, `!=`, `>` or `<`; nothing (the end or a comma)
/// is the empty value.
fn parse_exact_value(lexer: &mut Lexer<'_>) -> Result<String, String> {
    match lexer.peek() {
        Token::End | Token::Comma => Ok(String::new()),
        _ => {
            let token = lexer.next_token();
            match token.identifier() {
                Some(v) => Ok(v.to_string()),
                None => Err(found(token, "identifier")),
            }
        }
    }
}

fn integer(value: &str) -> Result<i64, String> {
    value
        .parse()
        .map_err(|_| "for 'Gt', 'Lt' operators, the value must be an integer".to_string())
}

fn parse_requirement(lexer: &mut Lexer<'_>) -> Result<Requirement, String> {
    let mut token = lexer.next_token();
    let negated = token == Token::Not;
    if negated {
        token = lexer.next_token();
    }
    let Some(key) = token.identifier() else {
        return Err(found(token, "identifier"));
    };
    validate_key(key)?;
    if matches!(lexer.peek(), Token::End | Token::Comma) {
        let key = key.to_string();
        return Ok(if negated {
            Requirement::DoesNotExist(key)
        } else {
            Requirement::Exists(key)
        });
    }
    if negated {
        return Err(found(lexer.next_token(), "',' or 'end of string'"));
    }
    let op = lexer.next_token();
    let set = |values: Vec<String>| -> Result<Vec<String>, String> {
        for (i, v) in values.iter().enumerate() {
            validate_value(key, i, v)?;
        }
        Ok(values)
    };
    let exact = |value: String| -> Result<String, String> {
        validate_value(key, 0, &value)?;
        Ok(value)
    };
    let key = key.to_string();
    Ok(match op {
        Token::In => Requirement::In(key.clone(), set(parse_set(lexer)?)?),
        Token::NotIn => Requirement::NotIn(key.clone(), set(parse_set(lexer)?)?),
        Token::Equals | Token::DoubleEquals => {
            Requirement::Equals(key.clone(), exact(parse_exact_value(lexer)?)?)
        }
        Token::NotEquals => Requirement::NotEquals(key.clone(), exact(parse_exact_value(lexer)?)?),
        Token::GreaterThan => Requirement::GreaterThan(key, integer(&parse_exact_value(lexer)?)?),
        Token::LessThan => Requirement::LessThan(key, integer(&parse_exact_value(lexer)?)?),
        t => return Err(found(t, "in, notin, =, ==, !=, gt, lt")),
    })
}

impl LabelSelector {
    /// Parse Kubernetes selector syntax, e.g. `app=web,tier notin (db),!canary,replicas>3`.
    /// Errors read as the API server's (`unable to parse requirement: ...`).
    /// A selector past a cap ([`MAX_SELECTOR_BYTES`], [`MAX_REQUIREMENTS`],
    /// [`MAX_VALUES`]) is refused with an error naming the cap.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.len() > MAX_SELECTOR_BYTES {
            return Err(format!(
                "label selector is {} bytes long, more than the {MAX_SELECTOR_BYTES} allowed",
                s.len()
            ));
        }
        let mut lexer = Lexer::new(s);
        let mut requirements = Vec::new();
        let mut values = 0;
        loop {
            if requirements.len() == MAX_REQUIREMENTS {
                return Err(format!(
                    "label selector has more than the {MAX_REQUIREMENTS} requirements allowed"
                ));
            }
            match lexer.peek() {
                Token::End => break,
                t if t == Token::Not || t.identifier().is_some() => {}
                t => return Err(found(t, "!, identifier, or 'end of string'")),
            }
            let requirement =
                parse_requirement(&mut lexer).map_err(|e| format!("unable to parse requirement: {e}"))?;
            if let Requirement::In(_, set) | Requirement::NotIn(_, set) = &requirement {
                values += set.len();
                if values > MAX_VALUES {
                    return Err(format!(
                        "label selector has more than the {MAX_VALUES} values allowed in its sets"
                    ));
                }
            }
            requirements.push(requirement);
            match lexer.next_token() {
                Token::End => break,
                Token::Comma => match lexer.peek() {
                    t if t == Token::Not || t.identifier().is_some() => {}
                    t => return Err(found(t, "identifier after ','")),
                },
                t => return Err(found(t, "',' or 'end of string'")),
            }
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &(impl Labels + ?Sized)) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// The [`crate::LabelSummary`] bits an object must have to match: those
    /// of every `key=value` (and one-valued `in`) requirement; the other
    /// requirements need no particular pair.
    pub fn summary_bits(&self) -> u64 {
        self.requirements
            .iter()
            .map(|r| match r {
                Requirement::Equals(k, v) => crate::summary::pair_bits(k, v),
                Requirement::In(k, vs) if vs.len() == 1 => crate::summary::pair_bits(k, &vs[0]),
                _ => 0,
            })
            .fold(0, |bits, b| bits | b)
    }

    /// Whether this selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

#[cfg(test)]
mod tests;
