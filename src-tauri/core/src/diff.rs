//! Line diffs between the text before and after a proposed change: hunks for the approval panel,
//! partial application when the user rejects some hunks, the changed ranges the ledger records,
//! and unified diff text (stored in the ledger for the trace explorer).

use similar::{DiffOp, DiffTag, TextDiff};

use crate::protocol::{DiffHunk, DiffLine, DiffTag as DiffLineTag};

const CONTEXT: usize = 3;

fn line_diff<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, 'a, str> {
    TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(old, new)
}

fn strip_eol(s: &str) -> &str {
    s.strip_suffix('\n')
        .map(|s| s.strip_suffix('\r').unwrap_or(s))
        .unwrap_or(s)
}

/// Hunks with three lines of context, numbered from 0.
pub fn hunks(old: &str, new: &str) -> Vec<DiffHunk> {
    let diff = line_diff(old, new);
    let old_lines = diff.old_slices();
    let new_lines = diff.new_slices();
    diff.grouped_ops(CONTEXT)
        .iter()
        .enumerate()
        .map(|(index, group)| {
            let mut lines = Vec::new();
            for op in group {
                let (tag, old_range, new_range) = op.as_tag_tuple();
                match tag {
                    DiffTag::Equal => {
                        lines.extend(old_range.map(|i| line(DiffLineTag::Context, old_lines[i])))
                    }
                    DiffTag::Delete => {
                        lines.extend(old_range.map(|i| line(DiffLineTag::Removed, old_lines[i])))
                    }
                    DiffTag::Insert => {
                        lines.extend(new_range.map(|i| line(DiffLineTag::Added, new_lines[i])))
                    }
                    DiffTag::Replace => {
                        lines.extend(old_range.map(|i| line(DiffLineTag::Removed, old_lines[i])));
                        lines.extend(new_range.map(|i| line(DiffLineTag::Added, new_lines[i])));
                    }
                }
            }
            let (old_start, old_len) = span(group.iter().map(|op| op.old_range()));
            let (new_start, new_len) = span(group.iter().map(|op| op.new_range()));
            DiffHunk {
                index: index as u32,
                old_start: one_based(old_start, old_len),
                old_lines: old_len as u32,
                new_start: one_based(new_start, new_len),
                new_lines: new_len as u32,
                lines,
            }
        })
        .collect()
}

fn line(tag: DiffLineTag, text: &str) -> DiffLine {
    DiffLine {
        tag,
        text: strip_eol(text).to_string(),
    }
}

fn span(ranges: impl Iterator<Item = std::ops::Range<usize>>) -> (usize, usize) {
    let mut start = usize::MAX;
    let mut end = 0;
    for r in ranges {
        start = start.min(r.start);
        end = end.max(r.end);
    }
    if start == usize::MAX {
        (0, 0)
    } else {
        (start, end - start)
    }
}

/// Unified-diff convention: an empty side starts at the line before it.
fn one_based(start: usize, len: usize) -> u32 {
    if len == 0 {
        start as u32
    } else {
        start as u32 + 1
    }
}

/// The new text with the rejected hunks left as they were in the old text.
pub fn apply_selected(old: &str, new: &str, rejected: &[u32]) -> String {
    if rejected.is_empty() {
        return new.to_string();
    }
    let diff = line_diff(old, new);
    let groups = diff.grouped_ops(CONTEXT);
    let rejected_ops: Vec<DiffOp> = groups
        .iter()
        .enumerate()
        .filter(|(i, _)| rejected.contains(&(*i as u32)))
        .flat_map(|(_, g)| g.iter().filter(|op| op.tag() != DiffTag::Equal).copied())
        .collect();
    let old_lines = diff.old_slices();
    let new_lines = diff.new_slices();
    let mut out = String::with_capacity(new.len().max(old.len()));
    for op in diff.ops() {
        let keep_old = op.tag() == DiffTag::Equal
            || rejected_ops
                .iter()
                .any(|r| r.old_range() == op.old_range() && r.new_range() == op.new_range());
        if keep_old {
            op.old_range().for_each(|i| out.push_str(old_lines[i]));
        } else {
            op.new_range().for_each(|i| out.push_str(new_lines[i]));
        }
    }
    out
}

/// Line ranges (1-based, inclusive) of the new text that were inserted or replaced.
pub fn changed_ranges(old: &str, new: &str) -> Vec<(u32, u32)> {
    analyze(old, new, "").ranges
}

/// What the ledger needs of a change, from one diff: the changed ranges of the new text and
/// the unified diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineChanges {
    pub ranges: Vec<(u32, u32)>,
    pub unified: String,
}

pub fn analyze(old: &str, new: &str, path: &str) -> LineChanges {
    let (old, new) = (lines(old), lines(new));
    let ends = common_ends(&old, &new);
    analyze_lines(&old, &new, ends, path)
}

