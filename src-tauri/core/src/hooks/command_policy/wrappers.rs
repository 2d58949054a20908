//! The commands that run another command: `sudo`, `env`, `xargs`, `nice`, … and the shells.

use super::classify::{display, is_assignment, stdin_reason, Arg, Input, Tail, Walker};

/// How a wrapper's options are read: short flags, short options with a value (attached or
/// next), short options with an optional attached value, and long options.
struct OptionSpec {
    flags: &'static str,
    values: &'static str,
    optional: &'static str,
    long_flags: &'static [&'static str],
    long_values: &'static [&'static str],
}

const NO_OPTIONS: OptionSpec = OptionSpec {
    flags: "",
    values: "",
    optional: "",
    long_flags: &[],
    long_values: &[],
};

/// The options of each wrapper, by its name; a wrapper not listed takes none.
static WRAPPER_OPTIONS: &[(&str, OptionSpec)] = &[
    (
        "sudo",
        OptionSpec {
            flags: "AbBEeHiKklnNPSsVv",
            values: "CDghpRrTtUu",
            long_flags: &[
                "--askpass",
                "--background",
                "--bell",
                "--preserve-env",
                "--edit",
                "--set-home",
                "--login",
                "--remove-timestamp",
                "--reset-timestamp",
                "--list",
                "--non-interactive",
                "--preserve-groups",
                "--stdin",
                "--shell",
                "--version",
                "--validate",
                "--help",
            ],
            long_values: &[
                "--close-from",
                "--chdir",
                "--group",
                "--host",
                "--prompt",
                "--chroot",
                "--role",
                "--type",
                "--command-timeout",
                "--other-user",
                "--user",
            ],
            ..NO_OPTIONS
        },
    ),
    (
        "doas",
        OptionSpec {
            flags: "nsL",
            values: "uC",
            ..NO_OPTIONS
        },
    ),
    (
        "env",
        OptionSpec {
            flags: "i0v",
            values: "uCS",
            long_flags: &[
                "--ignore-environment",
                "--null",
                "--debug",
                "--default-signal",
                "--ignore-signal",
                "--block-signal",
                "--list-signal-handling",
            ],
            long_values: &["--unset", "--chdir", "--split-string"],
            ..NO_OPTIONS
        },
    ),
    (
        "nice",
        OptionSpec {
            flags: "0123456789",
            values: "n",
            long_values: &["--adjustment"],
            ..NO_OPTIONS
        },
    ),
    (
        "time",
        OptionSpec {
            flags: "pavq",
            values: "fo",
            long_flags: &["--portability", "--append", "--verbose", "--quiet"],
            long_values: &["--format", "--output"],
            ..NO_OPTIONS
        },
    ),
    (
        "timeout",
        OptionSpec {
            flags: "v",
            values: "sk",
            long_flags: &["--foreground", "--preserve-status", "--verbose"],
            long_values: &["--signal", "--kill-after"],
            ..NO_OPTIONS
        },
    ),
    (
        "command",
        OptionSpec {
            flags: "pvV",
            ..NO_OPTIONS
        },
    ),
    (
        "exec",
        OptionSpec {
            flags: "cl",
            values: "a",
            ..NO_OPTIONS
        },
    ),
    (
        "xargs",
        OptionSpec {
            flags: "0prtx",
            values: "adEILnPs",
            optional: "eil",
            long_flags: &[
                "--null",
                "--interactive",
                "--no-run-if-empty",
                "--verbose",
                "--exit",
                "--show-limits",
                "--open-tty",
                "--eof",
                "--replace",
                "--max-lines",
            ],
            long_values: &[
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
        },
    ),
];

fn wrapper_options(name: &str) -> &'static OptionSpec {
    WRAPPER_OPTIONS
        .iter()
        .find(|(wrapper, _)| *wrapper == name)
        .map_or(&NO_OPTIONS, |(_, spec)| spec)
}

/// An option's value and whether it is only known at run time.
struct OptionValue {
    text: String,
    unknown: bool,
}

struct ParsedOptions<'a> {
    options: Vec<(String, Option<OptionValue>)>,
    rest: &'a [Arg],
}

