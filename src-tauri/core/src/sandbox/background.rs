//! A command left running in the background (a dev server, a watcher): started in exactly the
//! sandbox a command run to its end gets ([`super::run::prepare`]: the same grants, network only
//! if granted, the same environment, its own session and process group, death with Mandate and
//! the watchdog), with the state of the workspace kept before it starts, so that what it changes
//! can be found, sorted and undone while it runs and once it ends (`crate::processes`).

use super::run::{kept_names, prepare};
use super::Watch;
use super::{CommandContext, CommandSandbox, ConfinedChild, ConfinedCommand, Io, SandboxError};
use crate::hooks::CommandAction;

/// A background command that started.
pub struct Background {
    /// Its stdout and stderr are piped to Mandate; stdin is `/dev/null`.
    pub child: ConfinedChild,
    /// Its process group (its pid): stopping, holding still and killing act on all of it.
    pub group: i32,
    pub sandbox: CommandSandbox,
    /// The workspace before it started.
    pub watch: Watch,
}

/// Starts `action` in the background. Errors when the sandbox cannot be prepared or the
/// process not started; nothing runs then.
pub async fn start_background(
    action: &CommandAction,
    cx: &CommandContext<'_>,
) -> Result<Background, SandboxError> {
    let (sandbox, watch) = prepare(action, cx).await?;
    // Directories made only so that they could be granted stay for as long as it runs: taken
    // into the state before, they are never its changes (empty ones go when it ends).
    let watch = match sandbox.made.is_empty() {
        true => Ok(watch),
        false => Watch::start(cx.workspace, cx.confinement, kept_names(cx)).await,
    };
    let started = watch.and_then(|watch| {
        let mut launch = ConfinedCommand::command(&sandbox, cx.confinement, &action.command)?;
        launch.stdin(Io::Null).stdout(Io::Piped).stderr(Io::Piped);
        let child = super::spawn(launch)
            .map_err(|e| SandboxError::Spawn(format!("could not start bash: {e}")))?;
        let group = child.id().map(|p| p as i32).ok_or_else(|| {
            SandboxError::Spawn("the process ended before it could be watched".into())
        })?;
        Ok((child, group, watch))
    });
    match started {
        Ok((child, group, watch)) => Ok(Background {
            child,
            group,
            sandbox,
            watch,
        }),
        Err(e) => {
            sandbox.remove_made_dirs();
            Err(e)
        }
    }
}

/// Asks every process of `group` to end (SIGTERM); [`super::kill_group`] makes sure.
pub fn terminate_group(group: i32) {
    if group > 1 {
        // SAFETY: killpg only sends a signal; a group that is gone makes it fail harmlessly.
        unsafe {
            libc::killpg(group, libc::SIGTERM);
        }
    }
}
