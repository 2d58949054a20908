//! `mandate mcp …`: what Settings do for MCP servers, from a terminal — list them (started, with
//! their tools), agree to run a workspace's server, allow a server to write in the workspace or
//! to run unconfined, store a secret a server references.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use super::{McpAction, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::agent::EventSink;
use crate::mcp::McpHub;
use crate::protocol::{Event, McpGrant, McpOverview, McpServerView, McpSource, McpStatus};
use crate::secrets::KeyringStore;
use crate::settings::AppDirs;

struct Quiet;

impl EventSink for Quiet {
    fn emit(&self, _: Event) {}
}

pub async fn mcp(root: &Path, action: McpAction) -> i32 {
    let root = match root.canonicalize() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mandate: cannot open {}: {e}", root.display());
            return EXIT_USAGE;
        }
    };
    let dirs = AppDirs::from_env();
    let hub = McpHub::new(
        &root,
        &dirs,
        Arc::new(KeyringStore),
        Arc::new(Quiet),
        Default::default(),
    );
    let done = |result: Result<McpOverview, crate::mcp::ManageError>| match result {
        Ok(_) => EXIT_OK,
        Err(e) => {
            eprintln!("mandate: {e}");
            match e {
                // A name that names no server, or a value that is not one, is bad usage.
                crate::mcp::ManageError::NotFound(_) | crate::mcp::ManageError::Invalid(_) => {
                    EXIT_USAGE
                }
                _ => EXIT_FAILED,
            }
        }
    };
    match action {
        McpAction::List { json } => {
            // Started, so that the list shows what each server offers.
            hub.prepare_run().await;
            let overview = hub.overview(false).await;
            if json {
                match serde_json::to_string_pretty(&overview) {
                    Ok(s) => println!("{s}"),
                    Err(e) => eprintln!("mandate: {e}"),
                }
            } else {
                print_overview(&overview);
            }
            EXIT_OK
        }
        McpAction::Trust { name, yes } => {
            let overview = hub.overview(false).await;
            let Some(server) = overview
                .servers
                .iter()
                .find(|s| s.name == name && s.source == McpSource::Project)
            else {
                eprintln!(
                    "mandate: there is no server `{name}` in {}",
                    crate::mcp::PROJECT_FILE
                );
                return EXIT_USAGE;
            };
            println!(
                "{} wants to run:\n  {}",
                crate::mcp::PROJECT_FILE,
                server.target
            );
            for v in &server.variables {
                println!("  with {}={}", v.name, v.value);
            }
            if !yes && !confirm("Run it whenever a task starts in this workspace?") {
                return refused("not agreed");
            }
            done(
                hub.grant_consent(name, server.definition_hash.clone())
                    .await,
            )
        }
        McpAction::Untrust { name } => done(hub.revoke_consent(name).await),
        McpAction::AllowWrite { name, yes } => {
            let Some(hash) = shown(&hub, &name).await else {
                return EXIT_USAGE;
            };
            if !yes && !confirm("Allow it to write in this workspace (during calls, watched)?") {
                return refused("not allowed");
            }
            done(hub.set_workspace_write(name, hash, true).await)
        }
        McpAction::DenyWrite { name } => {
            done(hub.set_workspace_write(name, String::new(), false).await)
        }
        McpAction::AllowUnconfined { name, yes } => {
            let Some(hash) = shown(&hub, &name).await else {
                return EXIT_USAGE;
            };
            println!("{UNCONFINED_WARNING}");
            if !yes && !confirm("Run it unconfined in this workspace?") {
                return refused("not allowed");
            }
            done(hub.set_unconfined(name, hash, true).await)
        }
        McpAction::DenyUnconfined { name } => {
            done(hub.set_unconfined(name, String::new(), false).await)
        }
        McpAction::Secret {
            server,
            name,
            clear,
        } => {
            if clear {
                return done(hub.set_secret(server, name, None).await);
            }
            if std::io::stdin().is_terminal() {
                eprint!("Value of {name} for {server} (one line): ");
                let _ = std::io::stderr().flush();
            }
            let mut value = String::new();
            if let Err(e) = std::io::stdin().lock().read_line(&mut value) {
                eprintln!("mandate: cannot read the value: {e}");
                return EXIT_FAILED;
            }
            let value = value.trim_end_matches(['\r', '\n']).to_string();
            done(hub.set_secret(server, name, Some(value)).await)
        }
    }
}

