//! SEARCH/REPLACE blocks of the `apply_diff` tool: parsing them and applying them to a file's
//! text. Pure string work; reading and writing the file is the caller's job.
//!
//! A block is `<<<<<<< SEARCH`, optional `:start_line:N` and `-------` lines, the old lines,
//! `=======`, the new lines and `>>>>>>> REPLACE`. Blocks apply in order, each to the result of
//! the previous one, and a diff applies whole or not at all. Matching is line-based: exact, then
//! ignoring trailing whitespace, then ignoring all surrounding whitespace (re-indenting the
//! replacement). When nothing matches, the error names the closest candidate and its first
//! differing line so the model can correct itself in one retry.

const SEARCH_MARKER: &str = "<<<<<<< SEARCH";
const SEPARATOR: &str = "=======";
const REPLACE_MARKER: &str = ">>>>>>> REPLACE";
const HEADER_RULE: &str = "-------";
/// Quoted file lines are cut to this many characters so an error never dumps a minified file.
const QUOTE_CHARS: usize = 120;
/// A `:start_line:` hint favours candidates this close to it when reporting the closest match.
const HINT_RADIUS: usize = 40;
/// How much less similar a candidate near the hint may be and still be preferred.
const HINT_TOLERANCE: f64 = 0.05;
/// The coarse ranking looks at no more SEARCH lines than this, keeping it O(file lines).
const SAMPLED_LINES: usize = 48;
/// How many of the best coarse windows get the exact (edit-distance) similarity.
const REFINED_WINDOWS: usize = 8;
/// Edit distance looks at no more than this many characters of a line.
const LINE_CHARS: usize = 160;
/// Upper bound on edit-distance cells for one no-match report; huge lines must not stall a turn.
const CELL_BUDGET: usize = 8_000_000;

mod closest;
use closest::{no_match, quote};

/// One parsed block. `search` and `replace` hold the lines between the markers, each ended by
/// `\n`, so an empty REPLACE (`""`) and a REPLACE of one blank line (`"\n"`) stay distinct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchReplaceBlock {
    pub search: String,
    pub replace: String,
    /// The optional `:start_line:` hint, 1-based, in the file as it was before the diff.
    pub start_line: Option<usize>,
    /// 1-based line of the diff holding this block's `<<<<<<< SEARCH` marker.
    pub diff_line: usize,
}

/// How the SEARCH text was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    /// Lines matched once trailing whitespace was ignored.
    TrailingWhitespace,
    /// Lines matched once all leading and trailing whitespace was ignored; the replacement was
    /// re-indented to the file's indentation.
    Indentation,
}

/// Where one block was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedBlock {
    /// 1-based block number within the diff.
    pub block: usize,
    pub kind: MatchKind,
    /// 1-based inclusive range replaced, in the text before this block.
    pub start_line: usize,
    pub end_line: usize,
    /// 1-based inclusive range of the replacement in the text after this block; for an empty
    /// replacement `new_end_line == new_start_line - 1`.
    pub new_start_line: usize,
    pub new_end_line: usize,
}

/// The edited text and where each block landed.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub content: String,
    pub blocks: Vec<AppliedBlock>,
}

/// Why a diff could not be parsed or applied. Messages are written for the model to act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SearchReplaceError {
    #[error("diff line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error("the diff contains no SEARCH/REPLACE block")]
    Empty,
    #[error("block {block}: {message}")]
    NoMatch {
        block: usize,
        message: String,
        closest: Option<ClosestMatch>,
    },
    #[error(
        "block {block}: the SEARCH text occurs {} times (lines {}); add :start_line: to choose one, or include more surrounding lines",
        .lines.len(),
        join_lines(.lines)
    )]
    Ambiguous { block: usize, lines: Vec<usize> },
}

/// The window of the file most similar to a SEARCH text that did not match.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosestMatch {
    /// 1-based inclusive line range in the text the block was applied to.
    pub start_line: usize,
    pub end_line: usize,
    /// 0.0..=1.0; one minus the line-wise edit distance over the compared characters.
    pub similarity: f64,
    /// (file line, expected text, found text), quoted lines truncated; `found` is empty when the
    /// file ends before the SEARCH text does.
    pub first_difference: Option<(usize, String, String)>,
}

fn join_lines(lines: &[usize]) -> String {
    let shown: Vec<String> = lines.iter().take(20).map(usize::to_string).collect();
    match lines.len().saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Search,
    Separator,
    Replace,
}

