//! Walks a parsed command line: follows groups and substitutions, unwraps `sudo`, `env`,
//! `xargs`, `sh -c` and friends, and asks the rules about every command that would run.

use std::collections::HashSet;

use super::parse::{self, Redirect, RedirectKind, Script, SimpleCommand, Stage, Word, MAX_DEPTH};
use super::rules::Verdict;
use super::words::variable_name_of;
use super::{CommandNeeds, CommandPolicy};

/// Where a command name given by path is trusted to be the system's own program.
const SYSTEM_DIRS: [&str; 7] = [
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/sbin/",
    "/usr/sbin/",
    "/usr/local/sbin/",
    "/opt/homebrew/bin/",
];
/// Output redirections to these write no file.
const HARMLESS_OUTPUTS: [&str; 3] = ["/dev/null", "/dev/stdout", "/dev/stderr"];
/// Shells whose `-c` string is parsed and checked like the line itself.
const SHELLS: [&str; 7] = ["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash"];
/// Programs that run whatever code they read on standard input (fish's syntax is not
/// sh's, so its strings are not checked: it is treated like any other interpreter).
const INTERPRETERS: [&str; 10] = [
    "python", "perl", "ruby", "node", "nodejs", "php", "lua", "deno", "bun", "fish",
];
/// Programs whose output piped into a shell is "a download".
const DOWNLOADERS: [&str; 2] = ["curl", "wget"];
/// Builtins whose operands name variables to set.
const ASSIGNING_BUILTINS: [&str; 9] = [
    "unset",
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "read",
    "mapfile",
    "readarray",
];

/// One word of a command, as the rules see it.
#[derive(Debug, Clone)]
pub(super) struct Arg {
    pub text: String,
    pub raw: String,
    /// It may expand to something starting with `-`.
    pub may_be_option: bool,
    /// It may expand to zero or several words.
    pub count_unknown: bool,
    /// Its value is only known when the line runs.
    pub text_unknown: bool,
    /// `NAME=value` before a command name.
    pub assignment: bool,
}

impl Arg {
    fn from_word(w: &Word) -> Arg {
        Arg {
            text: w.text.clone(),
            raw: w.raw.clone(),
            may_be_option: w.leading_dynamic || w.unquoted_expansion,
            count_unknown: w.unquoted_expansion || w.glob,
            text_unknown: w.expansion || w.glob,
            assignment: is_assignment(&w.raw),
        }
    }

    /// The same word with its value replaced at run time (an `xargs -I` placeholder).
    pub(super) fn replaced_at_run_time(&self) -> Arg {
        Arg {
            may_be_option: true,
            count_unknown: true,
            text_unknown: true,
            ..self.clone()
        }
    }
}

/// Whether more arguments are appended when the command runs (`… | xargs cmd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tail {
    None,
    FromInput,
}

/// Where a command's standard input comes from; it matters for shells and interpreters.
#[derive(Debug, Clone, Copy)]
pub(super) enum Input {
    Inherited,
    Pipe { download: Option<&'static str> },
    Redirected,
}

/// Returns the reasons (empty when safe) and the segments of a parsed line.
pub(super) fn classify_script(
    policy: &CommandPolicy,
    script: &Script,
) -> (Vec<String>, Vec<String>, CommandNeeds) {
    let mut walker = Walker {
        policy,
        reasons: Vec::new(),
        seen: HashSet::new(),
        segments: Vec::new(),
        needs: CommandNeeds::default(),
    };
    walker.script(script, Input::Inherited, 0);
    (walker.reasons, walker.segments, walker.needs)
}

/// The invocation as text for reasons, kept short.
pub(super) fn display(args: &[Arg]) -> String {
    let words: Vec<&str> = args.iter().map(|a| a.raw.as_str()).collect();
    shorten(&words.join(" "))
}

use super::parse::shorten;

fn is_name(text: &str) -> bool {
    parse::is_plain_name(text)
}

/// `NAME=…` or `NAME+=…` with the name unquoted, as the shell requires.
pub(super) fn is_assignment(raw: &str) -> bool {
    raw.split_once('=')
        .is_some_and(|(name, _)| is_name(name.strip_suffix('+').unwrap_or(name)))
}

fn basename(text: &str) -> &str {
    text.rsplit('/').next().unwrap_or_default()
}

/// The name the rules know a command by; `None` for a program run from an untrusted path
/// (`./ls` may be anything the agent wrote).
fn command_name(text: &str) -> Option<&str> {
    if !text.contains('/') {
        return Some(text);
    }
    let trusted = SYSTEM_DIRS.iter().any(|dir| text.starts_with(dir))
        && !text.contains("/../")
        && !text.contains("/./")
        && !text.contains("//");
    Some(basename(text)).filter(|name| trusted && !name.is_empty())
}

fn is_interpreter(name: &str) -> bool {
    INTERPRETERS.iter().any(|i| {
        name.strip_prefix(i)
            .is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
    })
}

fn download_in(stage: &Stage) -> Option<&'static str> {
    match stage {
        Stage::Simple(cmd) => cmd.words.iter().find_map(|w| {
            let name = basename(&w.text);
            DOWNLOADERS.iter().copied().find(|d| *d == name)
        }),
        Stage::Group(group) => group
            .body
            .pipelines
            .iter()
            .flat_map(|p| &p.stages)
            .find_map(download_in),
    }
}

