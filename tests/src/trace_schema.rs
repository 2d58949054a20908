//! The Agent Trace 0.1 record schema, strict: the spec's constraints with no extra keys allowed
//! anywhere but `metadata` (the form of the spec's generated JSON Schema), used to validate every
//! record the tests produce.

use serde_json::{json, Value};

pub fn schema() -> Value {
    let contributor = json!({
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {"type": "string", "enum": ["human", "ai", "mixed", "unknown"]},
            "model_id": {"type": "string", "maxLength": 250}
        },
        "additionalProperties": false
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["version", "id", "timestamp", "files"],
        "properties": {
            "version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+$"},
            "id": {"type": "string", "format": "uuid",
                   "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$"},
            "timestamp": {"type": "string", "format": "date-time", "pattern": "Z$"},
            "vcs": {
                "type": "object", "required": ["type", "revision"],
                "properties": {"type": {"enum": ["git", "jj", "hg", "svn"]}, "revision": {"type": "string"}},
                "additionalProperties": false
            },
            "tool": {
                "type": "object", "required": ["name", "version"],
                "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
                "additionalProperties": false
            },
            "files": {"type": "array", "items": {
                "type": "object", "required": ["path", "conversations"],
                "properties": {
                    "path": {"type": "string"},
                    "conversations": {"type": "array", "items": {
                        "type": "object", "required": ["ranges"],
                        "properties": {
                            "url": {"type": "string", "format": "uri"},
                            "contributor": contributor,
                            "ranges": {"type": "array", "items": {
                                "type": "object", "required": ["start_line", "end_line"],
                                "properties": {
                                    "start_line": {"type": "integer", "minimum": 1},
                                    "end_line": {"type": "integer", "minimum": 1},
                                    "content_hash": {"type": "string"},
                                    "contributor": contributor
                                },
                                "additionalProperties": false
                            }},
                            "related": {"type": "array", "items": {
                                "type": "object", "required": ["type", "url"],
                                "properties": {"type": {"type": "string"}, "url": {"type": "string", "format": "uri"}},
                                "additionalProperties": false
                            }}
                        },
                        "additionalProperties": false
                    }}
                },
                "additionalProperties": false
            }},
            "metadata": {"type": "object"}
        },
        "additionalProperties": false
    })
}

