//! The long task the context-window tests and benchmark share: an intent over `docs/`, an
//! objective, and documents to read, the first of which holds a fact the task must still know
//! at its end.

pub const INTENTS: &str = "active_intents:\n  - id: INT-001\n    name: Docs\n    status: IN_PROGRESS\n    owned_scope: [\"docs/**\"]\n";
pub const OBJECTIVE: &str = "Objective: read every document and say what the build uses";
pub const FACT: &str = "FACT-ALPHA: the build uses cargo";

/// Document `n`, of about `tokens` tokens; the first one holds the fact.
pub fn document(n: usize, tokens: usize) -> String {
    let mut text = String::new();
    if n == 0 {
        text.push_str(FACT);
        text.push('\n');
    }
    let line = format!("Document {n}: a line about the parser and its tests, kept for length.\n");
    while text.len() < tokens * 4 {
        text.push_str(&line);
    }
    text
}

/// `count` documents as `(docs/dNNN.txt, text)`.
pub fn documents(count: usize, tokens: usize) -> Vec<(String, String)> {
    (0..count)
        .map(|n| (format!("docs/d{n:03}.txt"), document(n, tokens)))
        .collect()
}
