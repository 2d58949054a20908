//! The person's own MCP file, `mcp.json` in Mandate's config directory: the servers added in
//! Settings (the same `mcpServers` format as `.mcp.json`, so an entry can be copied either way)
//! and what the person decided about servers:
//!
//! ```json
//! {"mcpServers": {"docs": {"type": "http", "url": "https://…"}},
//!  "untrusted": ["docs"],
//!  "projects": {"/home/me/app": {"consents": {"files": "<definition hash>"}, "untrusted": [],
//!                                "writes": {"files": {"definition": "<definition hash>",
//!                                                     "program": "…", "code": {…}}},
//!                                "unconfined": {"files": {"definition": "…", …}}}}}
//! ```
//!
//! A file of its own rather than a key in `settings.json`: saving the general settings replaces
//! that file whole, and the MCP decisions must never be lost by it. Consent to a workspace's
//! server is keyed by the workspace's path and the hash of the server's definition, so a changed
//! command asks again; a grant to write, and the consent to run a server unconfined, are also
//! bound to the code it runs ([`super::grant`]). No secret is ever written here. A file that does not parse is never
//! overwritten, and while it is broken no settings server starts and no consent holds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::config::{self, Parsed, ServerDef, Source};
use super::grant::WriteEntry;

pub const USER_FILE: &str = "mcp.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserFile {
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub mcp_servers: Map<String, Value>,
    /// Settings servers whose read-only hints are not believed.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub untrusted: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub projects: BTreeMap<String, ProjectDecisions>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectDecisions {
    /// Server name → the definition hash the person consented to.
    #[serde(default)]
    pub consents: BTreeMap<String, String>,
    #[serde(default)]
    pub untrusted: BTreeSet<String>,
    /// Server name → the grant to write in this workspace (stdio servers; see
    /// `McpHub::set_workspace_write`): the definition and the code it runs. Any change to
    /// either (command, arguments, environment, the content of its program) makes it stale.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub writes: BTreeMap<String, WriteEntry>,
    /// Server name → the consent to run it outside any confinement in this workspace (stdio
    /// servers; see `McpHub::set_unconfined`), bound like a grant to write to the definition
    /// and the code it runs: any change to either asks again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unconfined: BTreeMap<String, WriteEntry>,
}

#[derive(Debug, thiserror::Error)]
pub enum UserFileError {
    #[error("{path} is not valid ({message}); fix or remove it. Until then no server from Settings starts and no consent holds.")]
    Invalid { path: String, message: String },
    #[error("could not read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("could not save {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

pub fn path(config_dir: &Path) -> PathBuf {
    config_dir.join(USER_FILE)
}

/// The workspace's key in `projects`.
pub fn project_key(root: &Path) -> String {
    root.display().to_string()
}

impl UserFile {
    /// Reads the file; a missing file is an empty one.
    pub fn load(config_dir: &Path) -> Result<UserFile, UserFileError> {
        let path = path(config_dir);
        let shown = path.display().to_string();
        let text = match read_capped(&path) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(UserFile::default()),
            Err(source) => {
                return Err(UserFileError::Read {
                    path: shown,
                    source,
                })
            }
        };
        serde_json::from_str(&text).map_err(|e| UserFileError::Invalid {
            path: shown,
            message: e.to_string(),
        })
    }

    pub fn save(&self, config_dir: &Path) -> Result<(), UserFileError> {
        let path = path(config_dir);
        let mut text = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into());
        text.push('\n');
        crate::fsutil::write_atomic(&path, text.as_bytes()).map_err(|source| UserFileError::Write {
            path: path.display().to_string(),
            source,
        })
    }

    /// The servers added in Settings.
    pub fn servers(&self) -> Parsed {
        let text = serde_json::json!({"mcpServers": self.mcp_servers}).to_string();
        config::parse(&text, Source::Settings, USER_FILE)
    }

    pub fn project(&self, root: &Path) -> Option<&ProjectDecisions> {
        self.projects.get(&project_key(root))
    }

    pub fn project_mut(&mut self, root: &Path) -> &mut ProjectDecisions {
        self.projects.entry(project_key(root)).or_default()
    }

    /// Whether the person consented to this exact definition of a workspace's server.
    pub fn consented(&self, root: &Path, def: &ServerDef) -> bool {
        match def.source {
            Source::Settings => true,
            Source::Project => self
                .project(root)
                .and_then(|p| p.consents.get(&def.name))
                .is_some_and(|hash| *hash == def.definition_hash()),
        }
    }

    /// What the person decided about this server writing in the workspace `root`, as stored
    /// (whether it still holds is [`super::grant::state`]'s to say).
    pub fn write_entry(&self, root: &Path, def: &ServerDef) -> Option<&WriteEntry> {
        self.project(root)
            .and_then(|p| p.writes.get(&def.name))
            .filter(|_| def.is_stdio())
    }

    /// What the person decided about this server running unconfined in the workspace `root`,
    /// as stored (whether it still holds is [`super::grant::state`]'s to say).
    pub fn unconfined_entry(&self, root: &Path, def: &ServerDef) -> Option<&WriteEntry> {
        self.project(root)
            .and_then(|p| p.unconfined.get(&def.name))
            .filter(|_| def.is_stdio())
    }

    /// Whether the server's read-only hints are believed.
    pub fn trusts_hints(&self, root: &Path, def: &ServerDef) -> bool {
        match def.source {
            Source::Settings => !self.untrusted.contains(&def.name),
            Source::Project => !self
                .project(root)
                .is_some_and(|p| p.untrusted.contains(&def.name)),
        }
    }
}

