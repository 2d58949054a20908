//! Server definitions, read from the workspace's `.mcp.json` (untrusted input: any workspace can
//! ship one) and from the person's own MCP file in Mandate's config directory, in the format
//! Claude Code and other agents read:
//!
//! ```json
//! {"mcpServers": {
//!   "files":  {"command": "npx", "args": ["-y", "some-server"], "env": {"TOKEN": "${TOKEN}"}},
//!   "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${keyring:TOKEN}"}}
//! }}
//! ```
//!
//! Parsing is strict about what Mandate uses and lenient about what it does not: a server entry
//! that is wrong is refused on its own (with the reason, shown in Settings) and the others load;
//! unknown keys other agents write (`alwaysAllow`, `autoApprove`, …) are ignored and never lift
//! a gate. `command` + `args` is an argv, never a shell line: `a; rm -rf /` is one program name.
//! Values may reference secrets as `${keyring:NAME}`, `${NAME}` or `${NAME:-default}` (see
//! [`super::refs`]); nothing is ever taken from Mandate's own environment.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Map, Value};

/// A `.mcp.json` larger than this is refused whole.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
pub const MAX_SERVERS: usize = 64;
const MAX_ARGS: usize = 256;
const MAX_ENV: usize = 128;
const MAX_HEADERS: usize = 64;
const MAX_VALUE: usize = 32 * 1024;
const MAX_COMMAND: usize = 4096;
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
pub const MAX_STARTUP_TIMEOUT: Duration = Duration::from_secs(120);
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);
pub const MAX_TOOL_TIMEOUT: Duration = Duration::from_secs(1800);

/// Where a server is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// The workspace's `.mcp.json`: started only with the person's consent.
    Project,
    /// The person's own MCP file (added in Settings).
    Settings,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One server as defined (secret references not yet resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDef {
    pub name: String,
    pub source: Source,
    pub transport: Transport,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// `"disabled": true` in the file: listed, never started.
    pub disabled: bool,
}

impl ServerDef {
    /// What the person consents to: SHA-256 over the canonical definition (command, arguments,
    /// environment with its references unresolved, URL, headers, time limits). Any change to
    /// it asks again.
    pub fn definition_hash(&self) -> String {
        let canonical = crate::orchestration::ledger::canonical_json(&self.to_json());
        crate::fsutil::sha256_hex(canonical.as_bytes())
    }

    /// The entry as it would be written in an `mcpServers` map.
    pub fn to_json(&self) -> Value {
        let mut entry = match &self.transport {
            Transport::Stdio { command, args, env } => {
                json!({"type": "stdio", "command": command, "args": args, "env": env})
            }
            Transport::Http { url, headers } => {
                json!({"type": "http", "url": url, "headers": headers})
            }
        };
        if self.startup_timeout != DEFAULT_STARTUP_TIMEOUT {
            entry["startupTimeoutSec"] = json!(self.startup_timeout.as_secs());
        }
        if self.tool_timeout != DEFAULT_TOOL_TIMEOUT {
            entry["toolTimeoutSec"] = json!(self.tool_timeout.as_secs());
        }
        if self.disabled {
            entry["disabled"] = json!(true);
        }
        entry
    }

    /// The command line or URL, for the consent card and Settings (arguments quoted where a
    /// shell would split them, so the person sees exactly the argv).
    pub fn display_target(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => std::iter::once(command)
                .chain(args)
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }

    pub fn is_stdio(&self) -> bool {
        matches!(self.transport, Transport::Stdio { .. })
    }
}

fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// A server (or the whole file) that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// None: the whole file.
    pub server: Option<String>,
    pub source: Source,
    pub message: String,
}

/// What one file yields: the servers that parse, and the problems of the others.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub servers: Vec<ServerDef>,
    pub problems: Vec<ConfigProblem>,
}

/// Server names become part of tool names, keyring entries and the consent record.
pub fn check_server_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the server name `{}` is not allowed: use 1 to 64 letters, digits, `-`, `_` or `.`",
            printable(name, 80)
        ))
    }
}

/// A hostile name or value shown in a message: control characters escaped, length capped.
pub fn printable(text: &str, max: usize) -> String {
    let kept = crate::text::first_chars(text, max);
    let mut out: String = kept.chars().flat_map(char::escape_debug).collect();
    if kept.len() < text.len() {
        out.push('…');
    }
    out
}

/// Parses the text of an MCP file (`.mcp.json`, or the person's own file) for `source`.
pub fn parse(text: &str, source: Source, file: &str) -> Parsed {
    let whole = |message: String| Parsed {
        servers: Vec::new(),
        problems: vec![ConfigProblem {
            server: None,
            source,
            message,
        }],
    };
    if text.len() as u64 > MAX_FILE_BYTES {
        return whole(format!(
            "{file} is larger than {} KiB; no server from it is used",
            MAX_FILE_BYTES / 1024
        ));
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return whole(format!(
                "{file} is not valid JSON ({e}); no server from it is used"
            ))
        }
    };
    let Some(top) = value.as_object() else {
        return whole(format!("{file} must hold a JSON object"));
    };
    let servers = match top.get("mcpServers") {
        None | Some(Value::Null) => return Parsed::default(),
        Some(Value::Object(s)) => s,
        Some(_) => return whole(format!("`mcpServers` in {file} must be an object")),
    };
    let mut out = Parsed::default();
    for (i, (name, entry)) in servers.iter().enumerate() {
        let problem = |message: String| ConfigProblem {
            server: Some(printable(name, 64)),
            source,
            message,
        };
        if i >= MAX_SERVERS {
            out.problems.push(problem(format!(
                "{file} defines more than {MAX_SERVERS} servers; the rest are ignored"
            )));
            break;
        }
        match parse_entry(name, entry, source) {
            Ok(def) => out.servers.push(def),
            Err(message) => out.problems.push(problem(message)),
        }
    }
    out
}

