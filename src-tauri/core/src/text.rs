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

/// How many lines `s` has, as `str::lines` counts them (a last line may lack its `\n`).
pub fn line_count(s: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', s.as_bytes()).count();
    newlines + usize::from(!s.is_empty() && !s.ends_with('\n'))
}

/// The line (1-based) of `new` that holds the first byte where it differs from `old`; its last
/// line when it only lost lines at the end (1 when empty).
pub fn first_changed_line(old: &[u8], new: &[u8]) -> usize {
    let n = old.len().min(new.len());
    let mut same = 0;
    // Compared a block at a time (a memcmp each), then byte by byte in the block that differs.
    while same + 64 <= n && old[same..same + 64] == new[same..same + 64] {
        same += 64;
    }
    while same < n && old[same] == new[same] {
        same += 1;
    }
    let before = memchr::memchr_iter(b'\n', &new[..same]).count();
    let lines = memchr::memchr_iter(b'\n', new).count()
        + usize::from(new.last().is_some_and(|&b| b != b'\n'));
    (before + 1).min(lines.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_and_the_first_changed_one_found_as_a_reader_counts_them() {
        for s in [
            "",
            "a",
            "a\n",
            "a\nb",
            "a\nb\n",
            "\n\n",
            "a\r\nb\r\n",
            "é\n😀",
        ] {
            assert_eq!(line_count(s), s.lines().count(), "{s:?}");
        }
        // The line of the first differing byte, by a plain count, on many random pairs.
        let reference = |old: &[u8], new: &[u8]| {
            let same = old.iter().zip(new).take_while(|(a, b)| a == b).count();
            let before = new[..same].iter().filter(|&&b| b == b'\n').count();
            let lines = line_count(std::str::from_utf8(new).expect("utf8"));
            (before + 1).min(lines.max(1))
        };
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for _ in 0..2000 {
            let len = next(300) as usize;
            let old: Vec<u8> = (0..len).map(|_| b"ab\n"[next(3) as usize]).collect();
            let mut new = old.clone();
            match next(4) {
                0 if !new.is_empty() => {
                    let at = next(new.len() as u64) as usize;
                    new[at] = b'x';
                }
                1 => new.truncate(next(len as u64 + 1) as usize),
                2 => new.extend_from_slice(b"\nmore"),
                _ => {}
            }
            assert_eq!(first_changed_line(&old, &new), reference(&old, &new));
        }
        assert_eq!(first_changed_line(b"a\nb\nc\n", b"a\nb\nC\n"), 3);
        assert_eq!(first_changed_line(b"a\nb\nc\n", b"a\n"), 1);
        assert_eq!(first_changed_line(b"", b""), 1);
        assert_eq!(first_changed_line(b"same\n", b"same\n"), 1);
    }

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
