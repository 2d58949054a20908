//! The servers as Settings show them: definition (command or URL, variables with references
//! unresolved), status, error, tools with how each runs, and which secrets are stored.

use super::catalog::{Entry, Hidden, ToolInfo};
use super::config::{ConfigProblem, Source, Transport};
use super::grant::GrantState;
use super::hub::{catalog_of, Shared, Slot, Slots, PROJECT_FILE};
use crate::protocol::{
    McpGrant, McpOverview, McpServerView, McpSource, McpStatus, McpToolView, McpTransportKind,
    McpVariable,
};

pub(super) fn source(source: Source) -> McpSource {
    match source {
        Source::Project => McpSource::Project,
        Source::Settings => McpSource::Settings,
    }
}

pub(super) fn overview(shared: &Shared) -> McpOverview {
    let slots = shared.slots.lock().unwrap_or_else(|p| p.into_inner());
    of(&slots)
}

pub(super) fn of(slots: &Slots) -> McpOverview {
    let (entries, hidden) = catalog_of(slots);
    let mut servers: Vec<McpServerView> = slots
        .servers
        .iter()
        .map(|(name, slot)| server_view(name, slot, &entries, &hidden))
        .collect();
    // A server whose definition does not load is shown with its problem, unless a server of the
    // same name and source loaded.
    for p in &slots.problems {
        let Some(name) = &p.server else { continue };
        if servers
            .iter()
            .any(|s| s.name == *name && s.source == source(p.source))
        {
            continue;
        }
        servers.push(invalid_server(name, p));
    }
    McpOverview {
        servers,
        problems: file_problems(slots),
    }
}

fn server_view(name: &str, slot: &Slot, entries: &[Entry], hidden: &[Hidden]) -> McpServerView {
    let def = &slot.server.def;
    let state = slot.server.state();
    let (transport, variables) = match &def.transport {
        Transport::Stdio { env, .. } => (McpTransportKind::Stdio, env),
        Transport::Http { headers, .. } => (McpTransportKind::Http, headers),
    };
    let mut tools: Vec<McpToolView> = state
        .tools
        .iter()
        .map(|tool| tool_view(name, slot, tool, entries, hidden))
        .collect();
    tools.extend(state.refused.iter().map(|(tool, why)| McpToolView {
        tool: tool.clone(),
        model_name: String::new(),
        description: String::new(),
        annotations: Default::default(),
        runs_as_read: false,
        hidden: Some(why.clone()),
    }));
    McpServerView {
        name: name.to_string(),
        source: source(def.source),
        transport: Some(transport),
        target: def.display_target(),
        variables: variables
            .iter()
            .map(|(name, value)| McpVariable {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
        definition_hash: slot.server.hash.clone(),
        status: state.status,
        error: state.error,
        trusts_read_only_hints: slot.trusts_hints,
        may_write_workspace: slot.may_write(),
        write_grant: write_grant(slot),
        runs_unconfined: slot.server.consented_unconfined(),
        unconfined: grant_view(&slot.unconfined),
        confinement: match transport {
            McpTransportKind::Stdio => super::jail::level_note(
                &slot.server.confinement(),
                slot.may_write(),
                slot.server.consented_unconfined(),
            ),
            McpTransportKind::Http => String::new(),
        },
        secrets: slot.secrets.clone(),
        tools,
    }
}

/// The grant as Settings show it: a grant dropped at the server's last start (the code it
/// runs changed since the files were read) is stale like one found so when they were read.
fn write_grant(slot: &Slot) -> McpGrant {
    match (&slot.write, slot.server.grant_dropped()) {
        (GrantState::InForce(_), Some(reason)) => McpGrant::Stale { reason },
        (state, _) => grant_view(state),
    }
}

/// A grant bound to code, as Settings show it.
fn grant_view(state: &GrantState) -> McpGrant {
    match state {
        GrantState::NotGranted => McpGrant::NotGranted,
        GrantState::Refused(reason) => McpGrant::Refused {
            reason: reason.clone(),
        },
        GrantState::Stale(reason) => McpGrant::Stale {
            reason: reason.clone(),
        },
        GrantState::InForce(_) => McpGrant::InForce,
    }
}

/// A tool the server lists: the name the model knows it by, or why the model is not given it.
fn tool_view(
    server: &str,
    slot: &Slot,
    tool: &ToolInfo,
    entries: &[Entry],
    hidden: &[Hidden],
) -> McpToolView {
    let entry = entries
        .iter()
        .find(|e| e.server == server && e.tool.name == tool.name);
    let why_hidden = hidden
        .iter()
        .find(|h| h.server == server && h.tool == super::config::printable(&tool.name, 80))
        .map(|h| h.reason.clone());
    McpToolView {
        tool: tool.name.clone(),
        model_name: entry.map(|e| e.model_name.clone()).unwrap_or_default(),
        description: tool.description.clone(),
        annotations: tool.annotations.clone(),
        runs_as_read: slot.trusts_hints && tool.annotations.read_only == Some(true),
        hidden: if entry.is_some() {
            None
        } else {
            why_hidden.or_else(|| Some("the server is not running".into()))
        },
    }
}

fn invalid_server(name: &str, p: &ConfigProblem) -> McpServerView {
    McpServerView {
        name: name.to_string(),
        source: source(p.source),
        transport: None,
        target: String::new(),
        variables: Vec::new(),
        definition_hash: String::new(),
        status: McpStatus::Invalid,
        error: Some(p.message.clone()),
        trusts_read_only_hints: false,
        may_write_workspace: false,
        write_grant: McpGrant::NotGranted,
        runs_unconfined: false,
        unconfined: McpGrant::NotGranted,
        confinement: String::new(),
        secrets: Vec::new(),
        tools: Vec::new(),
    }
}

/// The problems of the files themselves and of definitions that name no server.
fn file_problems(slots: &Slots) -> Vec<String> {
    let mut problems = slots.file_problems.clone();
    problems.extend(
        slots
            .problems
            .iter()
            .filter(|p| p.server.is_none())
            .map(|p| {
                let file = if p.source == Source::Project {
                    PROJECT_FILE
                } else {
                    "mcp.json"
                };
                format!("{file}: {}", p.message)
            }),
    );
    problems
}
