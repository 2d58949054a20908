//! A quick reader for intents files written in plain block style — what Mandate writes and
//! what people usually write by hand — so a file of a quarter of a million intents loads in
//! well under the time the general YAML parser takes just to tokenize it.
//!
//! It reads a strict subset: one block mapping at the top; the intents as a block sequence of
//! block mappings; values that are one-line scalars (plain, 'single' or "double" quoted) or
//! one-line flow lists of them, or block lists of such scalars. Anything else (anchors, tags,
//! block scalars, multi-line scalars, flow mappings, nested mappings, duplicate keys, tabs,
//! several documents) makes it answer `None`, and the caller reads the file with the general
//! parser, which also gives the exact error for a file that is not valid YAML. For what it does
//! accept, it builds the same values as the general parser (a unit test compares the two on
//! every case and on thousands of mutated files); scalars whose type it cannot tell at a glance
//! are resolved by the general parser, one scalar at a time.

use super::intents::Fields;
use super::yaml::{self, Mapping, Value};

/// The file as read: the top-level keys, with `null` standing where the block list of intents
/// was, and that list.
pub(super) struct PlainFile<'a> {
    pub root: Mapping,
    pub intents: Option<Vec<PlainIntent<'a>>>,
}

/// One intent's keys in file order, and its line (that of its `id:`, else of its `-`).
pub(super) struct PlainIntent<'a> {
    pub line: usize,
    pub fields: Vec<(&'a str, Value)>,
}

impl Fields for Vec<(&str, Value)> {
    fn take(&mut self, key: &str) -> Option<Value> {
        let at = self.iter().position(|(k, _)| *k == key)?;
        Some(self.remove(at).1)
    }
    fn keep(&mut self, key: &'static str, value: Value) {
        self.push((key, value));
    }
    fn into_extra(self) -> Mapping {
        self.into_iter()
            .map(|(k, v)| (Value::String(k.into()), v))
            .collect()
    }
}

/// A line that is not blank and not only a comment.
#[derive(Clone, Copy)]
struct Line<'a> {
    number: usize,
    indent: usize,
    /// The line after its indentation, trailing spaces removed.
    text: &'a str,
}

impl<'a> Line<'a> {
    /// The item of a block sequence: `- …` or a lone `-`.
    fn dash(&self) -> Option<&'a str> {
        match self.text.strip_prefix('-') {
            Some("") => Some(""),
            Some(rest) if rest.starts_with(' ') => Some(rest.trim_start_matches(' ')),
            _ => None,
        }
    }
}

struct Lines<'a> {
    inner: std::iter::Peekable<std::iter::Enumerate<std::str::Lines<'a>>>,
}

impl<'a> Lines<'a> {
    fn peek(&mut self) -> Option<Line<'a>> {
        loop {
            let &(i, raw) = self.inner.peek()?;
            let text = raw.trim_start_matches(' ');
            if text.is_empty() || text.starts_with('#') {
                self.inner.next();
                continue;
            }
            return Some(Line {
                number: i + 1,
                indent: raw.len() - text.len(),
                text: text.trim_end_matches(' '),
            });
        }
    }

    fn next(&mut self) -> Option<Line<'a>> {
        let line = self.peek()?;
        self.inner.next();
        Some(line)
    }
}

/// The file's values if it is in the plain subset, else `None` (read it with the general parser).
pub(super) fn read(text: &str) -> Option<PlainFile<'_>> {
    if !plain_characters(text.as_bytes()) {
        return None;
    }
    let mut lines = Lines {
        inner: text.lines().enumerate().peekable(),
    };
    let mut root = Mapping::new();
    let mut intents_list = None;
    while let Some(line) = lines.next() {
        if line.indent != 0 {
            return None;
        }
        let (key, rest) = entry(line.text)?;
        let value = if rest.is_empty() {
            match lines.peek() {
                Some(next)
                    if next.dash().is_some()
                        && (key == "active_intents" || key == "intents")
                        && intents_list.is_none() =>
                {
                    intents_list = Some(intents(&mut lines)?);
                    Value::Null
                }
                Some(next) if next.indent > 0 || next.dash().is_some() => return None,
                _ => Value::Null,
            }
        } else {
            inline(rest)?
        };
        if root.insert(Value::String(key.into()), value).is_some() {
            return None;
        }
    }
    if root.is_empty() {
        return None;
    }
    Some(PlainFile {
        root,
        intents: intents_list,
    })
}

