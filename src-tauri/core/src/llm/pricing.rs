//! What Mandate knows of model families without asking anyone: the context window, the most
//! the model may write in one answer, and prices in US dollars per million tokens (input,
//! output, cache read, cache write). Matched by the longest prefix of the model's name (after
//! any `vendor/` part, as OpenRouter names models). An unknown model has no facts: its cost is
//! unknown, never a wrong number, and its window comes from the provider or its errors.

use crate::protocol::ModelPrices;

/// One model family's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelFacts {
    pub prefix: &'static str,
    pub context_window: u64,
    pub max_output: u64,
    /// Dollars per million input tokens (billed at the full price).
    pub input: f64,
    pub output: f64,
    /// Dollars per million input tokens read from the prompt cache.
    pub cache_read: f64,
    /// Dollars per million input tokens written to the prompt cache.
    pub cache_write: f64,
}

const fn m(
    prefix: &'static str,
    context_window: u64,
    max_output: u64,
    (input, output, cache_read, cache_write): (f64, f64, f64, f64),
) -> ModelFacts {
    ModelFacts {
        prefix,
        context_window,
        max_output,
        input,
        output,
        cache_read,
        cache_write,
    }
}

/// Anthropic: cache write (5-minute) 1.25x input, read 0.1x. OpenAI and DeepSeek: automatic
/// caching, read at the published cached-input price, writes free. Figures from the providers'
/// model pages as of late 2026; a family whose price is given only as a range (Claude Haiku
/// 5.5) or could not be checked (Claude Opus 4.7, Gemini 3) is left out, so it costs "unknown".
/// Long-context surcharges (OpenAI above 272K, Gemini above 200K input) are not modelled.
const FACTS: &[ModelFacts] = &[
    m(
        "claude-fable-5-1",
        1_000_000,
        128_000,
        (10.0, 50.0, 1.0, 12.5),
    ),
    m("claude-opus-5-5", 1_000_000, 128_000, (4.0, 20.0, 0.4, 5.0)),
    m("claude-opus-5", 1_000_000, 128_000, (5.0, 25.0, 0.5, 6.25)),
    m(
        "claude-opus-4-8",
        1_000_000,
        128_000,
        (5.0, 25.0, 0.5, 6.25),
    ),
    m(
        "claude-opus-4-6",
        1_000_000,
        128_000,
        (5.0, 25.0, 0.5, 6.25),
    ),
    m("claude-opus-4-5", 200_000, 64_000, (5.0, 25.0, 0.5, 6.25)),
    m("claude-opus-4-1", 200_000, 32_000, (15.0, 75.0, 1.5, 18.75)),
    // Opus 4 itself (`claude-opus-4-20250514`, `claude-opus-4-0`), not every later 4.x.
    m(
        "claude-opus-4-20250514",
        200_000,
        32_000,
        (15.0, 75.0, 1.5, 18.75),
    ),
    m("claude-opus-4-0", 200_000, 32_000, (15.0, 75.0, 1.5, 18.75)),
    m(
        "claude-sonnet-5-5",
        1_000_000,
        128_000,
        (2.0, 10.0, 0.2, 2.5),
    ),
    m("claude-sonnet-5", 1_000_000, 128_000, (2.0, 10.0, 0.2, 2.5)),
    m(
        "claude-sonnet-4-6",
        1_000_000,
        128_000,
        (3.0, 15.0, 0.3, 3.75),
    ),
    // Sonnet 4 and 4.5: 200K unless the 1M beta is asked for, which Mandate does not.
    m("claude-sonnet-4", 200_000, 64_000, (3.0, 15.0, 0.3, 3.75)),
    m("claude-3-7-sonnet", 200_000, 64_000, (3.0, 15.0, 0.3, 3.75)),
    m("claude-3-5-sonnet", 200_000, 8_192, (3.0, 15.0, 0.3, 3.75)),
    m("claude-haiku-4", 200_000, 64_000, (1.0, 5.0, 0.1, 1.25)),
    m("claude-3-5-haiku", 200_000, 8_192, (0.8, 4.0, 0.08, 1.0)),
    m("claude-3-haiku", 200_000, 4_096, (0.25, 1.25, 0.03, 0.3)),
    m("gpt-5.5-pro", 1_000_000, 128_000, (30.0, 180.0, 30.0, 0.0)),
    m("gpt-5.5", 1_000_000, 128_000, (5.0, 30.0, 0.5, 0.0)),
    m("gpt-5.4-pro", 1_000_000, 128_000, (30.0, 180.0, 30.0, 0.0)),
    m("gpt-5.4-nano", 1_000_000, 128_000, (0.2, 1.25, 0.02, 0.0)),
    m("gpt-5.4-mini", 1_000_000, 128_000, (0.75, 4.5, 0.075, 0.0)),
    m("gpt-5.4", 1_000_000, 128_000, (2.5, 15.0, 0.25, 0.0)),
    m("gpt-5.2-pro", 400_000, 128_000, (21.0, 168.0, 21.0, 0.0)),
    m("gpt-5.2", 400_000, 128_000, (1.75, 14.0, 0.175, 0.0)),
    m(
        "gpt-5.1-codex-mini",
        400_000,
        128_000,
        (0.25, 2.0, 0.025, 0.0),
    ),
    m("gpt-5.1", 400_000, 128_000, (1.25, 10.0, 0.125, 0.0)),
    m("gpt-5-pro", 400_000, 272_000, (15.0, 120.0, 15.0, 0.0)),
    m("gpt-5-nano", 400_000, 128_000, (0.05, 0.4, 0.005, 0.0)),
    m("gpt-5-mini", 400_000, 128_000, (0.25, 2.0, 0.025, 0.0)),
    m("gpt-5", 400_000, 128_000, (1.25, 10.0, 0.125, 0.0)),
    m("gpt-4.1-mini", 1_047_576, 32_768, (0.4, 1.6, 0.1, 0.0)),
    m("gpt-4.1-nano", 1_047_576, 32_768, (0.1, 0.4, 0.025, 0.0)),
    m("gpt-4.1", 1_047_576, 32_768, (2.0, 8.0, 0.5, 0.0)),
    m("gpt-4o-mini", 128_000, 16_384, (0.15, 0.6, 0.075, 0.0)),
    m("gpt-4o", 128_000, 16_384, (2.5, 10.0, 1.25, 0.0)),
    m("o4-mini", 200_000, 100_000, (1.1, 4.4, 0.275, 0.0)),
    m("o3-pro", 200_000, 100_000, (20.0, 80.0, 20.0, 0.0)),
    m("o3-mini", 200_000, 100_000, (1.1, 4.4, 0.55, 0.0)),
    m("o3", 200_000, 100_000, (2.0, 8.0, 0.5, 0.0)),
    m("o1-pro", 200_000, 100_000, (150.0, 600.0, 150.0, 0.0)),
    m("o1", 200_000, 100_000, (15.0, 60.0, 7.5, 0.0)),
    // DeepSeek V3.2 behind both names: one price, cache hits a tenth of a miss.
    m("deepseek-chat", 128_000, 8_192, (0.28, 0.42, 0.028, 0.0)),
    m(
        "deepseek-reasoner",
        128_000,
        65_536,
        (0.28, 0.42, 0.028, 0.0),
    ),
    m("gemini-2.5-pro", 1_048_576, 65_536, (1.25, 10.0, 0.31, 0.0)),
    m(
        "gemini-2.5-flash",
        1_048_576,
        65_536,
        (0.3, 2.5, 0.075, 0.0),
    ),
];

