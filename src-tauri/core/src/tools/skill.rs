//! `skill` and `run_slash_command`: the person's own instructions, loaded when the model uses
//! them (the prompt lists only their names and descriptions).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::modes::commands::{load_commands, load_skills};
use crate::protocol::ToolKind;

/// Load a skill the prompt lists: its instructions, and the files that come with it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillArgs {
    /// The skill's name, as listed.
    pub name: String,
}

pub struct SkillTool;

#[async_trait]
impl AgentTool for SkillTool {
    type Args = SkillArgs;
    type Work = String;
    const NAME: &'static str = "skill";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str =
        "Load the instructions of one of the user's skills (listed in the prompt) when the task needs it.";

    fn plan(&self, args: SkillArgs, _: &ToolCx<'_>) -> Result<Plan<String>, ToolError> {
        let name = args.name.trim().to_string();
        if name.is_empty() {
            return Err(ToolError::InvalidArguments("name is empty".into()));
        }
        Ok(Plan {
            target: name.clone(),
            action: Action::Meta,
            work: name,
        })
    }

    async fn run(&self, _: Action, name: String, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let mut problems = Vec::new();
        let skills = load_skills(cx.gov.root(), cx.gov.config_dir(), &mut problems);
        let Some(skill) = skills.iter().find(|s| s.name == name) else {
            let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
            return Err(ToolError::InvalidArguments(format!(
                "there is no skill `{name}`; skills: {}",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            )));
        };
        let text = std::fs::read_to_string(&skill.path)
            .map_err(|e| ToolError::Failed(format!("{} cannot be read: {e}", skill.shown)))?;
        let body = crate::modes::load::frontmatter(&text).map_or(text.as_str(), |(_, b)| b);
        let folder = skill.path.parent().unwrap_or(std::path::Path::new("."));
        let mut files: Vec<String> = std::fs::read_dir(folder)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n != "SKILL.md")
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let dir = skill.shown.trim_end_matches("/SKILL.md");
        let more = if files.is_empty() || dir.starts_with("~config") {
            String::new()
        } else {
            format!(
                "\n\nFiles that come with it (read them with read_file when the instructions say so): {}",
                files.iter().map(|f| format!("{dir}/{f}")).collect::<Vec<_>>().join(", ")
            )
        };
        Ok(ToolOutput::text(
            format!("loaded {}", skill.name),
            format!(
                "<skill name=\"{}\" from=\"{}\">\n{}\n</skill>{more}",
                skill.name,
                skill.shown,
                body.trim()
            ),
        ))
    }
}

/// Run one of the user's slash commands: returns its instructions, to follow now.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandArgs {
    /// The command's name, without the slash.
    pub command: String,
    /// What to put in place of `$ARGUMENTS`.
    pub args: Option<String>,
}

pub struct RunSlashCommand;

#[async_trait]
impl AgentTool for RunSlashCommand {
    type Args = CommandArgs;
    type Work = (String, String);
    const NAME: &'static str = "run_slash_command";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str =
        "Run one of the user's slash commands (listed in the prompt): returns its instructions with the arguments filled in.";

    fn plan(&self, args: CommandArgs, _: &ToolCx<'_>) -> Result<Plan<(String, String)>, ToolError> {
        let name = args.command.trim().trim_start_matches('/').to_string();
        if name.is_empty() {
            return Err(ToolError::InvalidArguments("command is empty".into()));
        }
        Ok(Plan {
            target: format!("/{name}"),
            action: Action::Meta,
            work: (name, args.args.unwrap_or_default()),
        })
    }

    async fn run(
        &self,
        _: Action,
        (name, args): (String, String),
        cx: &RunCx<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let mut problems = Vec::new();
        let commands = load_commands(cx.gov.root(), cx.gov.config_dir(), &mut problems);
        let Some(command) = commands.iter().find(|c| c.name == name) else {
            let names: Vec<String> = commands.iter().map(|c| format!("/{}", c.name)).collect();
            return Err(ToolError::InvalidArguments(format!(
                "there is no command `/{name}`; commands: {}",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            )));
        };
        let mode = match (&command.mode, cx.task.governance().mode) {
            (Some(want), Some(now)) if *want != now.slug => format!(
                "\n\nThis command is meant for `{want}` mode and the task is in `{}` mode: ask for it with switch_mode if its steps need it.",
                now.slug
            ),
            _ => String::new(),
        };
        Ok(ToolOutput::text(
            format!("/{}", command.name),
            format!(
                "<command name=\"/{}\" from=\"{}\">\n{}\n</command>{mode}",
                command.name,
                command.shown,
                command.expand(&args)
            ),
        ))
    }
}
