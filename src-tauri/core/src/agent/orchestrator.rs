//! One tool call, start to end, in one place: look up → parse → plan → pre-hooks → the
//! person's PreToolUse hooks → approval → run → post-hooks → the person's PostToolUse hooks →
//! result. Tools plan and run; the hooks decide; this file owns the order.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{approval, hook_steps, AgentEnv, Governance, TaskHandle};
use crate::hooks::{Action, AskReason, Decision, Denial, DenialCode, HookContext};
use crate::llm::ToolCall;
use crate::orchestration::intents::IntentsSnapshot;
use crate::orchestration::ledger::ApprovalRecord;
use crate::protocol::{ApprovalPolicy, Event, ToolCallStatus, ToolCallView, ToolKind, UiMessage};
use crate::tools::{Planned, RunCx, ToolCx, ToolError, ToolOutput};

/// What goes back to the model, and whether the task is finished.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    pub content: String,
    pub is_error: bool,
    /// `attempt_completion`'s result.
    pub completed: Option<String>,
    /// `new_task`'s subtask, to start.
    pub subtask: Option<crate::tools::SubtaskSpec>,
}

impl CallResult {
    /// The result with what the person's hooks want the model to read.
    fn with_context(mut self, context: Option<String>) -> CallResult {
        self.content = hook_steps::with_context(&self.content, context);
        self
    }
}

