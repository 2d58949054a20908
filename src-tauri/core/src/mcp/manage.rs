//! What Settings may change: servers of the person's own file, the secrets they reference (in the
//! keyring), consent to a workspace's server, trust in a server's hints, the rights given for
//! the code a stdio server runs (to write in the workspace, to run unconfined), a restart. Every change
//! goes through the person's MCP file (never overwritten while it does not parse) and is
//! followed by a refresh, so the servers match the files.

use std::path::Path;

use serde_json::Value;

use super::config::{self, Source};
use super::grant::{WriteEntry, WriteGrant};
use super::hub::{referenced, McpHub};
use super::user_file::{ProjectDecisions, UserFile, UserFileError};
use crate::protocol::{McpOverview, McpServerInput, McpStatus, McpVariable};
use crate::secrets::{Secret, SecretError};

#[derive(Debug, thiserror::Error)]
pub enum ManageError {
    #[error("{0}")]
    Invalid(String),
    /// Asked rightly, and refused: what was asked is not safe for this server.
    #[error("{0}")]
    Refused(String),
    #[error("there is no MCP server `{0}`")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    File(#[from] UserFileError),
    #[error(transparent)]
    Keyring(#[from] SecretError),
    #[error("{0}")]
    Internal(String),
}

/// A right the person gives a stdio server for the code it runs now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CodeRight {
    /// To write in the workspace (its calls watched).
    Write,
    /// To run outside any confinement (its calls asked).
    Unconfined,
}

impl CodeRight {
    /// What it allows, after "allowed to".
    fn allows(self) -> &'static str {
        match self {
            CodeRight::Write => "write",
            CodeRight::Unconfined => "run unconfined",
        }
    }

    /// Where the person's file keeps it.
    fn kept(
        self,
        decisions: &mut ProjectDecisions,
    ) -> &mut std::collections::BTreeMap<String, WriteEntry> {
        match self {
            CodeRight::Write => &mut decisions.writes,
            CodeRight::Unconfined => &mut decisions.unconfined,
        }
    }
}

/// The `.mcp.json` entry of a server given in Settings (checked by the same parser).
fn entry_of(input: McpServerInput) -> Result<Value, ManageError> {
    fn map(
        vars: Vec<McpVariable>,
        what: &str,
    ) -> Result<serde_json::Map<String, Value>, ManageError> {
        let mut out = serde_json::Map::new();
        for v in vars {
            if out.insert(v.name.clone(), Value::String(v.value)).is_some() {
                return Err(ManageError::Invalid(format!(
                    "{what} `{}` is given twice",
                    config::printable(&v.name, 64)
                )));
            }
        }
        Ok(out)
    }
    let (mut entry, startup, tool) = match input {
        McpServerInput::Stdio {
            command,
            args,
            env,
            startup_timeout_sec,
            tool_timeout_sec,
        } => (
            serde_json::json!({"type": "stdio", "command": command, "args": args, "env": map(env, "the variable")?}),
            startup_timeout_sec,
            tool_timeout_sec,
        ),
        McpServerInput::Http {
            url,
            headers,
            startup_timeout_sec,
            tool_timeout_sec,
        } => (
            serde_json::json!({"type": "http", "url": url, "headers": map(headers, "the header")?}),
            startup_timeout_sec,
            tool_timeout_sec,
        ),
    };
    if let Some(s) = startup {
        entry["startupTimeoutSec"] = s.into();
    }
    if let Some(s) = tool {
        entry["toolTimeoutSec"] = s.into();
    }
    Ok(entry)
}

impl McpHub {
    /// The servers now; with `start`, those that may run are started (Settings asked).
    pub async fn overview(&self, start: bool) -> McpOverview {
        self.refresh().await;
        if start {
            self.start_eligible();
        }
        super::views::overview(&self.shared)
    }

    async fn change_file(
        &self,
        change: impl FnOnce(&mut UserFile, &Path) -> Result<(), ManageError> + Send + 'static,
    ) -> Result<(), ManageError> {
        let (dir, root) = (self.shared.config_dir.clone(), self.shared.root.clone());
        tokio::task::spawn_blocking(move || {
            let mut file = UserFile::load(&dir)?;
            change(&mut file, &root)?;
            file.save(&dir)?;
            Ok(())
        })
        .await
        .map_err(|e| ManageError::Internal(e.to_string()))?
    }