/// Markers must start the line; trailing whitespace is tolerated because models and editors add it.
fn marker(line: &str) -> Option<Marker> {
    match line.trim_end() {
        // Some models close the SEARCH marker with a stray `>`; it is unambiguous, so accept it.
        SEARCH_MARKER | "<<<<<<< SEARCH>" => Some(Marker::Search),
        SEPARATOR => Some(Marker::Separator),
        REPLACE_MARKER => Some(Marker::Replace),
        _ => None,
    }
}

/// A content line that would read as a marker is written with a leading backslash; drop it.
fn unescape(line: &str) -> &str {
    let header = |rest: &str| rest.starts_with(":start_line:") || rest.starts_with(":end_line:");
    let escaped =
        |rest: &&str| marker(rest).is_some() || rest.trim_end() == HEADER_RULE || header(rest);
    line.strip_prefix('\\').filter(escaped).unwrap_or(line)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Outside,
    /// Just after `<<<<<<< SEARCH`, where `:start_line:` and `-------` may appear.
    Header,
    Search,
    Replace,
}

fn new_block(diff_line: usize) -> SearchReplaceBlock {
    SearchReplaceBlock {
        search: String::new(),
        replace: String::new(),
        start_line: None,
        diff_line,
    }
}

/// Splits a diff into blocks. Text outside blocks (prose, code fences) is ignored.
pub fn parse_blocks(diff: &str) -> Result<Vec<SearchReplaceBlock>, SearchReplaceError> {
    let mut blocks = Vec::new();
    let (mut state, mut current, mut line_no) = (State::Outside, new_block(0), 0);
    for raw in diff.split_inclusive('\n') {
        line_no += 1;
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let (number, opened, found) = (blocks.len() + 1, current.diff_line, marker(line));
        if state == State::Header && found.is_none() {
            if let Some(value) = line.strip_prefix(":start_line:") {
                current.start_line = value.trim().parse().ok().filter(|&n| n > 0);
                if current.start_line.is_some() {
                    continue;
                }
                let value = quote(value.trim());
                let message = format!(
                    "block {number}: `:start_line:` needs a positive line number, got `{value}`"
                );
                return Err(parse_error(line_no, message));
            }
            // Older prompts ask for `:end_line:`; the SEARCH text already fixes the range.
            if line.starts_with(":end_line:") {
                continue;
            }
            state = State::Search;
            if line.trim_end() == HEADER_RULE {
                continue;
            }
        }
        let problem = match (state, found) {
            (State::Outside, Some(Marker::Search)) => {
                (state, current) = (State::Header, new_block(line_no));
                None
            }
            (State::Outside, Some(Marker::Separator)) => Some(format!(
                "block {number}: `{SEPARATOR}` without a preceding `{SEARCH_MARKER}` line"
            )),
            (State::Outside, Some(Marker::Replace)) => Some(format!(
                "block {number}: `{REPLACE_MARKER}` without a preceding `{SEARCH_MARKER}` line"
            )),
            (State::Outside, None) => None,
            (State::Header | State::Search, Some(Marker::Search)) => Some(format!(
                "block {number} (opened at diff line {opened}) has a nested `{SEARCH_MARKER}` before its `{SEPARATOR}`; escape a literal marker line in the text as `\\{SEARCH_MARKER}`"
            )),
            (State::Header | State::Search, Some(Marker::Replace)) => Some(format!(
                "block {number} (opened at diff line {opened}) reaches `{REPLACE_MARKER}` without the `{SEPARATOR}` line between the SEARCH and REPLACE text"
            )),
            (State::Header | State::Search, Some(Marker::Separator)) => {
                state = State::Replace;
                None
            }
            (State::Header | State::Search, None) => {
                push_line(&mut current.search, unescape(line));
                None
            }
            (State::Replace, Some(Marker::Replace)) if current.search.trim().is_empty() => {
                let message = format!("block {number}: the SEARCH section is empty; it must quote the existing lines to replace. To create a file or rewrite all of it, use write_to_file instead");
                return Err(parse_error(opened, message));
            }
            (State::Replace, Some(Marker::Replace)) => {
                blocks.push(std::mem::replace(&mut current, new_block(0)));
                state = State::Outside;
                None
            }
            (State::Replace, Some(Marker::Search)) => Some(format!(
                "block {number} (opened at diff line {opened}) is missing `{REPLACE_MARKER}` before the next `{SEARCH_MARKER}`"
            )),
            (State::Replace, Some(Marker::Separator)) => Some(format!(
                "block {number} has a second `{SEPARATOR}`; if it is part of the new text, escape it as `\\{SEPARATOR}`"
            )),
            (State::Replace, None) => {
                push_line(&mut current.replace, unescape(line));
                None
            }
        };
        if let Some(message) = problem {
            return Err(parse_error(line_no, message));
        }
    }
    let missing = match state {
        State::Outside if blocks.is_empty() => return Err(SearchReplaceError::Empty),
        State::Outside => return Ok(blocks),
        State::Header | State::Search => SEPARATOR,
        State::Replace => REPLACE_MARKER,
    };
    let number = blocks.len() + 1;
    let message =
        format!("block {number} is missing `{missing}`; the diff ended at line {line_no}");
    Err(parse_error(current.diff_line, message))
}

