//! Running one command for the agent, from start to finish: the metadata snapshot before, the
//! sandbox, the confined process (its own session, so a timeout or a stop kills everything it
//! started; output streamed as it comes, redacted), the snapshot after, and the changes sorted
//! and, where out of scope, undone. [`run_governed`] is the whole sequence; [`run_confined`]
//! only runs a process in a sandbox the caller built.

use std::path::{Path, PathBuf};

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::{CommandSandbox, ConfinedCommand, Confinement, Io, SandboxError, SandboxRequest};
use crate::changes::{self, BeforeImages, ClassifiedChanges, RestoreOutcome, Snapshot};
use crate::hooks::command_policy::{CommandNeeds, CommandPolicy};
use crate::hooks::ignore_list::IntentIgnore;
use crate::hooks::CommandAction;
use crate::redact::Redactor;

/// What came of a command.
#[derive(Debug, Clone)]
pub struct CommandRun {
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    /// Everything it printed (stdout and stderr interleaved), capped, secrets redacted.
    pub output: String,
    pub spawn_error: Option<String>,
}

const MAX_KEPT_OUTPUT: usize = 1024 * 1024;

impl CommandRun {
    fn not_started(error: String) -> CommandRun {
        CommandRun {
            exit_code: None,
            timed_out: false,
            cancelled: false,
            output: String::new(),
            spawn_error: Some(error),
        }
    }
}

/// Runs `line` in `sandbox` under `confinement`, in `bash --noprofile --norc -c`. Output
/// reaches `on_output` and the result redacted of every secret `redactor` knows.
pub async fn run_confined(
    action: &CommandAction,
    sandbox: &CommandSandbox,
    confinement: &Confinement,
    redactor: &Redactor,
    cancel: &CancellationToken,
    on_output: impl FnMut(&str),
) -> CommandRun {
    let mut run = match ConfinedCommand::command(sandbox, confinement, &action.command) {
        Ok(cmd) => drive(cmd, action.timeout, cancel, on_output, redactor).await,
        Err(e) => return CommandRun::not_started(e.to_string()),
    };
    // Unconfined, nothing was refused, and nothing is to explain.
    if confinement.is_confined() {
        let home = super::secrets::home();
        let touched = super::secrets::mentioned(
            &[&action.command, &run.output],
            &sandbox.hidden,
            home.as_deref(),
        );
        if !touched.is_empty() {
            run.output.push_str(&super::secrets::note(&touched));
        }
    }
    run
}

/// Spawns `cmd` (a new session: its pid is its process group) and collects its output until
/// it ends, times out or is cancelled; then the whole group is killed.
pub(crate) async fn drive(
    mut cmd: super::Launch,
    timeout: Duration,
    cancel: &CancellationToken,
    mut on_output: impl FnMut(&str),
    redactor: &Redactor,
) -> CommandRun {
    cmd.stdin(Io::Null).stdout(Io::Piped).stderr(Io::Piped);
    let mut child = match super::spawn(cmd) {
        Ok(c) => c,
        Err(e) => return CommandRun::not_started(format!("could not start bash: {e}")),
    };
    let pgid = child.id().map(|p| p as i32);
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let (mut out_clean, mut err_clean) = (redactor.stream(), redactor.stream());
    let mut output = String::new();
    let (mut out_buf, mut err_buf) = (vec![0u8; 8192], vec![0u8; 8192]);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let (mut timed_out, mut cancelled) = (false, false);
    let mut keep = |text: String, output: &mut String| {
        if text.is_empty() {
            return;
        }
        on_output(&text);
        if output.len() < MAX_KEPT_OUTPUT {
            output.push_str(&text);
        }
    };
    while stdout.is_some() || stderr.is_some() {
        tokio::select! {
            n = read_some(&mut stdout, &mut out_buf) => match n {
                Some(n) => keep(out_clean.push(&out_buf[..n]), &mut output),
                None => stdout = None,
            },
            n = read_some(&mut stderr, &mut err_buf) => match n {
                Some(n) => keep(err_clean.push(&err_buf[..n]), &mut output),
                None => stderr = None,
            },
            _ = &mut deadline => { timed_out = true; break; }
            _ = cancel.cancelled() => { cancelled = true; break; }
        }
    }
    keep(out_clean.finish(), &mut output);
    keep(err_clean.finish(), &mut output);
    if timed_out || cancelled {
        kill_group(pgid);
    }
    let status = tokio::select! {
        s = child.wait() => s.ok(),
        _ = tokio::time::sleep(Duration::from_secs(5)) => { kill_group(pgid); child.wait().await.ok() }
    };
    // Children that outlive the shell (`sleep 100 &`) would keep running; end the group.
    kill_group(pgid);
    CommandRun {
        exit_code: status.and_then(|s| s.code()),
        timed_out,
        cancelled,
        output,
        spawn_error: None,
    }
}

