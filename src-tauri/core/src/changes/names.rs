//! Entry names as the changes module keys them, and as people and the model read them.
//!
//! A Unix name is any bytes but `/` and NUL; intents, `.intentignore` and the ledger speak
//! UTF-8. A lossy conversion would let `a\xff`, `a\xfe` and a real `a\u{FFFD}` share one key,
//! so that one change hides behind another and a restore acts on a file other than the one
//! that changed. So:
//!
//! - the **key** of a path is the path itself when it is UTF-8 (most paths: nothing changes
//!   for them), and otherwise the valid parts as they are with each other byte written as NUL
//!   and two hex digits. No file name holds NUL, so a key with an escaped byte is never the
//!   key of another path, and code that forgot to turn a key back into its bytes
//!   ([`real_path`]) gets an error from the kernel instead of naming another file;
//! - a key is **shown** as itself when it is UTF-8, and otherwise quoted, C-style:
//!   `"a\xff"`, with `\` and `"` escaped inside. A UTF-8 path that itself starts and ends with
//!   `"` is quoted too, so that no shown name can be read as another.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::Path;

/// Marks an escaped byte in a key; it can be in no file name.
const ESCAPE: char = '\0';

fn hex(nibble: u8) -> char {
    char::from_digit(u32::from(nibble), 16).unwrap_or('0')
}

/// The key of a name, or of a `/`-separated relative path, given as the file system has it.
pub fn key_of(name: &OsStr) -> Cow<'_, str> {
    let bytes = name.as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains(ESCAPE) => Cow::Borrowed(text),
        _ => {
            let mut key = String::with_capacity(bytes.len() + 8);
            let escape = |key: &mut String, b: u8| {
                key.push(ESCAPE);
                key.push(hex(b >> 4));
                key.push(hex(b & 0xf));
            };
            for chunk in bytes.utf8_chunks() {
                for c in chunk.valid().chars() {
                    if c == ESCAPE {
                        escape(&mut key, 0);
                    } else {
                        key.push(c);
                    }
                }
                for b in chunk.invalid() {
                    escape(&mut key, *b);
                }
            }
            Cow::Owned(key)
        }
    }
}

/// Whether `key` is a UTF-8 path as it is (the only kind an intent can own).
pub fn is_utf8(key: &str) -> bool {
    !key.contains(ESCAPE)
}

/// One piece of a key: text as it is, or a byte that was escaped.
enum Piece<'a> {
    Text(&'a str),
    Byte(u8),
}

fn decode(key: &str, mut each: impl FnMut(Piece<'_>)) {
    let mut rest = key;
    while let Some(at) = rest.find(ESCAPE) {
        each(Piece::Text(&rest[..at]));
        let digits = rest.get(at + 1..at + 3);
        match digits.and_then(|d| u8::from_str_radix(d, 16).ok()) {
            Some(b) => {
                each(Piece::Byte(b));
                rest = &rest[at + 3..];
            }
            None => {
                // Not a key this module made: keep the NUL, which no path can hold.
                each(Piece::Byte(0));
                rest = &rest[at + 1..];
            }
        }
    }
    each(Piece::Text(rest));
}

/// The relative path a key names, with its real bytes.
pub fn real_path(key: &str) -> Cow<'_, Path> {
    if is_utf8(key) {
        return Cow::Borrowed(Path::new(key));
    }
    let mut bytes = Vec::with_capacity(key.len());
    decode(key, |piece| match piece {
        Piece::Text(t) => bytes.extend_from_slice(t.as_bytes()),
        Piece::Byte(b) => bytes.push(b),
    });
    Cow::Owned(OsString::from_vec(bytes).into())
}

/// How a key is written for people and the model (see the module's documentation).
pub fn shown(key: &str) -> Cow<'_, str> {
    if key.is_empty() {
        // The workspace root itself (only ever unreadable, never a change).
        return Cow::Borrowed(".");
    }
    let quoted_already = key.len() >= 2 && key.starts_with('"') && key.ends_with('"');
    if is_utf8(key) && !quoted_already {
        return Cow::Borrowed(key);
    }
    let mut out = String::with_capacity(key.len() + 8);
    out.push('"');
    decode(key, |piece| match piece {
        Piece::Text(t) => {
            for c in t.chars() {
                if matches!(c, '\\' | '"') {
                    out.push('\\');
                }
                out.push(c);
            }
        }
        Piece::Byte(b) => out.push_str(&format!("\\x{b:02x}")),
    });
    out.push('"');
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_shown_names_are_one_to_one_and_name_the_real_bytes() {
        let names: [&[u8]; 12] = [
            b"a\xff",
            b"a\xfe",
            "a\u{FFFD}".as_bytes(),
            b"a\\xff",
            b"\"a\\xff\"",
            b"\"a\xff\"",
            b"\"",
            b"\"\"",
            b"a\x00ff",
            b"d\xff/sub/\xfe\xfe",
            b"plain/path.rs",
            "caf\u{e9}/\u{1F600}".as_bytes(),
        ];
        let keys: Vec<String> = names
            .iter()
            .map(|n| key_of(OsStr::from_bytes(n)).into_owned())
            .collect();
        let shown_names: Vec<String> = keys.iter().map(|k| shown(k).into_owned()).collect();
        for (i, name) in names.iter().enumerate() {
            assert_eq!(real_path(&keys[i]).as_os_str().as_bytes(), *name);
            for j in 0..i {
                assert_ne!(keys[i], keys[j], "keys of {name:?} and {:?}", names[j]);
                assert_ne!(shown_names[i], shown_names[j]);
            }
            assert!(!shown_names[i].contains('\0'), "{:?}", shown_names[i]);
        }
        assert_eq!(keys[10], "plain/path.rs", "UTF-8 paths are their own keys");
        assert_eq!(shown_names[10], "plain/path.rs");
        assert_eq!(shown_names[0], r#""a\xff""#);
        assert_eq!(shown_names[3], r"a\xff", "a real backslash in a UTF-8 name");
        assert_eq!(shown_names[4], r#""\"a\\xff\"""#);
        assert_eq!(shown_names[9], r#""d\xff/sub/\xfe\xfe""#);
        assert!(!is_utf8(&keys[0]) && is_utf8(&keys[2]) && is_utf8(&keys[4]));
    }
}
