//! Reading a hook's command lines and scripts: shell-like words, and how a file runs.

use std::path::Path;

use super::{is_node, is_python, is_shell, Kind};

/// How a file runs: by its extension, else its `#!` line.
pub(super) fn kind_of(path: &Path, text: &str) -> Kind {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "py" | "pyw" => return Kind::Python,
        "js" | "mjs" | "cjs" | "ts" | "mts" | "cts" => return Kind::Node,
        "sh" | "bash" | "zsh" => return Kind::Shell,
        _ => {}
    }
    let Some(shebang) = text.lines().next().and_then(|l| l.strip_prefix("#!")) else {
        return Kind::Opaque;
    };
    let words: Vec<&str> = shebang.split_whitespace().collect();
    let program = match words.as_slice() {
        [env, rest @ ..] if env.ends_with("/env") => rest
            .iter()
            .find(|w| !w.starts_with('-'))
            .copied()
            .unwrap_or(""),
        [program, ..] => program,
        [] => "",
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    if is_python(name) {
        Kind::Python
    } else if is_node(name) {
        Kind::Node
    } else if is_shell(name) {
        Kind::Shell
    } else {
        Kind::Opaque
    }
}

/// Shell-like words of one command: whitespace separates, quotes join and are removed.
pub(super) fn split_words(segment: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in segment.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() || "()<>`{}".contains(c) => {
                if !word.is_empty() || any {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            None => word.push(c),
        }
        if words.len() >= 256 {
            break;
        }
    }
    if !word.is_empty() || any {
        words.push(word);
    }
    words
}