async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    reader: &mut Option<R>,
    buf: &mut [u8],
) -> Option<usize> {
    match reader {
        Some(r) => match r.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

pub(crate) fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid.filter(|p| *p > 1) {
        // SAFETY: killpg only sends a signal; a group that is already gone makes it fail harmlessly.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        // Every member has SIGKILL pending: nothing of the group is left for the watchdog.
        super::reaper::forget(pgid);
    }
}

/// Everything a governed command needs besides its line.
pub struct CommandContext<'a> {
    /// The workspace root (canonical).
    pub workspace: &'a Path,
    /// The selected intent's `owned_scope` globs (empty: no intent, nothing writable).
    pub owned_scope: &'a [String],
    /// Whether the selected intent owns a path (`Intent::owns`; `|_| false` without one).
    pub owns: &'a (dyn Fn(&str) -> bool + Sync),
    pub ignore: &'a IntentIgnore,
    pub policy: &'a CommandPolicy,
    /// [`Confinement::detect`], or a weaker one on purpose.
    pub confinement: &'a Confinement,
    /// The task's private temporary directory ([`super::private_temp_dir`]).
    pub temp_dir: &'a Path,
    /// What the person granted on the approval card (the network, writing `.git/`); nothing
    /// for a command that ran without approval.
    pub granted: CommandNeeds,
    /// Mandate's settings and data directories, hidden from commands.
    pub app_dirs: &'a [PathBuf],
    /// Every secret Mandate holds ([`Redactor::global`]).
    pub redactor: &'a Redactor,
}

/// What came of a governed command.
#[derive(Debug)]
pub struct GovernedRun {
    pub run: CommandRun,
    /// Every change in the workspace, sorted: in scope (record them in the ledger with their
    /// diffs), permitted (build output; approved `.git/` writes), out of scope.
    pub changes: ClassifiedChanges,
    /// For each out-of-scope change: how it was undone, or why it could not be.
    pub restored: Vec<RestoreOutcome>,
    /// Directories change detection could not read, and files it could not hash (keys; say
    /// so; never assume nothing changed).
    pub unreadable: Vec<String>,
    /// Those of them the command could have changed something in: what it changed is not
    /// known, so nothing of it may be recorded (fail closed).
    pub unseen: Vec<String>,
    /// What the command left unreadable and Mandate opened again (its mode put back).
    pub reopened: Vec<changes::Reopened>,
    /// The snapshot after the command (its hashes make the next diff finer); under
    /// bubblewrap it holds only the writable paths, the rest could not change.
    pub after: Snapshot,
}

/// The sandbox of one command and the state of the workspace before it: what a command run
/// to its end and one left running in the background ([`super::start_background`]) share.
pub(crate) async fn prepare(
    action: &CommandAction,
    cx: &CommandContext<'_>,
) -> Result<(CommandSandbox, Watch), SandboxError> {
    let root = cx.workspace.to_path_buf();
    let before = blocking(move || snapshot_before(&root)).await?;
    let sandbox = SandboxRequest {
        workspace: cx.workspace,
        cwd: &action.cwd.abs,
        owned_scope: cx.owned_scope,
        ignore: cx.ignore,
        settings: cx.policy.confinement(),
        before: &before,
        temp_dir: cx.temp_dir,
        network: cx.granted.network,
        write_git: cx.granted.write_git,
        app_dirs: cx.app_dirs,
        redactor: cx.redactor,
    }
    .build()?;
    let named = kept_names(cx);
    // What bubblewrap binds read-only cannot change: nothing of it needs keeping.
    let fixed: Vec<String> = if cx.confinement.level == super::ConfinementLevel::LandlockAndBwrap {
        sandbox
            .read_only_inside
            .iter()
            .filter_map(|p| p.strip_prefix(cx.workspace).ok())
            .map(|rel| changes::key_of(rel.as_os_str()).into_owned())
            .collect()
    } else {
        Vec::new()
    };
    match Watch::from_snapshot(before, cx.confinement, named, fixed).await {
        Ok(watch) => Ok((sandbox, watch)),
        Err(e) => {
            sandbox.remove_made_dirs();
            Err(e)
        }
    }
}

