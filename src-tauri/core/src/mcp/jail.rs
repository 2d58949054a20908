//! The confinement of a stdio server: the same sandbox as the agent's commands
//! ([`crate::sandbox`]: Landlock, bubblewrap where it works, an allow-listed environment, no
//! capabilities, the person's secrets and Mandate's own directories unreadable), with the network, and with a system-call
//! filter that keeps the server and everything it starts in one process group.
//!
//! - **By default** a server reads the workspace and writes nothing in it; it writes its
//!   private temporary directory (`TMPDIR`, removed when it stops) and its own cache directory
//!   outside the workspace (`<cache>/mcp/<name>-<definition hash>`: `npm_config_cache`,
//!   `UV_CACHE_DIR`, `XDG_CACHE_HOME`, `XDG_DATA_HOME`, `XDG_STATE_HOME`), so `npx` and `uvx`
//!   keep their downloads between runs and one server cannot plant code in another's cache.
//! - **Allowed to write in the workspace** (the person's grant, [`Place::writes_workspace`]):
//!   every top-level entry that is not protected is writable (`.orchestration/`, `.git/`,
//!   `.mcp.json`, `.mandate/`, … never are; under bubblewrap nested `.git/` and `.intentignore`
//!   paths are bound read-only again). The server is stopped (`SIGSTOP`, checked in `/proc`)
//!   whenever no call is running, and each call is bracketed by change detection
//!   (`McpTool::run`). It is never started outside a call (outside one, it is started only
//!   without the grant, to list its tools); a call starts it inside its watch, and refuses it
//!   if it changed anything while starting.
//!   The grant holds only where no other process can wake the stopped server
//!   ([`write_grant_refusal`]: bubblewrap's PID namespace, or Landlock ABI 6+ signal scoping).
//! - **Unconfined**, only where the person said so for this definition and the code it runs
//!   ([`Place::unconfined`], checked like the grant to write, [`super::grant`]): no Landlock, no
//!   bubblewrap — what it may touch is what the person may — but still its own process group
//!   (its system-call filter refuses `setsid` and `setpgid`), the allow-listed environment and
//!   its private temporary directory. Every call of it asks the person and its card says so.
//!   It is watched as a granted server is, whatever the grant: stopped between calls, started
//!   only inside a call's watch, and each call's changes in the workspace recorded when the
//!   selected intent owns them and undone otherwise (the protected files are copied before
//!   the call, as before an unconfined command). To list its tools outside a call it starts
//!   under a watch of its own where nothing is in scope: what it changed is undone and it is
//!   refused. What stopping it does not guarantee here, with no PID namespace: any process of
//!   the person's may continue it (a stopped thread runs no code, and its context switches
//!   show at the next call that it ran, which refuses that call and kills it — what it changed
//!   meanwhile cannot be told from the person's or the agent's changes, so it is named, not
//!   undone); and work it handed to a process outside its group (a daemon, a scheduler, a
//!   service over a socket) is not stopped: between calls it is not seen, and what it changes
//!   during a later call is sorted as that call's. What it does outside the workspace is not
//!   seen at all.
//! - **Without Landlock** a server could write anything, and be woken by anyone: it starts
//!   only with that consent ([`prepare`] refuses otherwise, saying how to give it), never
//!   because of the grant to write.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::connection::ConnectError;
use crate::hooks::command_policy::CommandPolicy;
use crate::hooks::ignore_list::IntentIgnore;
use crate::redact::Redactor;
use crate::sandbox::{
    self, env::command_environment, scope_grants, ChangeRules, CommandSandbox, Confinement,
    ConfinementLevel,
};

/// Where and how a stdio server runs.
#[derive(Debug, Clone)]
pub struct Place {
    /// The server's name, for what the person is told.
    pub name: String,
    /// The workspace root (canonical): the server's working directory.
    pub root: PathBuf,
    pub confinement: Confinement,
    /// Mandate's settings and data directories: hidden, never writable.
    pub hidden: Vec<PathBuf>,
    /// The server's own cache directory, when there is a place for caches.
    pub cache: Option<PathBuf>,
    /// The person allowed this definition to write in the workspace.
    pub writes_workspace: bool,
    /// The person allowed this definition to run outside any confinement (`confinement` then
    /// confines nothing).
    pub unconfined: bool,
    /// It starts only to list its tools, outside any call.
    pub listing: bool,
}

impl Place {
    /// How its start is watched for changes in the workspace.
    pub fn start_watch(&self) -> StartWatch {
        match (self.writes_workspace || self.unconfined, self.listing) {
            (false, _) => StartWatch::No,
            (true, false) => StartWatch::InCall,
            (true, true) => StartWatch::OutsideCall,
        }
    }
}

