//! The scripted model's turns the black-box tests share, and what they read back from a run.

use std::path::Path;

use serde_json::{json, Value};

use crate::app::UserDirs;
use crate::cli::{run_openai, Output};
use crate::llm_server::{Reply, ScriptedServer};
use crate::sse::openai;

/// The model selects `INT-001`, the intent the tests' workspaces define.
pub fn select() -> Reply {
    openai::turn()
        .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
        .reply()
}

/// The model runs `line` as a command.
pub fn command(id: &str, line: &str) -> Reply {
    openai::turn()
        .tool_call(id, "execute_command", json!({"command": line}))
        .reply()
}

/// The model calls `tool` with `args`.
pub fn call(id: &str, tool: &str, args: Value) -> Reply {
    openai::turn().tool_call(id, tool, args).reply()
}

/// The model says it is done.
pub fn done() -> Reply {
    openai::turn()
        .tool_call("end", "attempt_completion", json!({"result": "done"}))
        .reply()
}

/// `mandate run` in `ws` with the prompt "go", against the scripted `server`, with `extra`
/// arguments; it must exit 0 (its output is shown when it does not).
pub async fn run_go(ws: &Path, server: &ScriptedServer, extra: &[&str], dirs: &UserDirs) -> Output {
    let out = run_openai(ws, &server.base_url(), extra, "go", dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    out
}

/// The notices a run printed, in order.
pub fn notices(out: &Output) -> Vec<String> {
    out.events_of("notice")
        .iter()
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect()
}

/// The JSON error the model read for a call, with the command's own report under `result`.
pub fn error_of(result: &str) -> Value {
    let start = result.find('{').unwrap_or(0);
    serde_json::from_str(&result[start..]).unwrap_or_else(|e| panic!("{e}: {result}"))
}
