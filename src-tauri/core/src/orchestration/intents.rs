//! `.orchestration/active_intents.yaml`: read liberally and in linear time, check globs at load
//! (each intent's matcher is built once, on first use), write canonically.
//!
//! The file is owned by people as much as by the app, so: unknown keys survive a round trip, a
//! file that does not parse is never overwritten, and the last good version stays in use while
//! the file on disk is broken. External edits are noticed by the file's stamp.

use std::collections::HashMap;
use std::sync::OnceLock;

use globset::GlobSet;

use super::yaml::{self, Mapping, Value};
use crate::protocol::{Budget, IntentDraft, IntentStatus, IntentView};

pub const INTENTS_FILE: &str = crate::orchestration_file!("active_intents.yaml");

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IntentError {
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    #[error("{file}: intent `{id}` (line {line}): {message}")]
    Invalid {
        file: String,
        id: String,
        line: usize,
        message: String,
    },
    #[error("no intent with id `{0}`")]
    NotFound(String),
    #[error("{0}")]
    Rejected(String),
    #[error("could not write {file}: {message}")]
    Io { file: String, message: String },
}

/// One intent. Its globs are checked when the file is loaded; the matcher is built the first
/// time the intent is asked about a path, so a file of many intents loads in linear time and
/// only the intents tasks actually use pay for a compiled matcher.
#[derive(Debug, Clone)]
pub struct Intent {
    pub id: String,
    pub name: String,
    pub status: IntentStatus,
    pub owned_scope: Vec<String>,
    pub constraints: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    /// Keys this version does not know, kept as they were.
    pub extra: Mapping,
    /// `None` inside once the build failed: then nothing is owned (the gate fails closed).
    scope: OnceLock<Option<GlobSet>>,
}

impl Intent {
    /// Whether a workspace-relative POSIX path is inside the owned scope.
    pub fn owns(&self, rel_path: &str) -> bool {
        self.scope
            .get_or_init(|| compile_scope(&self.owned_scope).ok())
            .as_ref()
            .is_some_and(|set| set.is_match(rel_path))
    }

    /// Replaces the owned scope (every glob must compile).
    pub fn set_owned_scope(&mut self, owned_scope: Vec<String>) -> Result<(), IntentError> {
        let compiled = compile_scope(&owned_scope)
            .map_err(|m| IntentError::Rejected(format!("intent `{}`: {m}", self.id)))?;
        self.scope = OnceLock::from(Some(compiled));
        self.owned_scope = owned_scope;
        Ok(())
    }

    pub fn view(&self) -> IntentView {
        IntentView {
            id: self.id.clone(),
            name: self.name.clone(),
            status: self.status,
            owned_scope: self.owned_scope.clone(),
            constraints: self.constraints.clone(),
            acceptance_criteria: self.acceptance_criteria.clone(),
            budget: budget_of(&self.extra),
        }
    }
}

/// The key under which an intent keeps its own budget (unknown to the rest of the file format).
const BUDGET_KEY: &str = "budget";

/// The intent's `budget: {max_cost_usd, max_tokens}`, when it has a readable one.
pub fn budget_of(extra: &Mapping) -> Option<Budget> {
    let value = extra.get(BUDGET_KEY)?;
    let json = serde_json::to_value(value).ok()?;
    serde_json::from_value::<Budget>(json).ok()
}

/// Writes `budget` into the intent's other keys; None (or a budget with no cap) removes it.
fn set_budget(extra: &mut Mapping, budget: Option<Budget>) {
    let key = Value::String(BUDGET_KEY.into());
    let Some(b) = budget.filter(|b| b.max_cost_usd.is_some() || b.max_tokens.is_some()) else {
        // A budget written by hand that does not read is left for the person to fix, not dropped.
        if budget_of(extra).is_some() {
            extra.remove(&key);
        }
        return;
    };
    let mut map = Mapping::new();
    if let Some(cost) = b.max_cost_usd {
        map.insert(Value::String("max_cost_usd".into()), Value::from(cost));
    }
    if let Some(tokens) = b.max_tokens {
        map.insert(Value::String("max_tokens".into()), Value::from(tokens));
    }
    extra.insert(key, Value::Mapping(map));
}

/// The parsed file: intents in file order plus the top-level keys Mandate does not own.
#[derive(Debug, Clone, Default)]
pub struct IntentsDoc {
    pub intents: Vec<Intent>,
    pub extra: Mapping,
    /// id -> position, built when the file is parsed (every hook decision looks an intent up).
    index: HashMap<String, usize>,
}