/// How the start of a server is watched for changes in the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartWatch {
    /// Not at all: it cannot write in the workspace.
    No,
    /// Inside a call's watch: what it changed while starting is named and it is refused; the
    /// call's watch sorts the change (recorded in scope, undone out of it).
    InCall,
    /// Outside any call (an unconfined server listing its tools): nothing is in scope there,
    /// so what it changed is undone, and it is refused.
    OutsideCall,
}

/// A running server's confinement: what it may write, and its process group.
pub struct Jail {
    pub sandbox: CommandSandbox,
    pub confinement: Confinement,
    pub writes_workspace: bool,
    /// The server's process group (its pid: it starts a session of its own).
    pub group: Option<i32>,
    /// What its threads had done when it was last stopped (see [`Jail::woken`]).
    stopped: Mutex<Option<sandbox::GroupMark>>,
}

impl Jail {
    pub fn new(
        sandbox: CommandSandbox,
        confinement: Confinement,
        writes_workspace: bool,
        group: Option<i32>,
    ) -> Jail {
        Jail {
            sandbox,
            confinement,
            writes_workspace,
            group,
            stopped: Mutex::new(None),
        }
    }

    /// Whether the server is stopped between calls and its calls bracketed by change
    /// detection: it may write in the workspace, by the person's grant or because nothing
    /// confines it.
    pub fn watched(&self) -> bool {
        self.writes_workspace || !self.confinement.is_confined()
    }

    /// Stops the server (see [`sandbox::freeze_group`]) and notes what its threads had done;
    /// one that cannot be stopped is killed.
    pub async fn freeze(&self) -> Result<(), String> {
        let Some(group) = self.group else {
            return Ok(());
        };
        let stopped = tokio::task::spawn_blocking(move || sandbox::freeze_and_mark(group))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
        let mark = match stopped {
            Ok(mark) => mark,
            Err(why) => {
                tracing::warn!(group, %why, "an MCP server could not be stopped between calls; it is killed");
                sandbox::kill_group(Some(group));
                return Err(why);
            }
        };
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = Some(mark);
        Ok(())
    }

    /// Why the server cannot be taken to have stayed stopped since it was last stopped, if it
    /// cannot. Stopping it guarantees nothing against a `SIGCONT` from a process that can
    /// signal it (any of the person's, where no PID namespace hides it and Landlock does not
    /// scope signals); what it then ran shows in its threads' context switches
    /// ([`sandbox::ran_since`]), whatever state it was left in.
    pub async fn woken(&self) -> Option<String> {
        let group = self.group?;
        let mark = self
            .stopped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()?;
        tokio::task::spawn_blocking(move || sandbox::ran_since(group, &mark))
            .await
            .unwrap_or_else(|e| Some(format!("it could not be checked: {e}")))
    }

    /// Kills the server and everything it started.
    pub fn kill(&self) {
        sandbox::kill_group(self.group);
    }

    pub fn thaw(&self) {
        if let Some(group) = self.group {
            self.stopped
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            sandbox::thaw_group(group);
        }
    }

    /// The rules its changes are sorted by when no call is running (nothing is in scope).
    pub fn rules<'a>(
        &'a self,
        owns: &'a (dyn Fn(&str) -> bool + Sync),
        ignore: &'a IntentIgnore,
        build_outputs: Vec<&'a str>,
    ) -> ChangeRules<'a> {
        ChangeRules {
            owns,
            ignore,
            build_outputs,
            write_git: false,
            confinement: &self.confinement,
        }
    }
}

/// The environment of a stdio server: what commands get (an allow-list of Mandate's own
/// variables, never one whose value holds a secret `known` to the redactor, `TMPDIR` the
/// private temporary directory), the cache variables pointing at its cache directory, then
/// the server's own variables (its definition, consented to, with secrets from the keyring).
pub fn server_environment(
    source: impl IntoIterator<Item = (String, String)>,
    own: &[(String, String)],
    known: &Redactor,
    temp_dir: &Path,
    cache: Option<&Path>,
) -> Vec<(String, String)> {
    let policy = CommandPolicy::builtin();
    let mut env = command_environment(source, policy.confinement(), temp_dir, true, known);
    let mut set = |name: &str, value: String| {
        env.retain(|(n, _)| n != name);
        env.push((name.to_string(), value));
    };
    if let Some(cache) = cache {
        for (name, sub) in [
            ("npm_config_cache", "npm"),
            ("UV_CACHE_DIR", "uv"),
            ("UV_PYTHON_INSTALL_DIR", "uv-python"),
            ("XDG_CACHE_HOME", "cache"),
            ("XDG_DATA_HOME", "data"),
            ("XDG_STATE_HOME", "state"),
        ] {
            set(name, cache.join(sub).display().to_string());
        }
    }
    for (name, value) in own {
        set(name, value.clone());
    }
    env.sort();
    env
}

