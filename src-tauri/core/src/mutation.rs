//! Computing a change's mutation class without a parser per language.
//!
//! The texts are split into tokens (identifiers, numbers, string literals, punctuation; whitespace
//! and comments dropped). A change is `AST_REFACTOR` when the token streams are equal (formatting or
//! comments only), when the same lines are only reordered, or when the streams differ only by a
//! consistent one-to-one renaming of identifiers. Anything else adds or changes behaviour:
//! `INTENT_EVOLUTION`. New files are `INTENT_EVOLUTION`.
//!
//! Only the changed middle of the file is tokenized (the common leading and trailing lines are
//! cut first); a rename must also leave no use of the old or the new name in the unchanged part,
//! which is what a consistent rename over the whole file means.

use std::collections::HashMap;

pub use crate::protocol::MutationClass;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub class: MutationClass,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token<'a> {
    Ident(&'a str),
    Other(&'a str),
}

fn tokenize(text: &str) -> Vec<Token<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                i += 1;
            }
            i = (i + 2).min(bytes.len());
        } else if c == b'"' || c == b'\'' || c == b'`' {
            let start = i;
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                if bytes[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(bytes.len());
            out.push(Token::Other(&text[start..i]));
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80 {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric()
                    || bytes[i] == b'_'
                    || bytes[i] == b'$'
                    || bytes[i] >= 0x80)
            {
                i += 1;
            }
            out.push(Token::Ident(&text[start..i]));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.' || bytes[i] == b'_')
            {
                i += 1;
            }
            out.push(Token::Other(&text[start..i]));
        } else {
            out.push(Token::Other(&text[i..i + 1]));
            i += 1;
        }
    }
    out
}

const KEYWORDS: &[&str] = &[
    "if",
    "else",
    "for",
    "while",
    "loop",
    "return",
    "fn",
    "function",
    "def",
    "class",
    "struct",
    "enum",
    "impl",
    "let",
    "const",
    "var",
    "mut",
    "pub",
    "use",
    "import",
    "from",
    "export",
    "match",
    "true",
    "false",
    "null",
    "None",
    "True",
    "False",
    "async",
    "await",
    "break",
    "continue",
    "new",
    "try",
    "catch",
    "throw",
    "static",
    "public",
    "private",
    "self",
    "this",
    "in",
    "of",
    "and",
    "or",
    "not",
    "is",
    "type",
    "interface",
    "extends",
    "mod",
    "crate",
    "super",
    "where",
    "as",
];

/// Identifier renames that turn `old` into `new`, if the streams differ only by renames.
fn consistent_renames<'a>(old: &[Token<'a>], new: &[Token<'a>]) -> Option<Vec<(&'a str, &'a str)>> {
    if old.len() != new.len() {
        return None;
    }
    let mut forward: HashMap<&str, &str> = HashMap::new();
    let mut backward: HashMap<&str, &str> = HashMap::new();
    for (a, b) in old.iter().zip(new) {
        match (a, b) {
            (Token::Other(x), Token::Other(y)) if x == y => {}
            (Token::Ident(x), Token::Ident(y)) => {
                if x != y && (KEYWORDS.contains(x) || KEYWORDS.contains(y)) {
                    return None;
                }
                if *forward.entry(x).or_insert(y) != *y || *backward.entry(y).or_insert(x) != *x {
                    return None;
                }
            }
            _ => return None,
        }
    }
    let mut renames: Vec<(&str, &str)> = forward.into_iter().filter(|(a, b)| a != b).collect();
    renames.sort();
    Some(renames)
}

/// The common leading and trailing whole lines of two texts, and their differing middles.
fn split_common<'a>(old: &'a str, new: &'a str) -> (&'a str, &'a str, &'a str, &'a str) {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let mut prefix = ob.iter().zip(nb).take_while(|(a, b)| a == b).count();
    // Back up to the start of a line so that a changed line is compared whole.
    while prefix > 0 && ob[prefix - 1] != b'\n' {
        prefix -= 1;
    }
    let max_suffix = (ob.len() - prefix).min(nb.len() - prefix);
    let mut suffix = ob
        .iter()
        .rev()
        .zip(nb.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    // A suffix that starts mid-line (in either text) is shortened to start a line in both.
    let line_start = |bytes: &[u8], at: usize| at == 0 || bytes[at - 1] == b'\n';
    while suffix > 0 && !(line_start(ob, ob.len() - suffix) && line_start(nb, nb.len() - suffix)) {
        suffix -= 1;
    }
    let old_mid = &old[prefix..old.len() - suffix];
    let new_mid = &new[prefix..new.len() - suffix];
    (&old[..prefix], &old[old.len() - suffix..], old_mid, new_mid)
}

