//! What the model sees of the servers' tools: `mcp__<server>__<tool>`, with the server's
//! description and input schema.
//!
//! Names are cut down to what every provider accepts (`[A-Za-z0-9_-]`, at most 64 characters;
//! other characters become `_`, a longer name keeps its start and gets a short hash of the
//! whole). Two tools that end up with the same name are a collision: the first in (server, tool)
//! order keeps it, the other is hidden and Settings says why; a name is never silently reused.
//! A tool whose input schema is not a JSON object schema, or that is too big to send with every
//! request, is hidden the same way.

use serde_json::Value;

pub const PREFIX: &str = "mcp__";
pub const MAX_NAME: usize = 64;
/// Tools one server may offer; the rest are hidden.
pub const MAX_TOOLS_PER_SERVER: usize = 128;
const MAX_DESCRIPTION: usize = 4096;
const MAX_SCHEMA_BYTES: usize = 64 * 1024;

pub use crate::protocol::McpAnnotations as Annotations;

/// One tool as the server listed it (checked and capped).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The server's own name for it (what a call sends back).
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub annotations: Annotations,
}

impl ToolInfo {
    /// A tool from its wire form (`name`, `description`, `inputSchema`, `annotations`); the
    /// error says why it cannot be offered to the model.
    pub fn from_wire(tool: &Value) -> Result<ToolInfo, String> {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty() && n.len() <= 256)
            .ok_or("the tool has no usable name")?;
        let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
        check_schema(&schema)?;
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let a = tool.get("annotations");
        let hint = |key: &str| a.and_then(|a| a.get(key)).and_then(Value::as_bool);
        Ok(ToolInfo {
            name: name.to_string(),
            description: crate::text::ellipsize(description, MAX_DESCRIPTION).into_owned(),
            input_schema: schema,
            annotations: Annotations {
                title: a
                    .and_then(|a| a.get("title"))
                    .and_then(Value::as_str)
                    .map(|t| crate::text::ellipsize(t, 200).into_owned()),
                read_only: hint("readOnlyHint"),
                destructive: hint("destructiveHint"),
                idempotent: hint("idempotentHint"),
                open_world: hint("openWorldHint"),
            },
        })
    }
}

/// The model receives the schema as the tool's parameters: it must describe a JSON object.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    let Some(obj) = schema.as_object() else {
        return Err("its input schema is not a JSON object".into());
    };
    if obj.get("type").and_then(Value::as_str) != Some("object") {
        return Err("its input schema is not an object schema (`\"type\": \"object\"`)".into());
    }
    if obj.get("properties").is_some_and(|p| !p.is_object()) {
        return Err("its input schema's `properties` is not an object".into());
    }
    let required_ok = obj
        .get("required")
        .is_none_or(|r| r.as_array().is_some_and(|r| r.iter().all(Value::is_string)));
    if !required_ok {
        return Err("its input schema's `required` is not a list of names".into());
    }
    let size = serde_json::to_string(schema)
        .map(|s| s.len())
        .unwrap_or(usize::MAX);
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its input schema is larger than {} KiB",
            MAX_SCHEMA_BYTES / 1024
        ));
    }
    Ok(())
}

fn sanitize(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The name the model calls a server's tool by.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("{PREFIX}{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_NAME {
        return full;
    }
    let hash = crate::fsutil::sha256_hex(format!("{server}\0{tool}").as_bytes());
    format!(
        "{}_{}",
        crate::text::prefix(&full, MAX_NAME - 9),
        crate::text::prefix(&hash, 8)
    )
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub server: String,
    pub model_name: String,
    pub tool: ToolInfo,
}

/// A tool the model is not given, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    pub server: String,
    pub tool: String,
    pub reason: String,
}

