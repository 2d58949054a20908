//! A small price table to estimate the cost of a task when the provider reports tokens but not
//! money. Prices are US dollars per million tokens (input, output) and are an estimate: the UI
//! marks them as such. Unknown models get no cost rather than a wrong one.

const PRICES: &[(&str, f64, f64)] = &[
    ("claude-opus-4", 15.0, 75.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("claude-3-5-sonnet", 3.0, 15.0),
    ("claude-haiku-4", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("gpt-4.1-mini", 0.4, 1.6),
    ("gpt-4.1-nano", 0.1, 0.4),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4o-mini", 0.15, 0.6),
    ("gpt-4o", 2.5, 10.0),
    ("o4-mini", 1.1, 4.4),
    ("o3", 2.0, 8.0),
];

pub fn estimate(model: &str, input_tokens: u64, output_tokens: u64) -> Option<f64> {
    // OpenRouter names models `vendor/model`; match on the model part, longest prefix first.
    let name = model.rsplit('/').next().unwrap_or(model);
    let (_, input, output) = PRICES
        .iter()
        .filter(|(prefix, _, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())?;
    Some((input_tokens as f64 * input + output_tokens as f64 * output) / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn longest_prefix_wins_and_unknown_models_have_no_cost() {
        let mini = super::estimate("openai/gpt-4.1-mini", 1_000_000, 0).expect("known");
        assert!((mini - 0.4).abs() < 1e-9);
        assert_eq!(super::estimate("llama3.2", 10, 10), None);
    }
}