/// Runs one tool call through governance, in its own log span.
pub async fn dispatch(
    env: &AgentEnv,
    task: &TaskHandle,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> CallResult {
    use tracing::Instrument;
    let intent = task.governance().selected_intent.unwrap_or_default();
    let span = tracing::info_span!("tool_call", tool = %call.name, call = %call.id, %intent);
    let started = std::time::Instant::now();
    let result = run_call(env, task, call, cancel)
        .instrument(span.clone())
        .await;
    span.in_scope(|| {
        tracing::info!(
            ok = !result.is_error,
            ms = started.elapsed().as_millis() as u64,
            "tool call finished"
        )
    });
    result
}

async fn run_call(
    env: &AgentEnv,
    task: &TaskHandle,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> CallResult {
    let position = env.tools.iter().position(|t| t.name() == call.name);
    let mut card = Card::new(env, task, call, position.map(|n| env.tools[n].kind()));
    let Some(position) = position else {
        let names: Vec<&str> = env.tools.iter().map(|t| t.name()).collect();
        return card.deny(Denial::new(
            DenialCode::InvalidArguments,
            format!(
                "There is no tool `{}`. Available tools: {}.",
                call.name,
                names.join(", ")
            ),
        ));
    };
    let args = match parse_arguments(call) {
        Ok(args) => args,
        Err(denial) => return card.deny(denial),
    };
    let governance = task.governance();
    let checked = plan_and_check(env, position, args.clone(), governance.clone()).await;
    let (mut planned, decision, intents) = match checked {
        Ok(checked) => checked,
        Err(e) => return card.fail(e),
    };
    let tool = &env.tools[position];
    card.started(&planned);
    match &decision {
        Decision::Allow => tracing::info!("hooks: allow"),
        Decision::Deny(d) => tracing::info!(code = %d.code_str(), "hooks: deny"),
        Decision::Ask(_) => tracing::info!("hooks: ask"),
    }
    let gate = Gate {
        call,
        kind: tool.kind(),
        args: &args,
        intents: &intents,
        governance: &governance,
    };
    let (approval, user) = match gate.decide(&mut card, decision, &mut planned, cancel).await {
        Ok(decided) => decided,
        Err((denial, context)) => return card.deny(denial).with_context(context),
    };
    let hooked = hook_steps::Hooked {
        call,
        args: &args,
        action: planned.action.clone(),
        pre: user,
    };
    let model_id = env.provider.model_id();
    // A tool's questions are waits for the person like the approvals above.
    let asking = super::attention::Asking { env, task };
    let run = RunCx {
        gov: &env.gov,
        task,
        events: env.sink.as_ref(),
        sink: &env.sink,
        interaction: &asking,
        model_id: &model_id,
        call_id: &call.id,
        tool: tool.name(),
        cancel,
        approval: &approval,
        policy: &env.approval,
    };
    if !super::check_steps::before_change(env, task, tool.kind(), cancel).await {
        return card.fail(ToolError::Failed("Not run: the task was stopped.".into()));
    }
    // What background processes change is theirs before the call and after it, not the call's.
    let written = match &planned.action {
        Action::Write(w) => Some(w.path.rel.clone()),
        _ => None,
    };
    let hold = match tool.kind() {
        ToolKind::Read => None,
        _ => Some(env.gov.processes.before_call(&env.gov).await),
    };
    let ran = tool.run(planned, &run).await;
    if let Some(hold) = hold {
        let consequences = ran.as_ref().map(|o| &o.consequences[..]).unwrap_or(&[]);
        let accounted = crate::processes::accounted_for(written.as_deref(), consequences);
        env.gov
            .processes
            .after_call(&env.gov, hold, &accounted)
            .await;
    }
    match ran {
        Ok(mut output) => {
            for note in env.gov.processes.unread_notes(&task.id) {
                output.content.push_str(&format!("\n[Mandate] {note}"));
            }
            super::check_steps::after_call(env, task, &output);
            post_hooks(env, &output).await;
            hooked.after(env, task, &mut output, cancel).await;
            card.succeed(output)
        }
        Err(e) => card.fail(e).with_context(hooked.pre.context),
    }
}

/// What the gate looks at for one planned call.
struct Gate<'a> {
    call: &'a ToolCall,
    kind: ToolKind,
    args: &'a Value,
    intents: &'a IntentsSnapshot,
    governance: &'a crate::hooks::TaskGovernance,
}

impl Gate<'_> {
    /// Mandate's decision, then the person's PreToolUse hooks (only when Mandate does not
    /// deny: they may add a deny or an ask, never lift one), then the person's approval where
    /// either asks. A refusal carries what the hooks want the model to read.
    async fn decide(
        &self,
        card: &mut Card<'_>,
        decision: Decision,
        planned: &mut Planned,
        cancel: &CancellationToken,
    ) -> Result<(ApprovalRecord, hook_steps::PreHooks), (Denial, Option<String>)> {
        let (env, task) = (card.env, card.task);
        if let Decision::Deny(denial) = decision {
            return Err((denial, None));
        }
        let before = hook_steps::before_tool(
            env,
            task,
            self.call,
            self.kind,
            self.args,
            &planned.action,
            cancel,
        );
        let user = before.await?;
        let decision = match decision {
            Decision::Allow if !user.asks.is_empty() => {
                Decision::Ask(ask_reason(env, &planned.action))
            }
            decision => decision,
        };
        let mut approval = match decision {
            Decision::Ask(reason) => {
                let asks = user.asks.clone();
                let (intents, governance) = (self.intents, self.governance);
                let asked = approval::ask(
                    card,
                    intents,
                    governance,
                    reason,
                    &mut planned.action,
                    asks,
                    cancel,
                );
                asked
                    .await
                    .map_err(|denial| (denial, user.context.clone()))?
            }
            _ => approval::by_policy(),
        };
        approval.user_hooks = user.ran.clone();
        Ok((approval, user))
    }
}

/// Why the person is asked when only their hook asks: the card of the action's kind.
fn ask_reason(env: &AgentEnv, action: &Action) -> AskReason {
    match action {
        Action::Write(_) => AskReason::Write,
        Action::Intents(_) => AskReason::Intents,
        Action::Command(cmd) => {
            let policy = env.gov.policy().unwrap_or_else(|_| {
                std::sync::Arc::new(crate::hooks::command_policy::CommandPolicy::builtin())
            });
            AskReason::Command(policy.classify(&cmd.command))
        }
        Action::External(_) => AskReason::External,
        Action::Read { .. } | Action::Meta => AskReason::UserHook,
    }
}

