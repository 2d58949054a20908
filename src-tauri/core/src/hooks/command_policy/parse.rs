//! A small shell parser: enough of POSIX sh and bash to find every simple command a
//! command line would run, including the ones hidden in groups, substitutions and heredocs.
//! Anything it does not understand is an error, so the caller can fail closed. How a single
//! word is read (quotes, expansions, substitutions) is in `words`.

use std::fmt;

/// Nesting deeper than this is refused; it also bounds recursion on hostile input.
pub(super) const MAX_DEPTH: usize = 32;

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
/// for classification: any of them may run).
#[derive(Debug, Clone, Default)]
pub(super) struct Script {
    pub pipelines: Vec<Pipeline>,
    /// Command substitutions found in the bodies of unquoted heredocs.
    pub heredoc_substitutions: Vec<Script>,
}

#[derive(Debug, Clone)]
pub(super) struct Pipeline {
    pub stages: Vec<Stage>,
}

#[derive(Debug, Clone)]
pub(super) enum Stage {
    Simple(SimpleCommand),
    /// `( … )` or `{ …; }`.
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

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Eof,
    Paren,
    Brace,
}

struct PendingHeredoc {
    delimiter: String,
    expands: bool,
    strip_tabs: bool,
}

/// Parses a whole command line. `depth` counts the levels of nesting already entered
/// (a `bash -c` string inside a line is parsed one level deeper).
pub(super) fn parse(text: &str, depth: usize) -> Result<Script> {
    if depth > MAX_DEPTH {
        return err("commands are nested too deeply");
    }
    let mut parser = Parser::new(text, depth);
    let mut script = parser.script(End::Eof)?;
    script
        .heredoc_substitutions
        .append(&mut parser.heredoc_substitutions);
    Ok(script)
}

pub(super) struct Parser {
    pub(super) chars: Vec<char>,
    pub(super) pos: usize,
    pub(super) depth: usize,
    pending: Vec<PendingHeredoc>,
    pub(super) heredoc_substitutions: Vec<Script>,
    /// Inside `[[ … ]]`, where `&&`, `<`, `(` are operands rather than shell syntax.
    pub(super) test_mode: bool,
}

const REDIRECT_OPERATORS: [&str; 12] = [
    "&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">",
];

impl Parser {
    pub(super) fn new(text: &str, depth: usize) -> Parser {
        Parser {
            chars: text.chars().collect(),
            pos: 0,
            depth,
            pending: Vec::new(),
            heredoc_substitutions: Vec::new(),
            test_mode: false,
        }
    }

    pub(super) fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    pub(super) fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    pub(super) fn starts_with(&self, s: &str) -> bool {
        self.starts_with_at(self.pos, s)
    }