impl ParsedOptions<'_> {
    fn value(&self, names: &[&str]) -> Option<&OptionValue> {
        self.options
            .iter()
            .find(|(o, _)| names.contains(&o.as_str()))
            .and_then(|(_, v)| v.as_ref())
    }

    fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|(o, _)| names.contains(&o.as_str()))
    }
}

/// The long option `written` names, as getopt_long reads it: an exact name, or a prefix of
/// exactly one. `None` when it names none or several (ambiguous: not understood).
fn resolve_long<'s>(written: &str, spec: &'s OptionSpec) -> Option<&'s str> {
    let all = spec.long_flags.iter().chain(spec.long_values.iter());
    if let Some(exact) = all.clone().find(|o| **o == written) {
        return Some(exact);
    }
    let mut candidates = all.filter(|o| written.len() > 2 && o.starts_with(written));
    let first = candidates.next()?;
    candidates.next().is_none().then_some(*first)
}

/// Reads a wrapper's options up to its command; `Err` names an option it does not know.
fn parse_options<'a>(args: &'a [Arg], spec: &OptionSpec) -> Result<ParsedOptions<'a>, String> {
    let mut options = Vec::new();
    let mut i = 0;
    let value_of = |arg: Option<&Arg>| {
        arg.map(|a| OptionValue {
            text: a.text.clone(),
            unknown: a.text_unknown,
        })
    };
    while let Some(arg) = args.get(i) {
        let text = arg.text.as_str();
        if text == "--" {
            i += 1;
            break;
        }
        if !text.starts_with('-') || text == "-" {
            break;
        }
        if text.starts_with("--") {
            let (name, attached) = match text.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (text, None),
            };
            // getopt_long takes any unique prefix of a long option (`env --s` is `--split-string`).
            let name = resolve_long(name, spec).ok_or_else(|| text.to_string())?;
            let attached = attached.map(|v| OptionValue {
                text: v.to_string(),
                unknown: arg.text_unknown,
            });
            if spec.long_values.contains(&name) && attached.is_none() {
                options.push((name.to_string(), value_of(args.get(i + 1))));
                i += 2;
                continue;
            }
            if !spec.long_values.contains(&name) && !spec.long_flags.contains(&name) {
                return Err(text.to_string());
            }
            options.push((name.to_string(), attached));
            i += 1;
            continue;
        }
        let cluster: Vec<char> = text.chars().skip(1).collect();
        let mut step = 1;
        for (j, &c) in cluster.iter().enumerate() {
            let attached: String = cluster[j + 1..].iter().collect();
            let attached_value = OptionValue {
                text: attached.clone(),
                unknown: arg.text_unknown,
            };
            if spec.values.contains(c) {
                let value = if attached.is_empty() {
                    step = 2;
                    value_of(args.get(i + 1))
                } else {
                    Some(attached_value)
                };
                options.push((format!("-{c}"), value));
                break;
            } else if spec.optional.contains(c) {
                options.push((
                    format!("-{c}"),
                    Some(attached_value).filter(|_| !attached.is_empty()),
                ));
                break;
            } else if spec.flags.contains(c) {
                options.push((format!("-{c}"), None));
            } else {
                return Err(text.to_string());
            }
        }
        i += step;
    }
    Ok(ParsedOptions {
        options,
        rest: args.get(i..).unwrap_or_default(),
    })
}

