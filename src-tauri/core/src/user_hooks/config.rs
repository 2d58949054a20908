//! Reading the person's hooks: `.mandate/hooks.json`, then the `hooks` section of
//! `.claude/settings.json` and `.claude/settings.local.json`, in the Claude Code shape
//! `{"hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command",
//! "command": "…", "timeout": 60}]}]}}`.
//!
//! Everything is checked here, once, so that a bad file fails when it is read and not in the
//! middle of a turn: wrong types, a matcher that does not compile, a file or a list that is too
//! big are errors naming the file and the place. Events Mandate does not run (`PreCompact`,
//! `SubagentStop`, …) are listed, not errors: the same settings serve Claude Code.

use std::io::Read as _;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

/// Mandate's own hooks file.
pub const HOOKS_FILE: &str = ".mandate/hooks.json";
/// Claude Code's project settings (only their `hooks` section is read).
pub const CLAUDE_SETTINGS: &str = ".claude/settings.json";
/// Claude Code's personal project settings (only their `hooks` section is read).
pub const CLAUDE_LOCAL_SETTINGS: &str = ".claude/settings.local.json";
/// Every file hooks are read from, in the order their hooks run.
pub const SOURCES: [&str; 3] = [HOOKS_FILE, CLAUDE_SETTINGS, CLAUDE_LOCAL_SETTINGS];

const MAX_FILE_BYTES: u64 = 1024 * 1024;
const MAX_HOOKS: usize = 200;
const MAX_COMMAND_BYTES: usize = 16 * 1024;
const MAX_MATCHER_BYTES: usize = 1024;
const MAX_NAME_CHARS: usize = 200;
/// The contract's default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// The events Mandate runs hooks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    Stop,
    SessionStart,
    /// Mandate waits for the person (an approval, a question, a paused task): advisory.
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 6] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::Notification,
    ];

    /// The name in the settings and in `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::Notification => "Notification",
        }
    }

    fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether the matcher applies (as in the contract: tool events match the tool name,
    /// SessionStart its source, Notification its type; the others run every hook).
    pub fn uses_matcher(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::SessionStart
                | HookEvent::Notification
        )
    }

    /// Whether a hook of this event can block or deny (SessionStart and Notification only
    /// inform: what they say is shown to the person).
    pub fn can_block(self) -> bool {
        !matches!(self, HookEvent::SessionStart | HookEvent::Notification)
    }
}

/// Which tool names a hook applies to.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// No matcher, `""` or `*`.
    All,
    /// Letters, digits, `_` and `|` only: exact names (`Write|Edit`), as the contract reads them.
    Names(Vec<String>),
    /// Anything else: a regular expression searched in the name (`mcp__github__.*`).
    Pattern(regex::Regex),
}

impl Matcher {
    pub fn parse(text: &str) -> Result<Matcher, String> {
        let text = text.trim();
        if text.is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        if text.len() > MAX_MATCHER_BYTES {
            return Err(format!(
                "the matcher is longer than {MAX_MATCHER_BYTES} bytes"
            ));
        }
        if text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            return Ok(Matcher::Names(
                text.split('|')
                    .filter(|n| !n.is_empty())
                    .map(str::to_string)
                    .collect(),
            ));
        }
        regex::RegexBuilder::new(text)
            .size_limit(1 << 20)
            .dfa_size_limit(1 << 20)
            .build()
            .map(Matcher::Pattern)
            .map_err(|e| format!("the matcher `{text}` is not a valid regular expression: {e}"))
    }

    /// The matcher as the person would write it.
    pub fn describe(&self) -> String {
        match self {
            Matcher::All => "*".into(),
            Matcher::Names(list) => list.join("|"),
            Matcher::Pattern(re) => re.as_str().to_string(),
        }
    }

    /// Whether any of `names` (Mandate's name and its familiar aliases) is matched.
    pub fn matches(&self, names: &[&str]) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(list) => names.iter().any(|n| list.iter().any(|l| l == n)),
            Matcher::Pattern(re) => names.iter().any(|n| re.is_match(n)),
        }
    }
}

/// What a configured hook runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookCommand {
    /// `bash -c COMMAND`.
    Shell(String),
    /// A hook Mandate cannot run (`"type": "prompt"`, a PowerShell `shell`): running it is a
    /// failure, so it denies the mutating tools it matches unless it is advisory.
    Unsupported(String),
}

