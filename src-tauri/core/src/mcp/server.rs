//! One server over its life: started on demand, watched, restarted with a growing pause when it
//! stops on its own, stopped when the hub goes. Its state is published on a watch channel so a
//! call waits for a restart in progress (bounded) and never for a server that is down.
//!
//! A server that cannot start (program missing, no answer to `initialize` in time, a secret not
//! set) is not retried by itself: it is tried again at the next task or when Settings ask. One
//! that was ready and then stopped is restarted after 1, 2, 4, 8 and 16 s; after
//! [`MAX_RESTARTS`] stops in a row (a stop more than a minute after being ready starts the count
//! again) it stays down until asked.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::catalog::ToolInfo;
use super::config::{ServerDef, Transport};
use super::connection::{self, ConnectError, Resolved};
use super::grant::WriteGrant;
use super::jail::{Jail, Place};
use crate::protocol::McpStatus;
use crate::redact::Redactor;
use crate::sandbox::Confinement;
use crate::secrets::SecretStore;

pub const MAX_RESTARTS: u32 = 5;
const STABLE_AFTER: Duration = Duration::from_secs(60);

#[path = "server_calls.rs"]
mod calls;
pub use calls::CallError;

/// What a server is doing now.
#[derive(Clone)]
pub struct State {
    pub status: McpStatus,
    pub error: Option<String>,
    /// The tools of its last connection (kept while it restarts).
    pub tools: Arc<Vec<ToolInfo>>,
    /// Tools it listed that cannot be offered, with the reason.
    pub refused: Arc<Vec<(String, String)>>,
    peer: Option<super::rpc::Peer>,
    /// The running stdio server's confinement.
    jail: Option<Arc<Jail>>,
}

/// What a server needs from its surroundings.
pub struct ServerEnv {
    pub root: PathBuf,
    /// How stdio servers are confined on this machine ([`Confinement::detect`]).
    pub confinement: Confinement,
    /// Mandate's settings and data directories: hidden from servers.
    pub hidden: Vec<PathBuf>,
    /// Where servers' cache directories go (`<cache>/mcp/…`), if anywhere.
    pub cache_root: Option<PathBuf>,
    pub secrets: Arc<dyn SecretStore>,
    /// Called on every change of any server's state.
    pub changed: Box<dyn Fn() + Send + Sync>,
}

/// What the person allowed a server, each for its definition and the code it runs (in force
/// when the files were read; checked again at every start).
#[derive(Default)]
pub struct Granted {
    /// To write in the workspace.
    pub write: Option<Arc<WriteGrant>>,
    /// To run outside any confinement.
    pub unconfined: Option<Arc<WriteGrant>>,
}

pub struct Server {
    pub def: ServerDef,
    pub hash: String,
    /// The person allowed this definition to write in the workspace (the grant is in force,
    /// this machine can keep a stopped server stopped, and it does not run unconfined).
    pub writes_workspace: bool,
    /// The grant, checked again against the code it runs at every start.
    grant: Option<Arc<WriteGrant>>,
    /// The person's consent to run it unconfined, checked again at every start.
    unconfined: Option<Arc<WriteGrant>>,
    /// Why the grant was not used at its last start (the code it runs changed), and
    /// whether a call has told the person yet.
    dropped: Mutex<Option<(String, bool)>>,
    /// Held for the whole of a watched call (change detection before, the call, change
    /// detection after): calls of a watched server never overlap.
    calls: tokio::sync::Mutex<()>,
    env: Arc<ServerEnv>,
    state: watch::Sender<State>,
    cancel: CancellationToken,
    supervising: Mutex<bool>,
    /// Why it was killed on purpose ([`Server::fail`]): it stays failed when its connection
    /// then ends, instead of waiting as stopped.
    fault: Mutex<Option<String>>,
}

/// The state of a watched server between its calls.
const WAITS_FOR_ITS_CALL: &str =
    "it may write in the workspace, so it runs only during its calls: its next call starts it";

