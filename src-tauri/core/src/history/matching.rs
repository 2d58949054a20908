//! A history query taken apart once: its words as literal, case-blind patterns (whatever
//! characters they hold), its moments and its costs; then checked against each task.

use regex::{Regex, RegexBuilder};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::TaskDoc;
use crate::protocol::{HistoryField, HistoryQuery, HistorySnippet};

/// The longest search the history takes, in characters (words and intent together).
pub const MAX_QUERY_CHARS: usize = 1000;
/// The most words a search may hold.
pub const MAX_WORDS: usize = 32;
/// Characters of context on each side of the words in a snippet.
const CONTEXT_CHARS: usize = 60;

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum QueryError {
    #[error("the search is longer than {MAX_QUERY_CHARS} characters")]
    TooLong,
    #[error("the search has more than {MAX_WORDS} words")]
    TooManyWords,
    #[error("`{0}` is neither a day (YYYY-MM-DD) nor a moment (RFC 3339)")]
    BadMoment(String),
    #[error("a cost bound is a number of US dollars, 0 or more")]
    BadCost,
}

pub(super) struct Matcher {
    words: Vec<Regex>,
    /// The intent asked for: its id (any case), or a pattern over its name.
    intent: Option<(String, Regex)>,
    since: Option<OffsetDateTime>,
    until: Option<OffsetDateTime>,
    min_cost: Option<f64>,
    max_cost: Option<f64>,
}

/// A word, or the intent asked for, as a pattern that matches exactly its characters (an
/// escaped text of bounded length compiles; one that would not is too long to search for).
fn literal(text: &str) -> Result<Regex, QueryError> {
    RegexBuilder::new(&regex::escape(text))
        .case_insensitive(true)
        .build()
        .map_err(|_| QueryError::TooLong)
}

/// `YYYY-MM-DD` (its first or last instant, UTC) or an RFC 3339 moment.
fn moment(text: &str, end_of_day: bool) -> Result<OffsetDateTime, QueryError> {
    let text = text.trim();
    if let Ok(at) = OffsetDateTime::parse(text, &Rfc3339) {
        return Ok(at);
    }
    let bad = || QueryError::BadMoment(crate::text::ellipsize(text, 40).into_owned());
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return Err(bad());
    };
    let number = |s: &str, digits: usize| {
        (s.len() == digits && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u16>().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (number(year, 4), number(month, 2), number(day, 2))
    else {
        return Err(bad());
    };
    let month = u8::try_from(month)
        .ok()
        .and_then(|m| time::Month::try_from(m).ok())
        .ok_or_else(bad)?;
    let day = u8::try_from(day).map_err(|_| bad())?;
    let date = time::Date::from_calendar_date(i32::from(year), month, day).map_err(|_| bad())?;
    let at = if end_of_day {
        date.with_hms_nano(23, 59, 59, 999_999_999)
            .map_err(|_| bad())?
    } else {
        date.midnight()
    };
    Ok(at.assume_utc())
}

fn cost(bound: Option<f64>) -> Result<Option<f64>, QueryError> {
    match bound {
        Some(c) if !c.is_finite() || c < 0.0 => Err(QueryError::BadCost),
        other => Ok(other),
    }
}

impl Matcher {
    pub(super) fn new(query: &HistoryQuery) -> Result<Matcher, QueryError> {
        let intent = query.intent.as_deref().map(str::trim).unwrap_or("");
        if query.text.chars().count() + intent.chars().count() > MAX_QUERY_CHARS {
            return Err(QueryError::TooLong);
        }
        let words: Vec<&str> = query.text.split_whitespace().collect();
        if words.len() > MAX_WORDS {
            return Err(QueryError::TooManyWords);
        }
        let intent = match intent {
            "" => None,
            intent => Some((intent.to_lowercase(), literal(intent)?)),
        };
        Ok(Matcher {
            words: words.into_iter().map(literal).collect::<Result<_, _>>()?,
            intent,
            since: query
                .since
                .as_deref()
                .map(|s| moment(s, false))
                .transpose()?,
            until: query
                .until
                .as_deref()
                .map(|s| moment(s, true))
                .transpose()?,
            min_cost: cost(query.min_cost_usd)?,
            max_cost: cost(query.max_cost_usd)?,
        })
    }

    /// None: the task does not match. Some(None): it matches and no words were asked for.
    pub(super) fn matches(
        &self,
        doc: &TaskDoc,
        intent_name: Option<&str>,
    ) -> Option<Option<HistorySnippet>> {
        let task = &doc.summary;
        if let Some((id, name)) = &self.intent {
            let same_id = task.intent_id.as_deref().map(str::to_lowercase) == Some(id.clone());
            if !same_id && !intent_name.is_some_and(|n| name.is_match(n)) {
                return None;
            }
        }
        if self.min_cost.is_some() || self.max_cost.is_some() {
            let spent = task.usage.cost_usd?;
            if self.min_cost.is_some_and(|min| spent < min)
                || self.max_cost.is_some_and(|max| spent > max)
            {
                return None;
            }
        }
        let at = |s: &str| OffsetDateTime::parse(s, &Rfc3339).ok();
        if let Some(since) = self.since {
            if at(&task.updated_at).is_none_or(|last| last < since) {
                return None;
            }
        }
        if let Some(until) = self.until {
            if at(&task.created_at).is_none_or(|first| first > until) {
                return None;
            }
        }
        let intent_text = task
            .intent_id
            .as_ref()
            .map(|id| format!("{id} {}", intent_name.unwrap_or("")));
        let fields = || {
            doc.fields.iter().map(|(f, t)| (*f, t.as_str())).chain(
                intent_text
                    .as_deref()
                    .map(|t| (HistoryField::Intent, t.trim_end())),
            )
        };
        let mut snippet = None;
        for (n, word) in self.words.iter().enumerate() {
            let (field, text, found) =
                fields().find_map(|(field, text)| word.find(text).map(|m| (field, text, m)))?;
            if n == 0 {
                snippet = Some(snip(field, text, found.start(), found.end()));
            }
        }
        Some(snippet)
    }
}

/// The words with up to [`CONTEXT_CHARS`] characters on each side, on one line.
fn snip(field: HistoryField, text: &str, start: usize, end: usize) -> HistorySnippet {
    let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let (head, tail) = (&text[..start], &text[end..]);
    let mut before = crate::text::last_chars(head, CONTEXT_CHARS);
    let mut after = crate::text::first_chars(tail, CONTEXT_CHARS);
    // Where the context was cut, it starts and ends on whole words.
    if before.len() < head.len() {
        if let Some(at) = before.find(char::is_whitespace) {
            before = &before[at..];
        }
    }
    if after.len() < tail.len() {
        if let Some(at) = after.rfind(char::is_whitespace) {
            after = &after[..at];
        }
    }
    let mut shown_before = one_line(before);
    if !shown_before.is_empty() && head[..head.len() - before.len()].trim() != "" {
        shown_before.insert(0, '…');
    }
    if before.ends_with(char::is_whitespace) && !shown_before.is_empty() {
        shown_before.push(' ');
    }
    let mut shown_after = one_line(after);
    if after.starts_with(char::is_whitespace) && !shown_after.is_empty() {
        shown_after.insert(0, ' ');
    }
    if !shown_after.is_empty() && tail[after.len()..].trim() != "" {
        shown_after.push('…');
    }
    HistorySnippet {
        field,
        before: shown_before,
        matched: text[start..end].to_string(),
        after: shown_after,
    }
}
