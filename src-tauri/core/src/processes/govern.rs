//! What a background process changed in the workspace, found the way a command's changes are
//! (`sandbox::Watch`): the process is held still (SIGSTOP to its whole group, confirmed), what
//! changed since the last look is sorted by the intent it was started under — in scope:
//! recorded in the ledger under the call that started it, with diffs and images, so blame and
//! undo see it; out of scope: put back and reported — and the state now is kept for the next
//! look, before it runs again. Nothing it writes between two looks escapes the second.
//!
//! A process that cannot be held still is killed rather than left unwatched.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::agent::Governance;
use crate::changes::{described, not_undone, shown};
use crate::checkpoint::ScopeImages;
use crate::hooks::ignore_list::IntentIgnore;
use crate::hooks::Consequence;
use crate::orchestration::intents::Intent;
use crate::orchestration::ledger::{ApprovalRecord, TraceEntry};
use crate::protocol::{Contributor, MutationClass};
use crate::sandbox::{ChangeRules, CommandSandbox, FoundChanges, Watch};

/// Everything needed to look at a process's changes again, until its last look.
pub(crate) struct Governed {
    /// The workspace at the last look (None: it could not be kept; the process was killed).
    pub watch: Option<Watch>,
    /// The intent's files at the last look, for the diffs the ledger keeps.
    pub kept: ScopeImages,
    pub sandbox: CommandSandbox,
    pub rules: Rules,
    pub record: Record,
}

/// How its changes are sorted: fixed when it starts, as the kernel's grants are.
pub(crate) struct Rules {
    pub owns: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    pub ignore: Arc<IntentIgnore>,
    pub build_outputs: Vec<String>,
    pub write_git: bool,
    /// What the repository's configuration names, kept to be undone.
    pub named: Vec<String>,
    pub intent: Option<Intent>,
    pub owned_scope: Vec<String>,
}

/// What its ledger records say of it: the call that started it.
pub(crate) struct Record {
    pub task_id: String,
    pub intent_id: String,
    pub model_id: String,
    pub call_id: String,
    pub approval: ApprovalRecord,
    pub extra: Map<String, Value>,
    pub process_id: String,
    /// Redacted.
    pub command: String,
    pub cwd: String,
    pub network: bool,
}

/// What one look found, in words for the model and the person.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Looked {
    /// Files recorded in the ledger under the intent.
    pub recorded: Vec<String>,
    /// A scope violation or changes that could not be seen: said to the person too.
    pub warning: Option<String>,
    /// What went wrong looking (the ledger refused, the walk failed).
    pub problem: Option<String>,
}

impl Looked {
    pub fn notes(&self, intent_id: &str) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.recorded.is_empty() {
            notes.push(format!(
                "Files it changed (recorded in the trace ledger under {intent_id}): {}.",
                self.recorded.join(", ")
            ));
        }
        notes.extend(self.warning.clone());
        notes.extend(self.problem.clone());
        notes
    }
}

/// Looks at what the process changed since the last look. `exclude`: paths another governed
/// call changed and recorded meanwhile (not the process's doing). `last`: it has ended; nothing
/// is kept for a next look. Call with the process held still (or gone).
pub(crate) async fn look(
    governed: &mut Governed,
    gov: &Arc<Governance>,
    exclude: &HashSet<String>,
    last: bool,
) -> Looked {
    let Some(watch) = governed.watch.take() else {
        if last {
            governed.sandbox.remove_made_dirs();
        }
        return Looked::default();
    };
    let build_outputs: Vec<&str> = governed
        .rules
        .build_outputs
        .iter()
        .map(String::as_str)
        .collect();
    let owns = governed.rules.owns.clone();
    let owns = move |p: &str| exclude.contains(p) || owns(p);
    let rules = ChangeRules {
        owns: &owns,
        ignore: &governed.rules.ignore,
        build_outputs,
        write_git: governed.rules.write_git,
        confinement: &gov.confinement,
    };
    let mut looked = match watch.settle(&governed.sandbox, &rules).await {
        Ok(found) => record(governed, gov, &found, exclude).await,
        Err(e) => Looked {
            problem: Some(format!("Mandate could not look at what it changed: {e}.")),
            ..Looked::default()
        },
    };
    if last {
        governed.sandbox.remove_made_dirs();
        return looked;
    }
    if let Err(why) = again(governed, gov).await {
        looked.problem = Some(why.to_string());
    }
    looked
}

/// Why the state for the next look could not be kept.
#[derive(Debug, thiserror::Error)]
enum NotKept {
    #[error("Mandate could not keep the state of the workspace: {0}.")]
    Workspace(crate::sandbox::SandboxError),
    #[error("Mandate could not keep the intent's files: {0}.")]
    Files(crate::tools::ToolError),
}