impl Walker<'_> {
    pub(super) fn wrapper(
        &mut self,
        name: &str,
        args: &[Arg],
        input: Input,
        tail: Tail,
        depth: usize,
    ) {
        let shown = display(args);
        let parsed = match parse_options(&args[1..], wrapper_options(name)) {
            Ok(parsed) => parsed,
            Err(option) => {
                self.found(format!(
                    "`{shown}` uses an option of `{name}` that is not understood (`{option}`)"
                ));
                return;
            }
        };
        let mut rest = parsed.rest;
        let mut inner_tail = tail;
        let replaced: Vec<Arg>;
        match name {
            "sudo" | "doas" => {
                self.found(format!("`{shown}` runs as root"));
                // `sudo -e FILE` edits files rather than running a command.
                if parsed.has(&["-e", "--edit"]) {
                    return;
                }
            }
            "time" => {
                if let Some(file) = parsed.value(&["-o", "--output"]) {
                    self.found(format!("`{shown}` writes to file `{}`", file.text));
                }
            }
            // `command -v x` only looks `x` up.
            "command" if parsed.has(&["-v", "-V"]) => return,
            "timeout" => rest = rest.get(1..).unwrap_or_default(),
            "env" => {
                if rest.first().is_some_and(|a| a.text == "-") {
                    rest = &rest[1..];
                }
                // env reads `NAME=value` from its arguments' values, quoted or not.
                while let Some(assignment) = rest.first().filter(|a| is_assignment(&a.text)) {
                    self.check_variable(&assignment.text, &assignment.raw);
                    rest = &rest[1..];
                }
                if let Some(split) = parsed.value(&["-S", "--split-string"]) {
                    let words = std::iter::once(split.text.as_str())
                        .chain(rest.iter().map(|a| a.raw.as_str()));
                    let text = words.collect::<Vec<_>>().join(" ");
                    let unknown = split.unknown || rest.iter().any(|a| a.text_unknown);
                    self.command_string(&shown, &text, unknown, input, depth);
                    return;
                }
            }
            "xargs" => {
                let placeholder = match (parsed.value(&["-I"]), parsed.has(&["-i", "--replace"])) {
                    (Some(value), _) => Some(value.text.clone()),
                    (None, true) => Some(
                        parsed
                            .value(&["-i", "--replace"])
                            .map_or("{}".to_string(), |v| v.text.clone()),
                    ),
                    (None, false) => None,
                };
                // Without a placeholder, xargs appends what it reads to the command.
                inner_tail = if placeholder.is_some() {
                    Tail::None
                } else {
                    Tail::FromInput
                };
                replaced = rest
                    .iter()
                    .map(|a| match &placeholder {
                        Some(p) if a.text.contains(p.as_str()) => a.replaced_at_run_time(),
                        _ => a.clone(),
                    })
                    .collect();
                rest = &replaced;
            }
            _ => {}
        }
        if rest.is_empty() {
            // Nothing to run (`env` prints the environment, `xargs` alone echoes), unless
            // the command itself is appended from an outer `xargs`.
            if tail == Tail::FromInput {
                self.found(format!("`{shown}` runs a command taken from its input"));
            }
            return;
        }
        let inner_input = if name == "xargs" {
            Input::Inherited
        } else {
            input
        };
        self.run(rest, inner_input, inner_tail, depth + 1);
    }

    pub(super) fn shell(
        &mut self,
        name: &str,
        args: &[Arg],
        input: Input,
        tail: Tail,
        depth: usize,
    ) {
        let shown = display(args);
        let mut runs_string = false;
        let mut reads_stdin = false;
        let mut i = 1;
        while let Some(arg) = args.get(i) {
            let text = arg.text.as_str();
            i += 1;
            if text == "--" || text == "-" {
                break;
            }
            if matches!(text, "--rcfile" | "--init-file") {
                let file = args.get(i).map_or("", |a| a.raw.as_str());
                self.found(format!("`{shown}` runs the startup file `{file}`"));
                i += 1;
            } else if text.starts_with("--") {
                // Other long options (`--norc`, `--login`) take no value.
            } else if text.len() > 1 && (text.starts_with('-') || text.starts_with('+')) {
                runs_string |= text.starts_with('-') && text.contains('c');
                reads_stdin |= text.contains('s');
                // `-o pipefail`, `-eo pipefail`: the option name is the next argument.
                if text.contains('o') || text.contains('O') {
                    i += 1;
                }
            } else {
                i -= 1;
                break;
            }
        }
        let operand = args.get(i);
        if runs_string {
            // Only bash's reading of the string is known; other shells read it differently.
            if name != "bash" {
                self.found(format!(
                    "`{shown}` runs its string in `{name}`, which reads it differently from bash"
                ));
            } else if let Some(string) = operand {
                self.command_string(&shown, &string.text, string.text_unknown, input, depth);
            } else if tail == Tail::FromInput {
                self.found(format!(
                    "`{shown}` runs a command string taken from its input"
                ));
            }
            return;
        }
        match operand {
            Some(script) if !reads_stdin => {
                self.found(format!("`{shown}` runs the script `{}`", script.raw));
            }
            _ if tail == Tail::FromInput && !reads_stdin => {
                self.found(format!("`{shown}` runs scripts named by its input"));
            }
            _ => self.found(stdin_reason(input, &shown, true)),
        }
    }
}
