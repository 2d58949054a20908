//! `mandate trace validate FILE`: any Agent Trace JSONL file (Mandate's or another tool's)
//! against the specification's record schema, line by line.
//!
//! The schema below is the specification's (Agent Trace 0.1.0, `cursor/agent-trace`), written
//! here as data and read by a small interpreter of the JSON Schema keywords it uses, so the
//! messages can name the line and the field. Two rules are ours, because the specification's
//! own texts disagree:
//!
//! - **version**: the README's schema asks for `x.y.z` (`"0.1.0"`), the first published schema
//!   and the reference writer's description use `x.y` (`"1.0"`), and the generated schema's
//!   pattern is mistyped (it cannot match either). Both forms are accepted; `x.y` means
//!   `x.y.0`. A version other than 0.1 is a warning (checked against 0.1 anyway).
//! - **unknown keys** outside `metadata`: the README's schema allows them, the generated one
//!   (and `tool.name`/`tool.version` being required) forbids them. They are warnings; with
//!   `--strict` they are errors.

use std::collections::HashSet;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;

pub const VALIDATE_SCHEMA: &str = "mandate.trace.validate/1";

/// The record schema. `x-strict-required` lists keys the generated schema requires and the
/// README's does not.
const RECORD_SCHEMA: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "Agent Trace Record (0.1)",
  "type": "object",
  "required": ["version", "id", "timestamp", "files"],
  "properties": {
    "version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+(\\.[0-9]+)?$"},
    "id": {"type": "string", "format": "uuid"},
    "timestamp": {"type": "string", "format": "date-time"},
    "vcs": {"$ref": "#/$defs/vcs"},
    "tool": {"$ref": "#/$defs/tool"},
    "files": {"type": "array", "items": {"$ref": "#/$defs/file"}},
    "metadata": {"type": "object"}
  },
  "additionalProperties": false,
  "$defs": {
    "vcs": {
      "type": "object",
      "required": ["type", "revision"],
      "properties": {
        "type": {"type": "string", "enum": ["git", "jj", "hg", "svn"]},
        "revision": {"type": "string"}
      },
      "additionalProperties": false
    },
    "tool": {
      "type": "object",
      "x-strict-required": ["name", "version"],
      "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
      "additionalProperties": false
    },
    "file": {
      "type": "object",
      "required": ["path", "conversations"],
      "properties": {
        "path": {"type": "string"},
        "conversations": {"type": "array", "items": {"$ref": "#/$defs/conversation"}}
      },
      "additionalProperties": false
    },
    "contributor": {
      "type": "object",
      "required": ["type"],
      "properties": {
        "type": {"type": "string", "enum": ["human", "ai", "mixed", "unknown"]},
        "model_id": {"type": "string", "maxLength": 250}
      },
      "additionalProperties": false
    },
    "conversation": {
      "type": "object",
      "required": ["ranges"],
      "properties": {
        "url": {"type": "string", "format": "uri"},
        "contributor": {"$ref": "#/$defs/contributor"},
        "ranges": {"type": "array", "items": {"$ref": "#/$defs/range"}},
        "related": {"type": "array", "items": {"$ref": "#/$defs/related"}}
      },
      "additionalProperties": false
    },
    "related": {
      "type": "object",
      "required": ["type", "url"],
      "properties": {"type": {"type": "string"}, "url": {"type": "string", "format": "uri"}},
      "additionalProperties": false
    },
    "range": {
      "type": "object",
      "required": ["start_line", "end_line"],
      "properties": {
        "start_line": {"type": "integer", "minimum": 1},
        "end_line": {"type": "integer", "minimum": 1},
        "content_hash": {"type": "string"},
        "contributor": {"$ref": "#/$defs/contributor"}
      },
      "additionalProperties": false
    }
  }
}"##;

