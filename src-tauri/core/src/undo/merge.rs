//! Three-way merge of line texts, for taking back a change that others edited around since.
//!
//! `base` is what the agent's change produced, `ours` what the file holds now, `theirs` what the
//! file held before the change. Each side's edits are the hunks of its line diff against `base`.
//! Hunks that touch different base lines both apply; hunks that touch the same lines (or are
//! adjacent, so their order would be a guess) are a conflict unless they are the same edit.
//! A conflict is never resolved by picking a side: the caller stops for that file.

use similar::{DiffOp, TextDiff};

/// One side's edit of `base`: base lines `start..end` become `lines`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edit<'a> {
    start: usize,
    end: usize,
    lines: Vec<&'a str>,
}

/// Where the two sides both changed the same base lines (1-based, inclusive, in `base`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    pub base_start: usize,
    pub base_end: usize,
}

fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn edits<'a>(base: &'a str, other: &'a str) -> Vec<Edit<'a>> {
    let diff = TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(std::time::Duration::from_secs(5))
        .diff_lines(base, other);
    let new_lines: Vec<&str> = diff.new_slices().to_vec();
    let mut out: Vec<Edit<'a>> = Vec::new();
    for op in diff.ops() {
        if matches!(op, DiffOp::Equal { .. }) {
            continue;
        }
        let (o, n) = (op.old_range(), op.new_range());
        let lines = n.map(|i| new_lines[i]).collect();
        // Consecutive non-equal ops form one edit.
        match out.last_mut() {
            Some(last) if last.end == o.start => {
                last.end = o.end;
                last.lines.extend::<Vec<&str>>(lines);
            }
            _ => out.push(Edit {
                start: o.start,
                end: o.end,
                lines,
            }),
        }
    }
    out
}

/// Two edits interfere when their base ranges overlap, or touch (an insertion at the boundary
/// of the other's change: the order of the two is not known).
fn interfere(a: &Edit<'_>, b: &Edit<'_>) -> bool {
    let overlap = a.start < b.end && b.start < a.end;
    let insertion_at_edge = |x: &Edit<'_>, y: &Edit<'_>| x.start == x.end && x.start == y.end;
    overlap || a.start == b.start || insertion_at_edge(a, b) || insertion_at_edge(b, a)
}

/// The merged text, or every overlap that stops it.
pub fn merge3(base: &str, ours: &str, theirs: &str) -> Result<String, Vec<Overlap>> {
    let base_lines = lines(base);
    let (mut a, mut b) = (edits(base, ours), edits(base, theirs));
    a.reverse();
    b.reverse();
    let mut out = String::with_capacity(ours.len().max(theirs.len()));
    let mut conflicts = Vec::new();
    let mut at = 0;
    loop {
        let next = match (a.last(), b.last()) {
            (None, None) => break,
            (Some(x), Some(y)) if interfere(x, y) => {
                let (x, y) = (a.pop(), b.pop());
                match (x, y) {
                    (Some(x), Some(y)) if x == y => Some(x),
                    (Some(x), Some(y)) => {
                        conflicts.push(Overlap {
                            base_start: x.start.min(y.start) + 1,
                            base_end: x.end.max(y.end).max(x.start.min(y.start) + 1),
                        });
                        None
                    }
                    _ => None,
                }
            }
            (Some(x), Some(y)) if (x.start, x.end) <= (y.start, y.end) => a.pop(),
            (Some(_), Some(_)) => b.pop(),
            (Some(_), None) => a.pop(),
            (None, Some(_)) => b.pop(),
        };
        let Some(edit) = next else { continue };
        for line in &base_lines[at..edit.start.max(at)] {
            out.push_str(line);
        }
        for line in &edit.lines {
            out.push_str(line);
        }
        at = edit.end.max(at);
    }
    if !conflicts.is_empty() {
        return Err(conflicts);
    }
    for line in &base_lines[at.min(base_lines.len())..] {
        out.push_str(line);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_in_different_places_both_apply() {
        let base = "a\nb\nc\nd\ne\n";
        let person = "A\nb\nc\nd\ne\n"; // edited line 1 after the agent
        let before = "a\nb\nc\nd\nE\n"; // the agent had changed line 5
        assert_eq!(merge3(base, person, before), Ok("A\nb\nc\nd\nE\n".into()));
    }

    #[test]
    fn the_same_lines_changed_on_both_sides_is_a_conflict() {
        let base = "a\nb\nc\n";
        let person = "a\nB\nc\n";
        let before = "a\nX\nc\n";
        assert_eq!(
            merge3(base, person, before),
            Err(vec![Overlap {
                base_start: 2,
                base_end: 2
            }])
        );
    }

    #[test]
    fn identical_edits_and_pure_reverts() {
        assert_eq!(merge3("a\nb\n", "a\nb\n", "a\n"), Ok("a\n".into()));
        assert_eq!(merge3("a\nb\n", "a\nc\n", "a\nc\n"), Ok("a\nc\n".into()));
        // An insertion right next to lines the other side changed cannot be ordered: conflict.
        assert!(merge3("a\nb\nc\n", "a\nb\nnew\nc\n", "a\nB\nc\n").is_err());
        let base = "1\n2\n3\n4\n5\n6\n7\n8\n";
        assert!(merge3(base, "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n").is_err());
        // Removing what the agent added, with a person's addition a line away: both kept.
        let before = "1\n2\n3\n7\n8\n";
        let person = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        assert_eq!(
            merge3(base, person, before),
            Ok("1\n2\n3\n7\n8\n9\n".into())
        );
    }

    #[test]
    fn texts_without_a_final_newline() {
        assert_eq!(merge3("a\nb", "A\nb", "a\nB"), Ok("A\nB".into()));
    }
}