/// The tool's plan and the pre-hooks' decision on it. Planning reads files and the hooks may
/// reload theirs: off the async workers.
async fn plan_and_check(
    env: &AgentEnv,
    position: usize,
    args: Value,
    governance: crate::hooks::TaskGovernance,
) -> Result<(Planned, Decision, IntentsSnapshot), ToolError> {
    let (tools, gov, policy) = (env.tools.clone(), env.gov.clone(), env.approval);
    crate::fsutil::blocking(move || {
        let tool = &tools[position];
        let intents = gov.intents.snapshot();
        let cx = ToolCx {
            workspace: &gov.workspace,
            intents: &intents,
            task: &governance,
        };
        let planned = tool.plan(args, &cx)?;
        let decision = pre_hooks(
            &gov,
            policy,
            &governance,
            &intents,
            tool.kind(),
            &planned.action,
        );
        // A write that may go ahead has its diff and classification started now, on another
        // thread, while it waits for the person's hooks, the approval and its turn.
        if let (Action::Write(w), Decision::Allow | Decision::Ask(_)) = (&planned.action, &decision)
        {
            gov.journal
                .foresee(&w.path.rel, w.old.as_deref(), &w.new_content);
        }
        Ok((planned, decision, intents))
    })
    .await
    .unwrap_or_else(|e| Err(ToolError::Failed(format!("planning the call failed: {e}"))))
}

fn parse_arguments(call: &ToolCall) -> Result<Value, Denial> {
    if call.arguments.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(&call.arguments).map_err(|e| {
        Denial::new(
            DenialCode::InvalidArguments,
            format!("The arguments of {} are not valid JSON ({e}).", call.name),
        )
    })
}

/// The pre-hooks, with the files they depend on loaded; a file that cannot be loaded denies.
fn pre_hooks(
    gov: &Governance,
    approval: ApprovalPolicy,
    governance: &crate::hooks::TaskGovernance,
    intents: &crate::orchestration::intents::IntentsSnapshot,
    kind: ToolKind,
    action: &Action,
) -> Decision {
    let hook_failure = |m: String| Decision::Deny(Denial::new(DenialCode::HookFailure, m));
    let policy = match (gov.policy(), action) {
        (Ok(p), _) => p,
        (Err(e), Action::Command(_)) => return hook_failure(e.to_string()),
        (Err(_), _) => std::sync::Arc::new(crate::hooks::command_policy::CommandPolicy::builtin()),
    };
    let ignore = match (gov.ignore(), action) {
        (Ok(i), _) => i,
        (Err(e), Action::Write(_)) => {
            return hook_failure(format!("{e}; writes are refused until it parses"))
        }
        (Err(_), _) => std::sync::Arc::new(crate::hooks::ignore_list::IntentIgnore::empty()),
    };
    let cx = HookContext {
        workspace: &gov.workspace,
        intents,
        task: governance,
        approval,
        policy: &policy,
        ignore: &ignore,
        confined: gov.confinement.is_confined(),
    };
    gov.hooks.pre(&cx, kind, action)
}

/// The post-hooks: what they changed goes to the window, what failed becomes a notice.
async fn post_hooks(env: &AgentEnv, output: &ToolOutput) {
    if output.consequences.is_empty() {
        return;
    }
    let (gov, consequences) = (env.gov.clone(), output.consequences.clone());
    let report =
        crate::fsutil::blocking(move || gov.hooks.post(&gov.post_context(), &consequences))
            .await
            .unwrap_or_else(|e| crate::hooks::PostReport {
                intents_changed: false,
                problems: vec![format!("the post-hooks failed: {e}")],
            });
    if report.intents_changed {
        env.sink.emit(Event::IntentsChanged {
            intents: env.gov.intents.snapshot().view(),
        });
    }
    for problem in report.problems {
        env.notice(problem);
    }
}

/// The tool card in the transcript: started, maybe waiting for approval, then finished.
pub(super) struct Card<'a> {
    pub env: &'a AgentEnv,
    pub task: &'a TaskHandle,
    pub call: &'a ToolCall,
    pub view: ToolCallView,
    announced: bool,
}

impl<'a> Card<'a> {
    fn new(
        env: &'a AgentEnv,
        task: &'a TaskHandle,
        call: &'a ToolCall,
        kind: Option<ToolKind>,
    ) -> Self {
        Self {
            env,
            task,
            call,
            view: ToolCallView {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                // An unknown tool might have mutated: shown as such.
                kind: kind.unwrap_or(ToolKind::Mutate),
                target: String::new(),
                status: ToolCallStatus::Running,
                summary: String::new(),
                output: String::new(),
                path: None,
                line: None,
                changed_paths: Vec::new(),
                unconfined: false,
            },
            announced: false,
        }
    }