/// What the repository's git configuration names, and, for a command allowed to write
/// `.git/`, what it must still not change (see `own_configuration`): kept to be compared
/// and undone.
pub(crate) fn kept_names(cx: &CommandContext<'_>) -> Vec<String> {
    let mut named: Vec<String> = cx.ignore.git_named().map(str::to_string).collect();
    if cx.granted.write_git {
        named.extend([".git/config", ".git/config.worktree", ".git/hooks"].map(String::from));
    }
    named
}

/// Runs one command from snapshot to restore (see the module's documentation). Errors only
/// when the sandbox cannot be prepared; the command then did not run.
pub async fn run_governed(
    action: &CommandAction,
    cx: &CommandContext<'_>,
    cancel: &CancellationToken,
    on_output: impl FnMut(&str),
) -> Result<GovernedRun, SandboxError> {
    let (sandbox, watch) = prepare(action, cx).await?;
    let run = run_confined(
        action,
        &sandbox,
        cx.confinement,
        cx.redactor,
        cancel,
        on_output,
    )
    .await;
    // Before the changes are read: a directory made only to be granted, left empty, was
    // never the command's doing.
    sandbox.remove_made_dirs();
    let rules = ChangeRules {
        owns: cx.owns,
        ignore: cx.ignore,
        build_outputs: cx.policy.confinement().build_output_names(),
        write_git: cx.granted.write_git,
        confinement: cx.confinement,
    };
    let found = watch.settle(&sandbox, &rules).await?;
    Ok(GovernedRun {
        run,
        changes: found.changes,
        restored: found.restored,
        unreadable: found.unreadable,
        unseen: found.unseen,
        reopened: found.reopened,
        after: found.after,
    })
}

/// How the changes a confined process made are sorted (see `changes::classify`).
pub struct ChangeRules<'a> {
    /// Whether the selected intent owns a path (`|_| false`: nothing is in scope).
    pub owns: &'a (dyn Fn(&str) -> bool + Sync),
    pub ignore: &'a IntentIgnore,
    pub build_outputs: Vec<&'a str>,
    pub write_git: bool,
    pub confinement: &'a Confinement,
}

/// The state of the workspace before a confined process may change it: its snapshot and the
/// earlier content of what it could change out of scope.
pub struct Watch {
    before: Snapshot,
    images: BeforeImages,
}

/// What a confined process changed in the workspace, sorted, the out-of-scope part undone.
#[derive(Debug)]
pub struct FoundChanges {
    pub changes: ClassifiedChanges,
    pub restored: Vec<RestoreOutcome>,
    /// Entries that could not be read, before or after (keys).
    pub unreadable: Vec<String>,
    /// Those of them the process could have changed something in (see [`GovernedRun::unseen`]).
    pub unseen: Vec<String>,
    pub reopened: Vec<changes::Reopened>,
    pub after: Snapshot,
}

/// The snapshot before a process runs: everything, and what the person left unreadable
/// opened only for the time of the reading.
fn snapshot_before(root: &Path) -> Snapshot {
    let mut before = Snapshot::take(root);
    before.reopen(None);
    before
}

/// The snapshot after a process ran (of `within` only, when given), what it left unreadable
/// opened again, and the changes since `before`.
fn snapshot_after(
    root: &Path,
    before: &Snapshot,
    within: Option<&[String]>,
) -> (Snapshot, Vec<changes::Change>) {
    let mut after = match within {
        Some(dirs) => Snapshot::take_within(root, dirs),
        None => Snapshot::take(root),
    };
    after.reopen(Some(before));
    let changes = match within {
        Some(dirs) => changes::diff_within(before, &mut after, dirs),
        None => changes::diff(before, &mut after),
    };
    (after, changes)
}

