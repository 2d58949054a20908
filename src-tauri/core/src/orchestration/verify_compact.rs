//! The `files` array of a record as Mandate writes it, read by hand: compact (no whitespace),
//! keys sorted, `conversations` then `path` in each file, each range exactly
//! `{"content_hash":"sha256:…","end_line":N,"start_line":N}`. Skipped values (a conversation's
//! `contributor`, `related`, `url`) are still checked as JSON the way serde checks what it
//! ignores. Anything else — whitespace, another order, an escape where a name or path is read,
//! a number that is not a plain `u32` — is not read here: the caller reads the line again with
//! serde. At 1M records serde's reading of this array was a fifth of verify's time.
//!
//! What this accepts, serde reads the same (`compact_reads_what_serde_reads`, over every
//! one-byte change of real records).

use std::borrow::Cow;

use super::{Pending, Sink};
use crate::orchestration::ledger::content_hash_bytes;

/// Deeper than this is left to serde (which has its own limit): no hostile line can exhaust
/// the stack here.
const MAX_DEPTH: usize = 64;

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, expected: &[u8]) -> Option<()> {
        let end = self.i.checked_add(expected.len())?;
        (self.b.get(self.i..end)? == expected).then(|| self.i = end)
    }

    /// The bytes of a string whose opening quote was read, up to its closing quote, with no
    /// escape and no control character; None otherwise.
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(&self.b[start..self.i - 1]);
                }
                b'\\' | 0..=0x1f => return None,
                _ => self.i += 1,
            }
        }
    }

    /// A `u32` as serde reads one: digits, no sign, no leading zero, no fraction.
    fn number(&mut self) -> Option<u32> {
        let start = self.i;
        let mut n: u32 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            n = n.checked_mul(10)?.checked_add(u32::from(d - b'0'))?;
            self.i += 1;
        }
        let len = self.i - start;
        if len == 0 || (len > 1 && self.b[start] == b'0') {
            return None;
        }
        // A fraction or exponent would make it a float, which serde refuses for a `u32`.
        matches!(self.peek(), Some(b',' | b'}')).then_some(n)
    }

    /// Any JSON value, not kept: strings may hold escapes here, as serde's skipping allows.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.skip_string()
            }
            b'{' => {
                self.i += 1;
                if self.eat(b"}").is_some() {
                    return Some(());
                }
                loop {
                    self.eat(b"\"")?;
                    self.skip_string()?;
                    self.eat(b":")?;
                    self.skip_value(depth + 1)?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b'}' => break,
                        _ => return None,
                    }
                }
                self.i += 1;
                Some(())
            }
            b'[' => {
                self.i += 1;
                if self.eat(b"]").is_some() {
                    return Some(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => break,
                        _ => return None,
                    }
                }
                self.i += 1;
                Some(())
            }
            b't' => self.eat(b"true"),
            b'f' => self.eat(b"false"),
            b'n' => self.eat(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => None,
        }
    }

    /// The rest of a string whose opening quote was read, escapes checked as serde checks them.
    fn skip_string(&mut self) -> Option<()> {
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\\' => {
                    self.i += 1;
                    match *self.b.get(self.i)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                        b'u' => {
                            let hex = self.b.get(self.i + 1..self.i + 5)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.i += 5;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => self.i += 1,
            }
        }
    }

    /// A JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn skip_number(&mut self) -> Option<()> {
        let _ = self.eat(b"-");
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat(b".").is_some() {
            self.peek().filter(u8::is_ascii_digit)?;
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.peek().filter(u8::is_ascii_digit)?;
            self.digits();
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }

    /// `[` item (`,` item)* `]`, or `[]`.
    fn list(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b"[")?;
        if self.eat(b"]").is_some() {
            return Some(());
        }
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => break,
                _ => return None,
            }
        }
        self.i += 1;
        Some(())
    }
}

/// Reads the `files` array at the start of `rest` (the line after `{"files":`) into `sink`.
/// None when it is not in Mandate's own layout; the caller then undoes what was pushed.
pub(super) fn read_files<'a>(rest: &'a [u8], sink: &mut Sink<'_, 'a>) -> Option<()> {
    let mut c = Cursor { b: rest, i: 0 };
    c.list(|c| {
        sink.scratch.clear();
        c.eat(b"{\"conversations\":")?;
        c.list(|c| conversation(c, sink.scratch))?;
        c.eat(b",\"path\":\"")?;
        let path = std::str::from_utf8(c.plain_string()?).ok()?;
        c.eat(b"}")?;
        sink.push_file(Cow::Borrowed(path));
        Some(())
    })
}

/// One conversation: its `ranges` into `scratch`, any other member skipped.
fn conversation(c: &mut Cursor<'_>, scratch: &mut Vec<Pending>) -> Option<()> {
    c.eat(b"{")?;
    if c.eat(b"}").is_some() {
        return Some(());
    }
    let mut ranges = false;
    loop {
        c.eat(b"\"")?;
        // serde reads a key as a string (checked UTF-8) before it compares it.
        let key = std::str::from_utf8(c.plain_string()?).ok()?;
        c.eat(b":")?;
        if key == "ranges" {
            if ranges {
                // serde refuses a duplicate field.
                return None;
            }
            ranges = true;
            c.list(|c| range(c, scratch))?;
        } else {
            c.skip_value(1)?;
        }
        match c.peek()? {
            b',' => c.i += 1,
            b'}' => break,
            _ => return None,
        }
    }
    c.i += 1;
    Some(())
}

/// `{"content_hash":"sha256:…","end_line":N,"start_line":N}` exactly.
fn range(c: &mut Cursor<'_>, scratch: &mut Vec<Pending>) -> Option<()> {
    c.eat(b"{\"content_hash\":\"")?;
    let hash = std::str::from_utf8(c.plain_string()?).ok()?;
    c.eat(b",\"end_line\":")?;
    let end = c.number()?;
    c.eat(b",\"start_line\":")?;
    let start = c.number()?;
    c.eat(b"}")?;
    scratch.push((start, end, content_hash_bytes(hash)));
    Some(())
}
