//! Redirections as bash reads them: which write files, which only copy descriptors, and the
//! command substitutions in their targets and in unquoted heredoc bodies.

use brush_parser::ast::{self, IoFileRedirectKind, IoRedirect};

use super::parse::{Reader, Redirect, RedirectKind, Result, Script, Word};

impl Reader {
    pub(super) fn redirect_list(
        &mut self,
        list: Option<&ast::RedirectList>,
        into: &mut Script,
    ) -> Result<Vec<Redirect>> {
        list.iter()
            .flat_map(|l| l.0.iter())
            .map(|r| self.redirect(r, into))
            .collect()
    }

    pub(super) fn redirect(
        &mut self,
        redirect: &IoRedirect,
        into: &mut Script,
    ) -> Result<Redirect> {
        use ast::IoFileRedirectTarget as T;
        Ok(match redirect {
            IoRedirect::File(_, kind, target) => {
                let word = match target {
                    T::Filename(w) | T::Duplicate(w) => self.word(w, false, into)?,
                    T::Fd(fd) => Word {
                        text: fd.to_string(),
                        raw: fd.to_string(),
                        ..Word::default()
                    },
                    T::ProcessSubstitution(kind, subshell) => {
                        let mut script = Script::default();
                        self.nested(|r| r.list(&subshell.list, &mut script))?;
                        let text = format!("{kind}({})", subshell.list);
                        Word {
                            raw: text.clone(),
                            text,
                            substitutions: vec![script],
                            expansion: true,
                            process_substitution: true,
                            ..Word::default()
                        }
                    }
                };
                let descriptor = !word.expansion
                    && !word.text.is_empty()
                    && word
                        .text
                        .trim_end_matches('-')
                        .chars()
                        .all(|c| c.is_ascii_digit());
                let kind = match kind {
                    IoFileRedirectKind::Read => RedirectKind::Input,
                    IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput
                        if descriptor || matches!(target, T::Fd(_)) =>
                    {
                        RedirectKind::Duplicate
                    }
                    IoFileRedirectKind::DuplicateInput => RedirectKind::Input,
                    _ => RedirectKind::Output,
                };
                Redirect { kind, target: word }
            }
            IoRedirect::HereDocument(_, doc) => {
                let mut target = Word {
                    text: doc.here_end.value.clone(),
                    raw: doc.here_end.value.clone(),
                    quoted: true,
                    ..Word::default()
                };
                if doc.requires_expansion {
                    let body = self.heredoc_body(&doc.doc.value, into)?;
                    target.substitutions = body.substitutions;
                }
                Redirect {
                    kind: RedirectKind::HereDoc,
                    target,
                }
            }
            IoRedirect::HereString(_, w) => Redirect {
                kind: RedirectKind::HereString,
                target: self.word(w, false, into)?,
            },
            IoRedirect::OutputAndError(w, _) => Redirect {
                kind: RedirectKind::Output,
                target: self.word(w, false, into)?,
            },
        })
    }
}

/// A command or a redirection as written, for reasons and segments.
pub(super) fn redirect_text(redirect: &IoRedirect) -> String {
    match redirect {
        IoRedirect::HereDocument(fd, doc) => {
            let fd = fd.map(|f| f.to_string()).unwrap_or_default();
            let op = if doc.remove_tabs { "<<-" } else { "<<" };
            format!("{fd}{op}{}", doc.here_end.value)
        }
        other => other.to_string(),
    }
}