/// Errors of one record against the schema (empty when valid).
pub fn errors(record: &Value) -> Vec<String> {
    let validator = match jsonschema::options()
        .should_validate_formats(true)
        .build(&schema())
    {
        Ok(v) => v,
        Err(e) => return vec![format!("the schema does not compile: {e}")],
    };
    validator
        .iter_errors(record)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Panics with every problem if a record is not valid Agent Trace 0.1.
pub fn assert_valid(record: &Value) {
    let errors = errors(record);
    assert!(
        errors.is_empty(),
        "invalid Agent Trace record: {errors:#?}\n{record:#}"
    );
    let vendor = &record["metadata"]["dev.mandate"];
    for key in [
        "intent_id",
        "mutation_class",
        "tool",
        "tool_call_id",
        "approval",
        "prev",
        "digest",
    ] {
        assert!(
            !vendor[key].is_null(),
            "metadata.dev.mandate.{key} is missing: {record:#}"
        );
    }
}

/// Panics with every problem if `value` does not match `schema`.
pub fn assert_matches(schema: &Value, value: &Value) {
    let validator = jsonschema::options()
        .build(schema)
        .unwrap_or_else(|e| panic!("the schema does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "does not match its schema: {errors:#?}\n{value:#}"
    );
}

fn count() -> Value {
    json!({"type": "integer", "minimum": 0})
}

/// `mandate trace verify --json` (with or without `--git`): `mandate.trace.verify/1`, as
/// documented in the README. Fields may be added; none is removed or changes meaning.
pub fn verify_output_schema() -> Value {
    let finding = json!({
        "type": "object",
        "required": ["kind", "ledger_line", "record_id", "path", "range", "detail"],
        "properties": {
            "kind": {"enum": ["intact", "moved", "changed", "missing", "tampered", "malformed"]},
            "ledger_line": count(),
            "record_id": {"type": ["string", "null"]},
            "path": {"type": ["string", "null"]},
            "range": {"oneOf": [{"type": "null"}, {
                "type": "object", "required": ["start_line", "end_line"],
                "properties": {"start_line": count(), "end_line": count()}
            }]},
            "detail": {"type": "string"}
        }
    });
    let anchor = json!({
        "type": "object", "required": ["records", "tip", "path"],
        "properties": {"records": count(), "tip": {"type": "string", "pattern": "^[0-9a-f]{64}$"}, "path": {"type": "string"}}
    });
    let git = json!({
        "type": "object",
        "required": ["range", "end", "commits", "anchors", "unanchored", "records", "chain_problems", "problems"],
        "properties": {
            "range": {"type": "string"},
            "end": {"type": "string", "pattern": "^[0-9a-f]{40}([0-9a-f]{24})?$"},
            "commits": count(), "anchors": count(), "unanchored": count(), "records": count(),
            "chain_problems": {"type": "array", "items": {
                "type": "object", "required": ["line", "detail"],
                "properties": {"line": count(), "detail": {"type": "string"}}
            }},
            "problems": {"type": "array", "items": {
                "type": "object", "required": ["commit", "subject", "anchor", "detail"],
                "properties": {"commit": {"type": "string"}, "subject": {"type": "string"}, "anchor": anchor, "detail": {"type": "string"}}
            }}
        }
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["schema", "status", "exit_code", "records", "ranges", "intact", "moved", "superseded",
                     "changed", "missing", "tampered", "malformed", "findings", "chain_ok", "notes", "git"],
        "properties": {
            "schema": {"const": "mandate.trace.verify/1"},
            "status": {"enum": ["intact", "tampered"]},
            "exit_code": {"enum": [0, 1]},
            "records": count(), "ranges": count(), "intact": count(), "moved": count(),
            "superseded": count(), "changed": count(), "missing": count(), "tampered": count(),
            "malformed": count(),
            "findings": {"type": "array", "items": finding},
            "chain_ok": {"type": "boolean"},
            "notes": {"type": "array", "items": {"type": "string"}},
            "git": {"oneOf": [{"type": "null"}, git]}
        }
    })
}

/// `mandate trace report RANGE --format json`: `mandate.trace.report/1`.
pub fn report_schema() -> Value {
    let counts = json!({"type": "array", "items": {
        "type": "object", "required": ["name", "records"],
        "properties": {"name": {"type": "string"}, "records": count()}
    }});
    let intent = json!({
        "type": "object",
        "required": ["intent_id", "records", "files", "models", "approvals", "edited_by_people", "rejected_hunks", "undos"],
        "properties": {
            "intent_id": {"type": "string"},
            "records": count(),
            "files": {"type": "array", "items": {
                "type": "object", "required": ["path", "agent_lines", "recorded_lines"],
                "properties": {"path": {"type": "string"}, "agent_lines": count(), "recorded_lines": count()}
            }},
            "models": counts, "approvals": counts,
            "edited_by_people": count(), "rejected_hunks": count(),
            "undos": {"type": "array", "items": {"type": "string"}}
        }
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["schema", "range", "base", "end", "commits", "records", "intents", "unrecorded", "coverage"],
        "properties": {
            "schema": {"const": "mandate.trace.report/1"},
            "range": {"type": "string"}, "base": {"type": "string"}, "end": {"type": "string"},
            "commits": count(), "records": count(),
            "intents": {"type": "array", "items": intent},
            "unrecorded": {"type": "array", "items": {
                "type": "object", "required": ["path", "lines"],
                "properties": {"path": {"type": "string"}, "lines": count()}
            }},
            "coverage": {
                "type": "object",
                "required": ["added_lines", "agent_lines", "unrecorded_lines", "percent"],
                "properties": {"added_lines": count(), "agent_lines": count(), "unrecorded_lines": count(),
                               "percent": {"type": "number", "minimum": 0, "maximum": 100}}
            }
        }
    })
}

/// `mandate trace validate FILE --json`: `mandate.trace.validate/1`.
pub fn validate_output_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["schema", "file", "strict", "records", "valid", "errors", "warnings", "issues"],
        "properties": {
            "schema": {"const": "mandate.trace.validate/1"},
            "file": {"type": "string"}, "strict": {"type": "boolean"},
            "records": count(), "valid": count(), "errors": count(), "warnings": count(),
            "issues": {"type": "array", "items": {
                "type": "object", "required": ["line", "pointer", "severity", "message"],
                "properties": {"line": count(), "pointer": {"type": "string"},
                               "severity": {"enum": ["error", "warning"]}, "message": {"type": "string"}}
            }}
        }
    })
}
