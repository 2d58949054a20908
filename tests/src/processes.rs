//! Finding processes by a marker in their command line: what a test started through Mandate
//! (`exec -a MARKER …`) must be gone when Mandate says it ended it.

/// The live processes (zombies left out) whose command line holds `marker`, as their command
/// lines.
pub fn running(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_string();
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (state != "Z" && cmdline.contains(marker)).then_some(cmdline)
        })
        .collect()
}

/// The model's first two turns in a test of a background process: it selects `intent`, then
/// starts `command` in the background.
pub fn start_in_background(intent: &str, command: &str) -> Vec<crate::llm_server::Reply> {
    use crate::sse::openai;
    vec![
        openai::turn()
            .tool_call(
                "s",
                "select_active_intent",
                serde_json::json!({"intent_id": intent}),
            )
            .reply(),
        openai::turn()
            .tool_call(
                "bg",
                "execute_command",
                serde_json::json!({"command": command, "background": true}),
            )
            .reply(),
    ]
}
