//! A character cursor shared by the notation parsers: positions, numbers, and errors that name
//! the column.

use crate::error::{Error, Result};

/// Deepest nesting a parser accepts before it reports an error (instead of overflowing the stack).
pub(crate) const MAX_DEPTH: usize = 64;

/// Reads a notation's text one character at a time and builds [`Error::Parse`] values whose
/// column is 1-based over the whole text the user gave (prefix included).
pub(crate) struct Cursor {
    notation: &'static str,
    chars: Vec<char>,
    pos: usize,
    column_offset: usize,
    depth: usize,
}

impl Cursor {
    /// A cursor over `text`, which starts `column_offset` characters into the user's input.
    pub(crate) fn new(notation: &'static str, text: &str, column_offset: usize) -> Cursor {
        Cursor {
            notation,
            chars: text.chars().collect(),
            pos: 0,
            column_offset,
            depth: 0,
        }
    }

    /// The character at the cursor, without consuming it.
    pub(crate) fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    /// Consumes and returns the character at the cursor.
    pub(crate) fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    /// The position (0-based character index) of the cursor, for [`Cursor::error_at`].
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Moves the cursor back to a position returned by [`Cursor::pos`] (to undo a lookahead).
    pub(crate) fn rewind(&mut self, pos: usize) {
        self.pos = pos.min(self.chars.len());
    }

    /// Skips whitespace.
    pub(crate) fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    /// Skips whitespace, then consumes `c` if it is next.
    pub(crate) fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Skips whitespace, then consumes `s` if it is next.
    pub(crate) fn eat_str(&mut self, s: &str) -> bool {
        self.skip_ws();
        let n = s.chars().count();
        if self.chars.len() >= self.pos + n
            && self.chars[self.pos..self.pos + n]
                .iter()
                .copied()
                .eq(s.chars())
        {
            self.pos += n;
            true
        } else {
            false
        }
    }

    /// Skips whitespace, then consumes `c` or fails with "expected `c`".
    pub(crate) fn expect(&mut self, c: char) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{c}'")))
        }
    }

    /// Whether only whitespace remains.
    pub(crate) fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos >= self.chars.len()
    }

    /// Fails unless only whitespace remains.
    pub(crate) fn expect_end(&mut self) -> Result<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.unexpected("the end of the input"))
        }
    }

    /// Skips whitespace, then reads a decimal integer with an optional `-` sign.
    pub(crate) fn int(&mut self) -> Result<i64> {
        self.skip_ws();
        let start = self.pos;
        let negative = self.peek() == Some('-');
        if negative {
            self.pos += 1;
        }
        if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos = start;
            return Err(self.unexpected("a number"));
        }
        let mut value: i64 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            value = value
                .checked_mul(10)
                .and_then(|v| {
                    if negative {
                        v.checked_sub(d as i64)
                    } else {
                        v.checked_add(d as i64)
                    }
                })
                .ok_or_else(|| self.error_at(start, "number does not fit in 64 bits"))?;
            self.pos += 1;
        }
        Ok(value)
    }

    /// Reads a non-negative integer that fits `usize`.
    pub(crate) fn uint(&mut self) -> Result<usize> {
        self.skip_ws();
        let start = self.pos;
        let v = self.int()?;
        usize::try_from(v).map_err(|_| self.error_at(start, "expected a non-negative number"))
    }

    /// Skips whitespace, then reads an identifier (`[A-Za-z_][A-Za-z0-9_]*`), if one is next.
    pub(crate) fn ident(&mut self) -> Option<String> {
        self.skip_ws();
        let start = self.pos;
        if !self
            .peek()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        {
            return None;
        }
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.pos += 1;
        }
        Some(self.chars[start..self.pos].iter().collect())
    }

    /// Enters one level of nesting; fails past [`MAX_DEPTH`]. Pair with [`Cursor::leave`].
    pub(crate) fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(&format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    /// Leaves one level of nesting.
    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// A parse error at the cursor.
    pub(crate) fn error(&self, message: &str) -> Error {
        self.error_at(self.pos, message)
    }

    /// A parse error at a position returned by [`Cursor::pos`].
    pub(crate) fn error_at(&self, pos: usize, message: &str) -> Error {
        Error::Parse {
            notation: self.notation,
            column: self.column_offset + pos + 1,
            message: message.to_string(),
        }
    }

    /// "expected X, found Y" at the cursor.
    pub(crate) fn unexpected(&self, expected: &str) -> Error {
        let found = match self.peek() {
            Some(c) => format!("'{c}'"),
            None => "the end of the input".to_string(),
        };
        self.error(&format!("expected {expected}, found {found}"))
    }
}