fn parse_error(line: usize, message: String) -> SearchReplaceError {
    SearchReplaceError::Parse { line, message }
}

fn push_line(buffer: &mut String, line: &str) {
    buffer.push_str(line);
    buffer.push('\n');
}

/// One line of the edited file and the exact ending that followed it (`""` on a last line
/// without a newline), so untouched lines are written back byte for byte.
struct Line {
    text: String,
    eol: &'static str,
}

fn split_file(text: &str) -> Vec<Line> {
    let ending = |raw: &str| match raw.as_bytes() {
        [.., b'\r', b'\n'] => "\r\n",
        [.., b'\n'] => "\n",
        _ => "",
    };
    (text.split_inclusive('\n'))
        .map(|raw| {
            let eol = ending(raw);
            let text = raw[..raw.len() - eol.len()].to_owned();
            Line { text, eol }
        })
        .collect()
}

/// Carries a `:start_line:` hint (0-based, given against the original file) through the
/// blocks applied before, so line shifts above it don't send the search elsewhere.
fn map_hint(mut line: usize, applied: &[AppliedBlock]) -> usize {
    for a in applied {
        if line >= a.end_line {
            line = line - a.end_line + a.new_end_line;
        } else if line >= a.start_line {
            line = a.start_line - 1;
        }
    }
    line
}

/// Parses `diff` and applies its blocks to `original` in order.
pub fn apply(original: &str, diff: &str) -> Result<Applied, SearchReplaceError> {
    let blocks = parse_blocks(diff)?;
    // A byte-order mark is not part of the first line's text; SEARCH never quotes it.
    let (bom, body) = match original.strip_prefix('\u{feff}') {
        Some(body) => ("\u{feff}", body),
        None => ("", original),
    };
    let mut lines = split_file(body);
    // New lines take the file's prevailing line ending so a CRLF file stays CRLF.
    let crlf = lines.iter().filter(|l| l.eol == "\r\n").count();
    let lf = lines.iter().filter(|l| l.eol == "\n").count();
    let eol = if crlf > lf { "\r\n" } else { "\n" };
    let mut applied = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let number = index + 1;
        let search: Vec<&str> = block.search.lines().collect();
        let replace: Vec<&str> = block.replace.lines().collect();
        let hint = block
            .start_line
            .map(|line| map_hint(line.saturating_sub(1), &applied));
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        let (start, kind) = locate(&texts, &search, &replace, hint, number)?;
        let end = start + search.len();
        let new_texts: Vec<String> = match (kind, texts.get(start..end)) {
            (MatchKind::Indentation, Some(found)) => reindent(&search, found, &replace),
            _ => replace.iter().map(|l| (*l).to_owned()).collect(),
        };
        let new_len = new_texts.len();
        // The region's last ending is kept so a file without a final newline stays that way.
        let tail_eol = end
            .checked_sub(1)
            .and_then(|i| lines.get(i))
            .map_or(eol, |l| l.eol);
        let replacement = new_texts.into_iter().enumerate().map(|(i, text)| Line {
            text,
            eol: if i + 1 == new_len { tail_eol } else { eol },
        });
        lines.splice(start..end, replacement);
        if new_len == 0 && tail_eol.is_empty() && start == lines.len() {
            if let Some(previous) = start.checked_sub(1).and_then(|i| lines.get_mut(i)) {
                previous.eol = "";
            }
        }
        applied.push(AppliedBlock {
            block: number,
            kind,
            start_line: start + 1,
            end_line: end,
            new_start_line: start + 1,
            new_end_line: start + new_len,
        });
    }
    let content = lines.iter().flat_map(|l| [l.text.as_str(), l.eol]);
    let content = std::iter::once(bom).chain(content).collect();
    Ok(Applied {
        content,
        blocks: applied,
    })
}