impl Watch {
    /// Snapshots the workspace `root` (canonical) now. `keep`: what the repository's git
    /// configuration names ([`IntentIgnore::git_named`]), kept to be undone.
    pub async fn start(
        root: &Path,
        confinement: &Confinement,
        keep: Vec<String>,
    ) -> Result<Watch, SandboxError> {
        let root = root.to_path_buf();
        let before = blocking(move || snapshot_before(&root)).await?;
        Watch::from_snapshot(before, confinement, keep, Vec::new()).await
    }

    /// `fixed`: nested `.git` bound read-only for the run (not kept).
    async fn from_snapshot(
        before: Snapshot,
        confinement: &Confinement,
        keep: Vec<String>,
        fixed: Vec<String>,
    ) -> Result<Watch, SandboxError> {
        // The earlier state of what a process could change out of scope: protected files when
        // confinement is partial or absent, and clean tracked files, since writable
        // directories are wider than the intent's globs.
        let protected_copies = confinement.level != super::ConfinementLevel::LandlockAndBwrap;
        blocking(move || {
            let mut keep = keep;
            keep.extend(changes::repository_dirs(&before));
            keep.retain(|k| {
                !fixed.iter().any(|f| {
                    k == f
                        || k.strip_prefix(f.as_str())
                            .is_some_and(|r| r.starts_with('/'))
                })
            });
            let images = BeforeImages::capture_except(&before, protected_copies, &fixed)
                .keeping(&before, &keep);
            Watch { before, images }
        })
        .await
    }

    /// Adds the files kept in the checkpoint store before (see [`BeforeImages::with_stored`]).
    pub fn with_stored(
        mut self,
        kept: impl IntoIterator<Item = (String, String)>,
        store: std::sync::Arc<crate::checkpoint::CheckpointStore>,
    ) -> Watch {
        self.images = self.images.with_stored(kept, store);
        self
    }

    /// The paths (as shown) that changed since [`Watch::start`] in what `sandbox` could write
    /// under `confinement`, without sorting or undoing anything (another writer may have made them).
    pub async fn changed_paths(
        self,
        sandbox: &CommandSandbox,
        confinement: &Confinement,
    ) -> Result<Vec<String>, SandboxError> {
        let Watch { before, .. } = self;
        let root = sandbox.workspace.clone();
        let within = (confinement.level == super::ConfinementLevel::LandlockAndBwrap)
            .then(|| sandbox.writable_within_workspace());
        let unseen_rule = UnseenRule::of(sandbox, confinement);
        blocking(move || {
            let (after, changes) = snapshot_after(&root, &before, within.as_deref());
            let unseen = unseen_rule.unseen(&before, &after);
            changes
                .into_iter()
                .filter(|c| c.kind != changes::ChangeKind::Touched)
                .map(|c| changes::shown(&c.path).into_owned())
                // What could not be read may have changed: named, so the start is refused.
                .chain(
                    unseen
                        .iter()
                        .map(|p| format!("{} (could not be read)", changes::shown(p))),
                )
                .collect()
        })
        .await
    }

