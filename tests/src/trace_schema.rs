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