    /// Adds or replaces a server of the person's own file.
    pub async fn save_server(
        &self,
        name: String,
        input: McpServerInput,
    ) -> Result<McpOverview, ManageError> {
        let entry = entry_of(input)?;
        let def = config::parse_entry(&name, &entry, Source::Settings).map_err(|e| {
            ManageError::Invalid(format!(
                "MCP server `{}`: {e}",
                config::printable(&name, 64)
            ))
        })?;
        let normalized = def.to_json();
        self.change_file(move |file, _| {
            if file.mcp_servers.len() >= config::MAX_SERVERS
                && !file.mcp_servers.contains_key(&name)
            {
                return Err(ManageError::Invalid(format!(
                    "at most {} servers can be added",
                    config::MAX_SERVERS
                )));
            }
            file.mcp_servers.insert(name, normalized);
            Ok(())
        })
        .await?;
        Ok(self.overview(true).await)
    }

    /// Removes a server of the person's own file, and the secrets it referenced.
    pub async fn remove_server(&self, name: String) -> Result<McpOverview, ManageError> {
        let def = self.find(&name, Some(Source::Settings)).await?;
        let store = self.shared.env.secrets.clone();
        let root = self.shared.root.clone();
        self.change_file(move |file, _| {
            file.mcp_servers.remove(&name);
            file.untrusted.remove(&name);
            for secret in referenced(&def) {
                let key = super::refs::keyring_name(def.source, &root, &def.name, &secret);
                if let Err(e) = store.delete(&key) {
                    tracing::warn!(server = %def.name, secret = %secret, error = %e, "a removed server's secret stays in the keyring");
                }
            }
            Ok(())
        })
        .await?;
        Ok(self.overview(false).await)
    }

    /// Stores a secret for a server in the keyring.
    pub async fn set_secret(
        &self,
        server: String,
        name: String,
        value: Option<String>,
    ) -> Result<McpOverview, ManageError> {
        let def = self.find(&server, None).await?;
        let valid_name = !name.is_empty()
            && name.len() <= 128
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid_name {
            return Err(ManageError::Invalid(
                "a secret's name is 1 to 128 letters, digits, `_`, `-` or `.`".into(),
            ));
        }
        if let Some(v) = &value {
            if v.is_empty() || v.len() > 16 * 1024 || v.chars().any(char::is_control) {
                return Err(ManageError::Invalid(
                    "a secret is 1 to 16384 characters without line breaks or control characters"
                        .into(),
                ));
            }
        }
        let key = super::refs::keyring_name(def.source, &self.shared.root, &def.name, &name);
        let store = self.shared.env.secrets.clone();
        tokio::task::spawn_blocking(move || match value {
            Some(v) => store.set(&key, &Secret::new(v)),
            None => store.delete(&key),
        })
        .await
        .map_err(|e| ManageError::Internal(e.to_string()))??;
        Ok(self.overview(false).await)
    }

    /// Consent to run a workspace's server, for the definition the person saw (its hash).
    pub async fn grant_consent(
        &self,
        name: String,
        hash: String,
    ) -> Result<McpOverview, ManageError> {
        let def = self.find(&name, Some(Source::Project)).await?;
        if def.definition_hash() != hash {
            return Err(ManageError::Conflict(format!(
                "the definition of `{name}` in .mcp.json changed since it was shown; look at it again before agreeing"
            )));
        }
        self.change_file(move |file, root| {
            file.project_mut(root).consents.insert(name, hash);
            Ok(())
        })
        .await?;
        Ok(self.overview(true).await)
    }

    pub async fn revoke_consent(&self, name: String) -> Result<McpOverview, ManageError> {
        self.find(&name, Some(Source::Project)).await?;
        self.change_file(move |file, root| {
            file.project_mut(root).consents.remove(&name);
            Ok(())
        })
        .await?;
        Ok(self.overview(false).await)
    }

    /// Whether a server's read-only hints are believed (tools of running tasks keep theirs).
    pub async fn set_trust(&self, name: String, trusted: bool) -> Result<McpOverview, ManageError> {
        let def = self.find(&name, None).await?;
        self.change_file(move |file, root| {
            let list = match def.source {
                Source::Settings => &mut file.untrusted,
                Source::Project => &mut file.project_mut(root).untrusted,
            };
            if trusted {
                list.remove(&name);
            } else {
                list.insert(name);
            }
            Ok(())
        })
        .await?;
        Ok(self.overview(false).await)
    }