impl Server {
    pub fn new(
        def: ServerDef,
        status: McpStatus,
        granted: Granted,
        env: Arc<ServerEnv>,
        parent: &CancellationToken,
    ) -> Arc<Server> {
        let Granted {
            write: grant,
            unconfined,
        } = granted;
        let hash = def.definition_hash();
        let (state, _) = watch::channel(State {
            status,
            error: None,
            tools: Arc::default(),
            refused: Arc::default(),
            peer: None,
            jail: None,
        });
        // The grant holds only where a stopped server stays stopped (see
        // `jail::write_grant_refusal`): otherwise the server runs read-only. Unconfined, the
        // grant adds nothing: it can write anyway, and is watched as if granted (`watched`).
        let writes_workspace = grant.is_some()
            && unconfined.is_none()
            && super::jail::write_grant_refusal(&env.confinement).is_none();
        Arc::new(Server {
            def,
            hash,
            writes_workspace,
            grant,
            unconfined,
            dropped: Mutex::new(None),
            calls: tokio::sync::Mutex::new(()),
            env,
            state,
            cancel: parent.child_token(),
            supervising: Mutex::new(false),
            fault: Mutex::new(None),
        })
    }

    pub fn is_stopped_for_good(&self) -> bool {
        self.cancel.is_cancelled()
    }

    pub fn state(&self) -> State {
        self.state.borrow().clone()
    }

    fn set(&self, change: impl FnOnce(&mut State)) {
        self.state.send_modify(change);
        (self.env.changed)();
    }

    /// The error is shown in Settings and in every call's answer while the server is down: it
    /// may quote the server (its last output, a URL with a token), so it is redacted here.
    fn set_status(&self, status: McpStatus, error: Option<String>) {
        let error = error.map(|e| Redactor::global().redact(&e).into_owned());
        self.set(|s| {
            s.status = status;
            s.error = error;
            if status != McpStatus::Ready {
                s.peer = None;
                s.jail = None;
            }
        });
    }