/// The lines of `text` with their endings (`\n`, `\r\n` or a lone `\r`), as the diff splits
/// them; found with `memchr` rather than character by character (a third of a write's diff).
fn lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 32 + 1);
    let mut start = 0;
    for at in memchr::memchr2_iter(b'\n', b'\r', bytes) {
        if at < start {
            // The `\n` of a `\r\n` already taken.
            continue;
        }
        let end = if bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n') {
            at + 2
        } else {
            at + 1
        };
        out.push(&text[start..end]);
        start = end;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// How many lines at the start and at the end of both texts a diff can leave out: those they
/// share but for the context a hunk shows. Myers finds the same edits in what is left, unless
/// an unchanged line next to the changed ones equals one of them (the edit could then slide
/// across it): nothing is left out then.
fn common_ends(old: &[&str], new: &[&str]) -> (usize, usize) {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let rest = (old.len() - prefix).min(new.len() - prefix);
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(rest)
        .take_while(|(a, b)| a == b)
        .count();
    let changed = || {
        old[prefix..old.len() - suffix]
            .iter()
            .chain(&new[prefix..new.len() - suffix])
    };
    let slides = |next: Option<&&str>| next.is_some_and(|line| changed().any(|c| c == line));
    let before = prefix.checked_sub(1).map(|i| &old[i]);
    if slides(before) || slides(old.get(old.len() - suffix)) {
        return (0, 0);
    }
    (
        prefix.saturating_sub(CONTEXT),
        suffix.saturating_sub(CONTEXT),
    )
}

/// [`analyze`] of the lines `old` and `new`, the first `ends.0` and last `ends.1` of which
/// both share and the diff leaves out.
fn analyze_lines(old: &[&str], new: &[&str], ends: (usize, usize), path: &str) -> LineChanges {
    let (front, back) = ends;
    let diff = TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(std::time::Duration::from_secs(2))
        .newline_terminated(true)
        .diff_slices(&old[front..old.len() - back], &new[front..new.len() - back]);
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for op in diff.ops() {
        if matches!(op.tag(), DiffTag::Insert | DiffTag::Replace) {
            let r = op.new_range();
            if r.is_empty() {
                continue;
            }
            let (start, end) = ((front + r.start) as u32 + 1, (front + r.end) as u32);
            match ranges.last_mut() {
                Some(last) if last.1 + 1 >= start => last.1 = end,
                _ => ranges.push((start, end)),
            }
        }
    }
    let mut unified = diff.unified_diff();
    unified
        .context_radius(CONTEXT)
        .header(&format!("a/{path}"), &format!("b/{path}"));
    let unified = if front == 0 {
        unified.to_string()
    } else {
        // As the whole diff reads: each hunk's header numbers its lines in the whole texts.
        let mut text = String::new();
        for (i, hunk) in unified.iter_hunks().enumerate() {
            if i == 0 {
                text.push_str(&format!("--- a/{path}\n+++ b/{path}\n"));
            }
            let ops: Vec<DiffOp> = hunk.ops().iter().map(|op| shifted(op, front)).collect();
            text.push_str(&format!(
                "{}\n",
                similar::udiff::UnifiedHunkHeader::new(&ops)
            ));
            let body = hunk.to_string();
            text.push_str(body.split_once('\n').map_or("", |(_, rest)| rest));
        }
        text
    };
    LineChanges { ranges, unified }
}

/// `op` with both texts' line numbers moved `by` lines on.
fn shifted(op: &DiffOp, by: usize) -> DiffOp {
    match *op {
        DiffOp::Equal {
            old_index,
            new_index,
            len,
        } => DiffOp::Equal {
            old_index: old_index + by,
            new_index: new_index + by,
            len,
        },
        DiffOp::Delete {
            old_index,
            old_len,
            new_index,
        } => DiffOp::Delete {
            old_index: old_index + by,
            old_len,
            new_index: new_index + by,
        },
        DiffOp::Insert {
            old_index,
            new_index,
            new_len,
        } => DiffOp::Insert {
            old_index: old_index + by,
            new_index: new_index + by,
            new_len,
        },
        DiffOp::Replace {
            old_index,
            old_len,
            new_index,
            new_len,
        } => DiffOp::Replace {
            old_index: old_index + by,
            old_len,
            new_index: new_index + by,
            new_len,
        },
    }
}