    /// Allows a stdio server to write in this workspace, for the definition the person saw
    /// (its hash) and the code it runs now (see [`super::grant`]), or takes that back. A
    /// command line that runs code from the workspace is refused, naming the path. The
    /// server is restarted with its new confinement.
    pub async fn set_workspace_write(
        &self,
        name: String,
        hash: String,
        allowed: bool,
    ) -> Result<McpOverview, ManageError> {
        self.set_code_right(CodeRight::Write, name, hash, allowed)
            .await
    }

    /// Allows a stdio server to run outside any confinement in this workspace, for the
    /// definition the person saw (its hash) and the code it runs now, bound and checked like
    /// the grant to write; or takes that back. Every call of it then asks the person. The
    /// server is restarted as it now runs.
    pub async fn set_unconfined(
        &self,
        name: String,
        hash: String,
        allowed: bool,
    ) -> Result<McpOverview, ManageError> {
        self.set_code_right(CodeRight::Unconfined, name, hash, allowed)
            .await
    }

    async fn set_code_right(
        &self,
        right: CodeRight,
        name: String,
        hash: String,
        allowed: bool,
    ) -> Result<McpOverview, ManageError> {
        let def = self.find(&name, None).await?;
        let grant = if allowed {
            Some(self.bind(right, def, &hash).await?)
        } else {
            None
        };
        self.change_file(move |file, root| {
            let kept = right.kept(file.project_mut(root));
            match grant {
                Some(grant) => kept.insert(name, WriteEntry::Bound(grant)),
                None => kept.remove(&name),
            };
            Ok(())
        })
        .await?;
        Ok(self.overview(true).await)
    }

    /// The right bound to `def` as the person saw it (`hash`) and to the code it runs now.
    async fn bind(
        &self,
        right: CodeRight,
        def: config::ServerDef,
        hash: &str,
    ) -> Result<WriteGrant, ManageError> {
        let (name, allows) = (def.name.clone(), right.allows());
        if !def.is_stdio() {
            return Err(ManageError::Refused(format!(
                "`{name}` is reached over HTTP: it does not run on this machine, so it cannot be allowed to {allows} here"
            )));
        }
        if def.definition_hash() != hash {
            return Err(ManageError::Conflict(format!(
                "the definition of `{name}` changed since it was shown; look at it again before allowing it to {allows}"
            )));
        }
        let (env, root) = (self.shared.env.clone(), self.shared.root.clone());
        let granted = tokio::task::spawn_blocking(move || {
            super::grant::grant_for(&root, &def, || super::server::resolve(&def, &env))
        })
        .await
        .map_err(|e| ManageError::Internal(e.to_string()))?;
        granted.map_err(|e| {
            let why = crate::redact::Redactor::global()
                .redact(&e.to_string())
                .into_owned();
            ManageError::Refused(format!(
                "MCP server `{name}` cannot be allowed to {allows} in this workspace: {why}"
            ))
        })
    }

    /// Stops the server and starts it again (also one that gave up restarting).
    pub async fn restart(&self, name: String) -> Result<McpOverview, ManageError> {
        self.find(&name, None).await?;
        {
            let mut slots = self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(slot) = slots.servers.remove(&name) {
                slot.server.stop();
            }
        }
        Ok(self.overview(true).await)
    }

    /// A server's definition, by name (and source).
    async fn find(
        &self,
        name: &str,
        source: Option<Source>,
    ) -> Result<config::ServerDef, ManageError> {
        self.refresh().await;
        let slots = self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = slots
            .servers
            .get(name)
            .ok_or_else(|| ManageError::NotFound(config::printable(name, 64)))?;
        match source {
            Some(s) if s != slot.server.def.source => Err(ManageError::Invalid(match s {
                Source::Settings => format!("`{name}` is defined by the workspace's .mcp.json, not in Settings; change it there"),
                Source::Project => format!("`{name}` is a server of Settings; it needs no consent"),
            })),
            _ => Ok(slot.server.def.clone()),
        }
    }

    /// The status of one server (tests, the CLI).
    pub fn status(&self, name: &str) -> Option<McpStatus> {
        let slots = self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.servers.get(name).map(|s| s.server.state().status)
    }
}