/// One hook, as configured and checked.
#[derive(Debug, Clone)]
pub struct HookSpec {
    pub event: HookEvent,
    pub matcher: Matcher,
    pub command: HookCommand,
    pub timeout: Duration,
    /// Mandate extension `"advisory": true`: a failure of this hook is reported, never a denial.
    pub advisory: bool,
    /// Mandate extension `"network": true`: the hook may reach the network.
    pub network: bool,
    /// Mandate extension `"name"`, else the command shortened: how the hook is named to the
    /// person, the model and the ledger.
    pub name: String,
    /// The file it was read from.
    pub source: &'static str,
}

/// Every hook of a workspace, in running order.
#[derive(Debug, Clone, Default)]
pub struct HookConfig {
    pub hooks: Vec<HookSpec>,
    /// What is configured but not run by Mandate (other events), in the person's words.
    pub ignored: Vec<String>,
    /// `(file, canonical JSON of its hooks section)` for each file that has one: what the
    /// person confirms.
    pub sections: Vec<(&'static str, String)>,
}

impl HookConfig {
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The hooks of `event` that apply to `names`, without repeats of one command (the
    /// contract runs a repeated command once).
    pub fn matching(&self, event: HookEvent, names: &[&str]) -> Vec<&HookSpec> {
        let mut out: Vec<&HookSpec> = Vec::new();
        for hook in self.hooks.iter().filter(|h| h.event == event) {
            if event.uses_matcher() && !hook.matcher.matches(names) {
                continue;
            }
            let repeated = out.iter().any(|o| {
                o.command == hook.command && o.network == hook.network && o.timeout == hook.timeout
            });
            if !repeated {
                out.push(hook);
            }
        }
        out
    }
}

/// Why the hooks cannot be used until the person fixes a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{file} cannot be read: {message}")]
    Unreadable { file: &'static str, message: String },
    #[error("{file} is larger than 1 MiB")]
    TooLarge { file: &'static str },
    #[error("{file} is not valid JSON (line {line}, column {column}): {message}")]
    Json {
        file: &'static str,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: {at}: {message}")]
    Invalid {
        file: &'static str,
        at: String,
        message: String,
    },
    #[error("more than {MAX_HOOKS} hooks are configured")]
    TooMany,
}

/// Reads every hooks file of the workspace at `root` (a missing file has no hooks).
pub fn load(root: &Path) -> Result<HookConfig, ConfigError> {
    let mut config = HookConfig::default();
    for file in SOURCES {
        if let Some(text) = read_capped(root, file)? {
            parse(file, &text, &mut config)?;
        }
    }
    Ok(config)
}

fn read_capped(root: &Path, file: &'static str) -> Result<Option<String>, ConfigError> {
    let unreadable = |e: std::io::Error| ConfigError::Unreadable {
        file,
        message: e.to_string(),
    };
    let handle = match std::fs::File::open(root.join(file)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e)),
    };
    let mut bytes = Vec::new();
    handle
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ConfigError::TooLarge { file });
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| ConfigError::Unreadable {
            file,
            message: "it is not UTF-8 text".into(),
        })
}

/// Adds the hooks of one file's text to `config`.
pub fn parse(file: &'static str, text: &str, config: &mut HookConfig) -> Result<(), ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json {
        file,
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let invalid = |at: &str, message: &str| ConfigError::Invalid {
        file,
        at: at.to_string(),
        message: message.to_string(),
    };
    let Value::Object(top) = value else {
        return Err(invalid("the top level", "expected a JSON object"));
    };
    // Claude Code's settings carry much else; Mandate's own file may also list the events
    // at the top level.
    let events = match top.get("hooks") {
        Some(Value::Object(events)) => events.clone(),
        Some(Value::Null) => return Ok(()),
        Some(_) => return Err(invalid("hooks", "expected an object of events")),
        None if file == HOOKS_FILE => top,
        None => return Ok(()),
    };
    config.sections.push((
        file,
        crate::orchestration::ledger::canonical_json(&Value::Object(events.clone())),
    ));
    for (name, groups) in &events {
        let Some(event) = HookEvent::parse(name) else {
            config.ignored.push(format!(
                "`{name}` hooks in {file} (Mandate runs PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart and Notification)"
            ));
            continue;
        };
        let Value::Array(groups) = groups else {
            return Err(invalid(name, "expected a list of {matcher, hooks}"));
        };
        for (g, group) in groups.iter().enumerate() {
            let at = format!("{name}[{g}]");
            parse_group(file, event, &at, group, config)?;
        }
    }
    if config.hooks.len() > MAX_HOOKS {
        return Err(ConfigError::TooMany);
    }
    Ok(())
}

