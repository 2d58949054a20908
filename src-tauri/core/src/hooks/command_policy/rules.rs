//! Compiled policy rules and how one command invocation is checked against them.

use std::collections::HashMap;

use regex::Regex;

use super::classify::{display, Arg, Tail};
use super::options::{long_value, takes_next_value, uses_option, OptionRefusal};
use super::{CommandNeeds, DestructiveRuleSpec, Names, ProgramSpec, SafeRuleSpec, UnlessSpec};

/// A compile error: the rule's command name(s) for the message, and what is wrong.
type CompileError = (String, String);

/// Which commands a rule is about, and how their arguments are read.
#[derive(Debug, Clone)]
struct Matcher {
    names: Vec<String>,
    /// Each subcommand as its words, e.g. `["stash", "list"]`. Empty: any use of the command.
    subcommands: Vec<Vec<String>>,
    /// Options whose value is the next argument (`git -C dir`), so the value is no operand.
    /// Matching uses those of every rule for the command (see `ValueOptions`).
    value_options: Vec<String>,
}

impl Matcher {
    fn compile(
        names: Names,
        subcommands: Vec<String>,
        value_options: Vec<String>,
    ) -> Result<Matcher, CompileError> {
        let names = names.into_vec();
        let shown = names.join(", ");
        let fail = |message: String| Err((shown.clone(), message));
        if names.is_empty() {
            return fail("`command` lists no command".into());
        }
        for name in &names {
            let star = name.find('*');
            if name.is_empty() || name.contains('/') || name.contains(char::is_whitespace) {
                return fail(format!(
                    "`{name}` is not a command name (give the bare name, without a directory)"
                ));
            }
            if star.is_some_and(|at| at + 1 != name.len()) || name == "*" {
                return fail(format!(
                    "`{name}`: `*` is only allowed at the end of a name, after a prefix"
                ));
            }
        }
        let subcommands: Vec<Vec<String>> = subcommands
            .iter()
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .collect();
        if subcommands.iter().any(Vec::is_empty) {
            return fail("a subcommand is empty".into());
        }
        if let Some(bad) = value_options
            .iter()
            .find(|o| !o.starts_with('-') || o.contains('='))
        {
            return fail(format!(
                "value option `{bad}` must start with `-` and contain no `=`"
            ));
        }
        Ok(Matcher {
            names,
            subcommands,
            value_options,
        })
    }

    fn is_for(&self, name: &str) -> bool {
        self.names.iter().any(|n| names_command(n, name))
    }

    /// Indexes (into `args`, whose first is the command) of the operands: arguments that are
    /// neither options nor values of `value_options`. Everything after `--` is an operand.
    fn operands(args: &[Arg], value_options: &[&str]) -> Vec<usize> {
        let mut operands = Vec::new();
        let mut i = 1;
        let mut options_done = false;
        while i < args.len() {
            let text = args[i].text.as_str();
            let is_option =
                !options_done && text.len() > 1 && (text.starts_with('-') || text.starts_with('+'));
            if !options_done && text == "--" {
                options_done = true;
            } else if !is_option {
                operands.push(i);
            } else if takes_next_value(text, value_options) {
                i += 1;
            }
            i += 1;
        }
        operands
    }

    /// Where the arguments after the subcommand start, or `None` if no subcommand matches.
    /// A subcommand word only known when the line runs never matches.
    fn after_subcommand(&self, args: &[Arg], operands: &[usize]) -> Option<usize> {
        if self.subcommands.is_empty() {
            return Some(1);
        }
        self.subcommands.iter().find_map(|words| {
            let used = operands.get(..words.len())?;
            let matches = used
                .iter()
                .zip(words)
                .all(|(&i, word)| args[i].text == *word && !args[i].text_unknown);
            matches.then(|| used.last().map_or(1, |&i| i + 1))
        })
    }
}

/// Whether a rule's name (`ls`, or a prefix like `mkfs*`) names the command `name`.
fn names_command(rule_name: &str, name: &str) -> bool {
    match rule_name.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => rule_name == name,
    }
}

/// The value options of every rule, by command name. All rules about a command read its
/// arguments alike, so a destructive rule cannot miss a subcommand that a safe rule finds
/// (`cargo --color always fmt` is `fmt` for both).
#[derive(Debug, Clone, Default)]
pub(super) struct ValueOptions(HashMap<String, Vec<String>>);

impl ValueOptions {
    pub(super) fn gather(safe: &[SafeRule], destructive: &[DestructiveRule]) -> ValueOptions {
        let mut by_name: HashMap<String, Vec<String>> = HashMap::new();
        let matchers = safe.iter().map(|r| &r.matcher);
        for matcher in matchers.chain(destructive.iter().map(|r| &r.matcher)) {
            for name in &matcher.names {
                let options = by_name.entry(name.clone()).or_default();
                for option in &matcher.value_options {
                    if !options.contains(option) {
                        options.push(option.clone());
                    }
                }
            }
        }
        ValueOptions(by_name)
    }

    pub(super) fn for_command(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(rule_name, _)| names_command(rule_name, name))
            .flat_map(|(_, options)| options.iter().map(String::as_str))
            .collect()
    }
}