/// A unified diff of the change, as `git diff` would show it.
pub fn unified(old: &str, new: &str, path: &str) -> String {
    let diff = line_diff(old, new);
    diff.unified_diff()
        .context_radius(CONTEXT)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// Reads unified diff text back into hunks (for the trace explorer).
pub fn parse_unified(text: &str) -> Vec<DiffHunk> {
    let mut hunks: Vec<DiffHunk> = Vec::new();
    for raw in text.lines() {
        if let Some(header) = raw.strip_prefix("@@ ") {
            let nums: Vec<(u32, u32)> = header
                .split_whitespace()
                .take(2)
                .map(|part| {
                    let part = part.trim_start_matches(['-', '+']);
                    let mut it = part.splitn(2, ',');
                    let start = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
                    let len = it.next().and_then(|s| s.parse().ok()).unwrap_or(1);
                    (start, len)
                })
                .collect();
            let (o, n) = match nums.as_slice() {
                [o, n] => (*o, *n),
                _ => continue,
            };
            hunks.push(DiffHunk {
                index: hunks.len() as u32,
                old_start: o.0,
                old_lines: o.1,
                new_start: n.0,
                new_lines: n.1,
                lines: Vec::new(),
            });
            continue;
        }
        let Some(hunk) = hunks.last_mut() else {
            continue;
        };
        let Some(tag) = raw.chars().next().and_then(DiffLineTag::from_char) else {
            continue;
        };
        let rest = &raw[1..];
        hunk.lines.push(line(tag, rest));
    }
    hunks
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const OLD: &str = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n";
    const NEW: &str = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nL\nl\nm\n";

    #[test]
    fn two_distant_changes_make_two_hunks() {
        let h = hunks(OLD, NEW);
        assert_eq!(h.len(), 2);
        assert_eq!(
            (
                h[0].old_start,
                h[0].old_lines,
                h[0].new_start,
                h[0].new_lines
            ),
            (1, 5, 1, 5)
        );
        assert_eq!(
            h[1].lines
                .iter()
                .filter(|l| l.tag == DiffLineTag::Added)
                .count(),
            1
        );
    }

    #[test]
    fn rejecting_a_hunk_keeps_the_old_lines_there() {
        assert_eq!(apply_selected(OLD, NEW, &[]), NEW);
        assert_eq!(apply_selected(OLD, NEW, &[0, 1]), OLD);
        assert_eq!(
            apply_selected(OLD, NEW, &[1]),
            "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n"
        );
        assert_eq!(
            apply_selected(OLD, NEW, &[0]),
            "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nL\nl\nm\n"
        );
    }

    #[test]
    fn changed_ranges_cover_inserted_and_replaced_lines() {
        assert_eq!(changed_ranges(OLD, NEW), vec![(2, 2), (12, 12)]);
        assert_eq!(changed_ranges("", "x\ny\n"), vec![(1, 2)]);
        assert_eq!(changed_ranges("x\ny\n", "x\n"), vec![]);
    }

    /// Leaving out the common ends changes nothing: the same ranges, the same text, on texts
    /// made of few distinct lines (where edits could slide) with edits anywhere.
    #[test]
    fn a_diff_of_the_changed_middle_reads_as_the_whole_diff() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let words = ["a\n", "b\n", "}\n", "\n", "fn x() {\n", "c\r\n", "d"];
        let mut trimmed = 0;
        for _ in 0..3000 {
            let len = next(40);
            let mut old: Vec<&str> = (0..len).map(|_| words[next(words.len() - 1)]).collect();
            let mut new = old.clone();
            for _ in 0..1 + next(3) {
                let at = next(new.len() + 1);
                match next(3) {
                    0 => new.insert(at, words[next(words.len())]),
                    1 if at < new.len() => drop(new.remove(at)),
                    _ if at < new.len() => new[at] = words[next(words.len())],
                    _ => new.push(words[next(words.len() - 1)]),
                }
            }
            if next(4) == 0 {
                old.push("d");
            }
            let (old, new) = (old.concat(), new.concat());
            let (o, n) = (lines(&old), lines(&new));
            let ends = common_ends(&o, &n);
            trimmed += usize::from(ends != (0, 0));
            let whole = analyze_lines(&o, &n, (0, 0), "f");
            assert_eq!(whole.unified, unified(&old, &new, "f"));
            assert_eq!(
                analyze_lines(&o, &n, ends, "f"),
                whole,
                "{old:?} -> {new:?}"
            );
        }
        assert!(trimmed > 300, "only {trimmed} diffs left lines out");
    }

    #[test]
    fn lines_are_split_as_the_diff_library_splits_them() {
        use similar::DiffableStr as _;
        let pieces = ["a", "\n", "\r", "\r\n", "é", "\n\r", "", " x ", "\u{2028}"];
        let mut seed = 7u64;
        for _ in 0..5000 {
            let mut text = String::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            for k in 0..(seed % 12) {
                text.push_str(pieces[((seed >> (k * 4)) % pieces.len() as u64) as usize]);
            }
            assert_eq!(lines(&text), text.tokenize_lines(), "{text:?}");
        }
        assert_eq!(lines(""), Vec::<&str>::new());
        assert_eq!(lines("a\r\r\nb"), ["a\r", "\r\n", "b"]);
    }

    #[test]
    fn unified_text_parses_back_to_the_same_hunks() {
        let text = unified(OLD, NEW, "f.txt");
        assert!(text.starts_with("--- a/f.txt\n+++ b/f.txt\n"));
        assert_eq!(parse_unified(&text), hunks(OLD, NEW));
    }
}
