//! Reading one word of a command line: quotes, escapes, globs, parameter and arithmetic
//! expansions, and the command substitutions hidden inside them.

use super::parse::{err, parse, End, Parser, Result, Script, Word};

impl Parser {
    pub(super) fn word(&mut self) -> Result<Word> {
        let start = self.pos;
        let mut w = Word::default();
        if !self.test_mode && (self.starts_with("<(") || self.starts_with(">(")) {
            self.pos += 2;
            let script = self.script(End::Paren)?;
            w.substitutions.push(script);
            w.text = self.slice(start, self.pos);
            w.process_substitution = true;
            w.expansion = true;
            w.unquoted_expansion = true;
            w.leading_dynamic = true;
        }
        let after_substitution = self.pos;
        // An unquoted `[` is a glob once a `]` follows; a `{` is a brace pattern once a `,`
        // or `.` follows. Each remembers whether it started the word.
        let mut open_bracket: Option<bool> = None;
        let mut open_brace: Option<bool> = None;
        while let Some(c) = self.peek() {
            // `]]` ends a `[[ … ]]` test even when glued to what follows (`$([[ -f x ]])`).
            let closes_test = self.test_mode && self.chars[start..self.pos] == [']', ']'];
            if self.ends_word(c) || closes_test {
                break;
            }
            match c {
                '\\' => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(next) => {
                        w.text.push(next);
                        w.quoted = true;
                        self.pos += 2;
                    }
                    None => return err("the line ends with a lone backslash"),
                },
                '\'' => {
                    self.pos += 1;
                    let content_start = self.pos;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    if self.peek().is_none() {
                        return err("unterminated single quote");
                    }
                    w.text.push_str(&self.slice(content_start, self.pos));
                    w.quoted = true;
                    self.pos += 1;
                }
                '"' => self.double_quoted(&mut w)?,
                '`' => self.backtick(&mut w, false)?,
                '$' => self.dollar(&mut w, false)?,
                '*' | '?' => self.glob_char(&mut w, c),
                '[' | '{' => {
                    let open = if c == '[' {
                        &mut open_bracket
                    } else {
                        &mut open_brace
                    };
                    open.get_or_insert(w.text.is_empty());
                    w.text.push(c);
                    self.pos += 1;
                }
                ']' | ',' | '.' => {
                    let open = if c == ']' { open_bracket } else { open_brace };
                    if let Some(leading) = open {
                        w.glob = true;
                        w.leading_dynamic |= leading;
                    }
                    w.text.push(c);
                    self.pos += 1;
                }
                _ => {
                    w.text.push(c);
                    self.pos += 1;
                }
            }
        }
        if self.pos > after_substitution {
            w.process_substitution = false;
        }
        w.raw = self.slice(start, self.pos);
        Ok(w)
    }

    fn glob_char(&mut self, w: &mut Word, c: char) {
        if w.text.is_empty() {
            w.leading_dynamic = true;
        }
        w.glob = true;
        w.text.push(c);
        self.pos += 1;
    }

    fn double_quoted(&mut self, w: &mut Word) -> Result<()> {
        self.pos += 1;
        w.quoted = true;
        loop {
            match self.peek() {
                None => return err("unterminated double quote"),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(next @ ('$' | '`' | '"' | '\\')) => {
                        w.text.push(next);
                        self.pos += 2;
                    }
                    _ => {
                        w.text.push('\\');
                        self.pos += 1;
                    }
                },
                Some('$') => self.dollar(w, true)?,
                Some('`') => self.backtick(w, true)?,
                Some(c) => {
                    w.text.push(c);
                    self.pos += 1;
                }
            }
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

    /// Reads something starting with `$`: a substitution, an expansion, `$'…'` or a plain `$`.
    fn dollar(&mut self, w: &mut Word, quoted: bool) -> Result<()> {
        let start = self.pos;
        let leading = w.text.is_empty();
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => self.nested(|p| p.arithmetic(w))?,
            Some('(') => {
                self.pos += 2;
                let script = self.script(End::Paren)?;
                w.substitutions.push(script);
            }
            Some('{') => self.nested(|p| p.braced_parameter(w))?,
            Some('\'') if !quoted => {
                // `$'…'`: escapes are not decoded here, so any backslash makes the value unknown.
                self.pos += 2;
                let content_start = self.pos;
                loop {
                    match self.peek() {
                        None => return err("unterminated `$'` quote"),
                        Some('\\') => self.pos += 2,
                        Some('\'') => break,
                        Some(_) => self.pos += 1,
                    }
                }
                let content = self.slice(content_start, self.pos);
                self.pos += 1;
                if content.contains('\\') {
                    Self::mark_expansion(w, leading, true);
                }
                w.quoted = true;
                w.text.push_str(&content);
                return Ok(());
            }
            Some('"') if !quoted => {
                self.pos += 1;
                return self.double_quoted(w);
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => self.pos += 2,
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.pos += 1;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.pos += 1;
                }
            }
            _ => {
                w.text.push('$');
                self.pos += 1;
                return Ok(());
            }
        }
        w.text.push_str(&self.slice(start, self.pos));
        Self::mark_expansion(w, leading, quoted);
        Ok(())
    }

    /// `${ … }`: may itself contain substitutions (`${x:-$(cmd)}`).
    fn braced_parameter(&mut self, w: &mut Word) -> Result<()> {
        self.pos += 2;
        let mut inner = Word::default();
        loop {
            match self.peek() {
                None => return err("unterminated `${`"),
                Some('}') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => self.pos += 2,
                Some('\'') => {
                    self.pos += 1;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    if self.peek().is_none() {
                        return err("unterminated single quote");
                    }
                    self.pos += 1;
                }
                Some('"') => self.double_quoted(&mut inner)?,
                Some('$') => self.dollar(&mut inner, true)?,
                Some('`') => self.backtick(&mut inner, true)?,
                Some(_) => self.pos += 1,
            }
        }
        w.substitutions.append(&mut inner.substitutions);
        Ok(())
    }

    /// `$(( … ))`: arithmetic, which may contain substitutions.
    fn arithmetic(&mut self, w: &mut Word) -> Result<()> {
        self.pos += 3;
        let mut inner = Word::default();
        let mut parens = 0usize;
        loop {
            match self.peek() {
                None => return err("unterminated `$((`"),
                Some('(') => {
                    parens += 1;
                    self.pos += 1;
                }
                Some(')') if parens > 0 => {
                    parens -= 1;
                    self.pos += 1;
                }
                Some(')') if self.peek_at(1) == Some(')') => {
                    self.pos += 2;
                    break;
                }
                Some(')') => return err("unbalanced parentheses in `$((`"),
                Some('\\') => self.pos += 2,
                Some('"') => self.double_quoted(&mut inner)?,
                Some('$') => self.dollar(&mut inner, true)?,
                Some('`') => self.backtick(&mut inner, true)?,
                Some(_) => self.pos += 1,
            }
        }
        w.substitutions.append(&mut inner.substitutions);
        Ok(())
    }

    /// `` `…` ``: the old command substitution, with its own escaping rules.
    fn backtick(&mut self, w: &mut Word, quoted: bool) -> Result<()> {
        let start = self.pos;
        let leading = w.text.is_empty();
        self.pos += 1;
        let mut content = String::new();
        loop {
            match self.peek() {
                None => return err("unterminated backquote"),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => match self.peek_at(1) {
                    Some(c @ ('`' | '$' | '\\')) => {
                        content.push(c);
                        self.pos += 2;
                    }
                    Some(c) => {
                        content.push('\\');
                        content.push(c);
                        self.pos += 2;
                    }
                    None => return err("unterminated backquote"),
                },
                Some(c) => {
                    content.push(c);
                    self.pos += 1;
                }
            }
        }
        w.substitutions.push(parse(&content, self.depth + 1)?);
        w.text.push_str(&self.slice(start, self.pos));
        Self::mark_expansion(w, leading, quoted);
        Ok(())
    }
}

/// Finds the command substitutions in an unquoted heredoc body, which run like in `"…"`.
pub(super) fn heredoc_substitutions(body: &str, depth: usize) -> Result<Vec<Script>> {
    let mut parser = Parser::new(body, depth);
    let mut found = Word::default();
    while let Some(c) = parser.peek() {
        match c {
            '\\' => parser.pos += 2,
            '$' => parser.dollar(&mut found, true)?,
            '`' => parser.backtick(&mut found, true)?,
            _ => parser.pos += 1,
        }
    }
    found
        .substitutions
        .append(&mut parser.heredoc_substitutions);
    Ok(found.substitutions)
}