/// The facts of the family `model` belongs to, if it is a known one. A prefix must end where a
/// version does: `gpt-5` is not `gpt-5.3`, `o1` is not `o10`, so a newer model is unknown
/// rather than priced as an older one.
pub fn model_facts(model: &str) -> Option<&'static ModelFacts> {
    let name = model.rsplit('/').next().unwrap_or(model);
    FACTS
        .iter()
        .filter(|f| {
            name.strip_prefix(f.prefix)
                .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
        })
        .max_by_key(|f| f.prefix.len())
}

/// The prices the person set in Settings, by `provider/model` (see `set_overrides`).
static OVERRIDES: std::sync::RwLock<Vec<(String, ModelPrices)>> =
    std::sync::RwLock::new(Vec::new());

/// The person's prices: each Settings row that names prices, for its model.
pub fn set_overrides(models: &[crate::protocol::ModelOverride]) {
    let rows = models
        .iter()
        .filter_map(|m| m.prices.map(|p| (m.model.clone(), p)))
        .collect();
    *OVERRIDES.write().unwrap_or_else(|p| p.into_inner()) = rows;
}

/// Input, output, cache read and cache write, per million tokens: the person's for the model
/// (its row names it as `provider/model`; `model` may come with or without the provider),
/// else the table's; None for a model neither knows.
pub fn prices(model: &str) -> Option<(f64, f64, f64, f64)> {
    prices_in(&OVERRIDES.read().unwrap_or_else(|p| p.into_inner()), model)
}

fn prices_in(rows: &[(String, ModelPrices)], model: &str) -> Option<(f64, f64, f64, f64)> {
    let bare = model.split_once('/').map_or(model, |(_, m)| m);
    let table = model_facts(model);
    let own = rows
        .iter()
        .find(|(name, _)| name == model || name.split_once('/').map(|(_, m)| m) == Some(bare));
    match (own, table) {
        (Some((_, p)), t) => Some((
            p.input,
            p.output,
            p.cache_read.or(t.map(|f| f.cache_read)).unwrap_or(p.input),
            p.cache_write
                .or(t.map(|f| f.cache_write))
                .unwrap_or(p.input),
        )),
        (None, Some(f)) => Some((f.input, f.output, f.cache_read, f.cache_write)),
        (None, None) => None,
    }
}

