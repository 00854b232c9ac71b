//! The label selector lexer (apimachinery's `labels.Lexer`): identifiers,
//! keywords and the special symbols `! = == != > < ( ) ,`, with whitespace
//! between tokens ignored.

/// One token of a label selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    End,
    Identifier(&'a str),
    In,
    NotIn,
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    OpenPar,
    ClosedPar,
    Comma,
}

impl<'a> Token<'a> {
    /// The token as a key or value: the keywords `in` and `notin` are
    /// operators only where an operator is expected.
    pub(crate) fn identifier(self) -> Option<&'a str> {
        match self {
            Token::Identifier(s) => Some(s),
            Token::In => Some("in"),
            Token::NotIn => Some("notin"),
            _ => None,
        }
    }

    /// The token as the user wrote it, for error messages.
    pub(crate) fn literal(&self) -> &'a str {
        match self {
            Token::End => "",
            Token::Identifier(s) => s,
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Not => "!",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::GreaterThan => ">",
            Token::LessThan => "<",
            Token::OpenPar => "(",
            Token::ClosedPar => ")",
            Token::Comma => ",",
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '!' | '=' | '>' | '<' | '(' | ')' | ',')
}

/// Splits a selector into tokens, one at a time.
pub(crate) struct Lexer<'a> {
    rest: &'a str,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(s: &'a str) -> Self {
        Lexer { rest: s }
    }

    /// The next token, without consuming it.
    pub(crate) fn peek(&self) -> Token<'a> {
        Lexer { rest: self.rest }.next_token()
    }

    /// Consume and return the next token.
    pub(crate) fn next_token(&mut self) -> Token<'a> {
        self.rest = self.rest.trim_start();
        let mut chars = self.rest.chars();
        let Some(c) = chars.next() else {
            return Token::End;
        };
        if is_special(c) {
            let two = self.rest.get(..2);
            let (token, len) = match (c, two) {
                (_, Some("==")) => (Token::DoubleEquals, 2),
                (_, Some("!=")) => (Token::NotEquals, 2),
                ('!', _) => (Token::Not, 1),
                ('=', _) => (Token::Equals, 1),
                ('>', _) => (Token::GreaterThan, 1),
                ('<', _) => (Token::LessThan, 1),
                ('(', _) => (Token::OpenPar, 1),
                (')', _) => (Token::ClosedPar, 1),
                _ => (Token::Comma, 1),
            };
            self.rest = &self.rest[len..];
            return token;
        }
        let end = self
            .rest
            .find(|c: char| c.is_whitespace() || is_special(c))
            .unwrap_or(self.rest.len());
        let word = &self.rest[..end];
        self.rest = &self.rest[end..];
        match word {
            "in" => Token::In,
            "notin" => Token::NotIn,
            _ => Token::Identifier(word),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_of_every_kind() {
        let mut l = Lexer::new(" a==b,c != d,!e,f in (x, y),g notin(z),h>1,i<2,j=k");
        let mut got = Vec::new();
        loop {
            let t = l.next_token();
            if t == Token::End {
                break;
            }
            got.push(t.literal().to_string());
        }
        let want = "a == b , c != d , ! e , f in ( x , y ) , g notin ( z ) , h > 1 , i < 2 , j = k";
        assert_eq!(got.join(" "), want);
    }
}