/// The tools of every server, named; collisions and overflow hidden with a reason.
pub fn build<'a>(
    servers: impl IntoIterator<Item = (&'a str, &'a [ToolInfo])>,
) -> (Vec<Entry>, Vec<Hidden>) {
    let mut servers: Vec<(&str, &[ToolInfo])> = servers.into_iter().collect();
    servers.sort_by(|a, b| a.0.cmp(b.0));
    let (mut entries, mut hidden) = (Vec::<Entry>::new(), Vec::new());
    let mut taken = std::collections::HashMap::<String, (String, String)>::new();
    for (server, tools) in servers {
        let mut tools: Vec<&ToolInfo> = tools.iter().collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        for (i, tool) in tools.into_iter().enumerate() {
            let hide = |reason: String| Hidden {
                server: server.to_string(),
                tool: super::config::printable(&tool.name, 80),
                reason,
            };
            if i >= MAX_TOOLS_PER_SERVER {
                hidden.push(hide(format!(
                    "the server offers more than {MAX_TOOLS_PER_SERVER} tools"
                )));
                continue;
            }
            let name = tool_name(server, &tool.name);
            if let Some((other_server, other_tool)) = taken.get(&name) {
                hidden.push(hide(format!(
                    "its name `{name}` is already taken by `{}` of server `{other_server}`; rename one of them",
                    super::config::printable(other_tool, 80)
                )));
                continue;
            }
            taken.insert(name.clone(), (server.to_string(), tool.name.clone()));
            entries.push(Entry {
                server: server.to_string(),
                model_name: name,
                tool: tool.clone(),
            });
        }
    }
    (entries, hidden)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn tool(name: &str) -> ToolInfo {
        ToolInfo::from_wire(&json!({"name": name, "inputSchema": {"type": "object"}}))
            .expect("valid tool")
    }

    #[test]
    fn names_fit_every_provider() {
        assert_eq!(tool_name("files", "read"), "mcp__files__read");
        assert_eq!(
            tool_name("my.srv", "do thing/now!"),
            "mcp__my_srv__do_thing_now_"
        );
        assert_eq!(tool_name("s", "ünïcødé"), "mcp__s___n_c_d_");
        let long = tool_name("server", &"x".repeat(300));
        assert_eq!(long.len(), MAX_NAME);
        assert_ne!(
            long,
            tool_name("server", &"x".repeat(301)),
            "the hash tells them apart"
        );
        let re = regex::Regex::new("^[A-Za-z0-9_-]{1,64}$").expect("regex");
        for (s, t) in [("a", "\u{0}\n\t"), ("b-c", "🦀"), ("x", &"é".repeat(100))] {
            assert!(re.is_match(&tool_name(s, t)), "{}", tool_name(s, t));
        }
    }

    #[test]
    fn collisions_are_refused_with_a_reason() {
        let a = [tool("do.it"), tool("do_it"), tool("other")];
        let b = [tool("x")];
        let (entries, hidden) = build([("b.c", &b[..]), ("a", &a[..]), ("b_c", &b[..])]);
        let names: Vec<&str> = entries.iter().map(|e| e.model_name.as_str()).collect();
        assert_eq!(names, ["mcp__a__do_it", "mcp__a__other", "mcp__b_c__x"]);
        assert_eq!(hidden.len(), 2, "{hidden:#?}");
        assert_eq!(
            (hidden[0].server.as_str(), hidden[0].tool.as_str()),
            ("a", "do_it")
        );
        assert!(
            hidden[0].reason.contains("already taken by `do.it`"),
            "{hidden:#?}"
        );
        assert_eq!(hidden[1].server, "b_c");
    }

    #[test]
    fn broken_schemas_and_names_are_refused() {
        for (wire, why) in [
            (
                json!({"name": "t", "inputSchema": {"type": "string"}}),
                "not an object schema",
            ),
            (
                json!({"name": "t", "inputSchema": "object"}),
                "not a JSON object",
            ),
            (json!({"name": "t"}), "not a JSON object"),
            (
                json!({"name": "t", "inputSchema": {"type": "object", "properties": []}}),
                "`properties`",
            ),
            (
                json!({"name": "t", "inputSchema": {"type": "object", "required": [1]}}),
                "`required`",
            ),
            (
                json!({"name": "", "inputSchema": {"type": "object"}}),
                "no usable name",
            ),
            (json!({"inputSchema": {"type": "object"}}), "no usable name"),
            (
                json!({"name": "t", "inputSchema": {"type": "object", "description": "x".repeat(70_000)}}),
                "larger than",
            ),
        ] {
            let err = ToolInfo::from_wire(&wire).expect_err("refused");
            assert!(err.contains(why), "{err} for {wire}");
        }
        let t = ToolInfo::from_wire(&json!({
            "name": "t", "description": "d".repeat(10_000), "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "destructiveHint": "yes"}
        }))
        .expect("valid");
        assert!(t.description.chars().count() <= MAX_DESCRIPTION + 1);
        assert_eq!(t.annotations.read_only, Some(true));
        assert_eq!(
            t.annotations.destructive, None,
            "a hint that is not a boolean is no hint"
        );
    }

    #[test]
    fn a_server_with_too_many_tools_is_capped() {
        let many: Vec<ToolInfo> = (0..MAX_TOOLS_PER_SERVER + 3)
            .map(|i| tool(&format!("t{i:04}")))
            .collect();
        let (entries, hidden) = build([("s", &many[..])]);
        assert_eq!(entries.len(), MAX_TOOLS_PER_SERVER);
        assert_eq!(hidden.len(), 3);
    }
}
