//! The summary call: what the model is asked, and how the part of the conversation to condense
//! is laid out so that the request itself fits the window. The previous summary is fed
//! forward; thinking is off; the output limit leaves room for the whole summary.

use crate::llm::{ChatMessage, ModelRequest, ThinkingBlock};

use super::window::ModelWindow;

/// The start of the summary request's system prompt (a scripted provider recognises it).
pub const SUMMARY_SYSTEM: &str = "You condense a coding agent's conversation into a summary that lets the agent continue the task without the conversation.";

/// The start of the last message of a summary asked at the end of the task's own history.
pub const SUMMARY_INSTRUCTION: &str = "[Condense the conversation: Mandate replaces the conversation above with your summary to fit the model's context window.]";

fn system(words: u64) -> String {
    format!("{SUMMARY_SYSTEM}\n\n{}", instructions(words))
}

fn instructions(words: u64) -> String {
    format!(
        "Write the summary in Markdown under these headings, in this order:\n\
## Goal — the task as the person asked it, and every requirement they added since.\n\
## Done — what was finished, with file paths; say plainly what is complete so it is not redone.\n\
## In progress — the step under way and its exact state.\n\
## Decisions — choices made and why; constraints and the person's preferences.\n\
## Files — files read (what matters in each) and files changed (how).\n\
## Facts — names, numbers, commands, errors and values the rest of the task needs, verbatim.\n\
## Next — the next steps, in order.\n\n\
Keep every fact later steps need, verbatim where exactness matters (paths, identifiers, error text, lines beginning with FACT-). \
Drop chatter, repeated file contents and superseded attempts. Fold the previous summary in: nothing it holds may be lost unless it is obsolete. \
Use at most about {words} words. Answer with the summary only; call no tool."
    )
}

/// The words a summary may use: half the output reserved, a token being about 0.75 words.
fn words(window: &ModelWindow) -> u64 {
    (u64::from(window.max_tokens()) / 2 * 3 / 4).clamp(300, 6_000)
}

/// The summary asked at the end of the request the task would send now (`current`): the same
/// system prompt, tools and messages, so the provider's prompt cache serves all of it; the
/// tools may not be called. None when that request and the instruction do not fit the window
/// (then [`request`] lays the conversation out as text instead).
pub fn in_place(current: &ModelRequest, window: &ModelWindow, in_use: u64) -> Option<ModelRequest> {
    let instruction = format!(
        "{SUMMARY_INSTRUCTION}\n\n{SUMMARY_SYSTEM} {}",
        instructions(words(window))
    );
    if in_use + super::tokens::text(&instruction) + 64 > window.usable_input() {
        return None;
    }
    let mut messages = current.messages.clone();
    messages.push(ChatMessage::user(instruction));
    Some(ModelRequest {
        system: current.system.clone(),
        messages: super::history::well_formed(messages),
        tools: current.tools.clone(),
        max_tokens: window.max_tokens(),
        thinking_budget: None,
        reasoning_effort: None,
        cache: true,
        forbid_tools: true,
        context_window: Some(window.context_window),
    })
}

/// How the part to condense is put to the model.
pub struct Input<'a> {
    pub previous_summary: Option<&'a str>,
    /// The messages to condense (from the previous cut to the new one).
    pub messages: &'a [ChatMessage],
    pub objective: &'a str,
}