/// What running a server unconfined means, said before the person agrees.
const UNCONFINED_WARNING: &str = "Unconfined, it runs outside any sandbox: it can read, change and delete anything you can (your keys and credentials, other projects, Mandate's own data), and Mandate cannot see or undo what it does outside this workspace. In the workspace it runs only during its calls: what each call changes there is recorded under the selected intent when the intent owns it, and undone otherwise. Each of its calls will wait for approval. Allow this only for a program you trust; a change to its definition or to the code it runs takes it back.";

/// Shows what server `name` runs, as a person agreeing to a right for it must see it;
/// returns its definition's hash (None, said, when there is no such server).
async fn shown(hub: &McpHub, name: &str) -> Option<String> {
    let overview = hub.overview(false).await;
    let Some(server) = overview.servers.iter().find(|s| s.name == name) else {
        eprintln!("mandate: there is no MCP server `{name}`");
        return None;
    };
    println!("{name} runs:\n  {}", server.target);
    for v in &server.variables {
        println!("  with {}={}", v.name, v.value);
    }
    Some(server.definition_hash.clone())
}

/// A question not answered yes: with no terminal to ask in, `--yes` was missing (usage).
fn refused(what: &str) -> i32 {
    if std::io::stdin().is_terminal() {
        eprintln!("mandate: {what}");
        EXIT_FAILED
    } else {
        eprintln!("mandate: {what}: there is no terminal to ask in, so give --yes");
        EXIT_USAGE
    }
}

fn confirm(question: &str) -> bool {
    if !std::io::stdin().is_terminal() {
        return false;
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).is_ok()
        && matches!(answer.trim(), "y" | "Y" | "yes")
}

fn status_word(s: &McpServerView) -> &'static str {
    match s.status {
        McpStatus::Stopped => "stopped",
        McpStatus::NeedsConsent => "needs consent",
        McpStatus::Disabled => "disabled",
        McpStatus::Invalid => "invalid",
        McpStatus::Starting => "starting",
        McpStatus::Ready => "ready",
        McpStatus::Restarting => "restarting",
        McpStatus::Failed => "failed",
    }
}

fn print_overview(overview: &McpOverview) {
    for p in &overview.problems {
        println!("! {p}");
    }
    if overview.servers.is_empty() {
        println!(
            "No MCP servers (none in {} or in Settings).",
            crate::mcp::PROJECT_FILE
        );
    }
    for s in &overview.servers {
        let source = match s.source {
            McpSource::Project => crate::mcp::PROJECT_FILE,
            McpSource::Settings => "settings",
        };
        println!("{}  [{source}]  {}  {}", s.name, status_word(s), s.target);
        if let Some(e) = &s.error {
            println!("    {e}");
        }
        if !s.confinement.is_empty() {
            println!("    {}", s.confinement);
        }
        match &s.write_grant {
            McpGrant::Stale { reason } => println!(
                "    grant to write in the workspace is stale, not used: {reason}; allow it again with `mandate mcp allow-write {}` if you trust the code it runs now",
                s.name
            ),
            McpGrant::Refused { reason } => {
                println!("    grant to write in the workspace is refused: {reason}")
            }
            McpGrant::NotGranted | McpGrant::InForce => {}
        }
        match &s.unconfined {
            McpGrant::Stale { reason } => println!(
                "    consent to run it unconfined is stale, not used: {reason}; allow it again with `mandate mcp allow-unconfined {}` if you trust the code it runs now",
                s.name
            ),
            McpGrant::Refused { reason } => {
                println!("    consent to run it unconfined is refused: {reason}")
            }
            McpGrant::NotGranted | McpGrant::InForce => {}
        }
        if !s.trusts_read_only_hints && s.status != McpStatus::Invalid {
            println!("    read-only hints not believed: every tool is mutating");
        }
        for secret in &s.secrets {
            let state = if secret.set { "stored" } else { "NOT SET" };
            println!("    secret {}: {state}", secret.name);
        }
        for t in &s.tools {
            let how = match (&t.hidden, t.runs_as_read) {
                (Some(why), _) => format!("hidden: {why}"),
                (None, true) => "read (declared read-only)".into(),
                (None, false) => "mutating: intent + approval".into(),
            };
            println!(
                "    {:<40} {how}",
                if t.model_name.is_empty() {
                    &t.tool
                } else {
                    &t.model_name
                }
            );
        }
    }
}
