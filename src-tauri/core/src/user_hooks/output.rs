//! What a hook said, read from its exit code and output as the contract defines it, and what
//! several hooks on one event say together (the strictest wins: deny > ask > allow).
//!
//! - exit 0: stdout is read. Empty: nothing said. A JSON object: its fields (below). Other
//!   text: context for UserPromptSubmit and SessionStart, nothing for the other events. Text
//!   that starts with `{` but is not a JSON object is a failure (the hook meant to say
//!   something and it cannot be read).
//! - exit 2: PreToolUse denies, PostToolUse / UserPromptSubmit / Stop block; stderr is the
//!   reason. SessionStart and Notification cannot block: stderr is shown to the person.
//! - any other exit, a signal, a timeout, too much output: a failure (what a failure does is
//!   decided by the caller: it denies a mutating tool unless the hook is advisory).
//!
//! JSON fields read: `continue: false` (read as a block or deny with `stopReason`; Mandate
//! does not end a task from a hook), `systemMessage` (shown to the person), `decision`
//! (`block`; `approve` on PreToolUse as the older form of allow), `reason`,
//! `hookSpecificOutput.{hookEventName, permissionDecision, permissionDecisionReason,
//! additionalContext}`. `updatedInput` is a failure: Mandate does not let a hook change what
//! the person and the gate were shown. A wrong type for any of them is a failure.

use serde_json::{Map, Value};

use super::config::{HookEvent, HookSpec};
use super::process::HookRun;

/// Reasons, context and messages are cut to this many characters, as the contract does.
pub const MAX_TEXT_CHARS: usize = 10_000;

/// What one hook decided, from the mildest to the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Said {
    Nothing,
    Allow,
    Ask,
    /// Deny (PreToolUse) or block (the other events).
    Block,
}

/// One hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookAnswer {
    pub name: String,
    pub said: Said,
    pub reason: Option<String>,
    /// `additionalContext` (or plain stdout where the contract reads it so): for the model.
    pub context: Option<String>,
    /// `systemMessage`, or what a hook that cannot block printed: for the person.
    pub message: Option<String>,
    /// Why its answer could not be read.
    pub failure: Option<String>,
    pub advisory: bool,
}

fn capped(text: &str) -> String {
    crate::text::ellipsize(text.trim(), MAX_TEXT_CHARS).into_owned()
}

/// Reads what `run` of the hook `spec` said on `event`.
pub fn interpret(event: HookEvent, spec: &HookSpec, run: HookRun) -> HookAnswer {
    let mut answer = HookAnswer {
        name: spec.name.clone(),
        said: Said::Nothing,
        reason: None,
        context: None,
        message: None,
        failure: None,
        advisory: spec.advisory,
    };
    let stderr = run.stderr.trim();
    if let Some(failure) = run.failure {
        answer.failure = Some(with_stderr(failure, stderr));
        return answer;
    }
    match run.exit_code {
        Some(0) => {
            if let Err(problem) = read_stdout(event, &run.stdout, &mut answer) {
                // Nothing of an output that cannot be read counts.
                answer.said = Said::Nothing;
                answer.reason = None;
                answer.context = None;
                answer.failure = Some(problem);
            }
        }
        Some(2) if !event.can_block() => {
            answer.message = (!stderr.is_empty()).then(|| capped(stderr));
        }
        Some(2) => {
            answer.said = Said::Block;
            answer.reason = Some(if stderr.is_empty() {
                "(it exited with code 2 and gave no reason)".to_string()
            } else {
                capped(stderr)
            });
        }
        Some(code) => {
            answer.failure = Some(with_stderr(format!("it exited with code {code}"), stderr))
        }
        None => answer.failure = Some("its exit status is unknown".to_string()),
    }
    answer
}

fn with_stderr(failure: String, stderr: &str) -> String {
    if stderr.is_empty() {
        failure
    } else {
        format!("{failure} ({})", crate::text::ellipsize(stderr, 300))
    }
}

fn read_stdout(event: HookEvent, stdout: &str, answer: &mut HookAnswer) -> Result<(), String> {
    let text = stdout.trim();
    if text.is_empty() {
        return Ok(());
    }
    if !text.starts_with('{') {
        if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart) {
            answer.context = Some(capped(text));
        }
        return Ok(());
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("its output is not valid JSON ({e})"))?;
    let Value::Object(out) = value else {
        return Err("its output is not a JSON object".into());
    };
    read_fields(event, &out, answer)
}

fn string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(capped(s))),
        Some(_) => Err(format!("`{key}` in its output is not a string")),
    }
}

