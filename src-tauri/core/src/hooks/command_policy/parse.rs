//! The command line as bash reads it. Commands run as `bash --noprofile --norc -c LINE`
//! (see `agent::command`), so the line is parsed by a maintained bash parser (`brush-parser`)
//! and reduced to what the classifier models: pipelines of simple commands and groups, the
//! words of each with their substitutions, and redirections. Whatever the reduction does not
//! model (function definitions, coprocesses, arithmetic on variables, indirect expansions, …)
//! becomes a refusal, so the line needs approval: the parser decides when to ask, never what a
//! command can do (the kernel does, `crate::sandbox`). How a single word is read is in `words`.

use std::fmt;

use brush_parser::ast::{self, Command, CompoundCommand};

use super::redirects::redirect_text;
use brush_parser::ParserOptions;

/// Nesting deeper than this is refused; it also bounds recursion on hostile input.
pub(super) const MAX_DEPTH: usize = 32;
/// Longer lines are not parsed (they need approval): the parser's cost must stay bounded.
const MAX_LINE_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(super) type Result<T> = std::result::Result<T, ParseError>;

pub(super) fn err<T>(message: impl Into<String>) -> Result<T> {
    Err(ParseError(message.into()))
}

/// Commands joined by `;`, `&`, `&&`, `||` and newlines (how they are joined does not matter
/// for classification: any of them may run), plus what the shell syntax around them does.
#[derive(Debug, Clone, Default)]
pub(super) struct Script {
    pub pipelines: Vec<Pipeline>,
    /// Words outside any simple command whose substitutions run (`for` lists, `case` words,
    /// heredoc bodies, array elements).
    pub loose_words: Vec<Word>,
    /// Variables the shell syntax itself assigns (`for NAME in …`, `${NAME=…}`), each with the
    /// text to show.
    pub assignments: Vec<(String, String)>,
    /// Constructs the classifier does not model, each a reason to ask.
    pub refusals: Vec<String>,
}

#[derive(Debug, Clone)]
pub(super) struct Pipeline {
    pub stages: Vec<Stage>,
}

#[derive(Debug, Clone)]
pub(super) enum Stage {
    Simple(SimpleCommand),
    /// `( … )`, `{ …; }`, and the bodies of `if`, `while`, `for`, `case` and `[[ … ]]`.
    Group(Group),
}

#[derive(Debug, Clone)]
pub(super) struct Group {
    pub body: Script,
    pub redirects: Vec<Redirect>,
    pub text: String,
}

