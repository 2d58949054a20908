//! The one thread that forks confined processes.
//!
//! Every confined process (a command, a hook, an MCP server) gets `PR_SET_PDEATHSIG(SIGKILL)`
//! between fork and exec ([`super::ConfinedCommand`]), so that it dies with Mandate even when
//! Mandate is killed or crashes (under bubblewrap, `--die-with-parent` does the same for
//! bubblewrap's own child). The kernel sends that signal when the *thread* that forked the
//! process exits, not when the process does: a tokio worker lives as long as its runtime, but
//! a blocking-pool thread ends after ten idle seconds and a test's thread with its test, and a
//! server forked from one of those would be killed under Mandate's feet. So every confined
//! process is forked here, from a thread that lives as long as Mandate's process.

use std::io;
use std::sync::mpsc;
use std::sync::OnceLock;

use super::vspawn::{self, ConfinedChild, Launch, Raw};

/// One spawn: the process, and where the started child goes.
struct Job {
    launch: Launch,
    reply: mpsc::SyncSender<io::Result<Raw>>,
}

fn spawner() -> Option<&'static mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (jobs, queue) = mpsc::channel::<Job>();
            let started = std::thread::Builder::new()
                .name("mandate-spawner".into())
                .spawn(move || {
                    for job in queue {
                        let _ = job.reply.send(vspawn::start(&job.launch));
                    }
                });
            match started {
                Ok(_) => Some(jobs),
                Err(e) => {
                    tracing::error!(error = %e, "the thread that starts confined processes could not be started");
                    None
                }
            }
        })
        .as_ref()
}

/// Spawns `launch` (see [`super::ConfinedCommand`]) from the spawner thread; the child is
/// waited for in the caller's tokio runtime. Blocks for as long as the clone and the
/// confinement's set-up take.
pub fn spawn(launch: Launch) -> io::Result<ConfinedChild> {
    tokio::runtime::Handle::try_current()
        .map_err(|e| io::Error::other(format!("no async runtime to start a process in: {e}")))?;
    let jobs = spawner().ok_or_else(|| {
        io::Error::other("the thread that starts confined processes is not running")
    })?;
    let (reply, answer) = mpsc::sync_channel(1);
    jobs.send(Job { launch, reply })
        .map_err(|_| io::Error::other("the thread that starts confined processes stopped"))?;
    let raw = answer
        .recv()
        .map_err(|_| io::Error::other("the thread that starts confined processes stopped"))??;
    ConfinedChild::new(raw)
}