fn read_fields(
    event: HookEvent,
    out: &Map<String, Value>,
    answer: &mut HookAnswer,
) -> Result<(), String> {
    answer.message = string(out, "systemMessage")?;
    let mut said = match string(out, "decision")?.as_deref() {
        None => Said::Nothing,
        Some("block") => Said::Block,
        Some("approve") if event == HookEvent::PreToolUse => Said::Allow,
        Some("approve") => Said::Nothing,
        Some(other) => return Err(format!("`decision` `{other}` is neither block nor approve")),
    };
    let mut reason = string(out, "reason")?;
    match out.get("hookSpecificOutput") {
        None | Some(Value::Null) => {}
        Some(Value::Object(specific)) => {
            if let Some(name) = string(specific, "hookEventName")? {
                if name != event.name() {
                    return Err(format!(
                        "`hookEventName` is `{name}` on a {} event",
                        event.name()
                    ));
                }
            }
            answer.context = string(specific, "additionalContext")?;
            if event == HookEvent::PreToolUse {
                if specific.get("updatedInput").is_some_and(|v| !v.is_null()) {
                    return Err("it returned `updatedInput`; Mandate does not let hooks change a tool's input".into());
                }
                let decided = match string(specific, "permissionDecision")?.as_deref() {
                    None => Said::Nothing,
                    Some("allow") => Said::Allow,
                    Some("ask") => Said::Ask,
                    Some("deny") => Said::Block,
                    Some(other) => {
                        return Err(format!(
                            "`permissionDecision` `{other}` is not allow, deny or ask"
                        ))
                    }
                };
                said = said.max(decided);
                if let Some(r) = string(specific, "permissionDecisionReason")? {
                    reason = Some(r);
                }
            }
        }
        Some(_) => return Err("`hookSpecificOutput` in its output is not an object".into()),
    }
    match out.get("continue") {
        None | Some(Value::Null) | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            let stop = string(out, "stopReason")?
                .unwrap_or_else(|| "(it asked to stop and gave no reason)".into());
            if !event.can_block() {
                answer.message = Some(stop);
            } else {
                said = Said::Block;
                reason = Some(stop);
            }
        }
        Some(_) => return Err("`continue` in its output is not true or false".into()),
    }
    if !event.can_block() {
        said = Said::Nothing;
    }
    answer.said = said;
    answer.reason = reason;
    Ok(())
}

/// What every hook of one event said, in configuration order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventReport {
    pub answers: Vec<HookAnswer>,
}

impl EventReport {
    /// The names of the hooks that ran.
    pub fn ran(&self) -> Vec<String> {
        self.answers.iter().map(|a| a.name.clone()).collect()
    }

    /// The strictest answer.
    pub fn strictest(&self) -> Said {
        self.answers
            .iter()
            .map(|a| a.said)
            .max()
            .unwrap_or(Said::Nothing)
    }

    /// `` `name`: reason `` for each hook that said `said`.
    pub fn reasons(&self, said: Said) -> Vec<String> {
        self.answers
            .iter()
            .filter(|a| a.said == said)
            .map(|a| match &a.reason {
                Some(r) if !r.is_empty() => format!("your hook `{}`: {r}", a.name),
                _ => format!("your hook `{}`", a.name),
            })
            .collect()
    }

    /// Failures that decide (`fail_closed`: the tool changes things and the hook is not
    /// advisory), then the others, each as `` `name` failed: why ``.
    pub fn failures(&self, fail_closed: bool) -> (Vec<String>, Vec<String>) {
        let mut deciding = Vec::new();
        let mut reported = Vec::new();
        for a in &self.answers {
            if let Some(why) = &a.failure {
                let line = format!(
                    "your {}hook `{}` failed: {why}",
                    if a.advisory { "advisory " } else { "" },
                    a.name
                );
                if fail_closed && !a.advisory {
                    deciding.push(line);
                } else {
                    reported.push(line);
                }
            }
        }
        (deciding, reported)
    }

    /// The context for the model, one tagged block per hook, or None.
    pub fn context(&self, event: HookEvent) -> Option<String> {
        let blocks: Vec<String> = self
            .answers
            .iter()
            .filter_map(|a| {
                a.context.as_ref().filter(|c| !c.is_empty()).map(|c| {
                    format!(
                        "<user_hook_context event=\"{}\" hook=\"{}\">\n{c}\n</user_hook_context>",
                        event.name(),
                        a.name.replace('"', "'")
                    )
                })
            })
            .collect();
        (!blocks.is_empty()).then(|| blocks.join("\n"))
    }

    /// What the hooks want the person to read (`systemMessage`).
    pub fn messages(&self) -> Vec<String> {
        self.answers
            .iter()
            .filter_map(|a| {
                a.message
                    .as_ref()
                    .map(|m| format!("Your hook `{}`: {m}", a.name))
            })
            .collect()
    }

    /// The names of the hooks that decided something or added context.
    pub fn deciders(&self) -> Vec<String> {
        self.answers
            .iter()
            .filter(|a| matches!(a.said, Said::Ask | Said::Block) || a.context.is_some())
            .map(|a| a.name.clone())
            .collect()
    }
}
