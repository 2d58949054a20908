//! One function per section of the system prompt.

use super::PromptContext;
use crate::protocol::IntentStatus;

pub fn role(cx: &PromptContext<'_>) -> Option<String> {
    let who = match cx.mode {
        Some(mode) => format!("{}\n\n", mode.role_definition.trim()),
        None => "You are Mandate, a careful software engineer working in the user's workspace beside their editor. ".into(),
    };
    Some(
        who + "You work under governance: every change you make is tied to a declared intent, checked by deterministic hooks, \
approved by a person where the policy says so, and recorded in a tamper-evident trace ledger. \
Be precise, make the smallest change that does the job, and say plainly what you did and did not do.",
    )
}

pub fn tool_use(_: &PromptContext<'_>) -> Option<String> {
    Some(
        "- Use the tools to act; use one tool at a time and wait for its result before the next step.\n\
- Read a file before you change it. If a write is refused with STALE_FILE, read the file again and redo the change on its current content.\n\
- Prefer apply_diff for edits to existing files; use write_to_file for new files or complete rewrites, always with the complete content.\n\
- A refused tool call returns a JSON error with a `code` (NO_ACTIVE_INTENT, SCOPE_VIOLATION, STALE_FILE, PROTECTED_PATH, REJECTED_BY_USER, COMMAND_BLOCKED, INVALID_ARGUMENTS, HOOK_FAILURE). Read it and adjust; do not repeat the same call unchanged.\n\
- When the user rejects a change, their reason is in the error: follow it.\n\
- Ask with ask_followup_question only when you cannot proceed without an answer.\n\
- When the task is done, call attempt_completion with the result."
            .into(),
    )
}

pub fn capabilities(cx: &PromptContext<'_>) -> Option<String> {
    let mcp = if cx
        .tool_names
        .iter()
        .any(|t| t.starts_with(crate::mcp::catalog::PREFIX))
    {
        "\nTools named mcp__<server>__<tool> belong to MCP servers the user connected and act outside the workspace's files. \
Those not declared read-only need your selected intent, and the user approves every call."
    } else {
        ""
    };
    Some(format!(
        "You can list, search and read files in the workspace at {root}, write and edit files inside the scope of your intent, \
and run shell commands in the workspace (destructive ones wait for the user's approval). Available tools: {tools}.\n\
Paths are relative to the workspace root. `.orchestration/`, `.intentignore`, `.mandate/`, `.claude/`, `.mcp.json` and `.git/` are never writable.{mcp}",
        root = cx.root.display(),
        tools = cx.tool_names.join(", ")
    ))
}

pub fn intent_protocol(cx: &PromptContext<'_>) -> Option<String> {
    if !cx.intents.exists {
        return Some(
            "This workspace has no `.orchestration/active_intents.yaml`, so no intent can be selected and you cannot change files or run commands. \
You can read and explain code. If the user wants changes, tell them to create an intent in Mandate's Intents view."
                .into(),
        );
    }
    const SHOWN: usize = 100;
    let open = cx
        .intents
        .doc
        .intents
        .iter()
        .filter(|i| i.status != IntentStatus::Done);
    let more = open.clone().count().saturating_sub(SHOWN);
    let mut available: Vec<String> = open
        .take(SHOWN)
        .map(|i| {
            format!(
                "- {}: {} ({})",
                i.id,
                i.name,
                crate::orchestration::intents::status_str(i.status)
            )
        })
        .collect();
    if more > 0 {
        available.push(format!(
            "- … and {more} more open intents: ask the user which one the request belongs to"
        ));
    }
    let mut list = if available.is_empty() {
        "No intent is open right now.".to_string()
    } else {
        format!("Open intents:\n{}", available.join("\n"))
    };
    if let Some(problem) = crate::hooks::broken_intents_file(cx.intents) {
        list = format!("{problem}\n\n{list}");
    }
    Some(format!(
        "You cannot write code or run commands before you call select_active_intent with the id of the intent the user's request belongs to. \
After you receive <intent_context>, work only inside its owned scope and respect its constraints. \
Every write_to_file and apply_diff must cite that intent in `intent_id` and classify the change in `mutation_class`: \
AST_REFACTOR when it only moves, renames or reformats code, INTENT_EVOLUTION when it adds or changes behaviour. \
If the work needs a file outside the scope, call request_scope_expansion with the narrowest globs and your reason: the user decides. \
For work no open intent covers, propose one with propose_intent. \
When you finish, report each acceptance criterion of the intent in attempt_completion.\n\n{list}"
    ))
}

pub fn active_intent(cx: &PromptContext<'_>) -> Option<String> {
    let intent = cx.active_intent?;
    Some(format!(
        "This task holds intent {}. Its context:\n{}",
        intent.id,
        crate::tools::intent_context(intent, cx.recent_history)
    ))
}