fn compile_regex(pattern: &str, shown: &str) -> Result<Regex, CompileError> {
    Regex::new(pattern).map_err(|e| (shown.to_string(), format!("bad regex `{pattern}`: {e}")))
}

#[derive(Debug, Clone)]
struct Unless {
    regex: Regex,
    reason: Option<String>,
}

impl Unless {
    fn compile_all(specs: Vec<UnlessSpec>, shown: &str) -> Result<Vec<Unless>, CompileError> {
        specs
            .into_iter()
            .map(|u| {
                let (pattern, reason) = match u {
                    UnlessSpec::Pattern(p) => (p, None),
                    UnlessSpec::Explained(e) => (e.pattern, Some(e.reason)),
                };
                Ok(Unless {
                    regex: compile_regex(&pattern, shown)?,
                    reason,
                })
            })
            .collect()
    }

    /// The first pattern matching `text`, as a reason about `shown`.
    fn refusal(all: &[Unless], text: &str, shown: &str) -> Option<String> {
        let u = all.iter().find(|u| u.regex.is_match(text))?;
        Some(match &u.reason {
            Some(reason) => format!("`{shown}` {reason}"),
            None => format!("`{shown}` uses `{text}`, which is not read-only"),
        })
    }
}

/// Where a command's program is (`sed -e SCRIPT`, or its first operand) and what it must not do.
#[derive(Debug, Clone)]
struct Program {
    options: Vec<String>,
    unless: Vec<Unless>,
}

impl Program {
    /// The program texts in `args`, each with whether it is only known at run time.
    fn texts(&self, args: &[Arg], operands: &[usize]) -> Vec<(String, bool)> {
        let mut found = Vec::new();
        let mut i = 1;
        while let Some(arg) = args.get(i) {
            let text = arg.text.as_str();
            if text == "--" {
                break;
            }
            for option in &self.options {
                let attached = if option.starts_with("--") {
                    long_value(text, option)
                } else if text.starts_with('-') && !text.starts_with("--") {
                    // A short option may end a cluster (`-ne SCRIPT`) or carry it (`-eSCRIPT`).
                    let letter = option.trim_start_matches('-');
                    text[1..]
                        .find(letter)
                        .map(|at| &text[1 + at + letter.len()..])
                } else {
                    None
                };
                match attached {
                    Some("") => {
                        if let Some(value) = args.get(i + 1) {
                            found.push((value.text.clone(), value.text_unknown));
                            i += 1;
                        }
                    }
                    Some(value) => found.push((value.to_string(), arg.text_unknown)),
                    None => continue,
                }
                break;
            }
            i += 1;
        }
        if found.is_empty() {
            if let Some(&first) = operands.first() {
                found.push((args[first].text.clone(), args[first].text_unknown));
            }
        }
        found
    }
}

/// A read-only command (or read-only uses of it).
#[derive(Debug, Clone)]
pub(super) struct SafeRule {
    matcher: Matcher,
    unless: Vec<Unless>,
    refused_options: Vec<OptionRefusal>,
    max_operands: Option<usize>,
    program: Option<Program>,
}

/// What one safe rule says about an invocation.
pub(super) enum Verdict {
    Safe,
    NotThisRule,
    /// The rule is about this command but refuses this use; the rank says how specific the
    /// reason is, so the most telling one is reported.
    Refused(u8, String),
}