/// One server entry; the error names what is wrong with it.
pub fn parse_entry(name: &str, entry: &Value, source: Source) -> Result<ServerDef, String> {
    check_server_name(name)?;
    let Some(entry) = entry.as_object() else {
        return Err("a server entry must be a JSON object".into());
    };
    let kind = match entry.get("type") {
        None | Some(Value::Null) => {
            if entry.contains_key("url") && !entry.contains_key("command") {
                "http"
            } else {
                "stdio"
            }
        }
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err("`type` must be a string".into()),
    };
    let transport = match kind {
        "stdio" => Transport::Stdio {
            command: command(entry)?,
            args: string_list(entry, "args", MAX_ARGS)?,
            env: string_map(entry, "env", MAX_ENV, check_env_name)?,
        },
        "http" | "streamable-http" | "streamableHttp" | "streamable_http" => Transport::Http {
            url: url(entry)?,
            headers: string_map(entry, "headers", MAX_HEADERS, check_header_name)?,
        },
        "sse" => {
            return Err(
                "the older SSE transport is not supported; use the server's streamable HTTP endpoint (`\"type\": \"http\"`)".into(),
            )
        }
        other => {
            return Err(format!(
                "unknown `type` `{}` (expected stdio or http)",
                printable(other, 40)
            ))
        }
    };
    Ok(ServerDef {
        name: name.to_string(),
        source,
        transport,
        startup_timeout: seconds(
            entry,
            "startupTimeoutSec",
            DEFAULT_STARTUP_TIMEOUT,
            MAX_STARTUP_TIMEOUT,
        )?,
        tool_timeout: seconds(
            entry,
            "toolTimeoutSec",
            DEFAULT_TOOL_TIMEOUT,
            MAX_TOOL_TIMEOUT,
        )?,
        disabled: match entry.get("disabled") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("`disabled` must be true or false".into()),
        },
    })
}

fn check_text(what: &str, value: &str, max: usize) -> Result<(), String> {
    if value.len() > max {
        return Err(format!("{what} is longer than {max} bytes"));
    }
    if value.contains('\0') {
        return Err(format!("{what} contains a NUL character"));
    }
    Ok(())
}

fn command(entry: &Map<String, Value>) -> Result<String, String> {
    match entry.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => {
            check_text("`command`", c, MAX_COMMAND)?;
            if c.chars().any(char::is_control) {
                return Err("`command` contains control characters".into());
            }
            Ok(c.clone())
        }
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err("a stdio server needs a `command` (the program to run)".into())
        }
        Some(_) => Err("`command` must be a string (the program; arguments go in `args`)".into()),
    }
}

fn url(entry: &Map<String, Value>) -> Result<String, String> {
    let Some(Value::String(url)) = entry.get("url") else {
        return Err("an http server needs a `url` string".into());
    };
    check_text("`url`", url, 4096)?;
    // References may stand for parts of the URL; the resolved URL is checked again.
    let probe = super::refs::placeholder(url);
    let parsed = reqwest::Url::parse(&probe).map_err(|e| format!("`url` is not a URL ({e})"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err("`url` must start with http:// or https:// and name a host".into());
    }
    Ok(url.clone())
}

fn string_list(entry: &Map<String, Value>, key: &str, max: usize) -> Result<Vec<String>, String> {
    let items = match entry.get(key) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(format!("`{key}` must be a list of strings")),
    };
    if items.len() > max {
        return Err(format!("`{key}` has more than {max} items"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => {
                check_text(&format!("`{key}[{i}]`"), s, MAX_VALUE).map(|()| s.clone())
            }
            _ => Err(format!("`{key}[{i}]` must be a string")),
        })
        .collect()
}

fn string_map(
    entry: &Map<String, Value>,
    key: &str,
    max: usize,
    check_name: fn(&str) -> bool,
) -> Result<BTreeMap<String, String>, String> {
    let map = match entry.get(key) {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(format!("`{key}` must be an object of strings")),
    };
    if map.len() > max {
        return Err(format!("`{key}` has more than {max} entries"));
    }
    let mut out = BTreeMap::new();
    for (name, value) in map {
        if !check_name(name) {
            return Err(format!(
                "`{key}` has an invalid name `{}`",
                printable(name, 64)
            ));
        }
        let Value::String(value) = value else {
            return Err(format!("`{key}.{name}` must be a string"));
        };
        check_text(&format!("`{key}.{name}`"), value, MAX_VALUE)?;
        if key == "headers" && value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(format!(
                "`{key}.{name}` contains a line break or control character"
            ));
        }
        out.insert(name.clone(), value.clone());
    }
    Ok(out)
}

fn check_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 128
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An HTTP token (RFC 9110), which is what a header name may be.
fn check_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

fn seconds(
    entry: &Map<String, Value>,
    key: &str,
    default: Duration,
    max: Duration,
) -> Result<Duration, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(s) if s >= 1 && s <= max.as_secs() => Ok(Duration::from_secs(s)),
            _ => Err(format!(
                "`{key}` must be a whole number of seconds from 1 to {}",
                max.as_secs()
            )),
        },
        Some(_) => Err(format!("`{key}` must be a number of seconds")),
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
