//! Working out what an undo would do, without doing it: which ledger records it takes back, and
//! for each file they touched, what the file would hold after — restored from the checkpoint
//! store, merged three ways around edits made since, or a conflict that names the file and why.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::Value;

use super::merge::merge3;
use crate::checkpoint::CheckpointStore;
use crate::fsutil::sha256_hex;
use crate::orchestration::ledger::map_ledger;
use crate::orchestration::record::TraceRecord;

/// Which records to take back. Every filter that is set must match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    pub task_id: Option<String>,
    /// Only these tool calls (one call, or the calls of a turn and after).
    pub call_ids: Option<HashSet<String>>,
    pub intent_id: Option<String>,
    /// RFC 3339; records at or after this time.
    pub since: Option<String>,
    /// Tasks whose every record is taken back too, whatever `task_id` and `call_ids` say
    /// (the subtasks of the task or turn being undone).
    pub whole_tasks: HashSet<String>,
}

/// One record of the ledger, as undo reads it.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub id: String,
    pub timestamp: String,
    pub task_id: String,
    pub call_id: String,
    pub intent_id: String,
    /// Per path: (before hash, after hash, before mode, after mode); hashes without `sha256:`.
    pub images: BTreeMap<String, FileImages>,
    /// Paths the record names without images (commands recorded before checkpoints existed).
    pub bare_paths: Vec<String>,
    pub reverts: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FileImages {
    pub before: Option<String>,
    pub after: Option<String>,
    pub before_mode: Option<u32>,
}

/// What undo does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileAction {
    /// The file is put back as it was before the change.
    Restore,
    /// The file changed since; the change is taken out and the other edits are kept.
    Merge,
    /// The change created the file: it is removed.
    Remove,
    /// The change removed the file: it comes back.
    Recreate,
    /// The file already holds what it held before the change.
    Nothing,
    /// Taking the change out would overwrite someone's edit: this file is left alone.
    Conflict(String),
    /// The earlier version is not known (not kept, or pruned): this file is left alone.
    Unavailable(String),
}

impl FileAction {
    pub fn applies(&self) -> bool {
        matches!(
            self,
            FileAction::Restore | FileAction::Merge | FileAction::Remove | FileAction::Recreate
        )
    }
}

/// One file of an undo plan.
#[derive(Debug, Clone)]
pub struct FilePlan {
    pub path: String,
    pub action: FileAction,
    /// What the file holds now (the plan is against these bytes).
    pub current: Option<Vec<u8>>,
    /// What it will hold; None removes it.
    pub target: Option<Vec<u8>>,
    /// Permission bits to give a file that comes back.
    pub mode: Option<u32>,
    /// The records whose change to this file is taken back.
    pub records: Vec<String>,
    pub intents: Vec<String>,
    pub tasks: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct UndoPlan {
    /// Every record taken back, in ledger order.
    pub records: Vec<String>,
    pub files: Vec<FilePlan>,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("cannot read the trace ledger: {0}")]
    Ledger(std::io::Error),
    #[error("nothing to undo: no recorded change matches ({0})")]
    Nothing(String),
    #[error("cannot open the workspace: {0}")]
    Workspace(std::io::Error),
}

fn hash_of(v: &Value) -> Option<String> {
    v.as_str()
        .map(|h| h.strip_prefix("sha256:").unwrap_or(h).to_string())
}

fn change_of(record: &TraceRecord) -> Option<Change> {
    let vendor = record.mandate()?;
    let s = |field: &Option<String>| field.clone().unwrap_or_default();
    let mut images = BTreeMap::new();
    // The journal's images (path to before/after hash and mode) stay in the block's extra keys:
    // their `null`s and optional modes are kept as written there.
    if let Some(map) = vendor.extra.get("images").and_then(Value::as_object) {
        for (path, image) in map {
            images.insert(
                path.clone(),
                FileImages {
                    before: image.get("before").and_then(hash_of),
                    after: image.get("after").and_then(hash_of),
                    before_mode: image
                        .get("before_mode")
                        .and_then(Value::as_u64)
                        .map(|m| m as u32),
                },
            );
        }
    }
    let bare_paths = record
        .files
        .iter()
        .map(|f| &f.path)
        .filter(|p| !images.contains_key(*p))
        .cloned()
        .collect();
    Some(Change {
        id: record.id.clone(),
        timestamp: record.timestamp.clone(),
        task_id: s(&vendor.task_id),
        call_id: s(&vendor.tool_call_id),
        intent_id: s(&vendor.intent_id),
        images,
        bare_paths,
        reverts: record.revert_of().to_vec(),
    })
}