    /// Finds what changed since [`Watch::start`] in what `sandbox` could write, sorts it by
    /// `rules` and undoes what is out of scope.
    pub async fn settle(
        self,
        sandbox: &CommandSandbox,
        rules: &ChangeRules<'_>,
    ) -> Result<FoundChanges, SandboxError> {
        let Watch { before, images } = self;
        let root = sandbox.workspace.clone();
        // Under bubblewrap everything outside the writable paths is a read-only mount: only
        // they can have changed. Otherwise (Landlock does not cover chmod and utime) read it all.
        let within = (rules.confinement.level == super::ConfinementLevel::LandlockAndBwrap)
            .then(|| sandbox.writable_within_workspace());
        let (before, after, changes) = blocking(move || {
            let (after, changes) = snapshot_after(&root, &before, within.as_deref());
            (before, after, changes)
        })
        .await?;
        let mut changes = changes::classify(
            changes,
            rules.owns,
            rules.ignore,
            &rules.build_outputs,
            rules.write_git,
        );
        // Repository databases not named `.git`, there before or made by the process.
        let mut databases = changes::repository_dirs(&before);
        databases.extend(changes::repository_dirs(&after));
        changes::out_of_scope_in(&mut changes, &databases);
        if rules.write_git {
            own_configuration(&mut changes, &sandbox.workspace, &images);
        }
        let out_of_scope: Vec<changes::Change> = changes
            .out_of_scope
            .iter()
            .map(|(c, _)| c.clone())
            .collect();
        let root = sandbox.workspace.clone();
        // Outside the writable directories the kernel kept the content as it was.
        let content_fixed: std::collections::HashSet<String> = out_of_scope
            .iter()
            .filter(|c| {
                rules.confinement.is_confined()
                    && !sandbox.may_write(&root.join(changes::real_path(&c.path)))
            })
            .map(|c| c.path.clone())
            .collect();
        let (before, restored) = if out_of_scope.is_empty() {
            (before, Vec::new())
        } else {
            blocking(move || {
                let restored = changes::restore(&root, &before, &out_of_scope, &images, &|p| {
                    content_fixed.contains(p)
                });
                (before, restored)
            })
            .await?
        };
        let mut unreadable = before.unreadable().to_vec();
        unreadable.extend(after.unreadable().iter().cloned());
        unreadable.sort();
        unreadable.dedup();
        let unseen = UnseenRule::of(sandbox, rules.confinement).unseen(&before, &after);
        Ok(FoundChanges {
            changes,
            restored,
            unreadable,
            unseen,
            reopened: after.reopened().to_vec(),
            after,
        })
    }
}

/// A command allowed to write `.git/` (an approved `git commit`) may change the repository's
/// configuration only as git commands do ([`crate::git_config::unexpected_changes`]): a
/// hook it runs may have written `core.fsmonitor` there. Otherwise the change is out of scope
/// (and comes back from the copy kept before); so it is when there is no copy to compare.
fn own_configuration(changes: &mut ClassifiedChanges, root: &Path, images: &BeforeImages) {
    for rel in [".git/config", ".git/config.worktree"] {
        let Some(at) = changes.permitted.iter().position(|(c, _)| c.path == rel) else {
            continue;
        };
        let change = &changes.permitted[at].0;
        let before = match (change.before, images.copy_of(rel)) {
            (None, _) => Some(String::new()),
            (Some(_), Some(copy)) => Some(String::from_utf8_lossy(copy).into_owned()),
            (Some(_), None) => None,
        };
        let now = std::fs::read(root.join(rel))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let why = match before {
            Some(before) => {
                let unexpected = crate::git_config::unexpected_changes(&before, &now);
                (!unexpected.is_empty()).then(|| format!(
                    "the repository's configuration, changed beyond what git commands write ({}): git runs what such settings name with the person's rights",
                    unexpected.join(", ")
                ))
            }
            None => {
                Some("the repository's configuration, changed with no copy of it to compare".into())
            }
        };
        if let Some(why) = why {
            let (change, _) = changes.permitted.remove(at);
            changes.out_of_scope.push((change, why));
            changes.out_of_scope.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        }
    }
}

/// Which unreadable entries hide what a process may have changed: all of them without
/// confinement, else those at or above something it could write.
struct UnseenRule {
    sandbox: Option<CommandSandbox>,
}

impl UnseenRule {
    fn of(sandbox: &CommandSandbox, confinement: &Confinement) -> UnseenRule {
        UnseenRule {
            sandbox: confinement.is_confined().then(|| sandbox.clone()),
        }
    }

    fn unseen(&self, before: &Snapshot, after: &Snapshot) -> Vec<String> {
        let mut unseen: Vec<String> = before
            .unreadable()
            .iter()
            .chain(after.unreadable())
            .filter(|key| {
                self.sandbox.as_ref().is_none_or(|sandbox| {
                    sandbox.may_write_within(&sandbox.workspace.join(changes::real_path(key)))
                })
            })
            .cloned()
            .collect();
        unseen.sort();
        unseen.dedup();
        unseen
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, SandboxError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| SandboxError::Spawn(format!("change detection failed: {e}")))
}