/// A file's text, or None when it does not exist; refused when larger than an MCP file may be.
pub fn read_capped(path: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(config::MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > config::MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {} KiB",
            config::MAX_FILE_BYTES / 1024
        )));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| std::io::Error::other("not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consent_is_per_workspace_and_definition() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let text = r#"{"mcpServers": {"files": {"command": "srv", "args": ["--x"]}}}"#;
        let def = config::parse(text, Source::Project, ".mcp.json")
            .servers
            .remove(0);
        let mut file = UserFile::default();
        let (a, b) = (Path::new("/ws/a"), Path::new("/ws/b"));
        assert!(!file.consented(a, &def));
        file.project_mut(a)
            .consents
            .insert("files".into(), def.definition_hash());
        file.save(tmp.path()).expect("save");
        let file = UserFile::load(tmp.path()).expect("load");
        assert!(file.consented(a, &def));
        assert!(!file.consented(b, &def), "another workspace");
        let changed = config::parse(
            r#"{"mcpServers": {"files": {"command": "srv", "args": ["--y"]}}}"#,
            Source::Project,
            ".mcp.json",
        )
        .servers
        .remove(0);
        assert!(!file.consented(a, &changed), "a changed command asks again");
    }

    #[test]
    fn a_write_grant_is_per_workspace_and_an_older_entry_loads_as_such() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let text = r#"{"mcpServers": {"files": {"command": "srv"}, "web": {"url": "https://x.example/mcp"}}}"#;
        let servers = config::parse(text, Source::Project, ".mcp.json").servers;
        let (files, web) = (&servers[0], &servers[1]);
        let (a, b) = (Path::new("/ws/a"), Path::new("/ws/b"));
        let bound = super::super::grant::WriteGrant {
            definition: files.definition_hash(),
            program: "/usr/bin/srv".into(),
            code: [("/usr/bin/srv".to_string(), "sha256:00".to_string())].into(),
        };
        let mut file = UserFile::default();
        let decisions = file.project_mut(a);
        decisions
            .writes
            .insert("files".into(), WriteEntry::Bound(bound.clone()));
        decisions.writes.insert(
            "web".into(),
            WriteEntry::Older(serde_json::json!(web.definition_hash())),
        );
        file.save(tmp.path()).expect("save");
        let file = UserFile::load(tmp.path()).expect("load");
        assert_eq!(
            file.write_entry(a, files),
            Some(&WriteEntry::Bound(bound)),
            "a bound grant round-trips"
        );
        assert_eq!(file.write_entry(b, files), None, "another workspace");
        assert_eq!(
            file.write_entry(a, web),
            None,
            "an HTTP server never writes here"
        );
        // The form written before grants were bound to code still loads, as what it is.
        std::fs::write(
            path(tmp.path()),
            format!(
                r#"{{"projects": {{"/ws/a": {{"writes": {{"files": "{}"}}}}}}}}"#,
                files.definition_hash()
            ),
        )
        .expect("write");
        let file = UserFile::load(tmp.path()).expect("an older file loads");
        assert!(matches!(
            file.write_entry(a, files),
            Some(WriteEntry::Older(_))
        ));
    }

    #[test]
    fn a_broken_file_is_an_error_not_an_empty_file() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(path(tmp.path()), "{\"projects\": 3}").expect("write");
        let err = UserFile::load(tmp.path()).expect_err("invalid");
        assert!(err.to_string().contains("no consent holds"), "{err}");
    }
}
