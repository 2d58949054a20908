//! Reading one word as bash will expand it: quotes, escapes, globs and braces, parameter and
//! arithmetic expansions, and the command substitutions hidden anywhere inside them.

use brush_parser::ast;
use brush_parser::word::{self as bash_word, Parameter, ParameterExpr, WordPiece};

use super::parse::{
    is_plain_name, options, parse, shorten, ParseError, Reader, Result, Script, Word,
};

impl Reader {
    /// Reads a word. `in_test` is for operands of `[[ … ]]`, where no globbing or splitting
    /// happens.
    pub(super) fn word(&mut self, w: &ast::Word, in_test: bool, into: &mut Script) -> Result<Word> {
        let pieces = bash_word::parse(&w.value, &options())
            .map_err(|e| ParseError(format!("`{}`: {e}", shorten(&w.value))))?;
        let mut word = Word {
            raw: w.value.clone(),
            ..Word::default()
        };
        for piece in &pieces {
            self.piece(&piece.piece, in_test, &mut word, into)?;
        }
        Ok(word)
    }

    /// The command substitutions of an unquoted heredoc body, which expands like `"…"`.
    pub(super) fn heredoc_body(&mut self, body: &str, into: &mut Script) -> Result<Word> {
        let pieces = bash_word::parse_heredoc(body, &options())
            .map_err(|e| ParseError(format!("heredoc: {e}")))?;
        let mut word = Word::default();
        for piece in &pieces {
            self.piece(&piece.piece, true, &mut word, into)?;
        }
        Ok(word)
    }

    fn piece(
        &mut self,
        piece: &WordPiece,
        quoted: bool,
        w: &mut Word,
        into: &mut Script,
    ) -> Result<()> {
        let leading = w.text.is_empty();
        match piece {
            WordPiece::Text(text) if quoted => w.text.push_str(text),
            WordPiece::Text(text) => unquoted_text(text, w),
            WordPiece::SingleQuotedText(text) => {
                w.quoted = true;
                w.text.push_str(text);
            }
            WordPiece::AnsiCQuotedText(text) => {
                w.quoted = true;
                // Escapes are not decoded here, so any backslash makes the value unknown.
                if text.contains('\\') {
                    mark_expansion(w, leading, true);
                }
                w.text.push_str(text);
            }
            WordPiece::DoubleQuotedSequence(pieces) => {
                w.quoted = true;
                for inner in pieces {
                    self.piece(&inner.piece, true, w, into)?;
                }
            }
            WordPiece::GettextDoubleQuotedSequence(pieces) => {
                // `$"…"` is translated at run time, so its value is not what is written.
                w.quoted = true;
                for inner in pieces {
                    self.piece(&inner.piece, true, w, into)?;
                }
                mark_expansion(w, leading, true);
            }
            WordPiece::EscapeSequence(text) => {
                w.quoted = true;
                let escaped = text.strip_prefix('\\').unwrap_or(text);
                if quoted && !matches!(escaped, "$" | "`" | "\"" | "\\" | "\n") {
                    w.text.push_str(text);
                } else {
                    w.text.push_str(escaped.trim_end_matches('\n'));
                }
            }
            WordPiece::TildeExpansion(_) => {
                // A path (or the literal text); it never starts with `-`.
                w.expansion = true;
                w.text.push('~');
            }
            WordPiece::ParameterExpansion(expr) => {
                self.parameter(expr, into)?;
                w.text.push_str(&format!("${{{}}}", parameter_name(expr)));
                mark_expansion(w, leading, quoted);
            }
            WordPiece::CommandSubstitution(text)
            | WordPiece::BackquotedCommandSubstitution(text) => {
                let script = self.nested(|r| parse(text, r.depth))?;
                w.substitutions.push(script);
                w.text.push_str("$(…)");
                mark_expansion(w, leading, quoted);
            }
            WordPiece::ArithmeticExpression(expr) => {
                let mut inner = Script::default();
                self.arithmetic(&expr.value, &mut inner)?;
                into.refusals.append(&mut inner.refusals);
                for found in inner.loose_words {
                    w.substitutions.extend(found.substitutions);
                }
                w.text.push_str("$((…))");
                mark_expansion(w, leading, quoted);
            }
        }
        Ok(())
    }