/// Whether the text avoids what YAML treats specially beyond this reader: tabs, carriage
/// returns, control characters, the byte order mark, and the line breaks U+0085, U+2028 and
/// U+2029.
fn plain_characters(bytes: &[u8]) -> bool {
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' | b' '..=b'~' => {}
            0x00..=0x1f | 0x7f => return false,
            0xc2 if matches!(bytes.get(i + 1), Some(0x80..=0x9f)) => return false,
            0xe2 if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) =>
            {
                return false
            }
            0xef if matches!(
                (bytes.get(i + 1), bytes.get(i + 2)),
                (Some(0xbb), Some(0xbf)) | (Some(0xbf), Some(0xbe | 0xbf))
            ) =>
            {
                return false
            }
            _ => {}
        }
        i += 1;
    }
    true
}

/// The block sequence of intents, each a block mapping that starts on its `-` line.
fn intents<'a>(lines: &mut Lines<'a>) -> Option<Vec<PlainIntent<'a>>> {
    let indent = lines.peek()?.indent;
    let mut items = Vec::new();
    while let Some(line) = lines.peek() {
        if line.indent < indent {
            break;
        }
        if line.indent > indent {
            return None;
        }
        let Some(first) = line.dash() else { break };
        lines.next();
        if first.is_empty() {
            return None;
        }
        let column = indent + (line.text.len() - first.len());
        items.push(mapping(lines, first, line.number, column)?);
    }
    // What follows the list can only be the next top-level key.
    if lines.peek().is_some_and(|l| l.indent > 0) {
        return None;
    }
    Some(items)
}

/// One intent's block mapping at `column`, whose first entry is `first` (on line `number`).
fn mapping<'a>(
    lines: &mut Lines<'a>,
    first: &'a str,
    number: usize,
    column: usize,
) -> Option<PlainIntent<'a>> {
    let mut fields: Vec<(&'a str, Value)> = Vec::with_capacity(8);
    let mut id_line = None;
    let mut current = (first, number);
    loop {
        let (key, rest) = entry(current.0)?;
        if key == "id" {
            id_line = Some(current.1);
        }
        let value = if rest.is_empty() {
            match lines.peek() {
                Some(next) if next.indent >= column && next.dash().is_some() => {
                    scalar_list(lines, next.indent)?
                }
                _ => Value::Null,
            }
        } else {
            inline(rest)?
        };
        if fields.iter().any(|(k, _)| *k == key) {
            return None;
        }
        fields.push((key, value));
        match lines.peek() {
            Some(next) if next.indent > column => return None,
            Some(next) if next.indent == column && next.dash().is_none() => {
                lines.next();
                current = (next.text, next.number);
            }
            _ => {
                return Some(PlainIntent {
                    line: id_line.unwrap_or(number),
                    fields,
                })
            }
        }
    }
}

/// A block sequence of one-line values whose dashes stand at `indent`.
fn scalar_list(lines: &mut Lines<'_>, indent: usize) -> Option<Value> {
    let mut items = Vec::new();
    while let Some(line) = lines.peek() {
        if line.indent != indent {
            break;
        }
        let Some(item) = line.dash() else { break };
        if item.is_empty() || item == "-" || item.starts_with("- ") {
            return None;
        }
        lines.next();
        items.push(inline(item)?);
    }
    Some(Value::Sequence(items))
}

/// `key: rest` or `key:` with a plain key that reads as a string.
fn entry(text: &str) -> Option<(&str, &str)> {
    let colon = text.find(':')?;
    let (key, after) = (&text[..colon], &text[colon + 1..]);
    let first = key.chars().next()?;
    let key_chars = key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !(first.is_ascii_alphabetic() || first == '_') || !key_chars || !plain_is_text(key) {
        return None;
    }
    if !after.is_empty() && !after.starts_with(' ') {
        return None;
    }
    let rest = after.trim_start_matches(' ');
    Some((key, if rest.starts_with('#') { "" } else { rest }))
}

/// A value written on one line (after `key: ` or `- `), then at most a comment.
fn inline(text: &str) -> Option<Value> {
    let (value, tail) = match text.chars().next()? {
        '"' | '\'' => quoted(text)?,
        '[' => flow_list(text)?,
        _ => {
            let end = text.find(" #").unwrap_or(text.len());
            return plain(text[..end].trim_end_matches(' '), false);
        }
    };
    end_of_line(tail).then_some(value)
}