impl SafeRule {
    pub(super) fn compile(spec: SafeRuleSpec) -> Result<SafeRule, CompileError> {
        let mut value_options = spec.value_options;
        if let Some(program) = &spec.program {
            // A program option's value is the program, not an operand.
            value_options.extend(program.options.iter().cloned());
        }
        let matcher = Matcher::compile(spec.command, spec.subcommands, value_options)?;
        let shown = matcher.names.join(", ");
        let program = match spec.program {
            Some(ProgramSpec { options, unless }) => Some(Program {
                options,
                unless: Unless::compile_all(unless, &shown)?,
            }),
            None => None,
        };
        let refused_options = spec
            .unless_options
            .into_iter()
            .map(|r| OptionRefusal::compile(r.options, r.reason).map_err(|m| (shown.clone(), m)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SafeRule {
            refused_options,
            unless: Unless::compile_all(spec.unless_args, &shown)?,
            matcher,
            max_operands: spec.max_operands,
            program,
        })
    }

    pub(super) fn check(
        &self,
        name: &str,
        args: &[Arg],
        tail: Tail,
        value_options: &[&str],
    ) -> Verdict {
        if !self.matcher.is_for(name) {
            return Verdict::NotThisRule;
        }
        let shown = display(args);
        let operands = Matcher::operands(args, value_options);
        let Some(rest) = self.matcher.after_subcommand(args, &operands) else {
            return Verdict::Refused(
                1,
                format!("`{shown}` is not a known read-only use of `{name}`"),
            );
        };
        for refusal in &self.refused_options {
            if let Some(arg) = refusal.find(args) {
                let reason = format!("`{shown}` {} (`{}`)", refusal.reason, arg.text);
                return Verdict::Refused(3, reason);
            }
        }
        for arg in &args[1..] {
            if let Some(reason) = Unless::refusal(&self.unless, &arg.text, &shown) {
                return Verdict::Refused(3, reason);
            }
        }
        if let Some(program) = &self.program {
            for (text, unknown) in program.texts(args, &operands) {
                if unknown {
                    return Verdict::Refused(
                        2,
                        format!("`{shown}` runs a program that is only known when it runs"),
                    );
                }
                if let Some(reason) = Unless::refusal(&program.unless, &text, &shown) {
                    return Verdict::Refused(3, reason);
                }
            }
        }
        if !self.unless.is_empty() || !self.refused_options.is_empty() {
            // An argument that may expand to an option could be one of the refused ones.
            if let Some(arg) = args[1..].iter().find(|a| a.may_be_option) {
                return Verdict::Refused(
                    2,
                    format!(
                        "`{shown}`: `{}` is only known when it runs, so it cannot be checked",
                        arg.raw
                    ),
                );
            }
            if tail == Tail::FromInput {
                return Verdict::Refused(
                    2,
                    format!(
                        "`{shown}` takes more arguments from its input, which cannot be checked"
                    ),
                );
            }
        }
        if let Some(max) = self.max_operands {
            let counted: Vec<&Arg> = operands
                .iter()
                .filter(|&&i| i >= rest)
                .map(|&i| &args[i])
                .collect();
            if tail == Tail::FromInput || counted.iter().any(|a| a.count_unknown) {
                return Verdict::Refused(2, format!("`{shown}` may get more operands when it runs; a read-only use has at most {max}"));
            }
            if counted.len() > max {
                let count = counted.len();
                let plural = if count == 1 { "" } else { "s" };
                return Verdict::Refused(
                    2,
                    format!(
                        "`{shown}` has {count} operand{plural}; a read-only use has at most {max}"
                    ),
                );
            }
        }
        Verdict::Safe
    }
}

/// A command (or use of one) that always needs approval, with the reason shown to the user.
#[derive(Debug, Clone)]
pub(super) struct DestructiveRule {
    matcher: Matcher,
    args: Vec<Regex>,
    /// Options (by getopt's reading, see `options`) that make the rule apply, like `args`.
    options: Vec<String>,
    unless: Vec<Regex>,
    reason: String,
    needs: CommandNeeds,
}

/// What a destructive rule found: the reason, and what the command needs to work.
pub(super) struct Finding {
    pub reason: String,
    pub needs: CommandNeeds,
}

impl DestructiveRule {
    pub(super) fn compile(spec: DestructiveRuleSpec) -> Result<DestructiveRule, CompileError> {
        let matcher = Matcher::compile(spec.command, spec.subcommands, spec.value_options)?;
        let shown = matcher.names.join(", ");
        if spec.reason.trim().is_empty() {
            return Err((shown, "`reason` is empty".into()));
        }
        let compile_all = |patterns: &[String]| {
            patterns
                .iter()
                .map(|p| compile_regex(p, &shown))
                .collect::<Result<Vec<_>, _>>()
        };
        OptionRefusal::compile(spec.options.clone(), spec.reason.clone())
            .map_err(|m| (shown.clone(), m))?;
        let mut needs = CommandNeeds::default();
        for need in &spec.needs {
            match need.as_str() {
                "network" => needs.network = true,
                "git" => needs.write_git = true,
                other => {
                    return Err((
                        shown,
                        format!("`needs: {other}` is not known (use `network` or `git`)"),
                    ))
                }
            }
        }
        Ok(DestructiveRule {
            options: spec.options,
            needs,
            args: compile_all(&spec.args)?,
            unless: compile_all(&spec.unless_args)?,
            matcher,
            reason: spec.reason.trim().to_string(),
        })
    }

    /// Whether this rule looks at the arguments of `name`, so that an argument only known
    /// at run time could make it apply.
    pub(super) fn inspects_args_of(&self, name: &str) -> bool {
        (!self.args.is_empty() || !self.options.is_empty()) && self.matcher.is_for(name)
    }

    /// The finding, if this rule applies to the invocation.
    pub(super) fn finding(
        &self,
        name: &str,
        args: &[Arg],
        value_options: &[&str],
    ) -> Option<Finding> {
        if !self.matcher.is_for(name) {
            return None;
        }
        let operands = Matcher::operands(args, value_options);
        let rest = self.matcher.after_subcommand(args, &operands)?;
        let looks_at_args = !self.args.is_empty() || !self.options.is_empty();
        let applies = args[rest..]
            .iter()
            .any(|a| self.args.iter().any(|r| r.is_match(&a.text)))
            || args[rest..]
                .iter()
                .take_while(|a| a.text != "--")
                .any(|a| self.options.iter().any(|o| uses_option(&a.text, o)));
        if looks_at_args && !applies {
            return None;
        }
        // Only an argument known before the line runs can excuse the command.
        let excused = args[1..]
            .iter()
            .any(|a| !a.text_unknown && self.unless.iter().any(|r| r.is_match(&a.text)));
        (!excused).then(|| Finding {
            reason: format!("`{}` {}", display(args), self.reason),
            needs: self.needs,
        })
    }
}