/// The summary request: within the window's usable input, with every tool result cut to an
/// equal share of what is left when the whole does not fit.
pub fn request(input: &Input<'_>, window: &ModelWindow) -> ModelRequest {
    let max_tokens = window.max_tokens();
    let system = system(words(window));
    let budget = window
        .usable_input()
        .saturating_sub(super::tokens::text(&system) + 256);
    let mut transcript = render(input, usize::MAX);
    if super::tokens::text(&transcript) > budget {
        // Shrink the longest items first: find the per-item cap that fits.
        let (mut lo, mut hi) = (64usize, transcript.len());
        while lo + 64 < hi {
            let mid = (lo + hi) / 2;
            if super::tokens::text(&render(input, mid)) <= budget {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        transcript = render(input, lo);
        if super::tokens::text(&transcript) > budget {
            // Even the items' heads do not fit: keep the newest part of the transcript.
            let keep = (budget * 4) as usize;
            let tail = crate::text::suffix(&transcript, keep).to_string();
            transcript = format!("[… the oldest part of this transcript was left out …]\n{tail}");
        }
    }
    ModelRequest {
        system,
        messages: vec![ChatMessage::user(transcript)],
        tools: Vec::new(),
        max_tokens,
        thinking_budget: None,
        reasoning_effort: None,
        cache: false,
        forbid_tools: false,
        context_window: Some(window.context_window),
    }
}

/// The conversation as plain text, each item at most `cap` bytes (cut in the middle).
fn render(input: &Input<'_>, cap: usize) -> String {
    let mut out = String::new();
    out.push_str("Objective: ");
    out.push_str(input.objective.trim());
    out.push_str("\n\n");
    if let Some(prev) = input.previous_summary {
        out.push_str("<previous_summary>\n");
        out.push_str(prev.trim());
        out.push_str("\n</previous_summary>\n\n");
    }
    out.push_str("<conversation>\n");
    for m in input.messages {
        match m {
            ChatMessage::User { text, images } => {
                out.push_str("[user]\n");
                out.push_str(&squeeze(text, cap));
                for image in images {
                    out.push_str(&format!(
                        "\n[an image the user attached, {}×{}]",
                        image.width, image.height
                    ));
                }
            }
            ChatMessage::Assistant {
                text,
                tool_calls,
                thinking,
            } => {
                out.push_str("[assistant]\n");
                // Reasoning is the model's own scratch work; only its conclusions matter.
                let _: &[ThinkingBlock] = thinking;
                if !text.trim().is_empty() {
                    out.push_str(&squeeze(text, cap));
                    out.push('\n');
                }
                for c in tool_calls {
                    out.push_str(&format!(
                        "→ {}({})\n",
                        c.name,
                        squeeze(&c.arguments, cap.min(2_000))
                    ));
                }
            }
            ChatMessage::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                let kind = if *is_error { "error" } else { "result" };
                out.push_str(&format!("[{name} {kind}]\n"));
                out.push_str(&squeeze(content, cap));
            }
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out.push_str("</conversation>\n\nWrite the summary now.");
    out
}

fn squeeze(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    // FACT lines and the first lines matter most; keep the head and the tail.
    crate::text::head_and_tail(text, cap * 2 / 3, cap / 3).into_owned()
}

/// Why a summary the model wrote cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummaryError {
    #[error("the summary was cut at the model's output limit")]
    Cut,
    #[error("the model answered with no usable summary")]
    Empty,
}

/// A summary the model wrote is usable: not empty, and not cut at the output limit.
pub fn check(text: &str, cut_at_limit: bool) -> Result<String, SummaryError> {
    let text = text.trim();
    if cut_at_limit {
        return Err(SummaryError::Cut);
    }
    if text.len() < 20 {
        return Err(SummaryError::Empty);
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ModelOverride;

    fn window(n: u64) -> ModelWindow {
        ModelWindow::resolve(
            "local",
            &ModelOverride {
                context_window: Some(n),
                ..Default::default()
            },
            None,
            &crate::llm::ModelInfo::default(),
        )
    }

    #[test]
    fn the_request_fits_the_window_however_long_the_part_to_condense() {
        let big = "FACT-ALPHA: keep me\n".to_string() + &"filler line\n".repeat(20_000);
        let messages: Vec<ChatMessage> = (0..30)
            .map(|i| ChatMessage::ToolResult {
                call_id: format!("c{i}"),
                name: "read_file".into(),
                content: big.clone(),
                is_error: false,
            })
            .collect();
        let w = window(16_384);
        let r = request(
            &Input {
                previous_summary: Some("## Goal\nport it"),
                messages: &messages,
                objective: "port the parser",
            },
            &w,
        );
        assert!(r.system.starts_with(SUMMARY_SYSTEM));
        assert!(r.tools.is_empty() && r.thinking_budget.is_none());
        assert!(super::super::tokens::request(&r) <= w.usable_input());
        let ChatMessage::User { text, .. } = &r.messages[0] else {
            panic!("one user message");
        };
        assert!(text.contains("<previous_summary>\n## Goal\nport it"));
        assert!(
            text.contains("FACT-ALPHA: keep me"),
            "the heads of results are kept"
        );
    }

    #[test]
    fn a_cut_or_empty_summary_is_refused() {
        assert_eq!(
            check("## Goal\nsomething long enough", true),
            Err(SummaryError::Cut)
        );
        assert_eq!(check("  ", false), Err(SummaryError::Empty));
        assert!(check("## Goal\nsomething long enough", false).is_ok());
    }
}
