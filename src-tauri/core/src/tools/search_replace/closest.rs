//! When a SEARCH text matches nowhere: the closest window of the file, ranked cheaply and then
//! by edit distance, and a message that tells the model what to correct.

use super::*;

/// Trims the end and cuts to `QUOTE_CHARS` characters for quoting in a message.
pub(super) fn quote(line: &str) -> String {
    crate::text::ellipsize(line.trim_end(), QUOTE_CHARS).into_owned()
}

pub(super) fn range(start: usize, end: usize) -> String {
    if start == end {
        format!("line {start}")
    } else {
        format!("lines {start}-{end}")
    }
}

pub(super) fn no_match(
    file: &[&str],
    search: &[&str],
    replace: &[&str],
    hint: Option<usize>,
    block: usize,
) -> SearchReplaceError {
    let closest = closest_match(file, search, hint);
    let plural = if search.len() == 1 { "" } else { "s" };
    let mut message = format!(
        "no match for the SEARCH text ({} line{plural}), not even ignoring whitespace; ",
        search.len()
    );
    match &closest {
        None => message.push_str("the file is empty, so use write_to_file to give it content."),
        Some(c) => {
            let at = range(c.start_line, c.end_line);
            // Floored so a near miss never reads as "100% similar".
            let percent = (c.similarity * 100.0).floor().clamp(0.0, 99.0);
            message += &if c.similarity >= 0.5 {
                format!("the closest candidate is {at} ({percent}% similar)")
            } else {
                format!("nothing similar was found (the closest candidate, {at}, is only {percent}% similar)")
            };
            message += &match &c.first_difference {
                Some((line, expected, _)) if *line > file.len() => format!(
                    "; the file ends at line {}, before the expected `{expected}`.",
                    file.len()
                ),
                Some((line, expected, found)) => {
                    format!("; line {line} differs: expected `{expected}`, found `{found}`.")
                }
                None => ".".to_owned(),
            };
        }
    }
    // Retrying an edit that already landed is a common loop; saying so breaks it.
    let present = occurrences(file, replace, |a, b| a.trim() == b.trim());
    if let (Some(&at), true) = (
        present.first(),
        replace.iter().any(|l| !l.trim().is_empty()),
    ) {
        let at = range(at + 1, at + replace.len());
        message += &format!(" The REPLACE text is already present at {at}, so this change may already have been applied.");
    }
    if block > 1 {
        message.push_str(" Earlier blocks of this diff are applied first, so this SEARCH must match the text as they left it.");
    }
    message.push_str(" Re-read the file and retry with the exact current text.");
    SearchReplaceError::NoMatch {
        block,
        message,
        closest,
    }
}

/// Cheap per-line fingerprint for ranking windows before the costly edit distance.
pub(super) struct Sig {
    hash: u64,
    bigrams: [u64; 4],
    chars: usize,
}

impl Sig {
    fn new(line: &str) -> Self {
        let text = line.trim();
        // FNV-1a: deterministic, and collisions only cost ranking quality.
        let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let mut bigrams = [0_u64; 4];
        let mut previous = None;
        let mut chars = 0;
        for c in text.chars() {
            chars += 1;
            if let Some(p) = previous {
                let mixed = (u32::from(p).wrapping_mul(0x9e37_79b1) ^ u32::from(c))
                    .wrapping_mul(0x85eb_ca6b);
                let bit = mixed >> 24;
                bigrams[(bit >> 6) as usize] |= 1 << (bit & 63);
            }
            previous = Some(c);
        }
        Sig {
            hash,
            bigrams,
            chars,
        }
    }

    /// Longer lines say more about a window than braces and blank lines do.
    fn weight(&self) -> f64 {
        self.chars as f64 + 1.0
    }

    /// 1.0 for equal trimmed lines, otherwise a discounted Jaccard index of character bigrams.
    fn score(&self, other: &Sig) -> f64 {
        if self.hash == other.hash {
            return 1.0;
        }
        let (mut both, mut either) = (0, 0);
        for (a, b) in self.bigrams.iter().zip(&other.bigrams) {
            both += (a & b).count_ones();
            either += (a | b).count_ones();
        }
        if either == 0 {
            0.0
        } else {
            0.9 * f64::from(both) / f64::from(either)
        }
    }
}