/// The record schema as a JSON value (with our `x-strict-required` extension).
pub fn record_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| serde_json::from_str(RECORD_SCHEMA).unwrap_or(Value::Null))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// 1-based line of the file.
    pub line: usize,
    /// JSON pointer into the record (`/files/0/path`); empty for the record as a whole.
    pub pointer: String,
    pub severity: Severity,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Validation {
    pub schema: &'static str,
    pub file: String,
    pub strict: bool,
    pub records: usize,
    /// Records without an error.
    pub valid: usize,
    pub errors: usize,
    pub warnings: usize,
    /// The first issues (at most [`MAX_ISSUES`]); the counts above are complete.
    pub issues: Vec<Issue>,
}

impl Validation {
    pub fn ok(&self) -> bool {
        self.errors == 0
    }
}

pub const MAX_ISSUES: usize = 1000;

/// Validates every non-blank line of `bytes`.
pub fn validate(file: &str, bytes: &[u8], strict: bool) -> Validation {
    let mut out = Validation {
        schema: VALIDATE_SCHEMA,
        file: file.to_string(),
        strict,
        records: 0,
        valid: 0,
        errors: 0,
        warnings: 0,
        issues: Vec::new(),
    };
    let mut ids = HashSet::new();
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        out.records += 1;
        let mut issues = Vec::new();
        match serde_json::from_slice::<Value>(line) {
            Err(e) => issues.push(issue("", Severity::Error, format!("not JSON: {e}"))),
            Ok(record) => {
                check(record_schema(), &record, "", strict, &mut issues);
                check_rules(&record, &mut ids, &mut issues);
            }
        }
        let errors = issues
            .iter()
            .filter(|x| x.severity == Severity::Error)
            .count();
        out.errors += errors;
        out.warnings += issues.len() - errors;
        if errors == 0 {
            out.valid += 1;
        }
        for mut x in issues {
            if out.issues.len() < MAX_ISSUES {
                x.line = i + 1;
                out.issues.push(x);
            }
        }
    }
    out
}

fn issue(pointer: &str, severity: Severity, message: String) -> Issue {
    Issue {
        line: 0,
        pointer: pointer.to_string(),
        severity,
        message,
    }
}

/// Rules the schema cannot say: the version's meaning, ranges in order, unique ids.
fn check_rules(record: &Value, ids: &mut HashSet<String>, issues: &mut Vec<Issue>) {
    if let Some(v) = record.get("version").and_then(Value::as_str) {
        let mut parts = v.split('.');
        if (parts.next(), parts.next()) != (Some("0"), Some("1")) && version_form(v) {
            issues.push(issue(
                "/version",
                Severity::Warning,
                format!("version {v} is not a specification version this validator knows (0.1); checked against 0.1"),
            ));
        }
    }
    if let Some(id) = record.get("id").and_then(Value::as_str) {
        if !ids.insert(id.to_string()) {
            issues.push(issue(
                "/id",
                Severity::Warning,
                format!("id {id} was used by an earlier record"),
            ));
        }
    }
    for (f, file) in record["files"].as_array().into_iter().flatten().enumerate() {
        for (c, conv) in file["conversations"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for (r, range) in conv["ranges"].as_array().into_iter().flatten().enumerate() {
                let (s, e) = (range["start_line"].as_u64(), range["end_line"].as_u64());
                if let (Some(s), Some(e)) = (s, e) {
                    if e < s {
                        issues.push(issue(
                            &format!("/files/{f}/conversations/{c}/ranges/{r}"),
                            Severity::Warning,
                            format!("end_line {e} is before start_line {s}"),
                        ));
                    }
                }
            }
        }
    }
}

fn version_form(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    (parts.len() == 2 || parts.len() == 3)
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn resolve(schema: &Value) -> &Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix("#/$defs/")
            .and_then(|name| record_schema().get("$defs")?.get(name))
            .unwrap_or(&Value::Null),
        None => schema,
    }
}