/// The sandbox of a server about to start, with its private temporary directory (removed
/// when dropped). Blocking: the workspace is read to find protected paths.
pub fn prepare(
    place: &Place,
    own_env: &[(String, String)],
) -> Result<(CommandSandbox, tempfile::TempDir), ConnectError> {
    // Unconfined only by the person's word for this server: never by the grant to write.
    if !place.confinement.is_confined() && !place.unconfined {
        return Err(ConnectError::Unconfined {
            server: place.name.clone(),
            lapse: None,
        });
    }
    let problem = |e: &dyn std::fmt::Display| {
        ConnectError::Config(format!("its confinement could not be prepared: {e}"))
    };
    let temp = sandbox::private_temp_dir().map_err(|e| problem(&e))?;
    let (grants, read_only_inside) = if place.writes_workspace {
        let ignore = IntentIgnore::load(&place.root).map_err(|e| problem(&e))?;
        let grants = sandbox::without_listed(
            &place.root,
            scope_grants(&place.root, &["**".to_string()]),
            &ignore,
        );
        let before = crate::changes::Snapshot::take(&place.root);
        let inside = sandbox::protected_inside(&place.root, &before, &grants, &ignore);
        (grants, inside)
    } else {
        (Vec::new(), Vec::new())
    };
    let mut jail = CommandSandbox::new(
        &place.root,
        &place.root,
        grants,
        read_only_inside,
        temp.path(),
        true,
        false,
        place.hidden.clone(),
        Vec::new(),
    )
    .map_err(|e| problem(&e))?;
    // Made only once it is known not to overlap the workspace or a hidden directory.
    if let Some(cache) = &place.cache {
        jail = match jail.clone().with_cache_dir(cache) {
            Ok(with) => with,
            Err(e) => {
                tracing::warn!(error = %e, "an MCP server runs without a cache directory");
                jail
            }
        };
    }
    jail.env = server_environment(
        std::env::vars(),
        own_env,
        Redactor::global(),
        temp.path(),
        jail.cache_dir.as_deref(),
    );
    Ok((jail, temp))
}

/// Why the grant to write in the workspace cannot hold on this machine, if it cannot. A
/// granted server is kept stopped between calls; that holds only if no other process (another
/// server, a command of the agent) can send it `SIGCONT`: bubblewrap's PID namespace hides it,
/// or Landlock (ABI 6 and later) scopes signals. Otherwise it could run on, unwatched.
pub fn write_grant_refusal(confinement: &Confinement) -> Option<String> {
    let scoped = match confinement.level {
        ConfinementLevel::LandlockAndBwrap => true,
        ConfinementLevel::LandlockOnly => confinement.landlock_abi.unwrap_or(0) >= 6,
        ConfinementLevel::None => false,
    };
    (!scoped).then(|| {
        "this machine cannot keep a stopped server stopped (no bubblewrap, and Landlock below ABI 6 does not scope signals), so the grant to write in the workspace is not used".to_string()
    })
}

/// How a server runs on this machine, for Settings and the command line. `granted`: the
/// person allowed it to write in the workspace (used only where [`write_grant_refusal`] finds
/// nothing); `unconfined`: they allowed it to run unconfined (and the consent is in force).
pub fn level_note(confinement: &Confinement, granted: bool, unconfined: bool) -> String {
    if unconfined {
        let grant = if granted {
            "; your grant to write in the workspace adds nothing: it can write there anyway"
        } else {
            ""
        };
        return format!("unconfined, as you allowed: it can read and write anything you can, and every call waits for your approval; it is stopped between calls, and what a call changes in the workspace is recorded when the selected intent owns it and undone otherwise (what it does outside the workspace is not seen){grant}");
    }
    let refusal = write_grant_refusal(confinement).filter(|_| granted);
    if !confinement.is_confined() {
        let why = refusal.map(|why| format!("; {why}")).unwrap_or_default();
        return format!("not confined (no Landlock){why}; not started unless you allow it to run unconfined (then every call waits for your approval)");
    }
    let how = format!("confined ({})", confinement.summary());
    match refusal {
        Some(why) => format!("{how}; {why}: it reads the workspace, writes nothing in it"),
        None if granted => format!("{how}; may write in the workspace: stopped between calls, every call's changes recorded or undone"),
        None => format!("{how}; reads the workspace, writes nothing in it"),
    }
}