#[derive(Debug, Clone)]
pub(super) struct SimpleCommand {
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// The command as written, for display.
    pub text: String,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Word {
    /// The value with quotes and escapes removed; expansions are kept as written (`$X`).
    pub text: String,
    /// The word as written.
    pub raw: String,
    /// Scripts run by `$( … )`, backticks and process substitutions inside the word.
    pub substitutions: Vec<Script>,
    /// Some part of the word was quoted or escaped.
    pub quoted: bool,
    /// Some part of the value is only known when the line runs.
    pub expansion: bool,
    /// An expansion outside double quotes: it may split into several words.
    pub unquoted_expansion: bool,
    /// The value starts with an expansion or a glob, so it may start with `-`.
    pub leading_dynamic: bool,
    /// An unquoted glob or brace pattern: it may turn into several words.
    pub glob: bool,
    /// The whole word is one `<( … )` or `>( … )`.
    pub process_substitution: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RedirectKind {
    Input,
    Output,
    /// `2>&1`, `>&-`, `<&3`: copies or closes a descriptor, touches no file.
    Duplicate,
    HereDoc,
    HereString,
}

#[derive(Debug, Clone)]
pub(super) struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
}

/// The options bash has when it runs `bash --noprofile --norc -c LINE`: no extended globs.
pub(super) fn options() -> ParserOptions {
    ParserOptions {
        enable_extended_globbing: false,
        posix_mode: false,
        sh_mode: false,
        tilde_expansion_at_word_start: true,
        tilde_expansion_after_colon: false,
        ..ParserOptions::default()
    }
}

/// Parses a whole command line. `depth` counts the levels of nesting already entered
/// (a `bash -c` string inside a line is parsed one level deeper).
pub(super) fn parse(text: &str, depth: usize) -> Result<Script> {
    if depth > MAX_DEPTH {
        return err("commands are nested too deeply");
    }
    check_text(text)?;
    if text.trim().is_empty() {
        return Ok(Script::default());
    }
    let mut parser = brush_parser::Parser::new(std::io::Cursor::new(text.as_bytes()), &options());
    let program = parser
        .parse_program()
        .map_err(|e| ParseError(e.to_string()))?;
    let mut script = Script::default();
    let mut reader = Reader { depth };
    for list in &program.complete_commands {
        reader.list(list, &mut script)?;
    }
    Ok(script)
}

/// Refuses what shells disagree on before any parser sees it: control characters (a `\r`
/// ends a heredoc delimiter for one reader and not for another), and lines too long or too
/// deeply bracketed to parse in bounded time and stack.
fn check_text(text: &str) -> Result<()> {
    if text.len() > MAX_LINE_BYTES {
        return err(format!(
            "the command line is longer than {MAX_LINE_BYTES} bytes"
        ));
    }
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\t'))
    {
        return err(format!(
            "the command line contains the control character U+{:04X}, which shells read differently",
            c as u32
        ));
    }
    let mut level = 0usize;
    for c in text.chars() {
        match c {
            '(' | '{' | '[' | '`' => {
                level += 1;
                if level > 2 * MAX_DEPTH {
                    return err("commands are nested too deeply");
                }
            }
            ')' | '}' | ']' => level = level.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Turns brush's syntax tree into the classifier's model, one level of nesting at a time.
pub(super) struct Reader {
    pub(super) depth: usize,
}

impl Reader {
    /// Runs `read` one level deeper; every kind of nesting goes through here.
    pub(super) fn nested<T>(&mut self, read: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return err("commands are nested too deeply");
        }
        self.depth += 1;
        let result = read(self);
        self.depth -= 1;
        result
    }

    pub(super) fn list(&mut self, list: &ast::CompoundList, into: &mut Script) -> Result<()> {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first, into)?;
            for next in &and_or.additional {
                let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
                self.pipeline(p, into)?;
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, into: &mut Script) -> Result<()> {
        let mut stages = Vec::new();
        for command in &pipeline.seq {
            stages.push(self.command(command, into)?);
        }
        into.pipelines.push(Pipeline { stages });
        Ok(())
    }

    fn command(&mut self, command: &Command, into: &mut Script) -> Result<Stage> {
        match command {
            Command::Simple(simple) => self.simple(simple, into).map(Stage::Simple),
            Command::Compound(compound, redirects) => {
                let mut body = Script::default();
                self.nested(|r| r.compound(compound, &mut body))?;
                let redirects = self.redirect_list(redirects.as_ref(), into)?;
                Ok(Stage::Group(Group {
                    text: shorten(&compound.to_string()),
                    body,
                    redirects,
                }))
            }
            Command::ExtendedTest(test, redirects) => {
                let mut body = Script::default();
                self.nested(|r| r.extended_test(&test.expr, &mut body, false))?;
                let redirects = self.redirect_list(redirects.as_ref(), into)?;
                Ok(Stage::Group(Group {
                    text: shorten(&test.expr.to_string()),
                    body,
                    redirects,
                }))
            }
            Command::Function(f) => {
                into.refusals.push(format!(
                    "`{}` defines a shell function, which can replace any command",
                    shorten(&f.fname.value)
                ));
                Ok(Stage::Group(Group {
                    body: Script::default(),
                    redirects: Vec::new(),
                    text: shorten(&f.fname.value),
                }))
            }
        }
    }

    fn compound(&mut self, compound: &CompoundCommand, body: &mut Script) -> Result<()> {
        match compound {
            CompoundCommand::BraceGroup(g) => self.list(&g.list, body),
            CompoundCommand::Subshell(s) => self.list(&s.list, body),
            CompoundCommand::IfClause(c) => {
                self.list(&c.condition, body)?;
                self.list(&c.then, body)?;
                for other in c.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition, body)?;
                    }
                    self.list(&other.body, body)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0, body)?;
                self.list(&w.1.list, body)
            }
            CompoundCommand::ForClause(f) => {
                body.assignments.push((
                    f.variable_name.clone(),
                    format!("for {} in …", f.variable_name),
                ));
                for value in f.values.iter().flatten() {
                    let word = self.word(value, false, body)?;
                    body.loose_words.push(word);
                }
                self.list(&f.body.list, body)
            }
            CompoundCommand::CaseClause(c) => {
                let word = self.word(&c.value, false, body)?;
                body.loose_words.push(word);
                for item in &c.cases {
                    for pattern in &item.patterns {
                        let word = self.word(pattern, false, body)?;
                        body.loose_words.push(word);
                    }
                    if let Some(list) = &item.cmd {
                        self.list(list, body)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::Arithmetic(a) => self.arithmetic(&a.expr.value, body),
            CompoundCommand::ArithmeticForClause(f) => {
                for expr in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&expr.value, body)?;
                }
                self.list(&f.body.list, body)
            }
            CompoundCommand::Coprocess(_) => {
                body.refusals
                    .push("`coproc` starts a background process that is not checked".into());
                Ok(())
            }
        }
    }

    /// `((…))`, `$((…))` and array subscripts: bash evaluates a variable's value there as an
    /// expression again, and `a[$(cmd)]` in that value runs `cmd`. Only plain numbers and
    /// operators are read-only.
    pub(super) fn arithmetic(&mut self, expr: &str, into: &mut Script) -> Result<()> {
        if expr
            .chars()
            .any(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '$' | '`' | '[' | '\\'))
        {
            into.refusals.push(format!(
                "`(( {} ))`: arithmetic on variables can run commands hidden in their values",
                shorten(expr.trim())
            ));
        }
        // `$(( $(cmd) ))`: substitutions run before the arithmetic; they are read as in `"…"`.
        if expr.contains('$') || expr.contains('`') {
            let inner = ast::Word {
                value: format!("\"{}\"", expr.replace('\\', "\\\\").replace('"', "\\\"")),
                loc: None,
            };
            let found = self.nested(|r| r.word(&inner, true, into))?;
            into.loose_words.push(found);
        }
        Ok(())
    }