fn parse_group(
    file: &'static str,
    event: HookEvent,
    at: &str,
    group: &Value,
    config: &mut HookConfig,
) -> Result<(), ConfigError> {
    let invalid = |at: &str, message: String| ConfigError::Invalid {
        file,
        at: at.to_string(),
        message,
    };
    let Value::Object(group) = group else {
        return Err(invalid(at, "expected an object {matcher, hooks}".into()));
    };
    let matcher = match group.get("matcher") {
        None | Some(Value::Null) => Matcher::All,
        Some(Value::String(m)) => {
            Matcher::parse(m).map_err(|e| invalid(&format!("{at}.matcher"), e))?
        }
        Some(_) => {
            return Err(invalid(
                &format!("{at}.matcher"),
                "expected a string".into(),
            ))
        }
    };
    let Some(Value::Array(hooks)) = group.get("hooks") else {
        return Err(invalid(
            &format!("{at}.hooks"),
            "expected a list of hooks".into(),
        ));
    };
    for (h, hook) in hooks.iter().enumerate() {
        let at = format!("{at}.hooks[{h}]");
        let Value::Object(hook) = hook else {
            return Err(invalid(&at, "expected an object {type, command}".into()));
        };
        let spec = parse_hook(hook, &at)
            .map_err(|(field, message)| invalid(&format!("{at}{field}"), message))?;
        config.hooks.push(HookSpec {
            event,
            matcher: matcher.clone(),
            source: file,
            ..spec
        });
        if config.hooks.len() > MAX_HOOKS {
            return Err(ConfigError::TooMany);
        }
    }
    Ok(())
}

/// One hook entry; an error is `(".field", message)`.
fn parse_hook(hook: &Map<String, Value>, at: &str) -> Result<HookSpec, (String, String)> {
    let field = |name: &str| format!(".{name}");
    let string = |name: &str| match hook.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err((field(name), "expected a string".to_string())),
    };
    let flag = |name: &str| match hook.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err((field(name), "expected true or false".to_string())),
    };
    let kind = string("type")?.ok_or((field("type"), "is missing".to_string()))?;
    let shell = string("shell")?;
    let command = match string("command")? {
        Some(c) if kind == "command" => {
            if c.trim().is_empty() {
                return Err((field("command"), "is empty".into()));
            }
            if c.len() > MAX_COMMAND_BYTES || c.contains('\0') {
                return Err((
                    field("command"),
                    format!("must be under {MAX_COMMAND_BYTES} bytes, without NUL"),
                ));
            }
            match shell.as_deref() {
                None | Some("bash") | Some("sh") => HookCommand::Shell(c),
                Some(other) => HookCommand::Unsupported(format!("a `{other}` shell")),
            }
        }
        None if kind == "command" => return Err((field("command"), "is missing".into())),
        _ => HookCommand::Unsupported(format!("`{kind}` hooks")),
    };
    let timeout = match hook.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if s > 0.0 && s <= MAX_TIMEOUT.as_secs_f64() => Duration::from_secs_f64(s),
            _ => {
                return Err((
                    field("timeout"),
                    format!(
                        "must be a number of seconds above 0 and at most {}",
                        MAX_TIMEOUT.as_secs()
                    ),
                ))
            }
        },
        Some(_) => return Err((field("timeout"), "expected a number of seconds".into())),
    };
    let name = match string("name")? {
        Some(n) if n.trim().is_empty() || n.chars().count() > MAX_NAME_CHARS => {
            return Err((
                field("name"),
                format!("must be 1 to {MAX_NAME_CHARS} characters"),
            ))
        }
        Some(n) => n.trim().to_string(),
        None => default_name(&command, at),
    };
    Ok(HookSpec {
        event: HookEvent::PreToolUse,
        matcher: Matcher::All,
        command,
        timeout,
        advisory: flag("advisory")?,
        network: flag("network")?,
        name,
        source: HOOKS_FILE,
    })
}

/// The command's first line, shortened, as the hook's name.
fn default_name(command: &HookCommand, at: &str) -> String {
    match command {
        HookCommand::Shell(c) => {
            let line = c.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let short = crate::text::ellipsize(line.trim(), 80).into_owned();
            if short.is_empty() {
                at.to_string()
            } else {
                short
            }
        }
        HookCommand::Unsupported(_) => at.to_string(),
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