pub(super) fn levenshtein(a: &[char], b: &[char]) -> usize {
    // Near misses differ in a few characters; dropping the shared ends keeps the table small.
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let common = a.iter().rev().zip(b.iter().rev());
    let suffix = common.take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[..a.len() - suffix], &b[..b.len() - suffix]);
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Line-wise similarity of `search` against the window at `start`: one minus the summed edit
/// distances of the trimmed lines over their summed lengths.
pub(super) fn window_similarity(file: &[&str], search: &[&str], start: usize) -> f64 {
    let (mut distance, mut total) = (0, 0);
    let chars = |s: &str| {
        crate::text::first_chars(s.trim(), LINE_CHARS)
            .chars()
            .collect::<Vec<char>>()
    };
    for (i, s) in search.iter().enumerate() {
        let (a, b) = (chars(s), chars(file.get(start + i).copied().unwrap_or("")));
        total += a.len().max(b.len());
        if a != b {
            distance += levenshtein(&a, &b);
        } else if file.get(start + i).map(|f| f.trim()) != Some(s.trim()) {
            // Differs past the compared prefix (or the file ended): still not a match.
            distance += 1;
        }
    }
    if total == 0 {
        1.0
    } else {
        1.0 - distance as f64 / total as f64
    }
}

pub(super) fn closest_match(
    file: &[&str],
    search: &[&str],
    hint: Option<usize>,
) -> Option<ClosestMatch> {
    if file.is_empty() || search.is_empty() {
        return None;
    }
    let search_sigs: Vec<Sig> = search.iter().map(|l| Sig::new(l)).collect();
    let file_sigs: Vec<Sig> = file.iter().map(|l| Sig::new(l)).collect();
    let (ss, fs) = (&search_sigs, &file_sigs);
    let pairs = |start: usize| {
        ss.iter()
            .enumerate()
            .map(move |(i, s)| (s, fs.get(start + i)))
    };
    let step = search.len().div_ceil(SAMPLED_LINES);
    let weight: f64 = ss.iter().step_by(step).map(Sig::weight).sum();
    let coarse = |start: usize| {
        let score = |(s, f): (&Sig, Option<&Sig>)| f.map_or(0.0, |f| s.weight() * s.score(f));
        pairs(start).step_by(step).map(score).sum::<f64>() / weight
    };
    let mut ranked: Vec<(f64, usize)> = (0..=file.len().saturating_sub(search.len()))
        .map(|start| (coarse(start), start))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let near = |start: usize| hint.is_some_and(|h| start.abs_diff(h) <= HINT_RADIUS);
    // Best overall first (always refined), then the best near the hint, then the runners-up.
    let candidates = (ranked.iter().take(1))
        .chain(ranked.iter().filter(|r| near(r.1)).take(3))
        .chain(ranked.iter().take(REFINED_WINDOWS));
    let (mut refined, mut spent): (Vec<(f64, usize)>, usize) = (Vec::new(), 0);
    for &(_, start) in candidates {
        let cost: usize = pairs(start)
            .filter_map(|(s, f)| f.filter(|f| f.hash != s.hash).map(|f| (s, f)))
            .map(|(s, f)| s.chars.min(LINE_CHARS) * f.chars.min(LINE_CHARS))
            .sum();
        let over_budget = !refined.is_empty() && spent + cost > CELL_BUDGET;
        if over_budget || refined.iter().any(|r| r.1 == start) {
            continue;
        }
        spent += cost;
        refined.push((window_similarity(file, search, start), start));
    }
    // `max_by` keeps the last of equals, so iterate in reverse to let the better-ranked win ties.
    let best = |keep: &dyn Fn(usize) -> bool| {
        let kept = refined.iter().rev().filter(|r| keep(r.1)).copied();
        kept.max_by(|a, b| a.0.total_cmp(&b.0))
    };
    let (similarity, start) = match (best(&|_| true), best(&near)) {
        (Some(b), Some(n)) if n.0 + HINT_TOLERANCE >= b.0 => n,
        (b, _) => b?,
    };
    let first_difference = search.iter().enumerate().find_map(|(i, s)| {
        let found = file.get(start + i).copied();
        (found.map(str::trim) != Some(s.trim()))
            .then(|| (start + i + 1, quote(s), quote(found.unwrap_or(""))))
    });
    Some(ClosestMatch {
        start_line: start + 1,
        end_line: (start + search.len()).min(file.len()),
        similarity,
        first_difference,
    })
}