/// Every record of the ledger, in order (lines that are not records are skipped: verify reports
/// them).
pub(crate) fn read_changes(root: &Path) -> std::io::Result<Vec<Change>> {
    let Some(map) = map_ledger(root)? else {
        return Ok(Vec::new());
    };
    Ok(map
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(TraceRecord::from_line)
        .filter_map(|r| change_of(&r))
        .collect())
}

impl Selection {
    fn matches(&self, c: &Change) -> bool {
        let by_task = self.task_id.as_ref().is_none_or(|t| &c.task_id == t)
            && self
                .call_ids
                .as_ref()
                .is_none_or(|ids| ids.contains(&c.call_id));
        (by_task || self.whole_tasks.contains(&c.task_id))
            && self.intent_id.as_ref().is_none_or(|i| &c.intent_id == i)
            && self
                .since
                .as_ref()
                .is_none_or(|since| time_at_or_after(&c.timestamp, since))
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.task_id {
            parts.push(format!("task {t}"));
        }
        if let Some(ids) = &self.call_ids {
            parts.push(format!("{} tool call(s)", ids.len()));
        }
        if !self.whole_tasks.is_empty() {
            parts.push(format!("{} subtask(s)", self.whole_tasks.len()));
        }
        if let Some(i) = &self.intent_id {
            parts.push(format!("intent {i}"));
        }
        if let Some(s) = &self.since {
            parts.push(format!("since {s}"));
        }
        parts.join(", ")
    }
}

fn time_at_or_after(timestamp: &str, since: &str) -> bool {
    use time::format_description::well_known::Rfc3339;
    match (
        time::OffsetDateTime::parse(timestamp, &Rfc3339),
        time::OffsetDateTime::parse(since, &Rfc3339),
    ) {
        (Ok(t), Ok(s)) => t >= s,
        _ => false,
    }
}

/// A path from the ledger, resolved and checked like any path the agent gives: inside the
/// workspace and not protected.
pub(crate) fn undoable(
    ws: &crate::workspace::Workspace,
    path: &str,
) -> Result<crate::workspace::ResolvedPath, String> {
    let resolved = ws.resolve(path).map_err(|e| e.to_string())?;
    match crate::workspace::protected_reason(&resolved.rel) {
        Some(reason) => Err(format!("{} is protected: {reason}", resolved.rel)),
        None => Ok(resolved),
    }
}

/// The plan for taking back what `selection` names, against the files as they are now.
pub fn plan(
    root: &Path,
    checkpoints: &CheckpointStore,
    selection: &Selection,
) -> Result<UndoPlan, PlanError> {
    let changes = read_changes(root).map_err(PlanError::Ledger)?;
    let reverted: HashSet<&str> = changes
        .iter()
        .flat_map(|c| c.reverts.iter().map(String::as_str))
        .collect();
    // Undo records are not themselves taken back here; taken-back records are not taken twice.
    let chosen: Vec<&Change> = changes
        .iter()
        .filter(|c| c.reverts.is_empty() && !reverted.contains(c.id.as_str()))
        .filter(|c| selection.matches(c))
        .collect();
    if chosen.is_empty() {
        return Err(PlanError::Nothing(selection.describe()));
    }
    let mut by_path: BTreeMap<&str, Vec<&Change>> = BTreeMap::new();
    for c in &chosen {
        for path in c.images.keys().chain(c.bare_paths.iter()) {
            by_path.entry(path.as_str()).or_default().push(c);
        }
    }
    let ws = crate::workspace::Workspace::new(root).map_err(PlanError::Workspace)?;
    let files = by_path
        .into_iter()
        .map(|(path, records)| plan_file(&ws, checkpoints, path, &records))
        .collect();
    Ok(UndoPlan {
        records: chosen.iter().map(|c| c.id.clone()).collect(),
        files,
    })
}

fn image(checkpoints: &CheckpointStore, hash: &Option<String>) -> Result<Option<Vec<u8>>, String> {
    match hash {
        None => Ok(None),
        Some(h) => checkpoints.get(h).map(Some).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                "the earlier version of the file is no longer in the checkpoint store".to_string()
            }
            _ => format!("the checkpoint store could not give the earlier version: {e}"),
        }),
    }
}

