//! Modes: *which kind* of action a task may take, as intents say *where*. A mode offers the
//! model the tools of its groups (`read`, `edit`, `command`, `mcp`; an edit group may carry a
//! `fileRegex`), puts its role and instructions in the prompt, and [`ModeGuard`] refuses any
//! other call with `MODE_RESTRICTED`. The guard runs beside the intent gate, never instead of
//! it: a mode only narrows what the intent allows, and nothing the agent does widens a mode.
//!
//! Built in: Code, Architect (read, and edit only Markdown), Ask (read only), Debug and
//! Orchestrator (only the planning and delegation tools). The person's own modes are read as
//! they wrote them (see `load`): Roo's `.roomodes` and global `custom_modes.yaml`, and Claude
//! Code's `.claude/agents/*.md`; a mode of theirs with a built-in's slug replaces it.

pub mod commands;
mod guard;
pub(crate) mod load;

use serde::{Deserialize, Serialize};

pub use guard::ModeGuard;
pub use load::{load_modes, mode_rules, LoadedModes, GLOBAL_MODES_FILE};

/// A kind of action a mode allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    Read,
    Edit,
    Command,
    Mcp,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Read => "read",
            Group::Edit => "edit",
            Group::Command => "command",
            Group::Mcp => "mcp",
        }
    }
}

/// Where a mode comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModeSource {
    BuiltIn,
    /// The person's global modes file in the config directory.
    Global,
    /// A file of the workspace (`.roomodes`, `.claude/agents/NAME.md`).
    Project {
        file: String,
    },
}

/// One mode, as its author wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mode {
    pub slug: String,
    pub name: String,
    pub role_definition: String,
    pub when_to_use: String,
    pub description: String,
    pub custom_instructions: String,
    pub groups: Vec<Group>,
    /// Edits are limited to workspace paths this regex matches (Roo's `fileRegex`).
    pub edit_regex: Option<String>,
    /// The model the mode asks for (`provider/model` or a name the provider knows).
    pub model: Option<String>,
    pub source: ModeSource,
}

/// What the gate needs of a task's mode, kept with the task's governance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModePolicy {
    pub slug: String,
    pub name: String,
    pub groups: Vec<Group>,
    pub edit_regex: Option<String>,
}

impl Mode {
    pub fn policy(&self) -> ModePolicy {
        ModePolicy {
            slug: self.slug.clone(),
            name: self.name.clone(),
            groups: self.groups.clone(),
            edit_regex: self.edit_regex.clone(),
        }
    }
}

impl Mode {
    /// The mode as the window's picker shows it.
    pub fn info(&self) -> crate::protocol::ModeInfo {
        crate::protocol::ModeInfo {
            slug: self.slug.clone(),
            name: self.name.clone(),
            description: if self.when_to_use.is_empty() {
                self.description.clone()
            } else {
                self.when_to_use.clone()
            },
            groups: self.groups.iter().map(|g| g.name().to_string()).collect(),
            edit_regex: self.edit_regex.clone(),
            model: self.model.clone(),
            source: match &self.source {
                ModeSource::BuiltIn => "built-in".into(),
                ModeSource::Global => "global".into(),
                ModeSource::Project { file } => file.clone(),
            },
        }
    }
}

impl ModePolicy {
    pub fn allows(&self, group: Group) -> bool {
        self.groups.contains(&group)
    }
}

/// The slug of the mode a task starts in when nothing else is said.
pub const DEFAULT_MODE: &str = "code";

/// The group a tool belongs to; None for the tools every mode has (selecting an intent,
/// proposing one, asking, completing, switching mode, lessons).
pub fn tool_group(name: &str) -> Option<Group> {
    match name {
        "read_file"
        | "read_tool_output"
        | "list_files"
        | "search_files"
        | "list_code_definitions"
        | "codebase_search" => Some(Group::Read),
        "write_to_file" | "apply_diff" | "request_scope_expansion" => Some(Group::Edit),
        "execute_command" | "read_process_output" | "stop_process" => Some(Group::Command),
        n if n.starts_with(crate::mcp::catalog::PREFIX) => Some(Group::Mcp),
        _ => None,
    }
}

/// Whether a mode offers the tool `name` to the model.
pub fn offers(policy: Option<&ModePolicy>, name: &str) -> bool {
    match (policy, tool_group(name)) {
        (Some(p), Some(group)) => p.allows(group),
        _ => true,
    }
}

fn built_in(
    slug: &str,
    name: &str,
    role: &str,
    when: &str,
    groups: &[Group],
    edit_regex: Option<&str>,
    instructions: &str,
) -> Mode {
    Mode {
        slug: slug.into(),
        name: name.into(),
        role_definition: role.into(),
        when_to_use: when.into(),
        description: when.into(),
        custom_instructions: instructions.into(),
        groups: groups.to_vec(),
        edit_regex: edit_regex.map(str::to_string),
        model: None,
        source: ModeSource::BuiltIn,
    }
}

/// The built-in modes, in the picker's order.
pub fn built_in_modes() -> Vec<Mode> {
    use Group::*;
    vec![
        built_in(
            "code",
            "Code",
            "You are Mandate, a highly skilled software engineer with extensive knowledge of many programming languages, frameworks, design patterns and good practice.",
            "Writing, changing or refactoring code.",
            &[Read, Edit, Command, Mcp],
            None,
            "",
        ),
        built_in(
            "architect",
            "Architect",
            "You are Mandate, an experienced technical leader who is inquisitive and an excellent planner. Your goal is to gather information and context to make a detailed plan for the user's task, which the user reviews before it is implemented in another mode.",
            "Planning, designing or strategizing before implementation.",
            &[Read, Edit],
            Some(r"\.md$"),
            "Gather context with the read tools, ask clarifying questions, then write the plan as a Markdown file (only `.md` files can be edited in this mode) or propose intents for the work. Suggest switching to Code mode to implement it.",
        ),
        built_in(
            "ask",
            "Ask",
            "You are Mandate, a knowledgeable technical assistant focused on answering questions about software, this codebase and related topics.",
            "Explanations, documentation or answers to technical questions, without changing anything.",
            &[Read],
            None,
            "Answer thoroughly, reading the code to back your answer. Do not change files or run commands: this mode cannot.",
        ),
        built_in(
            "debug",
            "Debug",
            "You are Mandate, an expert software debugger specializing in systematic diagnosis and resolution of problems.",
            "Troubleshooting, investigating errors or diagnosing problems.",
            &[Read, Edit, Command, Mcp],
            None,
            "Reflect on the possible sources of the problem, narrow them to the most likely one or two, add logging or a failing test to confirm the diagnosis, and ask the user to confirm it before fixing.",
        ),
        built_in(
            "orchestrator",
            "Orchestrator",
            "You are Mandate, a strategic workflow orchestrator who coordinates complex tasks by delegating them to the appropriate specialized modes.",
            "Complex tasks in several steps that need different specialities.",
            &[],
            None,
            "Break the task into subtasks and hand each to the mode that fits it best with new_task: its message is all the subtask sees, so give it the context it needs and say what its completion must report. Keep track of them with update_todo_list. A subtask works under your intent, or under a narrower one you name. Subtasks in read-only modes (ask) started in the same answer run side by side. You cannot read, edit or run anything yourself in this mode.",
        ),
    ]
}

#[cfg(test)]
#[path = "modes_tests.rs"]
mod tests;