/// The cost of one request's tokens at the person's or the table's prices, if either knows
/// the model.
pub fn estimate(model: &str, usage: &super::TokenUsage) -> Option<f64> {
    cost_at(prices(model)?, usage)
}

fn cost_at(
    (input, output, cache_read, cache_write): (f64, f64, f64, f64),
    usage: &super::TokenUsage,
) -> Option<f64> {
    let dollars = usage.input_tokens as f64 * input
        + usage.output_tokens as f64 * output
        + usage.cache_read_tokens as f64 * cache_read
        + usage.cache_write_tokens as f64 * cache_write;
    Some(dollars / 1_000_000.0)
}

/// What the cache reads saved against paying the full input price for them.
pub fn cache_savings(model: &str, usage: &super::TokenUsage) -> Option<f64> {
    let (input, _, cache_read, _) = prices(model)?;
    Some(usage.cache_read_tokens as f64 * (input - cache_read) / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    use super::super::TokenUsage;

    #[test]
    fn longest_prefix_wins_and_unknown_models_have_no_cost() {
        let usage = TokenUsage {
            input_tokens: 1_000_000,
            ..TokenUsage::default()
        };
        let mini = super::estimate("openai/gpt-4.1-mini", &usage).expect("known");
        assert!((mini - 0.4).abs() < 1e-9);
        assert_eq!(super::estimate("llama3.2", &usage), None);
        assert_eq!(
            super::model_facts("claude-opus-4-5-20251101").map(|f| f.input),
            Some(5.0)
        );
    }

    #[test]
    fn a_newer_version_is_not_priced_as_an_older_one() {
        let input = |model: &str| super::model_facts(model).map(|f| f.input);
        assert_eq!(input("claude-opus-4-20250514"), Some(15.0));
        assert_eq!(input("claude-opus-4-6"), Some(5.0));
        assert_eq!(input("claude-opus-4-7"), None);
        assert_eq!(input("claude-sonnet-4-5-20250929"), Some(3.0));
        assert_eq!(input("anthropic/claude-sonnet-5-5"), Some(2.0));
        assert_eq!(input("gpt-5-2025-08-07"), Some(1.25));
        assert_eq!(input("gpt-5.3"), None);
        assert_eq!(input("openai/gpt-5.4-mini"), Some(0.75));
        assert_eq!(input("o10"), None);
        assert_eq!(input("o3-pro-2025-06-10"), Some(20.0));
        assert_eq!(input("qwen3-coder:30b"), None);
        assert_eq!(input("llama3.3:70b"), None);
    }

    #[test]
    fn cache_reads_and_writes_are_priced_apart() {
        let usage = TokenUsage {
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 1_000_000,
            cost_usd: None,
        };
        let cost = super::estimate("claude-sonnet-4-5", &usage).expect("known");
        assert!((cost - (0.3 + 3.75)).abs() < 1e-9);
        let saved = super::cache_savings("claude-sonnet-4-5", &usage).expect("known");
        assert!((saved - 2.7).abs() < 1e-9);
    }

    #[test]
    fn the_persons_prices_come_before_the_tables_and_price_an_unknown_model() {
        use crate::protocol::{ModelOverride, ModelPrices};
        let usage = TokenUsage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 0,
            cost_usd: None,
        };
        let unknown = "my-local-finetune-7f3a";
        assert_eq!(super::estimate(unknown, &usage), None, "unknown: no number");
        let own = ModelPrices {
            input: 1.0,
            output: 2.0,
            cache_read: None,
            cache_write: None,
        };
        let rows = vec![(format!("openai/{unknown}"), own)];
        let cost = |model: &str| super::cost_at(super::prices_in(&rows, model)?, &usage);
        // No cache price given and none in the table: a read costs the input price.
        assert!((cost(unknown).expect("priced") - 4.0).abs() < 1e-9);
        assert!((cost(&format!("openai/{unknown}")).expect("priced") - 4.0).abs() < 1e-9);
        // A known model's own prices win; its cache price comes from the table.
        let rows = vec![("openai/gpt-4.1".to_string(), own)];
        let priced = super::prices_in(&rows, "gpt-4.1").expect("priced");
        assert_eq!(priced, (1.0, 2.0, 0.5, 0.0));
        // The setter keeps only rows that name prices.
        super::set_overrides(&[ModelOverride {
            model: "openai/no-prices-here".into(),
            ..ModelOverride::default()
        }]);
        assert_eq!(super::estimate("no-prices-here", &usage), None);
    }
}
