//! A call to a server the person allowed to write in the workspace, or let run unconfined,
//! governed as a command is: the server runs only for the duration of the call (it is stopped
//! otherwise, and refused if it ran meanwhile), the workspace is snapshotted before and after,
//! and what changed is sorted by the selected intent's scope — in scope: recorded in the call's
//! ledger record with line ranges, content hashes and images (so blame and undo see it); out of
//! scope: undone and reported to the model as `SCOPE_VIOLATION`. A read-only call (the
//! server's hint) or one without a selected intent owns nothing: any change it makes is out of
//! scope. Unconfined, it may have written anywhere: every file of the workspace is kept before
//! the call (the protected ones copied, as before an unconfined command) and all of it is read
//! after. Calls of one such server never overlap.

use serde_json::{json, Map, Value};

use super::server::CallError;
use super::tool::{shown, with_note, Changed, McpTool, Shown};
use crate::changes::ChangeKind;
use crate::checkpoint::ScopeImages;
use crate::hooks::{Consequence, ExternalAction};
use crate::protocol::{Event, NoticeLevel};
use crate::sandbox::{scope_grants, FoundChanges, GrantKind, Watch};
use crate::tools::{RunCx, ToolError, ToolOutput};

fn failed(what: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError::Failed(format!("the MCP call was not sent: {what}: {e}"))
}

