//! A scripted provider that behaves like a real one: it counts tokens, enforces a context
//! window with the real APIs' errors, refuses malformed histories in their words, checks
//! extended-thinking signatures, simulates prompt caching and reports usage on every answer.
//! A `Plan` plays the model. Tokens are request bytes / 4 (rounded up).

mod cache;
mod history;
mod plan;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub use cache::CacheUse;
pub use history::{Conversation, Message, Part};
pub use plan::{
    call_id, is_summary_request, summary_of, Answer, FactsVerdict, LongTaskPlan, Plan,
    SUMMARY_PROMPT_START,
};

use crate::llm_server::{RecordedRequest, Reply, ScriptedServer};
use crate::sse::{anthropic, openai};

/// Which API the provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// `POST /v1/messages`
    Anthropic,
    /// `POST /v1/chat/completions`
    OpenAi,
}

/// How an over-long request is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// 400 with the figures, as the APIs do.
    Figures,
    /// 413 `request_too_large` with no figure at all.
    NoFigure,
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rejection {
    ContextLength,
    RequestTooLarge,
    MalformedHistory,
    Thinking,
    CacheBreakpoints,
    BadRequest,
    NotFound,
}

#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub wire: WireFormat,
    /// The context window in tokens.
    pub window: u64,
    pub overflow: Overflow,
    /// Prefixes shorter than this are never cached.
    pub min_cacheable: u64,
    pub cache_ttl: Duration,
}

impl ProviderConfig {
    pub fn new(wire: WireFormat, window: u64) -> ProviderConfig {
        ProviderConfig {
            wire,
            window,
            overflow: Overflow::Figures,
            min_cacheable: 1024,
            cache_ttl: Duration::from_secs(300),
        }
    }

    pub fn overflow(mut self, overflow: Overflow) -> ProviderConfig {
        self.overflow = overflow;
        self
    }
}

/// What the provider saw and answered; a test reads it with `RealProvider::counters`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Model requests received (window probes not included).
    pub requests: u64,
    pub answered: u64,
    pub rejected: BTreeMap<Rejection, u64>,
    /// The largest request body seen, in tokens (refused ones included).
    pub largest_request_tokens: u64,
    /// Input tokens not served from the cache, summed over answered requests.
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    /// Summary requests answered.
    pub summaries: u64,
    /// The plan's verdict on the planted facts, once it completed.
    pub facts: Option<FactsVerdict>,
}

impl Counters {
    pub fn rejected_for(&self, why: Rejection) -> u64 {
        self.rejected.get(&why).copied().unwrap_or(0)
    }
}

/// Tokens of `bytes` bytes of request: a quarter, rounded up.
pub fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

struct State {
    config: ProviderConfig,
    plan: Box<dyn Plan>,
    cache: cache::PromptCache,
    /// Thinking signatures handed out → the thinking text each was given to.
    signatures: HashMap<String, String>,
    counters: Counters,
    started: Instant,
    skipped: Duration,
}

/// The provider on 127.0.0.1; dropping it stops it.
pub struct RealProvider {
    server: ScriptedServer,
    state: Arc<Mutex<State>>,
}