/// One file: `records` (in ledger order) changed it. Each change is taken back in turn, newest
/// first, so that changes by others in between (another task, a person) are kept.
fn plan_file(
    ws: &crate::workspace::Workspace,
    checkpoints: &CheckpointStore,
    path: &str,
    records: &[&Change],
) -> FilePlan {
    // Paths come from the ledger, which a person (or worse) may have edited: nothing outside
    // the workspace or protected is read, shown or planned.
    let readable = undoable(ws, path);
    let current = match &readable {
        Ok(resolved) => std::fs::read(&resolved.abs).ok(),
        Err(_) => None,
    };
    let distinct = |f: fn(&Change) -> &String| {
        let mut v: Vec<String> = records.iter().map(|c| f(c).clone()).collect();
        v.sort();
        v.dedup();
        v
    };
    let (intents, tasks) = (distinct(|c| &c.intent_id), distinct(|c| &c.task_id));
    let mut plan = FilePlan {
        path: path.to_string(),
        action: FileAction::Nothing,
        current: current.clone(),
        target: current.clone(),
        mode: records
            .first()
            .and_then(|c| c.images.get(path))
            .and_then(|i| i.before_mode),
        records: records.iter().map(|c| c.id.clone()).collect(),
        intents,
        tasks,
    };
    if let Err(reason) = readable {
        plan.action = FileAction::Unavailable(reason);
        return plan;
    }
    let mut state = current.clone();
    let mut merged = false;
    for change in records.iter().rev() {
        let Some(images) = change.images.get(path) else {
            plan.action = FileAction::Unavailable(format!(
                "{path} was changed by a command recorded without its earlier version, so it cannot be put back"
            ));
            return plan;
        };
        match revert_one(checkpoints, path, &state, images) {
            Ok((next, was_merge)) => {
                state = next;
                merged |= was_merge;
            }
            Err(action) => {
                plan.action = action;
                return plan;
            }
        }
    }
    plan.action = match (&current, &state) {
        _ if state == current => FileAction::Nothing,
        (_, None) => FileAction::Remove,
        (None, Some(_)) => FileAction::Recreate,
        _ if merged => FileAction::Merge,
        _ => FileAction::Restore,
    };
    plan.target = state;
    plan
}

/// Takes one change out of `state`: the file as it was before, or a three-way merge when the
/// file moved on since. Returns the new state and whether it was a merge.
fn revert_one(
    checkpoints: &CheckpointStore,
    path: &str,
    state: &Option<Vec<u8>>,
    images: &FileImages,
) -> Result<(Option<Vec<u8>>, bool), FileAction> {
    let state_hash = state.as_deref().map(sha256_hex);
    if state_hash == images.before {
        return Ok((state.clone(), false)); // Already as before this change.
    }
    let before = image(checkpoints, &images.before)
        .map_err(|e| FileAction::Unavailable(format!("{path}: {e}")))?;
    if state_hash == images.after {
        return Ok((before, false));
    }
    let after = image(checkpoints, &images.after)
        .map_err(|e| FileAction::Unavailable(format!("{path}: {e}")))?;
    let text = |b: &Option<Vec<u8>>| {
        b.as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };
    let (base, ours, theirs) = match (text(&after), text(state), text(&before)) {
        (_, None, _) => {
            return Err(FileAction::Conflict(format!(
                "{path} was deleted after the agent's change; it is left deleted"
            )))
        }
        (None, Some(_), _) => {
            return Err(FileAction::Conflict(format!(
            "{path} was removed by the agent's change and created again since; it is left as it is"
        )))
        }
        (Some(base), Some(ours), theirs) => (base, ours, theirs),
    };
    match merge3(&base, &ours, theirs.as_deref().unwrap_or("")) {
        Ok(merged) if before.is_none() && merged.is_empty() => Ok((None, true)),
        Ok(merged) => Ok((Some(merged.into_bytes()), true)),
        Err(overlaps) => {
            let lines: Vec<String> = overlaps
                .iter()
                .map(|o| {
                    if o.base_start >= o.base_end {
                        o.base_start.to_string()
                    } else {
                        format!("{}-{}", o.base_start, o.base_end)
                    }
                })
                .collect();
            Err(FileAction::Conflict(format!(
                "{path} was edited after the agent's change on the same lines (line {} of the agent's version); undoing would overwrite that edit, so the file is left as it is",
                lines.join(", ")
            )))
        }
    }
}

/// Prunes the checkpoint store to `cap` bytes, never dropping an image of a change made by one
/// of `open_tasks` (what the window or the command line can still take back).
pub fn prune(
    root: &Path,
    checkpoints: &CheckpointStore,
    open_tasks: &HashSet<String>,
    cap: u64,
) -> std::io::Result<crate::checkpoint::PruneReport> {
    let keep: HashSet<String> = read_changes(root)?
        .into_iter()
        .filter(|c| open_tasks.contains(&c.task_id))
        .flat_map(|c| {
            c.images
                .into_values()
                .flat_map(|i| [i.before, i.after])
                .flatten()
        })
        .collect();
    Ok(checkpoints.prune(cap, &keep))
}
