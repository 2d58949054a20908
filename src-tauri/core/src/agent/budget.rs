//! Budgets: a cap on cost or tokens per task (Settings, `--max-cost`, `--max-tokens`) and per
//! intent (`budget: {max_cost_usd, max_tokens}` on the intent, counting every task that held it).
//! Checked before each request to the model: a task at its cap pauses and says so.

use super::{AgentEnv, TaskHandle};
use crate::protocol::{Budget, Usage};

fn over(usage: &Usage, budget: &Budget) -> Option<String> {
    if let (Some(max), Some(spent)) = (budget.max_cost_usd, usage.cost_usd) {
        if spent >= max {
            return Some(format!("${spent:.4} spent of a ${max:.2} budget"));
        }
    }
    if let Some(max) = budget.max_tokens {
        let used = usage.input_tokens + usage.output_tokens;
        if used >= max {
            return Some(format!("{used} tokens used of a {max}-token budget"));
        }
    }
    None
}

/// The intent's own budget, from its `budget` key in the intents file.
fn intent_budget(env: &AgentEnv, intent_id: &str) -> Option<Budget> {
    let snapshot = env.gov.intents.snapshot();
    let intent = snapshot.doc.get(intent_id)?;
    let value = intent.extra.get("budget")?;
    let json = serde_json::to_value(value).ok()?;
    serde_json::from_value::<Budget>(json).ok()
}

fn add(total: &mut Usage, other: &Usage) {
    total.input_tokens += other.input_tokens;
    total.output_tokens += other.output_tokens;
    total.cost_usd = match (total.cost_usd, other.cost_usd) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
}

/// What the task the person started and all its subtasks spent, with how many subtasks: a
/// task's budget covers the work it hands out, so subtasks cannot multiply it.
fn family_usage(env: &AgentEnv, task: &TaskHandle) -> (Usage, usize) {
    // Each live task's summary read once: (parent, usage) by id.
    let live: std::collections::HashMap<String, (Option<String>, Usage)> = env
        .tasks
        .all()
        .iter()
        .map(|t| {
            let s = t.summary();
            (t.id.clone(), (s.parent_id, s.usage))
        })
        .collect();
    let own = task.summary();
    let root_of = |id: &str| {
        let mut at = id.to_string();
        for _ in 0..=super::subtask::MAX_DEPTH {
            match live.get(&at).and_then(|(p, _)| p.clone()) {
                Some(p) => at = p,
                None => break,
            }
        }
        at
    };
    let root = own.parent_id.as_deref().map_or(task.id.clone(), root_of);
    let mut total = Usage::default();
    let mut members = 0;
    for (id, (_, usage)) in live.iter().filter(|(id, _)| **id != task.id) {
        if root_of(id) == root {
            add(&mut total, usage);
            members += 1;
        }
    }
    add(&mut total, &own.usage);
    (total, members)
}

/// Why the task may not ask the model again, if it may not.
pub fn exceeded(env: &AgentEnv, task: &TaskHandle) -> Option<String> {
    let summary = task.summary();
    if let Some(why) = over(&summary.usage, &env.budget) {
        return Some(format!(
            "The task reached its budget ({why}). Raise the budget in Settings (or with --max-cost / --max-tokens), then retry to go on."
        ));
    }
    if env.budget != Budget::default() {
        let (family, others) = family_usage(env, task);
        if let Some(why) = over(&family, &env.budget).filter(|_| others > 0) {
            return Some(format!(
                "The task and its subtasks reached their budget together ({why}). Raise the budget in Settings (or with --max-cost / --max-tokens), then retry to go on."
            ));
        }
    }
    let intent_id = summary.intent_id?;
    let budget = intent_budget(env, &intent_id)?;
    // Every task that held the intent counts, this one as it is now.
    let mut total = summary.usage.clone();
    for other in env.store.list() {
        if other.id != summary.id && other.intent_id.as_deref() == Some(intent_id.as_str()) {
            add(&mut total, &other.usage);
        }
    }
    over(&total, &budget).map(|why| {
        format!(
            "Intent {intent_id} reached its budget ({why}, over all its tasks). Raise `budget` on the intent, then retry to go on."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_on_cost_and_tokens() {
        let usage = Usage {
            input_tokens: 900,
            output_tokens: 200,
            cost_usd: Some(0.5),
            ..Usage::default()
        };
        assert!(over(&usage, &Budget::default()).is_none());
        let by_tokens = Budget {
            max_cost_usd: None,
            max_tokens: Some(1000),
        };
        assert_eq!(
            over(&usage, &by_tokens).as_deref(),
            Some("1100 tokens used of a 1000-token budget")
        );
        let by_cost = Budget {
            max_cost_usd: Some(0.25),
            max_tokens: None,
        };
        assert!(over(&usage, &by_cost).is_some_and(|m| m.contains("$0.25 budget")));
        // Unknown cost never trips a cost cap.
        let unknown = Usage {
            cost_usd: None,
            ..usage
        };
        assert!(over(&unknown, &by_cost).is_none());
    }
}