fn type_ok(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

/// Checks `value` at `pointer` against `schema` (the keywords the record schema uses).
fn check(schema: &Value, value: &Value, pointer: &str, strict: bool, out: &mut Vec<Issue>) {
    let schema = resolve(schema);
    if let Some(ty) = schema.get("type").and_then(Value::as_str) {
        if !type_ok(ty, value) {
            out.push(issue(
                pointer,
                Severity::Error,
                format!("must be {}", article(ty)),
            ));
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
            out.push(issue(
                pointer,
                Severity::Error,
                format!("{value} is not one of {}", names.join(", ")),
            ));
        }
    }
    if let Some(s) = value.as_str() {
        check_string(schema, s, pointer, out);
    }
    if let (Some(min), Some(n)) = (
        schema.get("minimum").and_then(Value::as_i64),
        value.as_i64(),
    ) {
        if n < min {
            out.push(issue(
                pointer,
                Severity::Error,
                format!("{n} is less than {min}"),
            ));
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, item) in list.iter().enumerate() {
            check(items, item, &format!("{pointer}/{i}"), strict, out);
        }
    }
    if let Some(object) = value.as_object() {
        check_object(schema, object, pointer, strict, out);
    }
}

fn check_string(schema: &Value, s: &str, pointer: &str, out: &mut Vec<Issue>) {
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        if s.chars().count() as u64 > max {
            out.push(issue(
                pointer,
                Severity::Error,
                format!("is longer than {max} characters"),
            ));
        }
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        if !matches_pattern(pattern, s) {
            out.push(issue(
                pointer,
                Severity::Error,
                format!("`{s}` does not match the pattern {pattern}"),
            ));
        }
    }
    let bad_format = match schema.get("format").and_then(Value::as_str) {
        Some("uuid") => (!is_uuid(s)).then_some("a UUID (8-4-4-4-12 hex digits)"),
        Some("date-time") => (!is_date_time(s)).then_some("an RFC 3339 date-time"),
        Some("uri") => (!is_uri(s)).then_some("a URI (scheme:rest)"),
        _ => None,
    };
    if let Some(what) = bad_format {
        out.push(issue(
            pointer,
            Severity::Error,
            format!("`{s}` is not {what}"),
        ));
    }
}

fn check_object(
    schema: &Value,
    object: &serde_json::Map<String, Value>,
    pointer: &str,
    strict: bool,
    out: &mut Vec<Issue>,
) {
    let props = schema.get("properties").and_then(Value::as_object);
    for key in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(k) = key.as_str().filter(|k| !object.contains_key(*k)) {
            out.push(issue(
                pointer,
                Severity::Error,
                format!("`{k}` is required"),
            ));
        }
    }
    let strict_level = if strict {
        Severity::Error
    } else {
        Severity::Warning
    };
    for key in schema
        .get("x-strict-required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(k) = key.as_str().filter(|k| !object.contains_key(*k)) {
            out.push(issue(
                pointer,
                strict_level,
                format!("`{k}` is required by the specification's generated schema"),
            ));
        }
    }
    for (k, v) in object {
        let child = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
        match props.and_then(|p| p.get(k)) {
            Some(s) => check(s, v, &child, strict, out),
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                out.push(issue(
                    &child,
                    strict_level,
                    format!("`{k}` is not a field of the specification (vendor data belongs under `metadata`)"),
                ));
            }
            None => {}
        }
    }
}

/// The schema's patterns, compiled once each.
fn matches_pattern(pattern: &str, s: &str) -> bool {
    static CACHE: OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, Option<regex::Regex>>>,
    > = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    cache
        .entry(pattern.to_string())
        .or_insert_with(|| regex::Regex::new(pattern).ok())
        .as_ref()
        .is_some_and(|r| r.is_match(s))
}

fn article(ty: &str) -> String {
    match ty {
        "object" | "array" | "integer" => format!("an {ty}"),
        _ => format!("a {ty}"),
    }
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn is_date_time(s: &str) -> bool {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).is_ok()
}

fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.is_empty()
        && !s
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "<>\"{}|\\^`".contains(c))
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