pub(super) async fn run(
    tool: &McpTool,
    action: &ExternalAction,
    arguments: Map<String, Value>,
    cx: &RunCx<'_>,
) -> Result<ToolOutput, ToolError> {
    let server = tool.server();
    let _one_call_at_a_time = server.exclusive().await;
    let root = cx.gov.root().to_path_buf();
    let intent_id = cx.task.governance().selected_intent.unwrap_or_default();
    // A read-only call owns nothing, whatever intent is selected.
    let intent = if tool.is_read_only() {
        None
    } else {
        cx.gov.intents.snapshot().doc.get(&intent_id).cloned()
    };
    let owned_scope = intent
        .as_ref()
        .map(|i| i.owned_scope.clone())
        .unwrap_or_default();
    let ignore = cx.gov.ignore().map_err(|e| failed("`.intentignore`", e))?;
    let running = server.jail();
    if let Some(jail) = &running {
        if let Some(why) = jail.woken().await {
            return Err(refuse_woken(tool, action, &why, cx));
        }
    }
    // What it may write: what a confined server's sandbox grants; running (or about to
    // start) unconfined, anything.
    let grants = match &running {
        Some(jail) if jail.confinement.is_confined() => jail.sandbox.writable.clone(),
        _ => scope_grants(&root, &["**".to_string()]),
    };
    let before = keep_writable(cx, &grants).await?;
    let kept: Vec<(String, String)> = before
        .files
        .iter()
        .map(|(path, k)| (path.clone(), k.hash.clone()))
        .collect();
    let named: Vec<String> = ignore.git_named().map(str::to_string).collect();
    let watch = Watch::start(&root, &server.runs_under(), named)
        .await
        .map_err(|e| failed("change detection", e))?
        .with_stored(kept, cx.gov.journal.checkpoints.clone());
    if running.is_none() {
        // Stopped since it last ran: started inside this call's watch.
        server.start();
    }
    let (outcome, jail) = match (server.ready(cx.cancel).await, server.jail()) {
        (Ok(()), Some(jail)) => (server.call(&action.tool, arguments, cx.cancel).await, jail),
        (ready, _) => {
            let why = ready.err().unwrap_or(CallError::NotRunning {
                server: action.server.clone(),
                why: "it is not running".into(),
            });
            let jail = super::jail::unstarted(&root).map_err(|e| failed("change detection", e))?;
            (Err(why), std::sync::Arc::new(jail))
        }
    };
    if let Some(why) = server.grant_dropped_news() {
        notice(cx, format!(
            "MCP server `{}` ran without its grant to write in the workspace: {why}. Its writes there are refused. If you trust the code it runs now, allow it again in Settings → MCP servers (or `mandate mcp allow-write {}`).",
            action.server, action.server
        ));
    }
    // A subtask's changes must lie in the intents above it too.
    let (bounds, snapshot) = (cx.task.governance(), cx.gov.intents.snapshot());
    let owns = move |p: &str| {
        intent.as_ref().is_some_and(|i| i.owns(p)) && bounds.outside_bounds(&snapshot, p).is_none()
    };
    // No build output for a server: a `__pycache__/` or `node_modules/` it fills would be run
    // later, unconfined, by Python or Node, so everything it changes is in scope or undone.
    let rules = jail.rules(&owns, &ignore, Vec::new());
    // The call ran (or may have): what changed is found even when it failed.
    let found = watch
        .settle(&jail.sandbox, &rules)
        .await
        .map_err(|e| e.to_string())
        .and_then(all_seen);
    let Shown { output, record } = shown(outcome);
    let found = match found {
        Ok(found) => found,
        Err(e) => {
            // Fail closed: what it changed is unknown, so it runs no more and the call failed.
            let message = format!("MCP server `{}`: the changes of this call could not be found ({e}); the server was stopped and the call failed; look at the workspace before going on", action.server);
            server.fail(format!("the changes of a call could not be found ({e})"));
            notice(cx, message.clone());
            let note = match record {
                Some(record) => tool.record(action, record, Changed::default(), cx).await,
                None => Ok(()),
            };
            drop(output);
            return with_note(Err(ToolError::Failed(message)), note);
        }
    };
    let in_scope = found.changes.to_record();
    let unrestored = crate::changes::not_undone(&found.restored);
    let out_of_scope = found.changes.out_of_scope_paths();
    let changed_anything = !in_scope.is_empty() || !out_of_scope.is_empty();
    // A read-only call is recorded only when it changed something; a mutating one always
    // when it was sent.
    let record = match record {
        Some(r) if !tool.is_read_only() || changed_anything => Some(r),
        None if changed_anything => Some(json!({"outcome": "not_run"})),
        _ => None,
    };
    let mut note = Ok(());
    if let Some(record) = record {
        let recorded =
            crate::tools::command_record::recorded_changes(cx.gov, &in_scope, &unrestored, &before)
                .await;
        let (files, images, diffs) = match recorded {
            Ok(r) => r,
            Err(e) => {
                // Fail closed: changes that cannot be recorded are named, and the server
                // that made them runs no more.
                let paths: Vec<&str> = in_scope.iter().map(|c| c.path.as_str()).collect();
                let message = format!("MCP server `{}`: the changes of this call ({}) could not be recorded ({e}); the server was stopped and the call failed; look at them before going on", action.server, paths.join(", "));
                server.fail(format!("the changes of a call could not be recorded ({e})"));
                notice(cx, message.clone());
                return Err(ToolError::Failed(message));
            }
        };
        let mut detail = Map::new();
        detail.insert(
            "changed_in_scope".into(),
            json!(in_scope.iter().map(|c| c.path.as_str()).collect::<Vec<_>>()),
        );
        detail.insert("changed_out_of_scope".into(), json!(out_of_scope));
        detail.insert("not_undone".into(), json!(unrestored));
        // What the rules let it write without recording it (none for servers now: build
        // output is in or out of scope like any file), kept in the record's shape.
        let permitted: Vec<_> = found
            .changes
            .permitted
            .iter()
            .filter(|(c, _)| c.kind != ChangeKind::Touched)
            .map(|(c, _)| crate::changes::shown(&c.path))
            .take(100)
            .collect();
        detail.insert("changed_build_output".into(), json!(permitted));
        detail.insert("confinement".into(), json!(jail.confinement.summary()));
        let changed = Changed {
            files,
            images,
            diffs,
            detail,
        };
        note = tool.record(action, record, changed, cx).await;
    }
    let target = format!("{} › {}", action.server, action.tool);
    let scope = Scope {
        intent_id: &intent_id,
        owned_scope: &owned_scope,
        read_only: tool.is_read_only(),
    };
    let output = answer(output, &target, &found, &in_scope, &scope, cx);
    with_note(output, note)
}

/// A server found to have run while it was left stopped between calls: it ran unwatched, so
/// it is killed (its next call starts it afresh) and this call is not sent. What it changed
/// meanwhile is not undone: it cannot be told apart from what the person or the agent changed.
fn refuse_woken(tool: &McpTool, action: &ExternalAction, why: &str, cx: &RunCx<'_>) -> ToolError {
    tool.server().fail(format!(
        "it ran between its calls although it was stopped ({why})"
    ));
    let message = format!(
        "MCP server `{}` ran between its calls although it was stopped ({why}): something continued it, which any process of the user's can do where no PID namespace hides it. What it changed meanwhile cannot be told apart from the user's or the agent's changes, so nothing was undone; the server was killed and this call was not sent. Look at the workspace before going on.",
        action.server
    );
    notice(cx, message.clone());
    ToolError::Failed(message)
}

/// The changes, unless some lie where Mandate cannot read and the server could write: what it
/// changed there is unknown, so the call fails closed as when nothing could be found.
fn all_seen(found: FoundChanges) -> Result<FoundChanges, String> {
    if found.unseen.is_empty() {
        return Ok(found);
    }
    let unseen: Vec<_> = found
        .unseen
        .iter()
        .map(|p| crate::changes::shown(p))
        .collect();
    Err(format!(
        "Mandate cannot read {}, where the server could write (another user's, so it cannot open them)",
        unseen.join(", ")
    ))
}