    /// What a parameter expansion does besides expanding: assign (`${X=…}`), evaluate
    /// arithmetic (`${x:$n}`, `${a[$i]}`), follow a name (`${!x}`), expand a prompt
    /// (`${x@P}`), and the substitutions in its default or pattern words.
    fn parameter(&mut self, expr: &ParameterExpr, into: &mut Script) -> Result<()> {
        let shown = format!("${{{}…}}", parameter_name(expr));
        let (parameter, indirect) = parameter_read(expr);
        refuse_hidden_evaluation(&shown, parameter, indirect, into);
        let words = self.parameter_words(expr, parameter, &shown, into)?;
        for text in words {
            let inner = ast::Word {
                value: text.to_string(),
                loc: None,
            };
            let found = self.nested(|r| r.word(&inner, true, into))?;
            into.loose_words.push(found);
        }
        Ok(())
    }

    /// The words inside a parameter expansion that bash expands too (defaults, patterns,
    /// replacements), after checking the arithmetic of a substring and a prompt expansion.
    fn parameter_words<'e>(
        &mut self,
        expr: &'e ParameterExpr,
        parameter: Option<&Parameter>,
        shown: &str,
        into: &mut Script,
    ) -> Result<Vec<&'e str>> {
        use ParameterExpr as P;
        Ok(match expr {
            P::UseDefaultValues { default_value, .. } => {
                default_value.iter().map(String::as_str).collect()
            }
            P::AssignDefaultValues { default_value, .. } => {
                if let Some(Parameter::Named(name)) = parameter {
                    into.assignments.push((name.clone(), shown.to_string()));
                } else {
                    into.refusals
                        .push(format!("`{shown}` assigns to a parameter"));
                }
                default_value.iter().map(String::as_str).collect()
            }
            P::IndicateErrorIfNullOrUnset { error_message, .. } => {
                error_message.iter().map(String::as_str).collect()
            }
            P::UseAlternativeValue {
                alternative_value, ..
            } => alternative_value.iter().map(String::as_str).collect(),
            P::RemoveSmallestSuffixPattern { pattern, .. }
            | P::RemoveLargestSuffixPattern { pattern, .. }
            | P::RemoveSmallestPrefixPattern { pattern, .. }
            | P::RemoveLargestPrefixPattern { pattern, .. }
            | P::UppercaseFirstChar { pattern, .. }
            | P::UppercasePattern { pattern, .. }
            | P::LowercaseFirstChar { pattern, .. }
            | P::LowercasePattern { pattern, .. } => pattern.iter().map(String::as_str).collect(),
            P::ReplaceSubstring {
                pattern,
                replacement,
                ..
            } => std::iter::once(pattern.as_str())
                .chain(replacement.iter().map(String::as_str))
                .collect(),
            P::Substring { offset, length, .. } => {
                self.arithmetic(&offset.value, into)?;
                if let Some(length) = length {
                    self.arithmetic(&length.value, into)?;
                }
                Vec::new()
            }
            P::Transform { op, .. } => {
                if matches!(op, bash_word::ParameterTransformOp::PromptExpand) {
                    into.refusals.push(format!(
                        "`{shown}` expands a value as a prompt, which runs the commands in it"
                    ));
                }
                Vec::new()
            }
            _ => Vec::new(),
        })
    }
}

/// The parameter an expansion reads (none for `${!prefix*}` and `${!a[@]}`), and whether it is
/// read indirectly (`${!x}`).
fn parameter_read(expr: &ParameterExpr) -> (Option<&Parameter>, bool) {
    use ParameterExpr as P;
    match expr {
        P::Parameter {
            parameter,
            indirect,
        }
        | P::UseDefaultValues {
            parameter,
            indirect,
            ..
        }
        | P::AssignDefaultValues {
            parameter,
            indirect,
            ..
        }
        | P::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            ..
        }
        | P::UseAlternativeValue {
            parameter,
            indirect,
            ..
        }
        | P::ParameterLength {
            parameter,
            indirect,
        }
        | P::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            ..
        }
        | P::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            ..
        }
        | P::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            ..
        }
        | P::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            ..
        }
        | P::Substring {
            parameter,
            indirect,
            ..
        }
        | P::Transform {
            parameter,
            indirect,
            ..
        }
        | P::UppercaseFirstChar {
            parameter,
            indirect,
            ..
        }
        | P::UppercasePattern {
            parameter,
            indirect,
            ..
        }
        | P::LowercaseFirstChar {
            parameter,
            indirect,
            ..
        }
        | P::LowercasePattern {
            parameter,
            indirect,
            ..
        }
        | P::ReplaceSubstring {
            parameter,
            indirect,
            ..
        } => (Some(parameter), *indirect),
        P::VariableNames { .. } | P::MemberKeys { .. } => (None, false),
    }
}