    /// `[[ … ]]`: its words, and the operators another reader would take for shell syntax.
    fn extended_test(
        &mut self,
        expr: &ast::ExtendedTestExpr,
        body: &mut Script,
        joined: bool,
    ) -> Result<()> {
        use ast::ExtendedTestExpr as E;
        match expr {
            E::And(a, b) | E::Or(a, b) => {
                self.extended_test(a, body, true)?;
                self.extended_test(b, body, true)
            }
            E::Not(a) | E::Parenthesized(a) => self.extended_test(a, body, joined),
            E::UnaryTest(predicate, word) => {
                let w = self.word(word, true, body)?;
                if matches!(
                    predicate,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                ) && !is_plain_name(&w.text)
                {
                    body.refusals.push(format!(
                        "`[[ -v {} ]]` evaluates an array subscript, which can run commands",
                        w.raw
                    ));
                }
                // `[[ -n x || CMD ]]` is a string test in bash and a command in sh.
                if joined
                    && matches!(predicate, ast::UnaryPredicate::StringHasNonZeroLength)
                    && word_looks_like_command(&word.value)
                {
                    body.refusals.push(format!(
                        "`[[ … {} … ]]`: a bare word joined by `&&` or `||` is a command to other shells",
                        shorten(&word.value)
                    ));
                }
                body.loose_words.push(w);
                Ok(())
            }
            E::BinaryTest(predicate, left, right) => {
                use ast::BinaryPredicate as B;
                let l = self.word(left, true, body)?;
                let r = self.word(right, true, body)?;
                match predicate {
                    B::LeftSortsBeforeRight | B::LeftSortsAfterRight => {
                        body.refusals.push(format!(
                            "`[[ {} {predicate} {} ]]` compares strings in bash but redirects to a file in sh",
                            l.raw, r.raw
                        ));
                    }
                    B::ArithmeticEqualTo
                    | B::ArithmeticNotEqualTo
                    | B::ArithmeticLessThan
                    | B::ArithmeticLessThanOrEqualTo
                    | B::ArithmeticGreaterThan
                    | B::ArithmeticGreaterThanOrEqualTo => {
                        for side in [&l, &r] {
                            if side.expansion || !is_number(&side.text) {
                                self.arithmetic(&side.raw, body)?;
                            }
                        }
                    }
                    _ => {}
                }
                body.loose_words.push(l);
                body.loose_words.push(r);
                Ok(())
            }
        }
    }