/// Every file the server may write, kept in the checkpoint store before the call (a stat
/// cache means only files that moved since the last call are read again): in-scope changes
/// are diffed against it for the record, out-of-scope ones restored from it.
async fn keep_writable(
    cx: &RunCx<'_>,
    grants: &[crate::sandbox::Grant],
) -> Result<ScopeImages, ToolError> {
    let root = cx.gov.root().to_path_buf();
    let (mut dirs, mut root_files) = (Vec::new(), Vec::new());
    for grant in grants {
        let Some(rel) = grant
            .path
            .strip_prefix(&root)
            .ok()
            .and_then(|r| r.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        match grant.kind {
            GrantKind::Directory => dirs.push(rel),
            GrantKind::File => root_files.push(rel),
        }
    }
    // Build output is kept too: a server's change there is undone like any other.
    let skip = [".git"];
    let gov = cx.gov.clone();
    tokio::task::spawn_blocking(move || {
        let store = &gov.journal.checkpoints;
        let writable = |p: &str| crate::workspace::protected_reason(p).is_none();
        let mut images = gov
            .scope_cache
            .capture(gov.root(), &dirs, &writable, &skip, store);
        if !root_files.is_empty() {
            // The root's own files: every top-level directory was walked above or is not
            // writable.
            let top: Vec<String> = std::fs::read_dir(gov.root())
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            let top: Vec<&str> = top.iter().map(String::as_str).collect();
            let granted = |p: &str| root_files.iter().any(|f| f == p);
            let more = gov
                .scope_cache
                .capture(gov.root(), &[String::new()], &granted, &top, store);
            images.files.extend(more.files);
            images.not_kept.extend(more.not_kept);
        }
        images
    })
    .await
    .map_err(|e| failed("keeping the files it may write", e))
}

/// The intent a call's changes were sorted by.
struct Scope<'a> {
    intent_id: &'a str,
    owned_scope: &'a [String],
    read_only: bool,
}

/// The model's answer with what the call changed: in-scope files named, out-of-scope ones
/// turned into a `SCOPE_VIOLATION` error around the server's own answer.
fn answer(
    output: Result<ToolOutput, ToolError>,
    target: &str,
    found: &FoundChanges,
    in_scope: &[crate::changes::Change],
    scope: &Scope<'_>,
    cx: &RunCx<'_>,
) -> Result<ToolOutput, ToolError> {
    let out_of_scope = found.changes.out_of_scope_paths();
    if in_scope.is_empty() && out_of_scope.is_empty() {
        return output;
    }
    let mut out = match output {
        Ok(o) => o,
        Err(e) => ToolOutput {
            content: e.to_string(),
            summary: "the call failed".into(),
            failed: true,
            ..ToolOutput::default()
        },
    };
    if !in_scope.is_empty() {
        let paths: Vec<&str> = in_scope.iter().map(|c| c.path.as_str()).collect();
        out.content.push_str(&format!(
            "\n\nFiles it changed (recorded in the trace ledger under {}): {}.",
            scope.intent_id,
            paths.join(", ")
        ));
        out.consequences.push(Consequence::Changed {
            intent_id: scope.intent_id.to_string(),
        });
    }
    if out_of_scope.is_empty() {
        return Ok(out);
    }
    let described = crate::changes::described(&found.changes.out_of_scope, &found.restored);
    let why = if scope.read_only {
        "a tool the server declares read-only changed files, so every change it made is out of scope".to_string()
    } else {
        format!(
            "it changed files outside the owned scope of {} ({})",
            if scope.intent_id.is_empty() {
                "no intent"
            } else {
                scope.intent_id
            },
            if scope.owned_scope.is_empty() {
                "nothing".to_string()
            } else {
                scope.owned_scope.join(", ")
            }
        )
    };
    let message = format!(
        "Scope Violation: MCP tool `{target}`: {why}: {}.{}{} They were reported to the user. To change them, request scope expansion with request_scope_expansion (intent_id, globs, reason).",
        described.list,
        if described.reasons.is_empty() { "" } else { " " },
        described.reasons,
    );
    notice(cx, message.clone());
    out.content = json!({"error": {
        "code": "SCOPE_VIOLATION",
        "message": message,
        "intent_id": scope.intent_id,
        "paths": crate::changes::listed(out_of_scope),
        "owned_scope": scope.owned_scope,
    }, "result": out.content})
    .to_string();
    out.failed = true;
    Ok(out)
}

fn notice(cx: &RunCx<'_>, message: String) {
    cx.events.emit(Event::Notice {
        level: NoticeLevel::Warning,
        message,
    });
}
