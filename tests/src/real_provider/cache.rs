//! The providers' prompt caches, simulated: Anthropic's explicit `cache_control` breakpoints
//! and OpenAI's automatic prefix caching. Time is the provider's own clock, so a test can
//! let an entry expire without waiting five minutes.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde_json::Value;

/// How far back from a breakpoint Anthropic looks for an earlier cached prefix.
const LOOKBACK_BLOCKS: usize = 20;
/// OpenAI reports cached prefixes in steps of this many tokens.
const OPENAI_STEP: u64 = 128;
/// Earlier OpenAI prompts kept for prefix matching.
const OPENAI_KEPT: usize = 32;

/// What one request took from and gave to the cache, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUse {
    pub read: u64,
    pub written: u64,
}

pub struct PromptCache {
    pub ttl: Duration,
    /// Minimum prefix, in tokens, that is cached at all (below it: no error, no cache).
    pub min_tokens: u64,
    /// Anthropic: prefix hash → expiry.
    prefixes: HashMap<u64, Duration>,
    /// OpenAI: earlier request bodies → expiry.
    bodies: Vec<(String, Duration)>,
}

/// A request's cacheable blocks in prefix order (tools → system → messages): for each, the
/// hash of the prefix ending with it, the prefix's tokens, and whether it carries a breakpoint.
struct Prefixes {
    keys: Vec<u64>,
    tokens: Vec<u64>,
    breakpoints: Vec<usize>,
}

fn prefixes(body: &Value) -> Prefixes {
    let mut blocks: Vec<(String, &Value)> = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        blocks.push(("tool".into(), tool));
    }
    match &body["system"] {
        Value::Array(system) => blocks.extend(system.iter().map(|b| ("system".into(), b))),
        Value::Null => {}
        system => blocks.push(("system".into(), system)),
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or_default().to_string();
        match &m["content"] {
            Value::Array(content) => blocks.extend(content.iter().map(|b| (role.clone(), b))),
            content => blocks.push((role, content)),
        }
    }
    let (mut hasher, mut bytes) = (DefaultHasher::new(), 0usize);
    let mut out = Prefixes {
        keys: Vec::new(),
        tokens: Vec::new(),
        breakpoints: Vec::new(),
    };
    for (i, (role, block)) in blocks.into_iter().enumerate() {
        let mut bare = block.clone();
        if let Some(map) = bare.as_object_mut() {
            if map.remove("cache_control").is_some() {
                out.breakpoints.push(i);
            }
        }
        let text = bare.to_string();
        (role, &text).hash(&mut hasher);
        bytes += text.len();
        out.keys.push(hasher.finish());
        out.tokens.push(super::tokens(bytes));
    }
    out
}

/// Anthropic's refusal when a request marks too many blocks.
pub fn breakpoint_refusal(body: &Value) -> Option<String> {
    let found = prefixes(body).breakpoints.len();
    (found > 4).then(|| {
        format!("A maximum of 4 blocks with cache_control may be provided. Found {found}.")
    })
}

impl PromptCache {
    pub fn new(ttl: Duration, min_tokens: u64) -> PromptCache {
        PromptCache {
            ttl,
            min_tokens,
            prefixes: HashMap::new(),
            bodies: Vec::new(),
        }
    }

    /// Reads the longest cached prefix found at or shortly before a breakpoint, then writes
    /// every breakpoint's prefix; what lies between the read and the last breakpoint is written.
    pub fn anthropic(&mut self, body: &Value, now: Duration) -> CacheUse {
        let p = prefixes(body);
        let live = |key: &u64| self.prefixes.get(key).is_some_and(|until| *until > now);
        let mut hit: Option<usize> = None;
        for &b in &p.breakpoints {
            let from = b.saturating_sub(LOOKBACK_BLOCKS - 1);
            let found = (from..=b).rev().find(|&q| live(&p.keys[q]));
            if let Some(q) = found {
                if hit.is_none_or(|h| p.tokens[q] > p.tokens[h]) {
                    hit = Some(q);
                }
            }
        }
        let read = hit.map_or(0, |q| p.tokens[q]);
        if let Some(q) = hit {
            self.prefixes.insert(p.keys[q], now + self.ttl);
        }
        let mut written = 0;
        if let Some(&last) = p.breakpoints.last() {
            if p.tokens[last] >= self.min_tokens && p.tokens[last] > read {
                written = p.tokens[last] - read;
            }
            for &b in &p.breakpoints {
                if p.tokens[b] >= self.min_tokens {
                    self.prefixes.insert(p.keys[b], now + self.ttl);
                }
            }
        }
        CacheUse { read, written }
    }

    /// The cached tokens OpenAI would report: the longest prefix shared with a recent request,
    /// from `min_tokens` up, in steps of 128.
    pub fn openai(&mut self, body: &str, now: Duration) -> u64 {
        self.bodies.retain(|(_, until)| *until > now);
        let shared = |other: &str| {
            let n = other
                .bytes()
                .zip(body.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            // Whole characters only, as a tokenizer would see them.
            (0..=n)
                .rev()
                .find(|&i| body.is_char_boundary(i))
                .unwrap_or(0)
        };
        let best = self
            .bodies
            .iter_mut()
            .map(|(b, until)| (shared(b), until))
            .max_by_key(|(n, _)| *n);
        let mut cached = 0;
        if let Some((bytes, until)) = best {
            let tokens = (bytes / 4) as u64;
            if tokens >= self.min_tokens {
                cached = tokens / OPENAI_STEP * OPENAI_STEP;
                *until = now + self.ttl;
            }
        }
        self.bodies.push((body.to_string(), now + self.ttl));
        if self.bodies.len() > OPENAI_KEPT {
            self.bodies.remove(0);
        }
        cached
    }
}