pub fn workspace_rules(cx: &PromptContext<'_>) -> Option<String> {
    if cx.rules.is_empty() {
        return None;
    }
    let names: Vec<&str> = cx.rules.iter().map(|(name, _)| name.as_str()).collect();
    let rules: Vec<String> = cx
        .rules
        .iter()
        .map(|(name, text)| format!("# From {name}\n\n{text}"))
        .collect();
    Some(format!(
        "The user's rules, loaded from: {}.\n\n{}",
        names.join(", "),
        rules.join("\n\n")
    ))
}

pub fn lessons(cx: &PromptContext<'_>) -> Option<String> {
    cx.lessons.map(|l| {
        format!(
            "Lessons recorded by earlier tasks in `.orchestration/AGENT.md` (newest last):\n\n{l}"
        )
    })
}

pub fn system_info(cx: &PromptContext<'_>) -> Option<String> {
    Some(format!(
        "Operating system: {}\nShell: {}\nWorkspace root: {}\nCurrent date: {}",
        cx.os,
        cx.shell,
        cx.root.display(),
        cx.date
    ))
}

pub fn objective(cx: &PromptContext<'_>) -> Option<String> {
    if cx.objective.trim().is_empty() {
        return None;
    }
    Some(format!(
        "The user's request for this task:\n\n{}\n\nWork through it step by step, then finish with attempt_completion.",
        cx.objective.trim()
    ))
}

pub fn custom_instructions(cx: &PromptContext<'_>) -> Option<String> {
    let text = cx.custom_instructions.trim();
    (!text.is_empty()).then(|| text.to_string())
}

pub fn mode(cx: &PromptContext<'_>) -> Option<String> {
    let mode = cx.mode?;
    let groups: Vec<&str> = mode.groups.iter().map(|g| g.name()).collect();
    let mut text = format!(
        "You are in {} mode (`{}`). It allows {} actions",
        mode.name,
        mode.slug,
        if groups.is_empty() {
            "no read, edit, command or MCP".to_string()
        } else {
            groups.join(", ")
        }
    );
    if let Some(re) = &mode.edit_regex {
        text.push_str(&format!(
            ", and edits only of files whose path matches `{re}`"
        ));
    }
    text.push_str(". A call outside that is refused with MODE_RESTRICTED, whatever the intent allows; the intent still limits where you may write.");
    let others: Vec<String> = cx
        .modes
        .iter()
        .filter(|m| m.slug != mode.slug)
        .map(|m| {
            let when = if m.when_to_use.is_empty() {
                &m.description
            } else {
                &m.when_to_use
            };
            format!(
                "- `{}` ({}): {}",
                m.slug,
                m.name,
                crate::text::first_chars(when.trim(), 200)
            )
        })
        .collect();
    if !others.is_empty() {
        text.push_str(&format!(
            "\n\nOther modes (ask for one with switch_mode when the work needs it; the user decides):\n{}",
            others.join("\n")
        ));
    }
    Some(text)
}

pub fn mode_instructions(cx: &PromptContext<'_>) -> Option<String> {
    let mode = cx.mode?;
    let mut parts = Vec::new();
    if !mode.custom_instructions.trim().is_empty() {
        parts.push(mode.custom_instructions.trim().to_string());
    }
    for (name, text) in cx.mode_rules {
        parts.push(format!("# Rules from {name}\n\n{text}"));
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

pub fn skills_and_commands(cx: &PromptContext<'_>) -> Option<String> {
    if cx.skills.is_empty() && cx.commands.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if !cx.skills.is_empty() {
        let list: Vec<String> = cx
            .skills
            .iter()
            .map(|s| {
                format!(
                    "- {}: {}",
                    s.name,
                    crate::text::first_chars(&s.description, 300)
                )
            })
            .collect();
        parts.push(format!(
            "The user's skills (load one with the skill tool when the task matches its description; only then follow it):\n{}",
            list.join("\n")
        ));
    }
    if !cx.commands.is_empty() {
        let list: Vec<String> = cx
            .commands
            .iter()
            .map(|c| {
                let hint = if c.argument_hint.is_empty() {
                    String::new()
                } else {
                    format!(" {}", c.argument_hint)
                };
                let what = if c.description.is_empty() {
                    "(no description)"
                } else {
                    c.description.as_str()
                };
                format!(
                    "- /{}{hint}: {}",
                    c.name,
                    crate::text::first_chars(what, 200)
                )
            })
            .collect();
        parts.push(format!(
            "The user's slash commands (run one with run_slash_command when the user asks for it or it clearly fits):\n{}",
            list.join("\n")
        ));
    }
    Some(parts.join("\n\n"))
}
