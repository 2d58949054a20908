//! Counting: tokens in use = the provider's count for the last request (input of every kind
//! and the answer) plus an estimate of what was added since, the estimate corrected by how far
//! the last one was off. The estimate is bytes / 4 of what goes on the wire: no tokenizer
//! knows every model, and the correction makes up for it after one answer.

use serde::{Deserialize, Serialize};

use crate::llm::{ChatMessage, ModelRequest, ThinkingBlock, ToolSpec};

/// A request's estimate beside the provider's own count for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Estimated tokens of the request and its answer.
    pub estimate: u64,
    /// The provider's count: input + cache read + cache write + output.
    pub actual: u64,
}

impl Measured {
    /// How many real tokens one estimated token was, within sane bounds.
    pub fn ratio(&self) -> f64 {
        if self.estimate == 0 || self.actual == 0 {
            return 1.0;
        }
        (self.actual as f64 / self.estimate as f64).clamp(0.25, 4.0)
    }
}

/// Per-message overhead of the wire formats (role, separators).
const PER_MESSAGE: u64 = 4;

pub fn text(s: &str) -> u64 {
    (s.len() as u64).div_ceil(4)
}

pub fn message(m: &ChatMessage) -> u64 {
    PER_MESSAGE
        + match m {
            ChatMessage::User { text: t, images } => {
                text(t)
                    + images
                        .iter()
                        .map(crate::llm::ImageData::tokens)
                        .sum::<u64>()
            }
            ChatMessage::Assistant {
                text: t,
                tool_calls,
                thinking,
            } => {
                text(t)
                    + tool_calls
                        .iter()
                        .map(|c| text(&c.arguments) + text(&c.name) + text(&c.id) + 8)
                        .sum::<u64>()
                    + thinking
                        .iter()
                        .map(|b| match b {
                            ThinkingBlock::Thinking { text: t, signature } => {
                                text(t) + signature.as_deref().map(text).unwrap_or(0)
                            }
                            ThinkingBlock::Redacted { data } => text(data),
                        })
                        .sum::<u64>()
            }
            ChatMessage::ToolResult {
                call_id, content, ..
            } => text(content) + text(call_id) + 8,
        }
}

pub fn messages(ms: &[ChatMessage]) -> u64 {
    ms.iter().map(message).sum()
}

pub fn tools(tools: &[ToolSpec]) -> u64 {
    tools
        .iter()
        .map(|t| text(&t.name) + text(&t.description) + text(&t.parameters.to_string()) + 8)
        .sum()
}

/// The estimated input of a whole request.
pub fn request(r: &ModelRequest) -> u64 {
    text(&r.system) + tools(&r.tools) + messages(&r.messages)
}

/// Tokens the next request will hold, estimated at `next_estimate`, given the last measure.
pub fn in_use(next_estimate: u64, last: Option<Measured>) -> u64 {
    let Some(last) = last else {
        return next_estimate;
    };
    let ratio = last.ratio();
    if next_estimate >= last.estimate {
        // What was added is estimated conservatively: never below one token per estimate.
        let added = (next_estimate - last.estimate) as f64 * ratio.max(1.0);
        last.actual + added.ceil() as u64
    } else {
        // The history shrank (condensed, rewound): scale the whole estimate.
        (next_estimate as f64 * ratio).ceil() as u64
    }
}

/// The inverse: how many estimated tokens fit in `tokens` real ones.
pub fn to_estimate(tokens: u64, last: Option<Measured>) -> u64 {
    let ratio = last.map(|m| m.ratio()).unwrap_or(1.0).max(1.0);
    (tokens as f64 / ratio) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_usage_plus_a_corrected_estimate_of_what_was_added() {
        assert_eq!(in_use(1_000, None), 1_000);
        let last = Measured {
            estimate: 1_000,
            actual: 1_500,
        };
        assert_eq!(in_use(1_400, Some(last)), 1_500 + 600);
        let under = Measured {
            estimate: 1_000,
            actual: 500,
        };
        // Additions are never counted below the estimate itself.
        assert_eq!(in_use(1_400, Some(under)), 900);
        // After condensing, the whole (smaller) estimate is scaled.
        assert_eq!(in_use(400, Some(last)), 600);
        assert_eq!(to_estimate(1_500, Some(last)), 1_000);
    }

    #[test]
    fn a_message_counts_its_calls_and_thinking() {
        let m = ChatMessage::Assistant {
            text: "abcd".into(),
            tool_calls: vec![crate::llm::ToolCall {
                id: "id".into(),
                name: "read_file".into(),
                arguments: "{\"path\":\"a\"}".into(),
            }],
            thinking: vec![ThinkingBlock::Redacted {
                data: "x".repeat(40),
            }],
        };
        assert_eq!(message(&m), 4 + 1 + (3 + 3 + 1 + 8) + 10);
    }
}