    fn simple(&mut self, cmd: &ast::SimpleCommand, into: &mut Script) -> Result<SimpleCommand> {
        use ast::CommandPrefixOrSuffixItem as Item;
        let mut words = Vec::new();
        let mut redirects = Vec::new();
        let mut shown = Vec::new();
        let prefix = cmd.prefix.iter().flat_map(|p| p.0.iter().cloned());
        let name = cmd.word_or_name.iter().cloned().map(Item::Word);
        let suffix = cmd.suffix.iter().flat_map(|s| s.0.iter().cloned());
        for item in prefix.chain(name).chain(suffix) {
            let item = &item;
            match item {
                Item::Word(w) => {
                    shown.push(w.value.clone());
                    words.push(self.word(w, false, into)?);
                }
                Item::AssignmentWord(assignment, w) => {
                    shown.push(w.value.clone());
                    words.push(self.assignment(assignment, w, into)?);
                }
                Item::IoRedirect(r) => {
                    let redirect = self.redirect(r, into)?;
                    shown.push(redirect_text(r));
                    redirects.push(redirect);
                }
                Item::ProcessSubstitution(kind, subshell) => {
                    let mut script = Script::default();
                    self.nested(|r| r.list(&subshell.list, &mut script))?;
                    let text = format!("{kind}({})", subshell.list);
                    shown.push(text.clone());
                    words.push(Word {
                        raw: text.clone(),
                        text,
                        substitutions: vec![script],
                        expansion: true,
                        unquoted_expansion: true,
                        leading_dynamic: true,
                        process_substitution: true,
                        ..Word::default()
                    });
                }
            }
        }
        Ok(SimpleCommand {
            words,
            redirects,
            text: shown.join(" "),
        })
    }

    /// `NAME=value`, `NAME+=value`, `NAME[i]=value` or `NAME=(…)` before a command.
    fn assignment(
        &mut self,
        assignment: &ast::Assignment,
        written: &ast::Word,
        into: &mut Script,
    ) -> Result<Word> {
        if let ast::AssignmentName::ArrayElementName(name, index) = &assignment.name {
            if !is_number(index) {
                into.refusals.push(format!(
                    "`{}`: the subscript of `{name}` is evaluated as arithmetic, which can run commands",
                    shorten(&written.value)
                ));
            }
        }
        let mut word = Word {
            raw: written.value.clone(),
            text: written.value.clone(),
            ..Word::default()
        };
        match &assignment.value {
            ast::AssignmentValue::Scalar(value) => {
                let value = self.word(value, false, into)?;
                word.text = match written.value.split_once('=') {
                    Some((name, _)) => format!("{name}={}", value.text),
                    None => written.value.clone(),
                };
                word.substitutions = value.substitutions;
                word.expansion = value.expansion;
            }
            ast::AssignmentValue::Array(elements) => {
                for (key, value) in elements {
                    if let Some(key) = key {
                        if !is_number(&key.value) {
                            into.refusals.push(format!(
                                "`{}`: an array subscript is evaluated as arithmetic, which can run commands",
                                shorten(&written.value)
                            ));
                        }
                    }
                    let value = self.word(value, false, into)?;
                    into.loose_words.push(value);
                }
            }
        }
        Ok(word)
    }
}

pub(super) fn is_plain_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_number(text: &str) -> bool {
    let digits = text.trim().trim_start_matches(['-', '+']);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// Whether a `[[ … ]]` operand written bare could be a command name to a shell without `[[`.
fn word_looks_like_command(raw: &str) -> bool {
    !raw.starts_with(['"', '\'', '$']) && !raw.is_empty()
}

/// Command text on one line, cut to a length that fits in a reason.
pub(super) fn shorten(text: &str) -> String {
    const MAX_CHARS: usize = 80;
    crate::text::ellipsize_within(&text.replace('\n', " "), MAX_CHARS).into_owned()
}