/// The state to compare with at the next look.
async fn again(governed: &mut Governed, gov: &Arc<Governance>) -> Result<(), NotKept> {
    let rules = &governed.rules;
    let watch = Watch::start(gov.root(), &gov.confinement, rules.named.clone())
        .await
        .map_err(NotKept::Workspace)?;
    let kept = crate::tools::keep_owned_files(gov, rules.intent.clone(), &rules.owned_scope)
        .await
        .map_err(NotKept::Files)?;
    governed.watch = Some(watch);
    governed.kept = kept;
    Ok(())
}

/// Records the in-scope changes (those of `exclude` left out) and says what was out of scope.
async fn record(
    governed: &Governed,
    gov: &Arc<Governance>,
    found: &FoundChanges,
    exclude: &HashSet<String>,
) -> Looked {
    let r = &governed.record;
    let mut looked = Looked::default();
    let out_of_scope = found.changes.out_of_scope_paths();
    let head = format!("the background process {} (`{}`)", r.process_id, r.command);
    if !found.unseen.is_empty() {
        let unseen: Vec<_> = found.unseen.iter().map(|p| shown(p)).collect();
        looked.warning = Some(format!(
            "Changes unseen: Mandate cannot read {} (another user's), where {head} could have changed files; nothing it changed was recorded. Make them readable to Mandate's user, or move them out of the workspace.",
            unseen.join(", ")
        ));
        return looked;
    }
    if !out_of_scope.is_empty() {
        let d = described(&found.changes.out_of_scope, &found.restored);
        let scope = match governed.rules.owned_scope.is_empty() {
            true => "nothing".to_string(),
            false => governed.rules.owned_scope.join(", "),
        };
        looked.warning = Some(format!(
            "Scope Violation: {head} changed files outside the owned scope of {} ({scope}): {}.{}{} To change them, request scope expansion with request_scope_expansion.",
            r.intent_id,
            d.list,
            if d.reasons.is_empty() { "" } else { " " },
            d.reasons
        ));
    }
    let in_scope: Vec<_> = found
        .changes
        .to_record()
        .into_iter()
        .filter(|c| !exclude.contains(&c.path))
        .collect();
    let unrestored = not_undone(&found.restored);
    if in_scope.is_empty() && unrestored.is_empty() {
        return looked;
    }
    let recorded =
        crate::tools::command_record::recorded_changes(gov, &in_scope, &unrestored, &governed.kept)
            .await;
    let (files, images, diffs) = match recorded {
        Ok(r) => r,
        Err(e) => {
            looked.problem = Some(format!("The files it changed could not be kept: {e}."));
            return looked;
        }
    };
    let mut extra = r.extra.clone();
    extra.insert(
        "command".into(),
        json!({
            "command": r.command,
            "cwd": r.cwd,
            "background": true,
            "process_id": r.process_id,
            "granted": {"network": r.network, "write_git": governed.rules.write_git},
            "confinement": gov.confinement.summary(),
            "changed_in_scope": in_scope.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(),
            "changed_out_of_scope": out_of_scope,
            "not_undone": unrestored,
        }),
    );
    extra.insert("images".into(), Value::Object(images));
    extra.insert("diffs".into(), Value::Object(diffs));
    let entry = TraceEntry {
        task_id: r.task_id.clone(),
        intent_id: r.intent_id.clone(),
        model_id: r.model_id.clone(),
        tool: "execute_command".into(),
        tool_call_id: r.call_id.clone(),
        contributor: Contributor::Ai,
        mutation_declared: None,
        mutation_computed: Some(MutationClass::IntentEvolution),
        approval: r.approval.clone(),
        files,
        extra,
    };
    let (ledger, gov2) = (gov.ledger.clone(), gov.clone());
    let intent_id = r.intent_id.clone();
    let appended = tokio::task::spawn_blocking(move || {
        ledger.append(&entry).map(|_| ())?;
        let changed = [Consequence::Changed { intent_id }];
        Ok::<_, crate::orchestration::ledger::LedgerError>(
            gov2.hooks.post(&gov2.post_context(), &changed),
        )
    })
    .await;
    match appended {
        Ok(Ok(_)) => {
            looked.recorded = in_scope
                .iter()
                .map(|c| shown(&c.path).into_owned())
                .collect()
        }
        Ok(Err(e)) => {
            looked.problem = Some(format!(
                "The trace ledger could not record the files it changed: {e}."
            ))
        }
        Err(e) => looked.problem = Some(format!("Recording its changes failed: {e}.")),
    }
    looked
}