impl RealProvider {
    /// Starts serving `config.wire`'s endpoint with `plan` as the model.
    pub async fn start(config: ProviderConfig, plan: impl Plan + 'static) -> RealProvider {
        let state = Arc::new(Mutex::new(State {
            cache: cache::PromptCache::new(config.cache_ttl, config.min_cacheable),
            config,
            plan: Box::new(plan),
            signatures: HashMap::new(),
            counters: Counters::default(),
            started: Instant::now(),
            skipped: Duration::ZERO,
        }));
        let shared = state.clone();
        let responder = Arc::new(move |req: &RecordedRequest| {
            let mut state = shared.lock().unwrap_or_else(|e| e.into_inner());
            state.respond(req)
        });
        let server = ScriptedServer::start_with(responder).await;
        RealProvider { server, state }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The server underneath: recorded requests, window probes, `on_get` replies.
    pub fn server(&self) -> &ScriptedServer {
        &self.server
    }

    pub fn counters(&self) -> Counters {
        self.state().counters.clone()
    }

    /// Moves the provider's clock forward (cache entries expire after `cache_ttl`).
    pub fn advance_clock(&self, by: Duration) {
        self.state().skipped += by;
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A refusal: why, and the reply the real API would give.
struct Refusal(Rejection, Reply);

impl State {
    fn respond(&mut self, req: &RecordedRequest) -> Reply {
        self.counters.requests += 1;
        match self.answer(req) {
            Ok(reply) => {
                self.counters.answered += 1;
                reply
            }
            Err(Refusal(why, reply)) => {
                *self.counters.rejected.entry(why).or_default() += 1;
                reply
            }
        }
    }

    fn refuse(&self, why: Rejection, status: u16, message: &str, param: &str) -> Refusal {
        let reply = match self.config.wire {
            WireFormat::Anthropic => {
                let kind = match why {
                    Rejection::RequestTooLarge => "request_too_large",
                    Rejection::NotFound => "not_found_error",
                    _ => "invalid_request_error",
                };
                anthropic::error_json(status, kind, message)
            }
            WireFormat::OpenAi => {
                let code = match why {
                    Rejection::ContextLength => json!("context_length_exceeded"),
                    Rejection::RequestTooLarge => json!("request_too_large"),
                    _ => Value::Null,
                };
                let param = if param.is_empty() {
                    Value::Null
                } else {
                    json!(param)
                };
                let error = json!({"message": message, "type": "invalid_request_error",
                    "param": param, "code": code});
                Reply::json(status, &json!({ "error": error }))
            }
        };
        Refusal(why, reply)
    }

    fn answer(&mut self, req: &RecordedRequest) -> Result<Reply, Refusal> {
        let wire = self.config.wire;
        let bare = req.path.split('?').next().unwrap_or_default();
        let endpoint = match wire {
            WireFormat::Anthropic => "/v1/messages",
            WireFormat::OpenAi => "/v1/chat/completions",
        };
        if req.method != "POST" || !bare.ends_with(endpoint) {
            let message = format!("Not found: {} {bare}", req.method);
            return Err(self.refuse(Rejection::NotFound, 404, &message, ""));
        }
        let body: Value = serde_json::from_str(&req.body).map_err(|e| {
            let message = format!("The request body is not valid JSON: {e}");
            self.refuse(Rejection::BadRequest, 400, &message, "")
        })?;
        let input = tokens(req.body.len());
        let largest = &mut self.counters.largest_request_tokens;
        *largest = (*largest).max(input);

        self.check_history(&body)?;
        self.check_window(&body, input)?;

        let now = self.started.elapsed() + self.skipped;
        let (cache, cached) = match wire {
            WireFormat::Anthropic => (self.cache.anthropic(&body, now), 0),
            WireFormat::OpenAi => (CacheUse::default(), self.cache.openai(&req.body, now)),
        };
        let conversation = Conversation::read(wire, &body);
        let answer = if is_summary_request(&conversation) {
            self.counters.summaries += 1;
            Answer::Text(summary_of(&conversation))
        } else {
            let answer = self.plan.answer(&conversation, wire);
            self.counters.facts = self.plan.verdict();
            answer
        };
        let thinking = matches!(
            body["thinking"]["type"].as_str(),
            Some("enabled" | "adaptive")
        );
        Ok(match wire {
            WireFormat::Anthropic => self.anthropic_reply(answer, input, cache, thinking),
            WireFormat::OpenAi => {
                let usage = body["stream_options"]["include_usage"] == true;
                self.openai_reply(answer, input, cached, usage)
            }
        })
    }

    fn check_history(&self, body: &Value) -> Result<(), Refusal> {
        let bad = |message: String, param: String| {
            self.refuse(Rejection::MalformedHistory, 400, &message, &param)
        };
        match self.config.wire {
            WireFormat::Anthropic => {
                if let Some(message) = history::anthropic_refusal(body) {
                    return Err(bad(message, String::new()));
                }
                if let Some(message) = cache::breakpoint_refusal(body) {
                    return Err(self.refuse(Rejection::CacheBreakpoints, 400, &message, ""));
                }
                if matches!(
                    body["thinking"]["type"].as_str(),
                    Some("enabled" | "adaptive")
                ) {
                    let issued =
                        |sig: &str, text: &str| self.signatures.get(sig).is_some_and(|t| t == text);
                    if let Some(message) = history::thinking_refusal(body, issued) {
                        return Err(self.refuse(Rejection::Thinking, 400, &message, ""));
                    }
                }
            }
            WireFormat::OpenAi => {
                if let Some((message, param)) = history::openai_refusal(body) {
                    return Err(bad(message, param));
                }
            }
        }
        Ok(())
    }

    fn check_window(&self, body: &Value, input: u64) -> Result<(), Refusal> {
        let window = self.config.window;
        let max = match self.config.wire {
            WireFormat::Anthropic => body["max_tokens"].as_u64(),
            WireFormat::OpenAi => body["max_tokens"]
                .as_u64()
                .or_else(|| body["max_completion_tokens"].as_u64()),
        };
        let Some(max) = max.or(match self.config.wire {
            WireFormat::OpenAi => Some(0),
            WireFormat::Anthropic => None,
        }) else {
            let refusal = "max_tokens: Field required".to_string();
            return Err(self.refuse(Rejection::BadRequest, 400, &refusal, ""));
        };
        if input + max <= window {
            return Ok(());
        }
        if self.config.overflow == Overflow::NoFigure {
            let message = match self.config.wire {
                WireFormat::Anthropic => "Request exceeds the maximum size",
                WireFormat::OpenAi => "Request too large",
            };
            return Err(self.refuse(Rejection::RequestTooLarge, 413, message, ""));
        }
        let message = match (self.config.wire, input > window) {
            (WireFormat::Anthropic, true) => {
                format!("prompt is too long: {input} tokens > {window} maximum")
            }
            (WireFormat::Anthropic, false) => format!(
                "input length and `max_tokens` exceed context limit: {input} + {max} > \
                 {window}, decrease input length or `max_tokens` and try again"
            ),
            (WireFormat::OpenAi, true) => format!(
                "This model's maximum context length is {window} tokens. However, your \
                 messages resulted in {input} tokens. Please reduce the length of the messages."
            ),
            (WireFormat::OpenAi, false) => format!(
                "This model's maximum context length is {window} tokens. However, you \
                 requested {} tokens ({input} in the messages, {max} in the completion). \
                 Please reduce the length of the messages or completion.",
                input + max
            ),
        };
        Err(self.refuse(Rejection::ContextLength, 400, &message, "messages"))
    }

    fn count_output(&mut self, answer: &Answer, extra: usize) -> u64 {
        let bytes = match answer {
            Answer::Text(t) => t.len(),
            Answer::Tool { text, input, .. } => text.len() + input.to_string().len(),
        };
        let out = tokens(bytes + extra).max(1);
        self.counters.output_tokens += out;
        out
    }

    fn anthropic_reply(
        &mut self,
        answer: Answer,
        input: u64,
        cache: CacheUse,
        think: bool,
    ) -> Reply {
        let mut turn = anthropic::turn();
        let mut extra = 0;
        if think {
            let thought = format!(
                "The request holds {} tokens; I follow the plan and take the next step.",
                input
            );
            let signature = signature_for(&thought, self.signatures.len());
            self.signatures.insert(signature.clone(), thought.clone());
            extra = thought.len();
            turn = turn.thinking(&thought, &signature);
        }
        let output = self.count_output(&answer, extra);
        turn = match answer {
            Answer::Text(t) => turn.text(&t),
            Answer::Tool {
                text,
                id,
                name,
                input,
            } if text.is_empty() => turn.tool_use(&id, &name, input),
            Answer::Tool {
                text,
                id,
                name,
                input,
            } => turn.text(&text).tool_use(&id, &name, input),
        };
        // Prefixes are measured re-serialized; a client's looser JSON must not push this below zero.
        let uncached = input.saturating_sub(cache.read + cache.written);
        self.counters.input_tokens += uncached;
        self.counters.cache_read_tokens += cache.read;
        self.counters.cache_write_tokens += cache.written;
        turn.usage(uncached, output)
            .cache_usage(cache.written, cache.read)
            .reply()
    }

    fn openai_reply(&mut self, answer: Answer, input: u64, cached: u64, usage: bool) -> Reply {
        let output = self.count_output(&answer, 0);
        let mut turn = match answer {
            Answer::Text(t) => openai::turn().text(&t),
            Answer::Tool {
                text,
                id,
                name,
                input,
            } if text.is_empty() => openai::turn().tool_call(&id, &name, input),
            Answer::Tool {
                text,
                id,
                name,
                input,
            } => openai::turn().text(&text).tool_call(&id, &name, input),
        };
        self.counters.input_tokens += input - cached;
        self.counters.cache_read_tokens += cached;
        if usage {
            turn = turn.usage(input, output).cached_tokens(cached);
        }
        turn.reply()
    }
}

/// An opaque signature, unique per thinking block, shaped like the API's base64.
fn signature_for(thought: &str, n: usize) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (thought, n).hash(&mut h);
    format!("ErUBCkYIBRgCIkB{:016x}{n:08}Scripted", h.finish())
}
