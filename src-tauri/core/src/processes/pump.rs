//! The life of one background process after it started: its output read as it comes (redacted,
//! kept, streamed), its changes looked at every [`super::LOOK_EVERY`] while no call does it, a
//! stop carried out (SIGTERM to its group, SIGKILL after [`super::GRACE`]), its time limit kept,
//! and, once it has ended, its last look.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::sync::RwLock;
use tokio::time::{sleep_until, Instant};

use super::{Process, GRACE, LOOK_EVERY};
use crate::agent::Governance;
use crate::protocol::{ProcessStatus, ProcessStopper};
use crate::redact::Redactor;
use crate::sandbox::{kill_group, terminate_group, ConfinedChild};

/// How long the pipes are read after the process's group is gone (a descendant that escaped
/// the group, possible only where no system-call filter holds it, may keep them open).
const DRAIN: Duration = Duration::from_secs(2);
/// How often what it printed is sent to the window.
const SEND_EVERY: Duration = Duration::from_millis(100);

pub(super) struct Running {
    pub process: Arc<Process>,
    pub gov: Weak<Governance>,
    pub calls: Arc<RwLock<()>>,
    pub timeout: Duration,
}

impl Running {
    pub async fn pump(self, mut child: ConfinedChild) {
        let p = &self.process;
        let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
        let redactor = Redactor::global();
        let (mut out_clean, mut err_clean) = (redactor.stream(), redactor.stream());
        let (mut out_buf, mut err_buf) = (vec![0u8; 8192], vec![0u8; 8192]);
        let mut stop = p.stop.subscribe();
        // A stop asked before this point is seen at the first turn.
        stop.mark_changed();
        let mut look = tokio::time::interval_at(Instant::now() + LOOK_EVERY, LOOK_EVERY);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let far = Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
        let deadline = Instant::now().checked_add(self.timeout).unwrap_or(far);
        let (mut kill_at, mut drain_until) = (far, far);
        let (mut exited, mut stopping, mut code) = (false, false, None);
        let mut send = tokio::time::interval(SEND_EVERY);
        let mut unsent = false;
        while !(exited && out.is_none() && err.is_none()) {
            tokio::select! {
                n = read_some(&mut out, &mut out_buf) => match n {
                    Some(n) => unsent |= p.output(out_clean.push(&out_buf[..n])),
                    None => out = None,
                },
                n = read_some(&mut err, &mut err_buf) => match n {
                    Some(n) => unsent |= p.output(err_clean.push(&err_buf[..n])),
                    None => err = None,
                },
                status = child.wait(), if !exited => {
                    exited = true;
                    code = status.ok().and_then(|s| s.code());
                    // What it left running ends with it, as a command's does.
                    kill_group(Some(p.group));
                    drain_until = Instant::now() + DRAIN;
                }
                _ = stop.changed(), if !stopping && !exited => {
                    if let Some(by) = *stop.borrow_and_update() {
                        stopping = true;
                        p.set_status(ProcessStatus::Stopping { by });
                        terminate_group(p.group);
                        kill_at = Instant::now() + GRACE;
                    }
                }
                _ = sleep_until(kill_at), if stopping && !exited => {
                    kill_group(Some(p.group));
                    kill_at = far;
                }
                _ = sleep_until(deadline), if !stopping && !exited => {
                    p.request_stop(ProcessStopper::Timeout);
                }
                _ = sleep_until(drain_until), if exited => {
                    out = None;
                    err = None;
                }
                _ = send.tick(), if unsent => {
                    p.flush();
                    unsent = false;
                }
                _ = look.tick(), if !exited => self.look().await,
            }
        }
        p.output(out_clean.finish());
        p.output(err_clean.finish());
        p.flush();
        gone(p.group).await;
        let status = match *p.stop.borrow() {
            Some(by) => ProcessStatus::Stopped { by },
            None => ProcessStatus::Exited { code },
        };
        p.set_status(status);
        p.ended.send_replace(true);
        self.last_look().await;
        p.settled.send_replace(true);
    }

    /// Its last look, alone so that no call's writes are taken for its own; a call running
    /// meanwhile does it in its look after (never waited for: a long command of another task
    /// would hold every task's next call behind this one).
    async fn last_look(&self) {
        loop {
            let Some(gov) = self.gov.upgrade() else {
                self.process.unwatched().await;
                return;
            };
            if let Ok(_alone) = self.calls.try_write() {
                self.process
                    .look(&gov, &std::collections::HashSet::new())
                    .await;
                return;
            }
            drop(gov);
            if self.process.looked_last().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The look every [`LOOK_EVERY`], unless a call that may change files runs (it looks
    /// before and after) or the workspace is closed.
    async fn look(&self) {
        let Some(gov) = self.gov.upgrade() else {
            return;
        };
        if let Ok(_alone) = self.calls.try_write() {
            self.process
                .look(&gov, &std::collections::HashSet::new())
                .await;
        }
    }
}

/// Waits (bounded) until the last of its group has died: the namespace a sandbox made ends a
/// moment after the process that made it.
async fn gone(group: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let empty = tokio::task::spawn_blocking(move || crate::sandbox::group_gone(group)).await;
        if empty.unwrap_or(true) {
            return;
        }
        kill_group(Some(group));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tracing::warn!(
        group,
        "a background process's group was still there after its end"
    );
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