/// For a call whose server did not come up: what its start changed is found by reading the
/// whole workspace (nothing is known of a confinement that never ran).
pub fn unstarted(root: &Path) -> Result<Jail, String> {
    let sandbox = CommandSandbox::new(
        root,
        root,
        Vec::new(),
        Vec::new(),
        root,
        true,
        false,
        Vec::new(),
        Vec::new(),
    )
    .map_err(|e| e.to_string())?;
    Ok(Jail::new(
        sandbox,
        Confinement::from_parts(None, None),
        true,
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(confinement: Confinement, writes_workspace: bool) -> (tempfile::TempDir, Place) {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
        let place = Place {
            name: "srv".into(),
            root,
            confinement,
            hidden: Vec::new(),
            cache: None,
            writes_workspace,
            unconfined: false,
            listing: false,
        };
        (tmp, place)
    }

    #[test]
    fn without_landlock_a_server_does_not_start() {
        let none = Confinement::from_parts(None, None);
        let (_tmp, refused) = place(none.clone(), false);
        let err = prepare(&refused, &[]).expect_err("refused");
        assert!(
            err.to_string().contains("no confinement (no Landlock)"),
            "{err}"
        );
        assert!(write_grant_refusal(&none).is_some());
        assert!(level_note(&none, true, false).contains("not started"));
    }

    #[test]
    fn without_landlock_the_write_grant_alone_never_starts_a_server_unconfined() {
        let none = Confinement::from_parts(None, None);
        let (_tmp, granted) = place(none, true);
        let err = prepare(&granted, &[]).expect_err("a granted server started unconfined");
        let said = err.to_string();
        assert!(
            said.contains("no confinement (no Landlock)")
                && said.contains("mandate mcp allow-unconfined"),
            "{said}"
        );
        // With the person's consent it is prepared, unconfined: nothing to write is granted.
        let (_tmp, mut allowed) = place(Confinement::from_parts(None, None), true);
        allowed.unconfined = true;
        allowed.writes_workspace = false;
        prepare(&allowed, &[]).expect("prepared with the consent");
        let note = level_note(&Confinement::from_parts(Some(7), None), true, true);
        assert!(
            note.starts_with("unconfined, as you allowed")
                && note.contains("every call waits for your approval")
                && note.contains("stopped between calls")
                && note.contains("recorded when the selected intent owns it and undone otherwise")
                && note.contains("grant to write in the workspace adds nothing"),
            "{note}"
        );
    }

    #[test]
    fn the_write_grant_holds_only_where_a_stopped_server_cannot_be_woken() {
        let bwrap = Some(PathBuf::from("/usr/bin/bwrap"));
        for (abi, bwrap, holds) in [
            (Some(5), None, false),
            (Some(3), None, false),
            (None, None, false),
            (None, bwrap.clone(), false),
            (Some(6), None, true),
            (Some(9), None, true),
            (Some(3), bwrap.clone(), true),
            (Some(7), bwrap, true),
        ] {
            let level = Confinement::from_parts(abi, bwrap);
            assert_eq!(
                write_grant_refusal(&level).is_none(),
                holds,
                "{}",
                level.summary()
            );
            let note = level_note(&level, true, false);
            assert_eq!(
                note.contains("the grant to write in the workspace is not used"),
                !holds,
                "{note}"
            );
        }
        let weak = Confinement::from_parts(Some(5), None);
        assert!(level_note(&weak, true, false).contains("writes nothing in it"));
        assert!(write_grant_refusal(&weak).is_some_and(|why| why.contains("Landlock below ABI 6")));
    }

    #[test]
    fn the_grant_covers_the_workspace_but_never_a_protected_path() {
        let (_tmp, p) = place(Confinement::from_parts(Some(7), None), true);
        let (sandbox, _temp) = prepare(&p, &[]).expect("prepared");
        assert_eq!(sandbox.writable_within_workspace(), vec!["src".to_string()]);
        let (_tmp, p) = place(Confinement::from_parts(Some(7), None), false);
        let (sandbox, _temp) = prepare(&p, &[]).expect("prepared");
        assert!(sandbox.writable.is_empty());
    }

    #[test]
    fn a_cache_directory_inside_the_workspace_is_neither_made_nor_used() {
        let (_tmp, mut p) = place(Confinement::from_parts(Some(7), None), false);
        p.cache = Some(p.root.join("src/mcp/cache"));
        let (sandbox, _temp) = prepare(&p, &[]).expect("prepared");
        assert_eq!(sandbox.cache_dir, None);
        assert!(!p.root.join("src/mcp").exists());
        assert!(!sandbox.env.iter().any(|(_, v)| v.contains("src/mcp")));
        let outside = p.root.parent().expect("parent").join("cache/mcp/x");
        p.cache = Some(outside.clone());
        let (sandbox, _temp) = prepare(&p, &[]).expect("prepared");
        assert_eq!(sandbox.cache_dir.as_deref(), Some(outside.as_path()));
        let npm = outside.join("npm").display().to_string();
        assert!(sandbox.env.contains(&("npm_config_cache".to_string(), npm)));
    }
}
