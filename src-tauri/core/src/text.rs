//! Cutting text to a size, the one way: never inside a UTF-8 character, and saying so when text
//! was left out where a reader could otherwise take the cut for the whole.

use std::borrow::Cow;

/// The nearest character boundary at or before byte `at` (at most `s.len()`).
pub fn floor_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while at > 0 && !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The nearest character boundary at or after byte `at` (at most `s.len()`).
pub fn ceil_boundary(s: &str, mut at: usize) -> usize {
    while at < s.len() && !s.is_char_boundary(at) {
        at += 1;
    }
    at.min(s.len())
}

/// The longest prefix of `s` of at most `max` bytes.
pub fn prefix(s: &str, max: usize) -> &str {
    &s[..floor_boundary(s, max)]
}

/// The longest suffix of `s` of at most `max` bytes.
pub fn suffix(s: &str, max: usize) -> &str {
    &s[ceil_boundary(s, s.len().saturating_sub(max))..]
}

/// Alias of [`prefix`] for byte budgets (diffs, records).
pub fn truncate_bytes(s: &str, max: usize) -> &str {
    prefix(s, max)
}

/// The first `n` characters of `s`.
pub fn first_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The last `n` characters of `s`.
pub fn last_chars(s: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match s.char_indices().rev().nth(n - 1) {
        Some((i, _)) => &s[i..],
        None => s,
    }
}

/// At most `n` characters, with `…` in place of what was cut.
pub fn ellipsize(s: &str, n: usize) -> Cow<'_, str> {
    let kept = first_chars(s, n);
    if kept.len() == s.len() {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(format!("{kept}…"))
    }
}

/// At most `n` characters in all, the `…` in place of what was cut included (a reason that must
/// fit a line).
pub fn ellipsize_within(s: &str, n: usize) -> Cow<'_, str> {
    if first_chars(s, n).len() == s.len() {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(format!("{}…", first_chars(s, n.saturating_sub(1))))
    }
}

/// The last `max` bytes, marked as a tail when something was cut (a tool card's output).
pub fn tail_marked(s: &str, max: usize) -> Cow<'_, str> {
    let kept = suffix(s, max);
    if kept.len() == s.len() {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(format!("[…]\n{kept}"))
    }
}

/// The first `head` and last `tail` bytes with a note of what was left out (long output for the
/// model: the start says what ran, the end how it ended).
pub fn head_and_tail(s: &str, head: usize, tail: usize) -> Cow<'_, str> {
    if s.len() <= head + tail {
        return Cow::Borrowed(s);
    }
    let h = prefix(s, head);
    let t = suffix(s, tail);
    let omitted = s.len() - h.len() - t.len();
    Cow::Owned(format!("{h}\n[… {omitted} bytes omitted …]\n{t}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_never_split_a_character() {
        let s = "aé€😀b";
        for max in 0..=s.len() {
            assert!(s.starts_with(prefix(s, max)) && prefix(s, max).len() <= max);
            assert!(s.ends_with(suffix(s, max)) && suffix(s, max).len() <= max);
        }
        assert_eq!(first_chars(s, 2), "aé");
        assert_eq!(last_chars(s, 2), "😀b");
        assert_eq!(last_chars(s, 0), "");
        assert_eq!(last_chars(s, 99), s);
        assert_eq!(ellipsize(s, 3), "aé€…");
        assert_eq!(ellipsize(s, 5), s);
        assert_eq!(ellipsize_within(s, 3), "aé…");
        assert_eq!(ellipsize_within(s, 5), s);
        assert_eq!(floor_boundary(s, 2), 1);
        assert_eq!(ceil_boundary(s, 2), 3);
        assert_eq!(floor_boundary(s, 99), s.len());
        assert_eq!(tail_marked("abcdef", 2), "[…]\nef");
        assert_eq!(
            head_and_tail("abcdefgh", 2, 2),
            "ab\n[… 4 bytes omitted …]\ngh"
        );
        assert_eq!(head_and_tail("abcd", 2, 2), "abcd");
    }
}