/// Refuses the expansions that evaluate text as code: an indirect name and a non-literal array
/// subscript.
fn refuse_hidden_evaluation(
    shown: &str,
    parameter: Option<&Parameter>,
    indirect: bool,
    into: &mut Script,
) {
    if indirect {
        into.refusals.push(format!(
            "`{shown}` expands a variable named by another one, which can run commands"
        ));
    }
    if let Some(Parameter::NamedWithIndex { index, .. }) = parameter {
        if !index.trim().chars().all(|c| c.is_ascii_digit()) || index.trim().is_empty() {
            into.refusals.push(format!(
                "`{shown}`: an array subscript is evaluated as arithmetic, which can run commands"
            ));
        }
    }
}

/// The name an expansion reads, for display.
fn parameter_name(expr: &ParameterExpr) -> String {
    use ParameterExpr as P;
    match expr {
        P::Parameter { parameter, .. }
        | P::UseDefaultValues { parameter, .. }
        | P::AssignDefaultValues { parameter, .. }
        | P::IndicateErrorIfNullOrUnset { parameter, .. }
        | P::UseAlternativeValue { parameter, .. }
        | P::ParameterLength { parameter, .. }
        | P::RemoveSmallestSuffixPattern { parameter, .. }
        | P::RemoveLargestSuffixPattern { parameter, .. }
        | P::RemoveSmallestPrefixPattern { parameter, .. }
        | P::RemoveLargestPrefixPattern { parameter, .. }
        | P::Substring { parameter, .. }
        | P::Transform { parameter, .. }
        | P::UppercaseFirstChar { parameter, .. }
        | P::UppercasePattern { parameter, .. }
        | P::LowercaseFirstChar { parameter, .. }
        | P::LowercasePattern { parameter, .. }
        | P::ReplaceSubstring { parameter, .. } => match parameter {
            Parameter::Positional(n) => n.to_string(),
            Parameter::Special(s) => s.to_string(),
            Parameter::Named(name)
            | Parameter::NamedWithIndex { name, .. }
            | Parameter::NamedWithAllIndices { name, .. } => name.clone(),
        },
        P::VariableNames { prefix, .. } => format!("!{prefix}"),
        P::MemberKeys { variable_name, .. } => format!("!{variable_name}"),
    }
}

fn mark_expansion(w: &mut Word, leading: bool, quoted: bool) {
    w.expansion = true;
    if !quoted {
        w.unquoted_expansion = true;
    }
    if leading {
        w.leading_dynamic = true;
    }
}

/// Unquoted literal text: globs (`*`, `?`, `[…]`) and brace patterns (`{a,b}`, `{1..3}`)
/// may turn it into several words, or into words starting with `-`.
fn unquoted_text(text: &str, w: &mut Word) {
    let leading = w.text.is_empty();
    let has_glob = text.contains(['*', '?']) || (text.contains('[') && text.contains(']'));
    let has_brace = text.find('{').is_some_and(|open| {
        text[open..].contains('}') && (text[open..].contains(',') || text[open..].contains(".."))
    });
    if has_glob || has_brace {
        w.glob = true;
        let first = text.chars().next();
        if leading && matches!(first, Some('*' | '?' | '[' | '{')) {
            w.leading_dynamic = true;
        }
    }
    w.text.push_str(text);
}

/// A name as bash accepts it for a variable (used for `printf -v`, `read`, `export`).
pub(super) fn variable_name_of(text: &str) -> Option<&str> {
    let name = text.split('=').next().unwrap_or_default();
    let name = name.strip_suffix('+').unwrap_or(name);
    is_plain_name(name).then_some(name)
}