/// Line equality used by one matching pass.
type Same = fn(&str, &str) -> bool;

/// Start indices (0-based) of every window of `file` whose lines equal `search` under `same`.
fn occurrences(file: &[&str], search: &[&str], same: Same) -> Vec<usize> {
    if search.is_empty() || search.len() > file.len() {
        return Vec::new();
    }
    (0..=file.len() - search.len())
        .filter(|&start| search.iter().zip(&file[start..]).all(|(s, f)| same(s, f)))
        .collect()
}

fn locate(
    file: &[&str],
    search: &[&str],
    replace: &[&str],
    hint: Option<usize>,
    block: usize,
) -> Result<(usize, MatchKind), SearchReplaceError> {
    let passes: [(MatchKind, Same); 3] = [
        (MatchKind::Exact, |a, b| a == b),
        (MatchKind::TrailingWhitespace, |a, b| {
            a.trim_end() == b.trim_end()
        }),
        (MatchKind::Indentation, |a, b| a.trim() == b.trim()),
    ];
    for (kind, same) in passes {
        let found = occurrences(file, search, same);
        let start = match (found.as_slice(), hint) {
            ([], _) => continue,
            ([only], _) => *only,
            // Equally near occurrences resolve to the earlier one; `min_by_key` keeps the first.
            (_, Some(hint)) => found
                .iter()
                .copied()
                .min_by_key(|start| start.abs_diff(hint))
                .unwrap_or_default(),
            (_, None) => {
                return Err(SearchReplaceError::Ambiguous {
                    block,
                    lines: found.iter().map(|start| start + 1).collect(),
                })
            }
        };
        return Ok((start, kind));
    }
    Err(no_match(file, search, replace, hint, block))
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Byte length of the longest common prefix, always on a character boundary of both.
fn common_prefix_len(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i)
}

/// How the file's indentation differs from the SEARCH line's: extra outer indentation the file
/// adds (`true`) or drops (`false`).
fn shift<'a>((search, file): (&'a str, &'a str)) -> Option<(&'a str, bool)> {
    match file.strip_suffix(search) {
        Some(extra) => Some((extra, true)),
        None => search.strip_suffix(file).map(|extra| (extra, false)),
    }
}

/// Moves REPLACE lines to the indentation the matched file lines actually have.
fn reindent(search: &[&str], found: &[&str], replace: &[&str]) -> Vec<String> {
    let pairs: Vec<(&str, &str)> = search
        .iter()
        .zip(found)
        .filter(|(s, _)| !s.trim().is_empty())
        .map(|(s, f)| (indent(s), indent(f)))
        .collect();
    // Usually the file indents every line by the same amount more or less than the SEARCH.
    let uniform = pairs
        .first()
        .and_then(|&first| shift(first))
        .filter(|&first| pairs.iter().all(|&p| shift(p) == Some(first)));
    // Without one (typically tabs in the file, spaces in the SEARCH), map each SEARCH
    // indentation to the file's, unless one of them was matched to two different ones.
    let consistent = pairs
        .iter()
        .all(|(s, f)| pairs.iter().all(|(t, g)| s != t || f == g));
    let rewrite = |line: &str| {
        let lead = indent(line);
        match uniform {
            Some((extra, true)) => Some(format!("{extra}{line}")),
            Some((extra, false)) => Some(line[common_prefix_len(lead, extra)..].to_owned()),
            None => pairs
                .iter()
                .filter(|(s, _)| consistent && lead.starts_with(s))
                .max_by_key(|(s, _)| s.len())
                .map(|(s, f)| format!("{f}{}", &line[s.len()..])),
        }
    };
    // Blank lines stay as written rather than gaining whitespace-only indentation.
    let has_text = |line: &&str| !line.trim().is_empty();
    let moved = |line: &&str| Some(*line).filter(has_text).and_then(rewrite);
    replace
        .iter()
        .map(|line| moved(line).unwrap_or_else(|| (*line).to_owned()))
        .collect()
}

#[cfg(test)]
#[path = "search_replace_tests.rs"]
mod tests;