/// Whether `word` occurs in `text` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    let bytes = text.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
    memchr::memmem::find_iter(bytes, word.as_bytes()).any(|at| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + word.len()).copied();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

pub fn classify(old: Option<&str>, new: &str) -> Classified {
    let Some(whole_old) = old else {
        return Classified {
            class: MutationClass::IntentEvolution,
            reason: "a new file".into(),
        };
    };
    let (head, tail, old, new) = split_common(whole_old, new);
    let (a, b) = (tokenize(old), tokenize(new));
    if a == b {
        return Classified {
            class: MutationClass::AstRefactor,
            reason: "only formatting or comments changed".into(),
        };
    }
    fn sorted_lines(t: &str) -> Vec<&str> {
        let mut lines: Vec<&str> = t.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        lines.sort_unstable();
        lines
    }
    if sorted_lines(old) == sorted_lines(new) {
        return Classified {
            class: MutationClass::AstRefactor,
            reason: "the same lines, moved".into(),
        };
    }
    let unchanged_uses = |name: &str| has_word(head, name) || has_word(tail, name);
    if let Some(renames) = consistent_renames(&a, &b).filter(|r| {
        !r.iter()
            .any(|(x, y)| unchanged_uses(x) || unchanged_uses(y))
    }) {
        let list: Vec<String> = renames
            .iter()
            .take(5)
            .map(|(x, y)| format!("{x} -> {y}"))
            .collect();
        return Classified {
            class: MutationClass::AstRefactor,
            reason: format!("consistent renaming: {}", list.join(", ")),
        };
    }
    Classified {
        class: MutationClass::IntentEvolution,
        reason: "the code's tokens changed beyond formatting, moves and renames".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_before_a_whole_old_text_is_split_on_lines() {
        // The old text is entirely a common suffix of the new one (it used to panic).
        assert_eq!(
            classify(Some("A1\n"), "X\nA1\n").class,
            MutationClass::IntentEvolution
        );
        assert_eq!(
            classify(Some("b\n"), "a(b)\n").class,
            MutationClass::IntentEvolution
        );
        assert_eq!(split_common("b\n", "ab\n"), ("", "", "b\n", "ab\n"));
    }

    #[test]
    fn refactors_and_evolutions() {
        let old = "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";
        let cases = [
            (
                "fn add(a: i32, b: i32) -> i32 { a + b }\n",
                MutationClass::AstRefactor,
            ),
            (
                "// sum\nfn add(a: i32, b: i32) -> i32 {\n    a + b // plus\n}\n",
                MutationClass::AstRefactor,
            ),
            (
                "fn sum(x: i32, y: i32) -> i32 {\n    x + y\n}\n",
                MutationClass::AstRefactor,
            ),
            (
                "fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
                MutationClass::IntentEvolution,
            ),
            (
                "fn add(a: i32, b: i32) -> i32 {\n    a + b + 1\n}\n",
                MutationClass::IntentEvolution,
            ),
            (
                "fn add(a: i32, a: i32) -> i32 {\n    a + a\n}\n",
                MutationClass::IntentEvolution,
            ),
            (
                "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\nfn x() {}\n",
                MutationClass::IntentEvolution,
            ),
        ];
        for (new, expected) in cases {
            assert_eq!(classify(Some(old), new).class, expected, "{new}");
        }
        let moved_old = "a();\nb();\nc();\n";
        assert_eq!(
            classify(Some(moved_old), "c();\na();\nb();\n").class,
            MutationClass::AstRefactor
        );
        assert_eq!(classify(None, "x").class, MutationClass::IntentEvolution);
        assert_eq!(
            classify(Some("if x {}"), "while x {}").class,
            MutationClass::IntentEvolution
        );
    }
}