fn harmless_output(target: &Word) -> bool {
    target.process_substitution
        || (!target.expansion && !target.glob && HARMLESS_OUTPUTS.contains(&target.text.as_str()))
}

/// Why a shell or interpreter reading standard input is destructive.
pub(super) fn stdin_reason(input: Input, shown: &str, shell: bool) -> String {
    match input {
        Input::Pipe {
            download: Some(tool),
        } => {
            let into = if shell { "a shell" } else { "an interpreter" };
            format!("`{tool} … | {shown}` pipes a download into {into}")
        }
        Input::Pipe { download: None } => format!("`… | {shown}` pipes data into an interpreter"),
        Input::Redirected => format!("`{shown}` runs commands from its redirected input"),
        Input::Inherited => format!("`{shown}` starts a shell that reads commands from its input"),
    }
}

pub(super) struct Walker<'p> {
    policy: &'p CommandPolicy,
    reasons: Vec<String>,
    /// The reasons already given, so a repeated finding is reported once.
    seen: HashSet<String>,
    segments: Vec<String>,
    needs: CommandNeeds,
}

impl Walker<'_> {
    pub(super) fn found(&mut self, reason: String) {
        if self.seen.insert(reason.clone()) {
            self.reasons.push(reason);
        }
    }

    fn script(&mut self, script: &Script, input: Input, depth: usize) {
        for refusal in &script.refusals {
            self.found(refusal.clone());
        }
        for (name, shown) in &script.assignments {
            self.check_variable(name, shown);
        }
        for word in &script.loose_words {
            self.special_path(word, &word.raw);
            for substitution in &word.substitutions {
                self.script(substitution, Input::Inherited, depth + 1);
            }
        }
        for pipeline in &script.pipelines {
            // The first downloader among the stages so far feeds every later stage.
            let mut download = None;
            for (i, stage) in pipeline.stages.iter().enumerate() {
                let stage_input = if i == 0 {
                    input
                } else {
                    Input::Pipe { download }
                };
                download = download.or_else(|| download_in(stage));
                match stage {
                    Stage::Simple(cmd) => self.simple(cmd, stage_input, depth),
                    Stage::Group(group) => {
                        let mut group_input = stage_input;
                        self.redirects(&group.redirects, &group.text, &mut group_input, depth);
                        self.script(&group.body, group_input, depth + 1);
                    }
                }
            }
        }
    }

    fn redirects(&mut self, redirects: &[Redirect], shown: &str, input: &mut Input, depth: usize) {
        for r in redirects {
            match r.kind {
                RedirectKind::Output if !harmless_output(&r.target) => {
                    self.found(format!(
                        "`{}` writes to file `{}`",
                        shorten(shown),
                        shorten(&r.target.raw)
                    ));
                }
                RedirectKind::Input | RedirectKind::HereDoc | RedirectKind::HereString => {
                    *input = Input::Redirected;
                }
                _ => {}
            }
            for substitution in &r.target.substitutions {
                self.script(substitution, Input::Inherited, depth + 1);
            }
        }
    }

    fn simple(&mut self, cmd: &SimpleCommand, mut input: Input, depth: usize) {
        self.segments.push(cmd.text.clone());
        self.redirects(&cmd.redirects, &cmd.text, &mut input, depth);
        let targets = cmd.redirects.iter().map(|r| &r.target);
        for word in cmd.words.iter().chain(targets) {
            self.special_path(word, &cmd.text);
        }
        for word in &cmd.words {
            for substitution in &word.substitutions {
                self.script(substitution, Input::Inherited, depth + 1);
            }
        }
        let args: Vec<Arg> = cmd.words.iter().map(Arg::from_word).collect();
        let rest = self.skip_assignments(&args);
        self.run(rest, input, Tail::None, depth);
    }

    /// Paths that are not files: another process's details, and bash's network devices.
    fn special_path(&mut self, word: &Word, shown: &str) {
        const HARMLESS_PROC: [&str; 5] = ["cpuinfo", "meminfo", "version", "loadavg", "uptime"];
        // `--file=/proc/…`, `if=/dev/tcp/…` carry the path after a prefix.
        let text = &word.text;
        // `$p/environ`, `$p/mem`: another process's files, whichever it is.
        if text.ends_with("/environ") || text.ends_with("/mem") {
            self.found(format!(
                "`{}` reads `{}`, another process's details (its environment can hold secrets)",
                shorten(shown),
                shorten(&word.raw)
            ));
            return;
        }
        let path = text
            .find("/proc/")
            .or_else(|| text.find("/dev/tcp/"))
            .or_else(|| text.find("/dev/udp/"));
        let Some(at) = path else { return };
        let path = &text[at..];
        if let Some(rest) = path.strip_prefix("/proc/") {
            if !HARMLESS_PROC.contains(&rest) {
                self.found(format!(
                    "`{}` reads `{}`, another process's details (its environment can hold secrets)",
                    shorten(shown),
                    shorten(&word.raw)
                ));
            }
        } else {
            self.needs.network = true;
            self.found(format!(
                "`{}` opens a network connection through `{}`",
                shorten(shown),
                shorten(&word.raw)
            ));
        }
    }

    fn skip_assignments<'a>(&mut self, args: &'a [Arg]) -> &'a [Arg] {
        let count = args.iter().take_while(|a| a.assignment).count();
        for arg in &args[..count] {
            self.check_variable(&arg.text, &arg.raw);
        }
        &args[count..]
    }

    /// `assignment` is `NAME=value` (or just `NAME` for `export NAME`).
    pub(super) fn check_variable(&mut self, assignment: &str, shown: &str) {
        let name = assignment.split('=').next().unwrap_or_default();
        let name = name.strip_suffix('+').unwrap_or(name);
        if self
            .policy
            .protected_variables
            .iter()
            .any(|r| r.is_match(name))
        {
            self.found(format!(
                "`{shown}` sets `{name}`, which can change what programs run"
            ));
        }
    }

    /// Classifies one invocation whose first word is the command name.
    pub(super) fn run(&mut self, args: &[Arg], input: Input, tail: Tail, depth: usize) {
        let Some(first) = args.first() else { return };
        let shown = display(args);
        if depth > MAX_DEPTH {
            self.found(format!("`{shown}` is nested too deeply to check"));
            return;
        }
        if first.text_unknown {
            self.found(format!(
                "`{shown}`: the command name `{}` is only known when it runs",
                first.raw
            ));
            return;
        }
        let Some(name) = command_name(&first.text) else {
            self.found(format!(
                "`{shown}` runs `{}`, which is not a program in a system directory",
                first.text
            ));
            return;
        };
        match name {
            "sudo" | "doas" | "env" | "nohup" | "nice" | "time" | "timeout" | "command"
            | "exec" | "builtin" | "xargs" => self.wrapper(name, args, input, tail, depth),
            "eval" if tail == Tail::FromInput => {
                self.found(format!("`{shown}` runs commands from its input"))
            }
            "eval" => {
                let words = &args[1..];
                let text = words
                    .iter()
                    .map(|a| a.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                let unknown = words.iter().any(|a| a.text_unknown);
                self.command_string(&shown, &text, unknown, input, depth);
            }
            _ if SHELLS.contains(&name) => self.shell(name, args, input, tail, depth),
            _ if is_interpreter(name) && matches!(input, Input::Pipe { .. }) => {
                self.found(stdin_reason(input, &shown, false));
            }
            _ => {
                self.check_assigning_builtin(name, args, &shown);
                if let Some(reason) = self.rules(name, args, tail) {
                    self.found(reason);
                }
            }
        }
    }

    /// The policy's answer for a plain command: `None` when a safe rule allows it.
    fn rules(&mut self, name: &str, args: &[Arg], tail: Tail) -> Option<String> {
        let value_options = self.policy.value_options.for_command(name);
        let finding = self
            .policy
            .destructive
            .iter()
            .find_map(|r| r.finding(name, args, &value_options));
        if let Some(finding) = finding {
            self.needs.merge(finding.needs);
            return Some(finding.reason);
        }
        let mut best: Option<(u8, String)> = None;
        for rule in &self.policy.safe {
            match rule.check(name, args, tail, &value_options) {
                Verdict::Safe => return self.unknown_argument(name, args, tail),
                Verdict::NotThisRule => {}
                Verdict::Refused(rank, reason) => {
                    if best.as_ref().is_none_or(|(b, _)| rank > *b) {
                        best = Some((rank, reason));
                    }
                }
            }
        }
        Some(best.map_or_else(
            || format!("`{name}` is not a known read-only command"),
            |(_, r)| r,
        ))
    }

    /// A use that the safe rules allow may still be refused: when a destructive rule looks at
    /// this command's arguments, one only known at run time could be what it looks for.
    fn unknown_argument(&self, name: &str, args: &[Arg], tail: Tail) -> Option<String> {
        if !self
            .policy
            .destructive
            .iter()
            .any(|r| r.inspects_args_of(name))
        {
            return None;
        }
        let shown = display(args);
        if let Some(arg) = args[1..].iter().find(|a| a.may_be_option) {
            return Some(format!(
                "`{shown}`: `{}` is only known when it runs, so it cannot be checked",
                arg.raw
            ));
        }
        (tail == Tail::FromInput).then(|| {
            format!("`{shown}` takes more arguments from its input, which cannot be checked")
        })
    }

    /// `export PATH=…`, `read LD_PRELOAD`, `printf -v PATH …` set variables too.
    fn check_assigning_builtin(&mut self, name: &str, args: &[Arg], shown: &str) {
        let targets: Vec<(&str, &Arg)> = if ASSIGNING_BUILTINS.contains(&name) {
            args[1..]
                .iter()
                .filter(|a| !a.text.starts_with('-'))
                .map(|a| (a.text.as_str(), a))
                .collect()
        } else if name == "printf" {
            // `printf -v NAME …` and `printf -vNAME …`.
            let mut found = Vec::new();
            for (i, arg) in args.iter().enumerate().skip(1) {
                if arg.text == "-v" {
                    if let Some(next) = args.get(i + 1) {
                        found.push((next.text.as_str(), next));
                    }
                } else if let Some(attached) = arg.text.strip_prefix("-v") {
                    found.push((attached, arg));
                }
            }
            found
        } else if matches!(name, "test" | "[") {
            // `-v NAME` evaluates the subscript of `NAME[…]`.
            args.windows(2)
                .filter(|w| w[0].text == "-v" && !is_name(&w[1].text))
                .map(|w| (w[1].text.as_str(), &w[1]))
                .collect()
        } else {
            return;
        };
        for (text, target) in targets {
            if target.text_unknown {
                self.found(format!(
                    "`{shown}` sets a variable whose name is only known when it runs"
                ));
            } else if variable_name_of(text).is_some() {
                self.check_variable(text, shown);
            } else if text.contains('[') {
                self.found(format!(
                    "`{shown}`: the subscript in `{text}` is evaluated as arithmetic, which can run commands"
                ));
            }
        }
    }

    /// Parses and checks a string that a shell will run (`sh -c`, `eval`, `env -S`).
    pub(super) fn command_string(
        &mut self,
        shown: &str,
        text: &str,
        unknown: bool,
        input: Input,
        depth: usize,
    ) {
        if unknown {
            self.found(format!(
                "`{shown}` runs a command string that is only known when it runs"
            ));
            return;
        }
        match parse::parse(text, depth + 1) {
            Ok(script) => self.script(&script, input, depth + 1),
            Err(e) => self.found(format!(
                "`{shown}`: could not parse the command string: {e}"
            )),
        }
    }
}
