//! `mandate undo`: take back a tool call, a turn, a task or an intent's changes from the command
//! line. Running the command is the person's decision; `--dry-run` shows what it would do.
//! Exit codes as elsewhere: 0 everything planned was undone (or, with --dry-run, can be),
//! 1 something was refused or failed (or there was nothing to undo), 2 bad usage.

use std::path::Path;

use serde_json::json;

use super::{UndoArgs, EXIT_ERROR, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::agent::{Governance, TaskStore};
use crate::settings::AppDirs;
use crate::undo::{self, FileAction, FileResult, Grain, PlanError, Undoer};
use crate::workspace::Workspace;

/// The one selector given, or a sentence naming what is wrong with the combination.
/// Why an undo cannot start: bad usage (exit 2), or a ledger that could not be read to check
/// the selectors against (exit 3).
#[derive(Debug, thiserror::Error)]
enum SelectError {
    #[error("{0}")]
    Usage(String),
    #[error("cannot read the ledger: {0}")]
    Ledger(String),
}

impl SelectError {
    fn usage(message: impl Into<String>) -> Self {
        Self::Usage(message.into())
    }

    fn exit_code(&self) -> i32 {
        match self {
            Self::Usage(_) => EXIT_USAGE,
            Self::Ledger(_) => EXIT_ERROR,
        }
    }
}

fn grain(args: &UndoArgs) -> Result<Grain, SelectError> {
    let selectors = [
        ("--call", args.call.is_some()),
        ("--task", args.task.is_some()),
        ("--intent", args.intent.is_some()),
    ];
    let given: Vec<&str> = selectors.iter().filter(|s| s.1).map(|s| s.0).collect();
    if args.turn.is_some() && args.task.is_none() {
        return Err(SelectError::usage(
            "--turn needs --task: it counts the turns of that task",
        ));
    }
    if args.since.is_some() && args.intent.is_none() {
        return Err(SelectError::usage(
            "--since needs --intent: it narrows that intent's changes",
        ));
    }
    match (&args.call, &args.task, &args.intent) {
        (Some(_), _, Some(_)) => Err(SelectError::usage("--call names one tool call; --intent cannot narrow or widen it (give one of them)")),
        (Some(_), _, None) if args.turn.is_some() => Err(SelectError::usage("--call names one tool call; --turn cannot be given with it (give --task ID --turn N for a turn)")),
        (Some(call_id), task, None) => Ok(Grain::Call {
            task_id: task.clone(),
            call_id: call_id.clone(),
        }),
        (None, Some(_), Some(_)) => Err(SelectError::usage(format!(
            "give one of {}: a task and an intent are two different sets of changes",
            given.join(" or ")
        ))),
        (None, Some(task_id), None) => Ok(match args.turn {
            Some(number) => Grain::TurnNumber {
                task_id: task_id.clone(),
                number,
            },
            None => Grain::Task {
                task_id: task_id.clone(),
            },
        }),
        (None, None, Some(intent_id)) => Ok(Grain::Intent {
            intent_id: intent_id.clone(),
            since: args.since.clone(),
        }),
        (None, None, None) => {
            Err(SelectError::usage("give one of --call ID, --task ID [--turn N] or --intent ID [--since TIME]"))
        }
    }
}

/// `--call ID --task ID`: a call id names one call, so the task may only say which task it was
/// made in; a task that disagrees with the ledger is a usage error, not "nothing to undo".
fn call_in_task(root: &Path, grain: &Grain) -> Result<(), SelectError> {
    let Grain::Call {
        task_id: Some(task_id),
        call_id,
    } = grain
    else {
        return Ok(());
    };
    let changes = undo::read_changes(root).map_err(|e| SelectError::Ledger(e.to_string()))?;
    let mut tasks: Vec<&str> = changes
        .iter()
        .filter(|c| &c.call_id == call_id)
        .map(|c| c.task_id.as_str())
        .collect();
    tasks.dedup();
    if tasks.is_empty() || tasks.contains(&task_id.as_str()) {
        return Ok(());
    }
    Err(SelectError::usage(format!(
        "tool call {call_id} was made in task {}, not in task {task_id}; a call id names one call, so give --call {call_id} alone",
        tasks.join(", ")
    )))
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
        Err(e) => {
            eprintln!("mandate undo: {e}");
            return e.exit_code();
        }
    };
    let workspace = match Workspace::new(root) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("mandate undo: cannot open {}: {e}", root.display());
            return EXIT_USAGE;
        }
    };
    if let Err(e) = call_in_task(workspace.root(), &grain) {
        eprintln!("mandate undo: {e}");
        return e.exit_code();
    }
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