impl IntentsDoc {
    pub fn get(&self, id: &str) -> Option<&Intent> {
        // The index may be stale after an in-place edit; the id check and the scan keep it right.
        self.index
            .get(id)
            .and_then(|&n| self.intents.get(n))
            .filter(|i| i.id == id)
            .or_else(|| self.intents.iter().find(|i| i.id == id))
    }

    /// At most `max` selectable ids, comma-separated, with how many more there are (a file of
    /// thousands of intents must not flood a message to the model).
    pub fn open_ids_listed(&self, max: usize) -> String {
        let ids = self.open_ids();
        let shown = ids[..ids.len().min(max)].join(", ");
        match ids.len().saturating_sub(max) {
            0 => shown,
            more => format!("{shown} and {more} more"),
        }
    }

    /// The ids a task may select: every intent that is not DONE, in file order.
    pub fn open_ids(&self) -> Vec<&str> {
        self.intents
            .iter()
            .filter(|i| i.status != IntentStatus::Done)
            .map(|i| i.id.as_str())
            .collect()
    }

    /// Parses and validates the whole file in time linear in its size; any problem names the
    /// intent and its line (lines are looked up only once there is a problem to report).
    pub fn parse(text: &str, file: &str) -> Result<IntentsDoc, IntentError> {
        let parse_error = |message: String| IntentError::Parse {
            file: file.into(),
            message,
        };
        // The quick reader takes the plain block style and knows each intent's line; the
        // general parser takes everything else, and lines are then found by their `id:`.
        let (root, plain_list) = match super::intents_plain::read(text) {
            Some(plain) => (Value::Mapping(plain.root), plain.intents),
            None => (
                yaml::from_str(text).map_err(|e| parse_error(e.to_string()))?,
                None,
            ),
        };
        let mut extra = match root {
            Value::Mapping(m) => m,
            Value::Null => Mapping::new(),
            _ => {
                return Err(parse_error(
                    "the top level must be a mapping with an `active_intents` list".into(),
                ))
            }
        };
        // (The quick reader leaves `null` where it found the intents list.)
        let list = match (
            extra.shift_remove("active_intents"),
            extra.shift_remove("intents"),
        ) {
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => Value::Sequence(Vec::new()),
            (Some(_), Some(_)) => {
                return Err(parse_error(
                    "both `active_intents` and `intents` are present; keep one".into(),
                ))
            }
        };
        let items = match list {
            Value::Sequence(items) => items,
            Value::Null => Vec::new(),
            _ => return Err(parse_error("`active_intents` must be a list".into())),
        };
        let mut built = Builder::new(text, file, items.len());
        if let Some(list) = plain_list {
            for (n, item) in list.into_iter().enumerate() {
                built.add(n, item.fields, Some(item.line))?;
            }
        }
        for (n, item) in items.into_iter().enumerate() {
            let map = match item {
                Value::Mapping(m) => m,
                other => {
                    return Err(parse_error(format!(
                        "intent #{} must be a mapping, found {}",
                        n + 1,
                        kind(&other)
                    )))
                }
            };
            built.add(n, map, None)?;
        }
        Ok(IntentsDoc {
            intents: built.intents,
            extra,
            index: built.index,
        })
    }

    /// The canonical YAML: `active_intents` first, fields in a fixed order, unknown keys kept.
    pub fn to_yaml(&self) -> Result<String, IntentError> {
        let mut root = Mapping::with_capacity(1 + self.extra.len());
        let list: Vec<Value> = self.intents.iter().map(intent_to_value).collect();
        root.insert("active_intents".into(), Value::Sequence(list));
        for (k, v) in &self.extra {
            root.insert(k.clone(), v.clone());
        }
        let body = yaml::to_string(&Value::Mapping(root))
            .map_err(|e| IntentError::Rejected(e.to_string()))?;
        Ok(format!(
            "# Intents: units of work the agent may act under. Edited by Mandate and by people.\n{body}"
        ))
    }
}

fn str_list(value: Option<Value>, key: &str) -> Result<Vec<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s]),
        Some(Value::Sequence(items)) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                Value::Number(n) => Ok(n.to_string()),
                Value::Bool(b) => Ok(b.to_string()),
                other => Err(format!(
                    "`{key}` items must be strings, found {}",
                    kind(&other)
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "`{key}` must be a list of strings, found {}",
            kind(&other)
        )),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