    /// Kills it and everything it started, and marks it failed with `why` (its next call
    /// starts it again, inside that call's watch): what it did could not be checked.
    pub fn fail(&self, why: String) {
        *self.fault.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.clone());
        if let Some(jail) = self.jail() {
            jail.kill();
        }
        self.set_status(McpStatus::Failed, Some(why));
    }

    /// Stops it for good (its definition changed, it was removed, the hub goes).
    pub fn stop(&self) {
        self.cancel.cancel();
    }

    /// Starts it outside any call (a task starts, Settings asked). A watched one is never
    /// started so: its writes are watched only during a call, which starts it. Until its
    /// tools are known it is started once to list them, and stopped: without the grant to
    /// write, and unconfined under a watch where nothing is in scope (see
    /// [`super::starting`]).
    pub fn start_outside_call(self: &Arc<Self>) {
        if !self.watched() {
            return self.launch(false);
        }
        if self.state.borrow().tools.is_empty() {
            self.launch(true);
        }
    }

    /// Starts it unless it is running, waiting for consent, disabled or invalid. For a
    /// watched server only a call does this, inside its watch.
    pub fn start(self: &Arc<Self>) {
        self.launch(false);
    }

    /// With `list_only`, it runs without the grant, lists its tools and is stopped.
    fn launch(self: &Arc<Self>, list_only: bool) {
        let status = self.state.borrow().status;
        if !matches!(status, McpStatus::Stopped | McpStatus::Failed) || self.cancel.is_cancelled() {
            return;
        }
        {
            let mut supervising = self.supervising.lock().unwrap_or_else(|p| p.into_inner());
            if *supervising {
                return;
            }
            *supervising = true;
        }
        *self.fault.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.set_status(McpStatus::Starting, None);
        let server = self.clone();
        tokio::spawn(async move {
            if list_only {
                server.clone().list_tools_read_only().await;
            } else {
                server.clone().supervise().await;
            }
            *server.supervising.lock().unwrap_or_else(|p| p.into_inner()) = false;
        });
    }

    /// Waits while it is starting, at most its start-up time and a little more.
    pub async fn settled(&self) {
        let mut rx = self.state.subscribe();
        let limit = self.def.startup_timeout + Duration::from_secs(5);
        let _ = tokio::time::timeout(limit, rx.wait_for(|s| s.status != McpStatus::Starting)).await;
    }

    /// A start without the grant to write (confined, it writes nothing in the workspace;
    /// unconfined, what it changes there is undone) that only lists the tools; the server is
    /// then stopped, to be started by its next call.
    async fn list_tools_read_only(self: Arc<Self>) {
        let resolved = match self.resolve().await {
            Ok(r) => r,
            Err(e) => return self.set_status(McpStatus::Failed, Some(e)),
        };
        let place = match self.checked_place(&resolved, true).await {
            Ok(place) => place,
            Err(e) => return self.set_status(McpStatus::Failed, Some(e.to_string())),
        };
        let connecting =
            connection::connect(&self.def.name, &resolved, &place, self.def.startup_timeout);
        let connected = tokio::select! {
            c = connecting => c,
            () = self.cancel.cancelled() => return self.set_status(McpStatus::Stopped, None),
        };
        let conn = match connected {
            Ok(conn) => conn,
            Err(e) => return self.set_status(McpStatus::Failed, Some(start_failure(&e))),
        };
        let (good, refused): (Vec<_>, Vec<_>) = conn.tools.into_iter().partition(Result::is_ok);
        // Dropping the connection kills the server's group.
        drop(conn.child);
        drop(conn.service);
        self.set(|s| {
            s.status = McpStatus::Stopped;
            s.error = Some(WAITS_FOR_ITS_CALL.into());
            s.tools = Arc::new(good.into_iter().filter_map(Result::ok).collect());
            s.refused = Arc::new(refused.into_iter().filter_map(Result::err).collect());
            s.peer = None;
            s.jail = None;
        });
    }

    async fn supervise(self: Arc<Self>) {
        let mut stops = 0u32;
        loop {
            let resolved = match self.resolve().await {
                Ok(r) => r,
                Err(e) => return self.set_status(McpStatus::Failed, Some(e)),
            };
            let place = match self.checked_place(&resolved, false).await {
                Ok(place) => place,
                Err(e) => return self.set_status(McpStatus::Failed, Some(e.to_string())),
            };
            let connecting =
                connection::connect(&self.def.name, &resolved, &place, self.def.startup_timeout);
            let connected = tokio::select! {
                c = connecting => c,
                () = self.cancel.cancelled() => return self.set_status(McpStatus::Stopped, None),
            };
            let why = match connected {
                Err(e) if stops == 0 || matches!(e, ConnectError::Unconfined { .. }) => {
                    tracing::warn!(server = %self.def.name, error = %e, "MCP server did not start");
                    return self.set_status(McpStatus::Failed, Some(start_failure(&e)));
                }
                Err(e) => format!("it could not start again: {e}"),
                Ok(conn) => {
                    let ready_at = Instant::now();
                    let why = self.serve(conn).await;
                    let Some(why) = why else {
                        return self.set_status(McpStatus::Stopped, None);
                    };
                    if ready_at.elapsed() > STABLE_AFTER {
                        stops = 0;
                    }
                    why
                }
            };
            let fault = self.fault.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(fault) = fault {
                return self.set_status(McpStatus::Failed, Some(fault));
            }
            if self.watched() {
                // Started again only by its next call, inside that call's watch: a restart in
                // the background could write while the agent or the person does.
                tracing::warn!(server = %self.def.name, %why, "MCP server stopped");
                return self.set_status(
                    McpStatus::Stopped,
                    Some(format!("{why}; it is started again at its next call")),
                );
            }
            stops += 1;
            tracing::warn!(server = %self.def.name, stops, %why, "MCP server stopped");
            if stops > MAX_RESTARTS {
                return self.set_status(
                    McpStatus::Failed,
                    Some(format!("{why}; it stopped {MAX_RESTARTS} times in a row and is not restarted again until you restart it")),
                );
            }
            let pause = Duration::from_secs(1 << (stops - 1).min(4));
            self.set_status(
                McpStatus::Restarting,
                Some(format!("{why}; restarting in {} s", pause.as_secs())),
            );
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = self.cancel.cancelled() => return self.set_status(McpStatus::Stopped, None),
            }
            self.set_status(McpStatus::Starting, None);
        }
    }

    /// Publishes a ready connection and waits for it to end; None when it was stopped on purpose.
    async fn serve(&self, conn: connection::Connection) -> Option<String> {
        let connection::Connection {
            service,
            tools,
            mut child,
            stderr,
            jail,
        } = conn;
        let (good, refused): (Vec<_>, Vec<_>) = tools.into_iter().partition(Result::is_ok);
        let peer = service.peer().clone();
        self.set(|s| {
            s.status = McpStatus::Ready;
            s.error = None;
            s.tools = Arc::new(good.into_iter().filter_map(Result::ok).collect());
            s.refused = Arc::new(refused.into_iter().filter_map(Result::err).collect());
            s.peer = Some(peer);
            s.jail = jail;
        });
        tokio::select! {
            _ = service.waiting() => {}
            () = self.cancel.cancelled() => return None,
        }
        let exit = match child.as_mut() {
            Some(c) => c.wait_briefly(Duration::from_secs(2)).await,
            None => None,
        };
        let mut why = match exit {
            Some(status) => format!("it exited ({status})"),
            None if child.is_some() => "it closed its connection".to_string(),
            None => "the connection ended".to_string(),
        };
        let tail = stderr.text();
        if !tail.trim().is_empty() {
            let tail = super::result::redact(crate::text::suffix(tail.trim(), 400));
            why.push_str(&format!("; its last output: {tail}"));
        }
        drop(child);
        Some(why)
    }

    /// Why `grant` does not hold for the code this start runs (found and hashed again, right
    /// before the spawn), if it does not; redacted.
    async fn lapse(&self, grant: Option<Arc<WriteGrant>>, resolved: &Resolved) -> Option<String> {
        let (resolved, root) = (resolved.clone(), self.env.root.clone());
        let why = tokio::task::spawn_blocking(move || match grant {
            Some(grant) => super::grant::verify(&grant, &resolved, &root)
                .err()
                .map(|e| e.to_string()),
            None => Some("it has no grant".to_string()),
        })
        .await
        .unwrap_or_else(|e| Some(format!("checking the code it runs failed: {e}")));
        why.map(|why| Redactor::global().redact(&why).into_owned())
    }

    /// Why the consent to run it unconfined does not hold for the code this start runs, if it
    /// does not: it then runs confined, or (on a machine without confinement) not at all.
    async fn consent_lapse(&self, resolved: &Resolved) -> Option<String> {
        let why = self.lapse(self.unconfined.clone(), resolved).await;
        if let Some(why) = &why {
            tracing::warn!(server = %self.def.name, %why, "MCP server runs without the consent to run it unconfined");
        }
        why
    }

    /// Where and how this start runs, the person's rights checked against the code it runs
    /// (found and hashed again now): the grant to write is dropped where it does not hold;
    /// so is the consent to run unconfined, and it then runs confined — or, on a machine
    /// without confinement, not at all. `listing`: it starts only to list its tools, without
    /// the grant to write.
    async fn checked_place(
        &self,
        resolved: &Resolved,
        listing: bool,
    ) -> Result<Place, ConnectError> {
        let mut place = self.place();
        place.listing = listing;
        if listing {
            place.writes_workspace = false;
        } else if place.writes_workspace {
            place.writes_workspace = self.grant_holds(resolved).await;
        }
        if place.unconfined {
            if let Some(why) = self.consent_lapse(resolved).await {
                if !self.env.confinement.is_confined() {
                    return Err(ConnectError::Unconfined {
                        server: self.def.name.clone(),
                        lapse: Some(why),
                    });
                }
                place.unconfined = false;
                place.confinement = self.env.confinement.clone();
            }
        }
        Ok(place)
    }

    /// Whether the grant holds for the code this start runs. When it does not, this run goes
    /// without it and Settings say why.
    async fn grant_holds(&self, resolved: &Resolved) -> bool {
        let why = self.lapse(self.grant.clone(), resolved).await;
        if let Some(why) = &why {
            tracing::warn!(server = %self.def.name, %why, "MCP server runs without its grant to write in the workspace");
        }
        let holds = why.is_none();
        *self.dropped.lock().unwrap_or_else(|p| p.into_inner()) = why.map(|w| (w, false));
        (self.env.changed)();
        holds
    }

    /// Why its grant to write in the workspace was not used at its last start.
    pub fn grant_dropped(&self) -> Option<String> {
        let dropped = self.dropped.lock().unwrap_or_else(|p| p.into_inner());
        dropped.as_ref().map(|(why, _)| why.clone())
    }

    /// [`Server::grant_dropped`], once per start: for the notice of the call it started.
    pub fn grant_dropped_news(&self) -> Option<String> {
        let mut dropped = self.dropped.lock().unwrap_or_else(|p| p.into_inner());
        match dropped.as_mut() {
            Some((why, told)) if !*told => {
                *told = true;
                Some(why.clone())
            }
            _ => None,
        }
    }

    /// Where and how its process runs: unconfined only with the person's consent.
    fn place(&self) -> Place {
        let cache = self.env.cache_root.as_ref().map(|root| {
            let short = self.hash.get(..16).unwrap_or(&self.hash);
            root.join("mcp").join(format!("{}-{short}", self.def.name))
        });
        let unconfined = self.unconfined.is_some();
        Place {
            name: self.def.name.clone(),
            root: self.env.root.clone(),
            confinement: if unconfined {
                Confinement::from_parts(None, None)
            } else {
                self.env.confinement.clone()
            },
            hidden: self.env.hidden.clone(),
            cache,
            writes_workspace: self.writes_workspace,
            unconfined,
            listing: false,
        }
    }

    /// How this machine confines stdio servers.
    pub fn confinement(&self) -> Confinement {
        self.env.confinement.clone()
    }

    /// Whether the person's consent to run it unconfined was in force when the files were
    /// read (it is checked again at every start).
    pub fn consented_unconfined(&self) -> bool {
        self.unconfined.is_some()
    }

    /// Whether its process runs outside any confinement: a running server as it was started;
    /// one that is not running as it would start (with the person's consent, or on a machine
    /// that offers no confinement, where it starts only with that consent). Never an HTTP
    /// server: it does not run here.
    pub fn runs_unconfined(&self) -> bool {
        self.def.is_stdio() && !self.runs_under().is_confined()
    }

    /// The confinement of its process: a running server's, or the one it would start with.
    pub fn runs_under(&self) -> Confinement {
        match self.jail() {
            Some(jail) => jail.confinement.clone(),
            None => self.place().confinement,
        }
    }

    /// Whether it runs only during its calls, each bracketed by change detection (see
    /// [`super::watched`]): it may write in the workspace, by the person's grant or because
    /// it runs unconfined.
    pub fn watched(&self) -> bool {
        self.writes_workspace || self.runs_unconfined()
    }

    /// The running server's confinement (none for a server over HTTP or one that is down).
    pub fn jail(&self) -> Option<Arc<Jail>> {
        self.state.borrow().jail.clone()
    }

    /// Waits for the calls of this server in progress; hold it across a watched call.
    pub async fn exclusive(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.calls.lock().await
    }

    /// The definition with its secret references filled in from the keyring.
    async fn resolve(&self) -> Result<Resolved, String> {
        let (def, env) = (self.def.clone(), self.env.clone());
        let resolved = tokio::task::spawn_blocking(move || resolve(&def, &env))
            .await
            .map_err(|e| format!("reading its secrets failed: {e}"))?;
        resolved
    }
}