/// What may follow a value: nothing, or spaces and a comment.
fn end_of_line(tail: &str) -> bool {
    let rest = tail.trim_start_matches(' ');
    rest.is_empty() || (rest.len() < tail.len() && rest.starts_with('#'))
}

/// A quoted scalar at the start of `text`, and what follows its closing quote.
fn quoted(text: &str) -> Option<(Value, &str)> {
    let quote = text.chars().next()?;
    let body = &text[1..];
    if quote == '\'' {
        let mut out = String::new();
        let mut rest = body;
        loop {
            let at = rest.find('\'')?;
            out.push_str(&rest[..at]);
            if rest[at + 1..].starts_with('\'') {
                out.push('\'');
                rest = &rest[at + 2..];
            } else {
                return Some((Value::String(out), &rest[at + 1..]));
            }
        }
    }
    let close = body.find('"')?;
    if !body[..close].contains('\\') {
        return Some((Value::String(body[..close].into()), &body[close + 1..]));
    }
    // Escapes are the general parser's to decode; find the real closing quote first.
    let mut escaped = false;
    let close = body.char_indices().find_map(|(i, c)| {
        let closes = c == '"' && !escaped;
        escaped = c == '\\' && !escaped;
        closes.then_some(i)
    })?;
    let value = resolve(&text[..close + 2])?;
    matches!(value, Value::String(_)).then_some((value, &body[close + 1..]))
}

/// `[a, "b", 'c']` on one line, and what follows it.
fn flow_list(text: &str) -> Option<(Value, &str)> {
    let mut items = Vec::new();
    let mut rest = text[1..].trim_start_matches(' ');
    if let Some(after) = rest.strip_prefix(']') {
        return Some((Value::Sequence(items), after));
    }
    loop {
        let (item, after) = match rest.chars().next()? {
            '"' | '\'' => quoted(rest)?,
            _ => {
                let end = rest.find([',', ']'])?;
                let text = rest[..end].trim_end_matches(' ');
                if text.contains(['[', '{', '}', '#', ':']) {
                    return None;
                }
                (plain(text, true)?, &rest[end..])
            }
        };
        items.push(item);
        let after = after.trim_start_matches(' ');
        if let Some(after) = after.strip_prefix(']') {
            return Some((Value::Sequence(items), after));
        }
        rest = after.strip_prefix(',')?.trim_start_matches(' ');
        if rest.starts_with(']') {
            return None;
        }
    }
}

/// A plain scalar: text when it can only be text, a small integer, else what the general
/// parser makes of it alone (the type of a plain scalar depends only on its own text).
fn plain(text: &str, in_flow: bool) -> Option<Value> {
    // `---` and `...` alone would be read as document markers.
    if text.is_empty()
        || text.contains(": ")
        || text.ends_with(':')
        || text.starts_with("---")
        || text.starts_with("...")
    {
        return None;
    }
    let first = text.chars().next()?;
    if plain_is_text(text) && (first.is_alphabetic() || matches!(first, '_' | '/')) {
        return Some(Value::String(text.into()));
    }
    if text.len() < 19
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'))
    {
        return text.parse::<u64>().ok().map(Value::from);
    }
    // Indicators that start something this reader does not take: anchors, aliases, tags,
    // block scalars, nested collections, directives.
    let starts_something = matches!(
        first,
        '&' | '*'
            | '!'
            | '|'
            | '>'
            | '%'
            | '@'
            | '`'
            | '{'
            | '}'
            | '['
            | ']'
            | ','
            | '?'
            | ':'
            | '#'
    ) || (first == '-' && text[1..].starts_with(' '));
    if starts_something || (in_flow && text.contains(['[', ']', '{', '}', ','])) {
        return None;
    }
    resolve(text).filter(|v| {
        matches!(
            v,
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)
        )
    })
}

/// Whether a plain scalar that starts like a word is text (not null or a boolean).
fn plain_is_text(text: &str) -> bool {
    !matches!(
        text,
        "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
    )
}

/// One scalar read by the general parser on its own.
fn resolve(text: &str) -> Option<Value> {
    yaml::from_str::<Value>(text).ok()
}

#[cfg(test)]
#[path = "intents_plain_tests.rs"]
mod tests;