pub fn parse_status(s: &str) -> Option<IntentStatus> {
    let s = s.trim();
    // The canonical spelling, as Mandate writes it, needs no copy.
    if let Some(status) = [
        IntentStatus::NotStarted,
        IntentStatus::InProgress,
        IntentStatus::Done,
        IntentStatus::Blocked,
    ]
    .into_iter()
    .find(|&status| status_str(status) == s)
    {
        return Some(status);
    }
    match s.to_ascii_uppercase().replace(['-', ' '], "_").as_str() {
        "NOT_STARTED" | "TODO" | "PENDING" => Some(IntentStatus::NotStarted),
        "IN_PROGRESS" | "ACTIVE" => Some(IntentStatus::InProgress),
        "DONE" | "COMPLETED" | "COMPLETE" => Some(IntentStatus::Done),
        "BLOCKED" => Some(IntentStatus::Blocked),
        _ => None,
    }
}

pub fn status_str(s: IntentStatus) -> &'static str {
    match s {
        IntentStatus::NotStarted => "NOT_STARTED",
        IntentStatus::InProgress => "IN_PROGRESS",
        IntentStatus::Done => "DONE",
        IntentStatus::Blocked => "BLOCKED",
    }
}

/// One intent's keys as read: the quick reader's list, or a mapping from the general parser.
pub(super) trait Fields {
    fn take(&mut self, key: &str) -> Option<Value>;
    /// Puts back a key Mandate read only in part (`scope` beside its `paths`).
    fn keep(&mut self, key: &'static str, value: Value);
    fn into_extra(self) -> Mapping;
}

impl Fields for Mapping {
    fn take(&mut self, key: &str) -> Option<Value> {
        self.shift_remove(key)
    }
    fn keep(&mut self, key: &'static str, value: Value) {
        self.insert(key.into(), value);
    }
    fn into_extra(self) -> Mapping {
        self
    }
}

/// The intents as they are validated: in order, indexed by id, each with its line if known.
struct Builder<'t> {
    text: &'t str,
    file: &'t str,
    intents: Vec<Intent>,
    index: HashMap<String, usize>,
    lines: Vec<Option<usize>>,
}

impl<'t> Builder<'t> {
    fn new(text: &'t str, file: &'t str, capacity: usize) -> Self {
        Self {
            text,
            file,
            intents: Vec::with_capacity(capacity),
            index: HashMap::with_capacity(capacity),
            lines: Vec::with_capacity(capacity),
        }
    }

    /// The line of intent `n`, the `nth` with its id.
    fn line_of(&self, n: usize, id: &str, nth: usize) -> Option<usize> {
        self.lines
            .get(n)
            .copied()
            .flatten()
            .or_else(|| id_lines(self.text, id, nth).get(nth - 1).copied())
    }

    fn add(
        &mut self,
        n: usize,
        mut fields: impl Fields,
        line: Option<usize>,
    ) -> Result<(), IntentError> {
        self.lines.push(line);
        let invalid = |id: String, line: Option<usize>, message: String| IntentError::Invalid {
            file: self.file.into(),
            id,
            line: line.unwrap_or(0),
            message,
        };
        let id = match fields.take("id") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            Some(Value::Number(num)) => num.to_string(),
            _ => {
                return Err(IntentError::Parse {
                    file: self.file.into(),
                    message: format!("intent #{} has no `id`", n + 1),
                })
            }
        };
        // Checked before the rest, so the first `id:` line with this id is this intent's.
        if let Some(&first) = self.index.get(&id) {
            let message = match self.line_of(first, &id, 1) {
                Some(l) => {
                    format!("this id is also used by the intent at line {l}; ids must be unique")
                }
                None => format!(
                    "this id is also used by intent #{}; ids must be unique",
                    first + 1
                ),
            };
            return Err(invalid(id.clone(), self.line_of(n, &id, 2), message));
        }
        let intent = intent_from_fields(id, fields)
            .map_err(|(id, message)| invalid(id.clone(), self.line_of(n, &id, 1), message))?;
        self.index.insert(intent.id.clone(), n);
        self.intents.push(intent);
        Ok(())
    }
}

