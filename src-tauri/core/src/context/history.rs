//! The messages a request carries, rebuilt from the whole conversation in one place:
//! the newest condensation's summary first, then the conversation from its cut verbatim;
//! earlier reads of a file that was read again left out; and the pairing the APIs demand
//! (every tool result right after its call, every call answered, a user message first) made
//! true whatever the stored conversation holds.

use std::collections::HashSet;

use crate::llm::ChatMessage;

use super::Condensation;

/// What the summary message holds besides the summary itself.
pub struct Carried<'a> {
    /// The person's own messages, oldest first (the first is the task's request).
    pub persons_messages: &'a [String],
    /// The active intent's `<intent_context>`, when an intent is selected.
    pub intent_context: Option<&'a str>,
    /// At most this many estimated tokens of the person's messages are carried verbatim.
    pub persons_budget: u64,
}

/// The first message after a condensation: what the model needs to go on.
pub fn summary_message(c: &Condensation, carried: &Carried<'_>) -> ChatMessage {
    let mut text = String::from(
        "[Context condensed: the conversation before this point was replaced by a summary to fit the model's context window. \
Mandate keeps the whole conversation, the trace ledger and every change; nothing was undone.]\n\n",
    );
    if c.summarized {
        text.push_str("<summary>\n");
        text.push_str(c.summary.trim());
        text.push_str("\n</summary>\n\n");
    } else {
        text.push_str(c.summary.trim());
        text.push_str("\n\n");
    }
    let (kept, left_out) = persons_within(carried.persons_messages, carried.persons_budget);
    if !kept.is_empty() {
        text.push_str("<persons_messages note=\"verbatim, oldest first\">\n");
        if left_out > 0 {
            text.push_str(&format!(
                "({left_out} earlier message(s) left out; the summary covers them.)\n"
            ));
        }
        for (n, m) in kept {
            text.push_str(&format!("[{n}] {}\n", m.trim()));
        }
        text.push_str("</persons_messages>\n\n");
    }
    if let Some(ctx) = carried.intent_context {
        text.push_str(ctx.trim());
        text.push_str("\n\n");
    }
    text.push_str(
        "Continue the task from where it stands. Do not redo work the summary lists as done; \
read a file again before you change it.",
    );
    ChatMessage::user(text)
}

/// The newest of the person's messages that fit `budget` (the task's request always, cut if
/// it alone is too long), numbered from 1; and how many were left out.
fn persons_within(all: &[String], budget: u64) -> (Vec<(usize, String)>, usize) {
    let mut kept: Vec<(usize, String)> = Vec::new();
    let mut used = 0u64;
    let Some((first, rest)) = all.split_first() else {
        return (kept, 0);
    };
    let first_budget = (budget / 2).max(64) as usize * 4;
    let first_text = match crate::text::ellipsize_within(first, first_budget) {
        std::borrow::Cow::Borrowed(s) => s.to_string(),
        std::borrow::Cow::Owned(s) => s,
    };
    used += super::tokens::text(&first_text);
    let mut newest: Vec<(usize, String)> = Vec::new();
    for (i, m) in rest.iter().enumerate().rev() {
        let t = super::tokens::text(m);
        if used + t > budget {
            break;
        }
        used += t;
        newest.push((i + 2, m.clone()));
    }
    let left_out = rest.len() - newest.len();
    kept.push((1, first_text));
    newest.reverse();
    kept.extend(newest);
    (kept, left_out)
}

/// The messages to send: the condensation's summary (if any) and the conversation after its
/// cut, with superseded reads left out and the pairing made right.
pub fn for_request(
    conversation: &[ChatMessage],
    condensation: Option<&Condensation>,
    carried: &Carried<'_>,
) -> Vec<ChatMessage> {
    let (mut out, from) = match condensation {
        Some(c) if c.at <= conversation.len() => (vec![summary_message(c, carried)], c.at),
        _ => (Vec::new(), 0),
    };
    out.extend(conversation[from..].iter().cloned());
    supersede_reads(&mut out);
    well_formed(out)
}

