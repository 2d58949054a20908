//! `mandate undo`: take back a tool call, a turn, a task or an intent's changes from the command
//! line. Running the command is the person's decision; `--dry-run` shows what it would do.
//! Exit codes as elsewhere: 0 everything planned was undone (or, with --dry-run, can be),
//! 1 something was refused or failed (or there was nothing to undo), 2 bad usage.

use std::path::Path;

use serde_json::json;

use super::{UndoArgs, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::agent::{Governance, TaskStore};
use crate::settings::AppDirs;
use crate::undo::{self, FileAction, FileResult, Grain, PlanError, Undoer};
use crate::workspace::Workspace;

fn grain(args: &UndoArgs) -> Result<Grain, String> {
    match (&args.call, &args.task, &args.intent) {
        (Some(call_id), task, None) if args.turn.is_none() && args.since.is_none() => {
            Ok(Grain::Call {
                task_id: task.clone(),
                call_id: call_id.clone(),
            })
        }
        (None, Some(task_id), None) if args.since.is_none() => Ok(match args.turn {
            Some(number) => Grain::TurnNumber {
                task_id: task_id.clone(),
                number,
            },
            None => Grain::Task {
                task_id: task_id.clone(),
            },
        }),
        (None, None, Some(intent_id)) if args.turn.is_none() => Ok(Grain::Intent {
            intent_id: intent_id.clone(),
            since: args.since.clone(),
        }),
        _ => {
            Err("give one of --call ID, --task ID [--turn N] or --intent ID [--since TIME]".into())
        }
    }
}

fn action_word(action: &FileAction) -> (&'static str, Option<&str>) {
    match action {
        FileAction::Restore => ("restore", None),
        FileAction::Merge => ("merge", None),
        FileAction::Remove => ("remove", None),
        FileAction::Recreate => ("recreate", None),
        FileAction::Nothing => ("nothing", None),
        FileAction::Conflict(r) => ("conflict", Some(r)),
        FileAction::Unavailable(r) => ("unavailable", Some(r)),
    }
}

pub async fn undo(root: &Path, args: UndoArgs) -> i32 {
    let grain = match grain(&args) {
        Ok(g) => g,
        Err(m) => {
            eprintln!("mandate undo: {m}");
            return EXIT_USAGE;
        }
    };
    let workspace = match Workspace::new(root) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("mandate undo: cannot open {}: {e}", root.display());
            return EXIT_USAGE;
        }
    };
    let dirs = AppDirs::from_env();
    let gov = Governance::new(workspace, &dirs);
    let store = TaskStore::new(&dirs.data, gov.root());
    let resolved = match grain.resolve(&store) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mandate undo: {e}");
            return EXIT_USAGE;
        }
    };
    let plan = match undo::plan(gov.root(), &gov.journal.checkpoints, &resolved.selection) {
        Ok(p) => Some(p),
        Err(PlanError::Nothing(_)) if resolved.rewind.is_some() => None,
        Err(e) => {
            eprintln!("mandate undo: {e}");
            return EXIT_FAILED;
        }
    };
    let files = plan
        .as_ref()
        .map(|p| p.files.as_slice())
        .unwrap_or_default();
    let mut refused = files
        .iter()
        .filter(|f| !f.action.applies() && f.action != FileAction::Nothing)
        .count();
    let mut results = Vec::new();
    if !args.dry_run {
        if let Some(plan) = &plan {
            let undo_id = uuid::Uuid::new_v4().to_string();
            let who = Undoer {
                by: crate::protocol::Approver::Headless,
                scope: &resolved.label,
                undo_id: &undo_id,
            };
            results = undo::apply(
                &gov.workspace,
                &gov.journal,
                gov.ledger.clone(),
                plan,
                None,
                &who,
            )
            .await;
            refused = results
                .iter()
                .filter(|a| matches!(a.result, FileResult::Failed { .. }) || matches!(&a.result, FileResult::Skipped { reason } if !reason.contains("already holds")))
                .count();
            let touched: Vec<String> = plan.files.iter().flat_map(|f| f.intents.clone()).collect();
            if let Err(e) = undo::follow_intent_status(gov.root(), &gov.intents, &touched) {
                eprintln!("mandate undo: the intents' status could not follow: {e}");
            }
        }
        if let Some((task_id, message_id)) = &resolved.rewind {
            match store.load(task_id) {
                Ok(mut record) => {
                    record.rewind_to(message_id);
                    if let Err(e) = store.save(&record) {
                        eprintln!(
                            "mandate undo: the task's conversation could not be rewound: {e}"
                        );
                        refused += 1;
                    }
                }
                Err(e) => {
                    eprintln!("mandate undo: {e}");
                    refused += 1;
                }
            }
        }
    }
    report(&args, &resolved.label, plan.as_ref(), &results);
    if refused > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

fn report(args: &UndoArgs, label: &str, plan: Option<&undo::UndoPlan>, results: &[undo::Applied]) {
    let files = plan.map(|p| p.files.as_slice()).unwrap_or_default();
    let result_of = |path: &str| results.iter().find(|a| a.path == path).map(|a| &a.result);
    if args.json {
        let files: Vec<_> = files
            .iter()
            .map(|f| {
                let (action, reason) = action_word(&f.action);
                let (outcome, record, why) = match result_of(&f.path) {
                    Some(FileResult::Undone { record_id }) => ("undone", Some(record_id.as_str()), None),
                    Some(FileResult::Skipped { reason }) => ("skipped", None, Some(reason.as_str())),
                    Some(FileResult::Failed { reason }) => ("failed", None, Some(reason.as_str())),
                    None => ("planned", None, None),
                };
                json!({"path": f.path, "action": action, "reason": reason.or(why), "outcome": outcome, "record_id": record, "reverts": f.records})
            })
            .collect();
        let out = json!({
            "scope": label,
            "dry_run": args.dry_run,
            "records": plan.map(|p| p.records.clone()).unwrap_or_default(),
            "files": files,
        });
        println!("{out}");
        return;
    }
    let verb = if args.dry_run {
        "Would undo"
    } else {
        "Undo of"
    };
    println!("{verb} {label}: {} file(s)", files.len());
    for f in files {
        let (action, reason) = action_word(&f.action);
        let outcome = match result_of(&f.path) {
            Some(FileResult::Undone { .. }) => "done".to_string(),
            Some(FileResult::Skipped { reason }) | Some(FileResult::Failed { reason }) => {
                format!("not done: {reason}")
            }
            None => reason.map(str::to_string).unwrap_or_default(),
        };
        println!("  {action:<11} {}  {outcome}", f.path);
    }
}