/// The rest of one intent; an error carries the id back with the message.
fn intent_from_fields(id: String, mut map: impl Fields) -> Result<Intent, (String, String)> {
    let checked = (|| {
        let name = match map.take("name").or_else(|| map.take("title")) {
            Some(Value::String(s)) => s,
            None | Some(Value::Null) => id.clone(),
            Some(other) => return Err(format!("`name` must be a string, found {}", kind(&other))),
        };
        let status = match map.take("status") {
            None | Some(Value::Null) => IntentStatus::NotStarted,
            Some(Value::String(s)) => parse_status(&s).ok_or_else(|| {
                format!("unknown status `{s}` (use NOT_STARTED, IN_PROGRESS, DONE or BLOCKED)")
            })?,
            Some(other) => {
                return Err(format!("`status` must be a string, found {}", kind(&other)))
            }
        };
        let owned_scope = match map.take("owned_scope") {
            Some(v) => str_list(Some(v), "owned_scope")?,
            None => match map.take("scope") {
                // The `scope: {paths: [...]}` variant; other keys under `scope` are kept.
                Some(Value::Mapping(mut scope)) => {
                    let paths = str_list(scope.shift_remove("paths"), "scope.paths")?;
                    if !scope.is_empty() {
                        map.keep("scope", Value::Mapping(scope));
                    }
                    paths
                }
                Some(v) => str_list(Some(v), "scope")?,
                None => Vec::new(),
            },
        };
        let constraints = str_list(map.take("constraints"), "constraints")?;
        let acceptance_criteria = str_list(
            map.take("acceptance_criteria")
                .or_else(|| map.take("definition_of_done")),
            "acceptance_criteria",
        )?;
        for pattern in &owned_scope {
            check_glob(pattern).map_err(|e| e.0)?;
        }
        Ok((name, status, owned_scope, constraints, acceptance_criteria))
    })();
    match checked {
        Ok((name, status, owned_scope, constraints, acceptance_criteria)) => Ok(Intent {
            id,
            name,
            status,
            owned_scope,
            constraints,
            acceptance_criteria,
            extra: map.into_extra(),
            scope: OnceLock::new(),
        }),
        Err(message) => Err((id, message)),
    }
}

fn intent_to_value(intent: &Intent) -> Value {
    let mut m = Mapping::with_capacity(6 + intent.extra.len());
    let list =
        |items: &[String]| Value::Sequence(items.iter().cloned().map(Value::String).collect());
    m.insert("id".into(), intent.id.clone().into());
    m.insert("name".into(), intent.name.clone().into());
    m.insert("status".into(), status_str(intent.status).into());
    m.insert("owned_scope".into(), list(&intent.owned_scope));
    m.insert("constraints".into(), list(&intent.constraints));
    m.insert(
        "acceptance_criteria".into(),
        list(&intent.acceptance_criteria),
    );
    for (k, v) in &intent.extra {
        m.insert(k.clone(), v.clone());
    }
    Value::Mapping(m)
}

/// The lines (1-based) of the first `max` `id: ID` entries in the source, in one pass.
/// Best effort: YAML values carry no positions, so this reads the text the way people write it
/// (`- id: X`, `id: "X"`, `- {id: X, …}`, a comment after the value).
fn id_lines(text: &str, id: &str, max: usize) -> Vec<usize> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line
            .trim_start()
            .trim_start_matches('-')
            .trim_start()
            .trim_start_matches('{')
            .trim_start();
        let Some(rest) = l.strip_prefix("id:") else {
            continue;
        };
        let rest = rest.split(" #").next().unwrap_or_default();
        let value = rest.split([',', '}']).next().unwrap_or_default();
        if value.trim().trim_matches(|c| c == '"' || c == '\'') == id {
            found.push(i + 1);
            if found.len() == max {
                break;
            }
        }
    }
    found
}

/// Builds a validated intent from a GUI draft (keeping unknown keys of the one it replaces).
pub fn intent_from_draft(draft: IntentDraft, mut extra: Mapping) -> Result<Intent, IntentError> {
    let id = draft.id.trim().to_string();
    if id.is_empty()
        || id.len() > 64
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(IntentError::Rejected(
            "an intent id is 1 to 64 characters: letters, digits, `-`, `_` or `.`".into(),
        ));
    }
    if draft.name.trim().is_empty() {
        return Err(IntentError::Rejected(format!("intent `{id}` needs a name")));
    }
    let clean = |items: Vec<String>| -> Vec<String> {
        items
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let owned_scope = clean(draft.owned_scope);
    let reject = |m: String| IntentError::Rejected(format!("intent `{id}`: {m}"));
    for pattern in &owned_scope {
        check_glob(pattern).map_err(|e| reject(e.0))?;
    }
    if let Some(budget) = &draft.budget {
        crate::settings::check_budget(budget).map_err(|e| reject(e.to_string()))?;
    }
    set_budget(&mut extra, draft.budget);
    Ok(Intent {
        id,
        name: draft.name.trim().to_string(),
        status: draft.status,
        owned_scope,
        constraints: clean(draft.constraints),
        acceptance_criteria: clean(draft.acceptance_criteria),
        extra,
        scope: OnceLock::new(),
    })
}

#[path = "intents_globs.rs"]
mod globs;
use globs::check_glob;
pub use globs::{compile_glob, compile_scope, GlobError};

#[path = "intents_store.rs"]
mod store;
pub use store::{IntentStore, IntentsSnapshot};

#[cfg(test)]
#[path = "intents_tests.rs"]
mod tests;