/// What Settings and the notes say of a start that failed: a refusal to run unconfined is a
/// sentence of its own.
fn start_failure(e: &ConnectError) -> String {
    match e {
        ConnectError::Unconfined { .. } => e.to_string(),
        _ => format!("it could not start: {e}"),
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Fills in `${…}` references from the keyring (blocking). Every secret read is registered
/// with the process-wide redactor as it is read (even when the definition then fails): a
/// server's token is then cut out of its results and errors, and out of anything a later
/// command prints, the ledger, task history and logs, in any encoding the redactor knows.
pub fn resolve(def: &ServerDef, env: &ServerEnv) -> Result<Resolved, String> {
    let lookup = |name: &str| {
        let key = super::refs::keyring_name(def.source, &env.root, &def.name, name);
        let found = env.secrets.get(&key);
        if let Ok(Some(secret)) = &found {
            crate::secrets::remember(secret);
        }
        found
    };
    let mut used = Vec::new();
    let mut expand =
        |value: &str| super::refs::expand(value, &lookup, &mut used).map_err(|e| e.to_string());
    let resolved = match &def.transport {
        Transport::Stdio { command, args, env } => Resolved::Stdio {
            command: command.clone(),
            args: args.iter().map(|a| expand(a)).collect::<Result<_, _>>()?,
            env: env
                .iter()
                .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                .collect::<Result<_, String>>()?,
        },
        Transport::Http { url, headers } => {
            let url = expand(url)?;
            // Checked again with its secrets in; the message never shows the filled-in URL.
            let ok = reqwest::Url::parse(&url)
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
            if !ok {
                return Err("its URL is not an http(s) URL once its secrets are filled in".into());
            }
            Resolved::Http {
                url,
                headers: headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                    .collect::<Result<_, String>>()?,
            }
        }
    };
    Ok(resolved)
}