    fn starts_with_at(&self, at: usize, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(i, c)| self.chars.get(at + i) == Some(&c))
    }

    pub(super) fn slice(&self, from: usize, to: usize) -> String {
        let to = to.min(self.chars.len());
        self.chars[from.min(to)..to].iter().collect()
    }

    /// Whether `c` ends an unquoted word.
    pub(super) fn ends_word(&self, c: char) -> bool {
        match c {
            ' ' | '\t' | '\r' | '\n' | ';' => true,
            '&' | '|' | '(' | ')' | '<' | '>' => !self.test_mode,
            _ => false,
        }
    }

    /// Whether a reserved word like `{` or `}` would end right before `at`.
    fn word_ends_at(&self, at: usize) -> bool {
        match self.chars.get(at) {
            None => true,
            Some(&c) => matches!(
                c,
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | ')' | '<' | '>'
            ),
        }
    }

    /// Skips blanks, line continuations and comments (a `#` at the start of a token).
    fn skip_blanks(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn skip_blanks_and_newlines(&mut self) -> Result<()> {
        loop {
            self.skip_blanks();
            if self.peek() != Some('\n') {
                return Ok(());
            }
            self.newline()?;
        }
    }

    /// Consumes a newline; heredoc bodies announced on the line just ended start here.
    fn newline(&mut self) -> Result<()> {
        self.pos += 1;
        self.read_heredocs()
    }

    /// Runs `read` one level deeper; every kind of nesting goes through here, which bounds
    /// the recursion whatever the input.
    pub(super) fn nested<T>(&mut self, read: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return err("commands are nested too deeply");
        }
        self.depth += 1;
        let result = read(self);
        self.depth -= 1;
        result
    }

    pub(super) fn script(&mut self, end: End) -> Result<Script> {
        // A substitution inside `[[ … ]]` is ordinary shell again.
        let test_mode = std::mem::replace(&mut self.test_mode, false);
        let script = self.nested(|p| p.script_body(end));
        self.test_mode = test_mode;
        script
    }

    fn script_body(&mut self, end: End) -> Result<Script> {
        let mut script = Script::default();
        // After `&&` or `||` another command must follow.
        let mut need_command: Option<&str> = None;
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if let Some(op) = need_command {
                    return err(format!("expected a command after `{op}`"));
                }
                return match end {
                    End::Eof => Ok(script),
                    End::Paren => err("missing `)`"),
                    End::Brace => err("missing `}`"),
                };
            };
            if let Some(op) = need_command {
                if matches!(c, ')' | ';' | '&' | '|') && !self.starts_with("&>") {
                    return err(format!("expected a command after `{op}`"));
                }
            }
            match c {
                '\n' => {
                    self.newline()?;
                    continue;
                }
                ';' => {
                    self.pos += 1;
                    continue;
                }
                ')' if end == End::Paren => {
                    self.pos += 1;
                    return Ok(script);
                }
                ')' => return err("unbalanced parentheses: unexpected `)`"),
                '}' if end == End::Brace
                    && need_command.is_none()
                    && self.word_ends_at(self.pos + 1) =>
                {
                    self.pos += 1;
                    return Ok(script);
                }
                '&' if !self.starts_with("&>") => return err("unexpected `&`"),
                '|' => return err("unexpected `|`"),
                _ => {}
            }
            script.pipelines.push(self.pipeline()?);
            need_command = None;
            self.skip_blanks();
            if self.starts_with("&&") {
                self.pos += 2;
                need_command = Some("&&");
            } else if self.starts_with("||") {
                self.pos += 2;
                need_command = Some("||");
            } else if matches!(self.peek(), Some(';' | '&')) {
                self.pos += 1;
            }
        }
    }

    fn pipeline(&mut self) -> Result<Pipeline> {
        let mut stages = vec![self.stage()?];
        loop {
            self.skip_blanks();
            if self.starts_with("||") {
                break;
            }
            let op = if self.starts_with("|&") {
                "|&"
            } else if self.peek() == Some('|') {
                "|"
            } else {
                break;
            };
            self.pos += op.len();
            self.skip_blanks_and_newlines()?;
            match self.peek() {
                None | Some(';' | '&' | '|' | ')') if !self.starts_with("&>") => {
                    return err(format!("expected a command after `{op}`"));
                }
                _ => stages.push(self.stage()?),
            }
        }
        Ok(Pipeline { stages })
    }

    fn stage(&mut self) -> Result<Stage> {
        self.skip_blanks();
        let start = self.pos;
        let group_end = match self.peek() {
            Some('(') => Some(End::Paren),
            Some('{') if matches!(self.peek_at(1), Some(' ' | '\t' | '\n')) => Some(End::Brace),
            _ => None,
        };
        let Some(end) = group_end else {
            return self.simple().map(Stage::Simple);
        };
        self.pos += 1;
        let body = self.script(end)?;
        let mut redirects = Vec::new();
        loop {
            self.skip_blanks();
            match self.redirect()? {
                Some(r) => redirects.push(r),
                None => break,
            }
        }
        let followed_by_word = match self.peek() {
            None => false,
            Some('}') => !self.word_ends_at(self.pos + 1),
            Some(c) => !self.ends_word(c),
        };
        if followed_by_word {
            return err("unexpected word after a group");
        }
        let text = self.slice(start, self.pos).trim().to_string();
        Ok(Stage::Group(Group {
            body,
            redirects,
            text,
        }))
    }

    fn simple(&mut self) -> Result<SimpleCommand> {
        let start = self.pos;
        let mut words: Vec<Word> = Vec::new();
        let mut redirects = Vec::new();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else { break };
            if matches!(c, '\n' | ';') {
                break;
            }
            if !self.test_mode {
                if matches!(c, '|' | ')') || (c == '&' && self.peek_at(1) != Some('>')) {
                    break;
                }
                if c == '(' {
                    return err("unexpected `(`");
                }
                if let Some(r) = self.redirect()? {
                    redirects.push(r);
                    continue;
                }
            }
            let word = self.word()?;
            if words.is_empty() && word.raw == "[[" {
                self.test_mode = true;
            } else if self.test_mode && word.raw == "]]" {
                self.test_mode = false;
            }
            words.push(word);
        }
        if self.test_mode {
            self.test_mode = false;
            return err("missing `]]`");
        }
        if words.is_empty() && redirects.is_empty() {
            return err("expected a command");
        }
        Ok(SimpleCommand {
            words,
            redirects,
            text: self.slice(start, self.pos).trim().to_string(),
        })
    }

    /// Reads a redirection at the current position, if there is one.
    fn redirect(&mut self) -> Result<Option<Redirect>> {
        let mut at = self.pos;
        while self.chars.get(at).is_some_and(|c| c.is_ascii_digit()) {
            at += 1;
        }
        let has_fd = at > self.pos;
        let Some(op) = REDIRECT_OPERATORS
            .iter()
            .find(|op| self.starts_with_at(at, op) && !(has_fd && op.starts_with('&')))
        else {
            return Ok(None);
        };
        // `<(…)` and `>(…)` are process substitutions, not redirections.
        if matches!(*op, "<" | ">") && self.chars.get(at + 1) == Some(&'(') {
            return if has_fd {
                err("unexpected `(`")
            } else {
                Ok(None)
            };
        }
        self.pos = at + op.len();
        self.skip_blanks();
        match self.peek() {
            Some(c) if !self.ends_word(c) || self.starts_with("<(") || self.starts_with(">(") => {}
            _ => return err(format!("missing file name after `{op}`")),
        }
        let target = self.word()?;
        let is_descriptor = !target.text.is_empty()
            && !target.expansion
            && target
                .text
                .trim_end_matches('-')
                .chars()
                .all(|c| c.is_ascii_digit());
        let kind = match *op {
            "<" => RedirectKind::Input,
            "<<<" => RedirectKind::HereString,
            "<<" | "<<-" => {
                self.pending.push(PendingHeredoc {
                    delimiter: target.text.clone(),
                    expands: !target.quoted,
                    strip_tabs: *op == "<<-",
                });
                RedirectKind::HereDoc
            }
            "<&" | ">&" if is_descriptor => RedirectKind::Duplicate,
            "<&" => RedirectKind::Input,
            _ => RedirectKind::Output,
        };
        Ok(Some(Redirect { kind, target }))
    }

    /// Reads the bodies of the heredocs announced on the line that just ended.
    fn read_heredocs(&mut self) -> Result<()> {
        for doc in std::mem::take(&mut self.pending) {
            let mut body = String::new();
            // A missing delimiter makes the body run to the end, as bash does (with a warning).
            while self.pos < self.chars.len() {
                let line_start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line = self.slice(line_start, self.pos);
                self.pos = (self.pos + 1).min(self.chars.len());
                let candidate = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if candidate == doc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if doc.expands {
                let substitutions = super::words::heredoc_substitutions(&body, self.depth + 1)?;
                self.heredoc_substitutions.extend(substitutions);
            }
        }
        Ok(())
    }
}