    pub fn emit(&mut self) {
        self.announced = true;
        self.env.sink.emit(Event::ToolCallStarted {
            task_id: self.task.id.clone(),
            call: self.view.clone(),
        });
    }

    fn started(&mut self, planned: &Planned) {
        self.view.target = crate::redact::Redactor::global()
            .redact(&planned.target)
            .into_owned();
        (self.view.path, self.view.line) = match &planned.action {
            Action::Read { path } => (Some(path.rel.clone()), None),
            Action::Write(w) => (Some(w.path.rel.clone()), Some(first_changed_line(w))),
            _ => (None, None),
        };
        // Said on every card of such a call, from its start: what runs is not confined.
        self.view.unconfined = matches!(&planned.action, Action::External(e) if e.unconfined);
        self.emit();
    }

    fn finish(mut self, status: ToolCallStatus, summary: String, content: String) -> CallResult {
        // Whatever a tool returns, no secret Mandate holds reaches the model or the transcript.
        let redactor = crate::redact::Redactor::global();
        let (summary, content) = (
            redactor.redact(&summary).into_owned(),
            redactor.redact(&content).into_owned(),
        );
        self.view.output = redactor.redact(&self.view.output).into_owned();
        if !self.announced {
            // Refused before it was planned: the card still appears once, then finishes.
            self.emit();
        }
        self.view.status = status;
        self.view.summary = summary;
        let view = self.view;
        self.task.push_message(UiMessage::Tool {
            id: view.call_id.clone(),
            call: view.clone(),
        });
        self.env.sink.emit(Event::ToolCallFinished {
            task_id: self.task.id.clone(),
            call: view,
        });
        CallResult {
            is_error: status != ToolCallStatus::Succeeded,
            content,
            completed: None,
            subtask: None,
        }
    }

    fn deny(self, denial: Denial) -> CallResult {
        let status = if denial.code == DenialCode::InvalidArguments {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Denied
        };
        let summary = format!("{}: {}", denial.code_str(), denial.message);
        self.finish(status, summary, denial.to_tool_error())
    }

    fn fail(self, error: ToolError) -> CallResult {
        match error {
            ToolError::InvalidArguments(m) => {
                self.deny(Denial::new(DenialCode::InvalidArguments, m))
            }
            ToolError::Denied(denial) => self.deny(denial),
            ToolError::Failed(m) => {
                let content =
                    serde_json::json!({"error": {"code": "TOOL_FAILED", "message": m}}).to_string();
                self.finish(ToolCallStatus::Failed, m, content)
            }
        }
    }

    fn succeed(mut self, output: ToolOutput) -> CallResult {
        self.view.output = crate::text::tail_marked(&output.display, 64 * 1024).into_owned();
        self.view.changed_paths = changed_paths(self.view.path.as_deref(), &output.consequences);
        let status = if output.failed {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Succeeded
        };
        let mut result = self.finish(status, output.summary, output.content);
        result.is_error = output.failed;
        result.completed = output.completed;
        result.subtask = output.subtask;
        result
    }
}

/// The files a call changed and recorded (what undoing it takes back): a write's own file, a
/// command's in-scope changes.
fn changed_paths(path: Option<&str>, consequences: &[crate::tools::Consequence]) -> Vec<String> {
    use crate::tools::Consequence;
    let mut paths: Vec<String> = Vec::new();
    for c in consequences {
        match c {
            Consequence::CommandFinished(outcome) => {
                paths.extend(outcome.changed_in_scope.iter().cloned())
            }
            Consequence::Changed { .. } => paths.extend(path.map(str::to_string)),
        }
    }
    paths.sort_unstable();
    paths.dedup();
    paths
}

/// Where the card of a write points: the first line it changes.
fn first_changed_line(w: &crate::hooks::WriteAction) -> u32 {
    let old = w.old.as_deref().unwrap_or_default();
    let line = crate::text::first_changed_line(old, w.new_content.as_bytes());
    u32::try_from(line).unwrap_or(u32::MAX)
}
