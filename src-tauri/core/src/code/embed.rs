//! Optional embeddings for `codebase_search`: only from an OpenAI-compatible `/embeddings`
//! endpoint the person configured in Settings (a local embedding model, typically), never
//! required. The words' ranking (BM25) picks the candidates; the endpoint's vectors rank them
//! again by meaning, and the two scores are fused (each scaled to the pool, meaning weighing
//! more), so a result the words found well still counts. Vectors are kept in memory by the text's
//! hash. When the endpoint fails, the search says so and answers by words alone.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::Hit;

/// Vectors kept in memory, at most.
const CACHED: usize = 20_000;
/// How much the meaning counts against the words (the rest).
const MEANING: f64 = 0.7;
const TIMEOUT: Duration = Duration::from_secs(30);
/// Texts sent in one request.
const BATCH: usize = 64;

/// Where embeddings come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Up to and including `/v1`, as for an OpenAI-compatible provider.
    pub base_url: String,
    pub model: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EmbedError {
    #[error("could not reach the embeddings endpoint {url}: {message}")]
    Connect { url: String, message: String },
    #[error("the embeddings endpoint answered {status}: {message}")]
    Status { status: u16, message: String },
    #[error("the embeddings endpoint's answer is not what OpenAI's /embeddings returns: {0}")]
    Malformed(String),
}

pub struct Embedder {
    pub endpoint: Endpoint,
    cache: Mutex<HashMap<[u8; 32], Vec<f32>>>,
}

impl Embedder {
    pub fn new(endpoint: Endpoint) -> Self {
        Self {
            endpoint,
            cache: Mutex::default(),
        }
    }

    /// A vector for each text, in order (from the cache where it can).
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| Sha256::digest(t).into()).collect();
        let missing: Vec<usize> = {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            (0..texts.len())
                .filter(|i| !cache.contains_key(&keys[*i]))
                .collect()
        };
        for batch in missing.chunks(BATCH) {
            let input: Vec<&str> = batch.iter().map(|i| texts[*i].as_str()).collect();
            let vectors = self.request(&input).await?;
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if cache.len() + vectors.len() > CACHED {
                cache.clear();
            }
            for (i, v) in batch.iter().zip(vectors) {
                cache.insert(keys[*i], v);
            }
        }
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        keys.iter()
            .map(|k| {
                cache
                    .get(k)
                    .cloned()
                    .ok_or_else(|| EmbedError::Malformed("a vector went missing".into()))
            })
            .collect()
    }

    async fn request(&self, input: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let url = format!(
            "{}/embeddings",
            self.endpoint.base_url.trim_end_matches('/')
        );
        let connect = |e: reqwest::Error| EmbedError::Connect {
            url: url.clone(),
            message: e.without_url().to_string(),
        };
        let response = crate::llm::http_client()
            .post(&url)
            .timeout(TIMEOUT)
            .json(&json!({"model": self.endpoint.model, "input": input}))
            .send()
            .await
            .map_err(connect)?;
        let status = response.status();
        let body: Value = match response.json().await {
            Ok(v) => v,
            Err(e) if status.is_success() => return Err(EmbedError::Malformed(e.to_string())),
            Err(_) => Value::Null,
        };
        if !status.is_success() {
            let message = body
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("no message")
                .chars()
                .take(300)
                .collect();
            return Err(EmbedError::Status {
                status: status.as_u16(),
                message,
            });
        }
        parse(&body, input.len())
    }
}

/// The vectors of an `/embeddings` answer, in the order of the input (`index` says it).
fn parse(body: &Value, n: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let data = body
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| EmbedError::Malformed("no `data` list".into()))?;
    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
    for (pos, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .map_or(pos, |i| i as usize);
        let vector: Vec<f32> = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| EmbedError::Malformed(format!("item {pos} has no `embedding`")))?
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<_>>()
            .ok_or_else(|| EmbedError::Malformed(format!("item {pos} holds a non-number")))?;
        if vector.is_empty() {
            return Err(EmbedError::Malformed(format!("item {pos} is empty")));
        }
        *out.get_mut(index)
            .ok_or_else(|| EmbedError::Malformed(format!("index {index} out of range")))? =
            Some(vector);
    }
    let dims = out.first().and_then(|v| v.as_ref()).map(Vec::len);
    out.into_iter()
        .map(|v| match v {
            Some(v) if Some(v.len()) == dims => Ok(v),
            Some(_) => Err(EmbedError::Malformed("vectors of different sizes".into())),
            None => Err(EmbedError::Malformed(format!("{n} texts, fewer vectors"))),
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    match na * nb {
        d if d > 0.0 => dot / d.sqrt(),
        _ => 0.0,
    }
}

/// Scores scaled to 0..=1 over the pool (all equal: all 0).
fn scaled(scores: &[f64]) -> Vec<f64> {
    let lo = scores.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    scores
        .iter()
        .map(|s| match hi - lo {
            d if d > 1e-12 => (s - lo) / d,
            _ => 0.0,
        })
        .collect()
}

/// The words' hits ranked again by their words' score and their meaning's, fused. `score`
/// becomes the fused score (0 to 1).
pub async fn rerank(
    embedder: &Embedder,
    query: &str,
    hits: Vec<Hit>,
) -> Result<Vec<Hit>, EmbedError> {
    if hits.is_empty() {
        return Ok(hits);
    }
    let mut texts = vec![query.to_string()];
    texts.extend(hits.iter().map(|h| format!("{}\n{}", h.path, h.text)));
    let vectors = embedder.embed(&texts).await?;
    let (q, rest) = vectors
        .split_first()
        .ok_or_else(|| EmbedError::Malformed("no vectors".into()))?;
    let meaning = scaled(&rest.iter().map(|v| cosine(q, v)).collect::<Vec<_>>());
    let words = scaled(&hits.iter().map(|h| h.score).collect::<Vec<_>>());
    let mut ranked: Vec<Hit> = hits
        .into_iter()
        .enumerate()
        .map(|(i, mut h)| {
            h.score = MEANING * meaning[i] + (1.0 - MEANING) * words[i];
            h
        })
        .collect();
    // Stable: equal scores keep the words' order.
    ranked.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Ok(ranked)
}
