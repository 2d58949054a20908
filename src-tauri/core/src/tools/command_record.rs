//! The ledger record of what a command changed in its intent's scope: each file with the lines it
//! changed (diffed against the image kept before the command), its before- and after-images in
//! the checkpoint store (so it can be undone), and the command itself, redacted.

use serde_json::{json, Map, Value};

use super::{RunCx, ToolError};
use crate::changes::{Change, ChangeKind};
use crate::checkpoint::ScopeImages;
use crate::hooks::CommandAction;
use crate::orchestration::ledger::{hashed_ranges, FileChange, TraceEntry};
use crate::redact::Redactor;
use crate::sandbox::GovernedRun;

/// Files above this are recorded without their after-image.
const MAX_IMAGE: u64 = 32 * 1024 * 1024;

/// One changed file as the record keeps it.
struct Recorded {
    file: FileChange,
    image: Value,
    diff: Option<String>,
}

fn text(bytes: &Option<Vec<u8>>) -> Option<String> {
    bytes
        .as_deref()
        .and_then(|b| std::str::from_utf8(b).ok())
        .map(str::to_string)
}

/// Reads what the file holds now into the store and diffs it against what it held before.
fn record_file(
    root: &std::path::Path,
    store: &crate::checkpoint::CheckpointStore,
    change: &Change,
    before: &ScopeImages,
) -> Recorded {
    let path = &change.path;
    let kept = before.files.get(path);
    let before_bytes = match change.kind {
        ChangeKind::Created => None,
        _ => kept.and_then(|k| store.get(&k.hash).ok()),
    };
    let abs = root.join(crate::changes::real_path(path));
    let after_bytes = match std::fs::symlink_metadata(&abs) {
        Ok(m) if m.is_file() && m.len() <= MAX_IMAGE => std::fs::read(&abs).ok(),
        _ => None,
    };
    let after_hash = after_bytes.as_deref().and_then(|b| store.put(b).ok());
    let after_mode = std::fs::metadata(&abs)
        .ok()
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777);
    let known_before = change.kind == ChangeKind::Created || kept.is_some();
    let mut image = json!({
        "before": if known_before { json!(kept.map(|k| format!("sha256:{}", k.hash))) } else { Value::Null },
        "after": after_hash.as_ref().map(|h| format!("sha256:{h}")),
    });
    if let Some(k) = kept {
        image["before_mode"] = json!(k.mode);
    }
    if let Some(mode) = after_mode {
        image["after_mode"] = json!(mode);
    }
    // Without the earlier version the change cannot be taken back: say so in the record.
    if !known_before {
        image["before_unknown"] = json!(true);
    }
    let (ranges, diff) = match (text(&before_bytes), text(&after_bytes)) {
        (old, Some(new)) if known_before => {
            let changes = crate::diff::analyze(old.as_deref().unwrap_or(""), &new, path);
            let ranges = hashed_ranges(&changes.ranges, &new);
            (ranges, Some(changes.unified))
        }
        _ => (Vec::new(), None),
    };
    Recorded {
        file: FileChange {
            path: path.clone(),
            ranges,
        },
        image,
        diff,
    }
}

/// Records the command's changes; nothing is appended when it changed nothing anyone should see.
pub(super) async fn record(
    cx: &RunCx<'_>,
    cmd: &CommandAction,
    governed: &GovernedRun,
    before: &ScopeImages,
) -> Result<Vec<String>, ToolError> {
    let in_scope = governed.changes.to_record();
    let unrestored = crate::changes::not_undone(&governed.restored);
    if in_scope.is_empty() && governed.changes.out_of_scope.is_empty() {
        return Ok(Vec::new());
    }
    let (files, images, diffs) = recorded_changes(cx.gov, &in_scope, &unrestored, before).await?;
    let mut extra = cx.trace_extra();
    extra.insert(
        "command".into(),
        command_detail(cx, cmd, governed, &in_scope, &unrestored),
    );
    extra.insert("images".into(), Value::Object(images));
    extra.insert("diffs".into(), Value::Object(diffs));
    let governance = cx.task.governance();
    let entry = TraceEntry {
        task_id: cx.task.id.clone(),
        intent_id: governance.selected_intent.unwrap_or_default(),
        model_id: cx.model_id.to_string(),
        tool: cx.tool.to_string(),
        tool_call_id: cx.call_id.to_string(),
        contributor: crate::protocol::Contributor::Ai,
        mutation_declared: None,
        mutation_computed: Some(crate::protocol::MutationClass::IntentEvolution),
        approval: cx.approval.clone(),
        files,
        extra,
    };
    let ledger = cx.gov.ledger.clone();
    let paths = in_scope.iter().map(|c| c.path.clone()).collect();
    super::blocking("recording the command's changes", move || {
        ledger.append(&entry).map(|_| ()).map_err(|e| {
            ToolError::Failed(format!(
                "the trace ledger could not record the files the command changed: {e}"
            ))
        })
    })
    .await?;
    Ok(paths)
}

/// The files a process changed, for a ledger record: each in-scope change with its line ranges
/// and content hashes, its before- and after-images kept in the checkpoint store (under the
/// record's `images`, so it can be undone) and its diff (`diffs`); the out-of-scope changes
/// that could not be undone without lines.
pub(crate) async fn recorded_changes(
    gov: &crate::agent::Governance,
    in_scope: &[Change],
    unrestored: &[String],
    before: &ScopeImages,
) -> Result<(Vec<FileChange>, Map<String, Value>, Map<String, Value>), ToolError> {
    let (root, store) = (gov.root().to_path_buf(), gov.journal.checkpoints.clone());
    let (changes, kept) = (in_scope.to_vec(), before.clone());
    let recorded: Vec<Recorded> = super::blocking("keeping the changed files", move || {
        Ok(changes
            .iter()
            .map(|c| record_file(&root, &store, c, &kept))
            .collect())
    })
    .await?;
    Ok(files_images_and_diffs(recorded, unrestored))
}

/// The files for the record, with the image each was kept as and its diff (redacted, bounded).
fn files_images_and_diffs(
    recorded: Vec<Recorded>,
    unrestored: &[String],
) -> (Vec<FileChange>, Map<String, Value>, Map<String, Value>) {
    let redactor = Redactor::global();
    let (mut images, mut diffs) = (Map::new(), Map::new());
    let mut files = Vec::new();
    for r in recorded {
        images.insert(r.file.path.clone(), r.image);
        if let Some(d) = r.diff {
            diffs.insert(
                r.file.path.clone(),
                json!(crate::text::truncate_bytes(
                    &redactor.redact(&d),
                    256 * 1024
                )),
            );
        }
        files.push(r.file);
    }
    // Out-of-scope changes that could not be undone are there now: recorded without lines.
    for path in unrestored {
        files.push(FileChange {
            path: path.to_string(),
            ranges: Vec::new(),
        });
    }
    (files, images, diffs)
}

/// What ran, where, how it ended, and what it changed, for the record's `command` field.
fn command_detail(
    cx: &RunCx<'_>,
    cmd: &CommandAction,
    governed: &GovernedRun,
    in_scope: &[Change],
    unrestored: &[String],
) -> Value {
    let run = &governed.run;
    json!({
        "command": Redactor::global().redact(&cmd.command),
        "cwd": cmd.cwd.rel,
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "granted": {"network": cmd.granted.network, "write_git": cmd.granted.write_git},
        "confinement": cx.gov.confinement.summary(),
        "changed_in_scope": in_scope.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(),
        "changed_out_of_scope": governed.changes.out_of_scope_paths(),
        "not_undone": unrestored,
    })
}