/// A whole-file `read_file` result is left out when the same file was read whole again later:
/// the later copy is the current one.
pub fn supersede_reads(messages: &mut [ChatMessage]) {
    // call id -> path, for whole-file reads.
    let mut reads: Vec<(String, String)> = Vec::new();
    for m in messages.iter() {
        if let ChatMessage::Assistant { tool_calls, .. } = m {
            for c in tool_calls.iter().filter(|c| c.name == "read_file") {
                let Ok(args) = serde_json::from_str::<serde_json::Value>(&c.arguments) else {
                    continue;
                };
                let ranged = args.get("start_line").is_some_and(|v| !v.is_null())
                    || args.get("end_line").is_some_and(|v| !v.is_null());
                if let (Some(path), false) = (args.get("path").and_then(|p| p.as_str()), ranged) {
                    reads.push((c.id.clone(), normalize(path)));
                }
            }
        }
    }
    // The newest successful whole read of each path stays.
    let mut newest: HashSet<String> = HashSet::new();
    let mut seen_paths: HashSet<String> = HashSet::new();
    for m in messages.iter().rev() {
        if let ChatMessage::ToolResult {
            call_id, is_error, ..
        } = m
        {
            if *is_error {
                continue;
            }
            if let Some((_, path)) = reads.iter().find(|(id, _)| id == call_id) {
                if seen_paths.insert(path.clone()) {
                    newest.insert(call_id.clone());
                }
            }
        }
    }
    for m in messages.iter_mut() {
        if let ChatMessage::ToolResult {
            call_id,
            content,
            is_error: false,
            ..
        } = m
        {
            if newest.contains(call_id) {
                continue;
            }
            if let Some((_, path)) = reads.iter().find(|(id, _)| id == call_id) {
                *content = format!(
                    "[This earlier read of {path} was left out: the file was read again later in the conversation, and that copy is the current one.]"
                );
            }
        }
    }
}

fn normalize(path: &str) -> String {
    path.trim().trim_start_matches("./").to_string()
}

/// Makes the pairing right: a tool result only right after the assistant message that made
/// its call (others are dropped), every call answered (a missing result says so), and a user
/// message first.
pub fn well_formed(messages: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len() + 1);
    // Calls of the newest assistant message still waiting for their result.
    let mut open: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let close = |out: &mut Vec<ChatMessage>, open: &mut Vec<(String, String)>| {
        for (id, name) in open.drain(..) {
            out.push(ChatMessage::ToolResult {
                call_id: id,
                name,
                content: "No result was recorded for this call; it may not have run.".into(),
                is_error: true,
            });
        }
    };
    for m in messages {
        match m {
            ChatMessage::ToolResult { ref call_id, .. } => {
                if let Some(i) = open.iter().position(|(id, _)| id == call_id) {
                    open.remove(i);
                    answered.insert(call_id.clone());
                    out.push(m);
                }
                // A result whose call is not right before it (or was answered) is dropped.
            }
            ChatMessage::Assistant { ref tool_calls, .. } => {
                close(&mut out, &mut open);
                if out.is_empty() {
                    out.push(ChatMessage::user("[The conversation continues from here.]"));
                }
                let mut ids = HashSet::new();
                for c in tool_calls {
                    if ids.insert(c.id.clone()) && !answered.contains(&c.id) {
                        open.push((c.id.clone(), c.name.clone()));
                    }
                }
                out.push(m);
            }
            ChatMessage::User { .. } => {
                close(&mut out, &mut open);
                out.push(m);
            }
        }
    }
    close(&mut out, &mut open);
    out
}

/// Whether every result follows its call and every call is answered (tests, and a last check).
pub fn is_well_formed(messages: &[ChatMessage]) -> bool {
    well_formed(messages.to_vec()) == messages
}

/// Where the verbatim part may start: the index of a message that is not a tool result (so no
/// result is separated from its call), after `from`, keeping the newest messages whose
/// estimate fits `keep_budget` (at least the newest exchange when it alone is larger).
pub fn choose_cut(conversation: &[ChatMessage], from: usize, keep_budget: u64) -> usize {
    let len = conversation.len();
    let boundaries =
        (from + 1..len).filter(|&i| !matches!(conversation[i], ChatMessage::ToolResult { .. }));
    let mut cut = len;
    for b in boundaries.rev() {
        let size = super::tokens::messages(&conversation[b..]);
        if size <= keep_budget || cut == len {
            cut = b;
        }
        if size > keep_budget {
            break;
        }
    }
    cut
}

/// The deterministic fallback when a summary cannot be had: the oldest exchanges after `from`
/// go, whole, until what is left of the conversation fits `budget`.
pub fn drop_oldest(conversation: &[ChatMessage], from: usize, budget: u64) -> usize {
    let len = conversation.len();
    let mut cut = from;
    for i in from + 1..=len {
        if i < len && matches!(conversation[i], ChatMessage::ToolResult { .. }) {
            continue;
        }
        cut = i;
        if super::tokens::messages(&conversation[i..]) <= budget {
            break;
        }
    }
    cut
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
