//! Processes a command left running in the background (`execute_command` with `background`): a
//! dev server, a watcher. Each runs in the sandbox any command gets and belongs to the task that
//! started it; the workspace's [`ProcessTable`] keeps them.
//!
//! - **Output**: the last megabyte, redacted as it arrives, streamed to the window
//!   ([`crate::protocol::Event::ProcessOutput`]) and read by the model with `read_process_output`
//!   (what came since its last read).
//! - **Its writes** are looked at (`govern.rs`) before and after every call of any task that may
//!   change files (so a write of the agent's is never taken for the process's, nor one of the
//!   process's for the agent's), every ten seconds while no such call runs, when the model reads
//!   its output, and once it has ended. What is out of scope is put back and said to the model
//!   and the person, as for a command.
//! - **Its end**: SIGTERM to its whole group, SIGKILL after a grace period. The model
//!   (`stop_process`) and the person (the window's Stop) end it; so does its task's end (completed,
//!   failed, stopped, deleted; not a turn handed back to the person), the end of `mandate run`,
//!   the workspace closing and Mandate exiting. A crash leaves none behind: every confined process
//!   dies with Mandate (`PR_SET_PDEATHSIG` and the watchdog, `sandbox::reaper`).

mod govern;
mod output;
mod pump;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, OwnedRwLockReadGuard, RwLock};

pub(crate) use govern::{Governed, Record, Rules};
pub use output::{OutputLog, Since};

use crate::agent::{EventSink, Governance};
use crate::protocol::{Event, NoticeLevel, ProcessStatus, ProcessStopper, ProcessView};
use crate::sandbox::Background;

/// Background processes one task may have running at once.
pub const PER_TASK: usize = 8;
/// Ended processes kept in a task's list.
const KEPT_ENDED: usize = 20;
/// How often a running process's changes are looked at when no call does it.
const LOOK_EVERY: Duration = Duration::from_secs(10);
/// How long a process asked to end (SIGTERM) has before its group is killed.
pub const GRACE: Duration = Duration::from_secs(3);
/// The output a view carries.
const TAIL: usize = 16 * 1024;
/// Notes on its changes kept for the model.
const MAX_NOTES: usize = 50;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessError {
    #[error("There is no background process `{id}` in this task. {listing}")]
    Unknown { id: String, listing: String },
    #[error("This task already runs {0} background processes; stop one first (stop_process).")]
    TooMany(usize),
}

/// The background processes of one workspace.
#[derive(Default)]
pub struct ProcessTable {
    all: Mutex<Table>,
    /// Held shared by every call that may change files, from the look before it to the look
    /// after it; a look outside calls holds it alone, so it never takes a call's write for
    /// the process's.
    calls: Arc<RwLock<()>>,
}

#[derive(Default)]
struct Table {
    next: u64,
    list: Vec<Arc<Process>>,
}

/// One background process.
pub struct Process {
    pub id: String,
    pub task_id: String,
    command: String,
    cwd: String,
    started_at: String,
    group: i32,
    live: Mutex<Live>,
    /// None once its last look is done.
    governed: tokio::sync::Mutex<Option<Governed>>,
    stop: watch::Sender<Option<ProcessStopper>>,
    /// Its group is gone and its output drained.
    ended: watch::Sender<bool>,
    /// And its last look is done.
    settled: watch::Sender<bool>,
    sink: Arc<dyn EventSink>,
}

struct Live {
    status: ProcessStatus,
    log: OutputLog,
    /// Where the model's last read ended.
    read_at: u64,
    notes: Vec<String>,
    unread_notes: usize,
    /// Printed, not yet sent to the window.
    unsent: String,
}

/// What the model reads of a process.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub view: ProcessView,
    pub since: Since,
    /// What Mandate found of its changes since the model last read.
    pub notes: Vec<String>,
}

/// What a new process is started with besides its sandbox (see [`ProcessTable::adopt`]).
pub(crate) struct Adopted {
    pub task_id: String,
    pub command: String,
    pub cwd: String,
    pub timeout: Duration,
    pub rules: Rules,
    pub record: Record,
    pub kept: crate::checkpoint::ScopeImages,
}

/// The shared hold on calls that may change files (see [`ProcessTable::before_call`]).
pub struct CallHold {
    _shared: OwnedRwLockReadGuard<()>,
}

impl ProcessTable {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.all.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn live(&self) -> Vec<Arc<Process>> {
        let table = self.table();
        table.list.iter().filter(|p| p.governs()).cloned().collect()
    }

    /// The id the next process gets, or why the task may not start another.
    pub fn check_room(&self, task_id: &str) -> Result<(), ProcessError> {
        let table = self.table();
        let running = table
            .list
            .iter()
            .filter(|p| p.task_id == task_id && !p.has_ended())
            .count();
        match running >= PER_TASK {
            true => Err(ProcessError::TooMany(running)),
            false => Ok(()),
        }
    }

    /// Takes a started background command into the table: its output is read, its changes
    /// looked at, its end awaited from here on.
    pub(crate) fn adopt(
        &self,
        gov: &Arc<Governance>,
        sink: Arc<dyn EventSink>,
        started: Background,
        about: Adopted,
    ) -> Arc<Process> {
        let Background {
            child,
            group,
            sandbox,
            watch,
        } = started;
        let mut table = self.table();
        table.next += 1;
        let id = format!("p{}", table.next);
        let mut record = about.record;
        record.process_id = id.clone();
        let process = Arc::new(Process {
            id,
            task_id: about.task_id,
            command: about.command,
            cwd: about.cwd,
            started_at: crate::orchestration::ledger::now_rfc3339(),
            group,
            live: Mutex::new(Live {
                status: ProcessStatus::Running,
                log: OutputLog::default(),
                read_at: 0,
                notes: Vec::new(),
                unread_notes: 0,
                unsent: String::new(),
            }),
            governed: tokio::sync::Mutex::new(Some(Governed {
                watch: Some(watch),
                kept: about.kept,
                sandbox,
                rules: about.rules,
                record,
            })),
            stop: watch::channel(None).0,
            ended: watch::channel(false).0,
            settled: watch::channel(false).0,
            sink,
        });
        table.list.push(process.clone());
        drop(table);
        process.changed();
        let running = pump::Running {
            process: process.clone(),
            gov: Arc::downgrade(gov),
            calls: self.calls.clone(),
            timeout: about.timeout,
        };
        tokio::spawn(running.pump(child));
        process
    }

    /// A process of `task_id`.
    pub fn get(&self, task_id: &str, id: &str) -> Result<Arc<Process>, ProcessError> {
        let table = self.table();
        let found = table
            .list
            .iter()
            .find(|p| p.id == id.trim() && p.task_id == task_id);
        match found {
            Some(p) => Ok(p.clone()),
            None => {
                let ids: Vec<String> = table
                    .list
                    .iter()
                    .filter(|p| p.task_id == task_id)
                    .map(|p| format!("{} (`{}`)", p.id, p.command))
                    .collect();
                Err(ProcessError::Unknown {
                    id: id.to_string(),
                    listing: match ids.is_empty() {
                        true => "It has none.".into(),
                        false => format!("Its processes: {}.", ids.join(", ")),
                    },
                })
            }
        }
    }

    /// Any process of the workspace (the person may stop any).
    pub fn find(&self, id: &str) -> Option<Arc<Process>> {
        self.table().list.iter().find(|p| p.id == id).cloned()
    }

    /// A task's processes, oldest first.
    pub fn list(&self, task_id: &str) -> Vec<ProcessView> {
        let table = self.table();
        table
            .list
            .iter()
            .filter(|p| p.task_id == task_id)
            .map(|p| p.view())
            .collect()
    }

    /// Ends `process` (SIGTERM, SIGKILL after [`GRACE`]) and waits until its last look is done.
    pub async fn stop(&self, process: &Arc<Process>, by: ProcessStopper) -> ProcessView {
        process.request_stop(by);
        process.wait_settled().await;
        self.trim(&process.task_id);
        process.view()
    }

    /// Ends every process of `task_id` (its task ended).
    pub async fn end_task(&self, task_id: &str, by: ProcessStopper) {
        let mine: Vec<Arc<Process>> = self
            .table()
            .list
            .iter()
            .filter(|p| p.task_id == task_id && !*p.settled.borrow())
            .cloned()
            .collect();
        futures_util::future::join_all(mine.iter().map(|p| self.stop(p, by))).await;
    }

    /// Ends every process (the run, the workspace or Mandate ends).
    pub async fn end_all(&self, by: ProcessStopper) {
        let all: Vec<Arc<Process>> = self.table().list.clone();
        futures_util::future::join_all(all.iter().map(|p| self.stop(p, by))).await;
    }

    /// Forgets a deleted task's processes (ended first: see [`ProcessTable::end_task`]).
    pub fn forget_task(&self, task_id: &str) {
        self.table()
            .list
            .retain(|p| p.task_id != task_id || !*p.settled.borrow());
    }

    /// Keeps at most [`KEPT_ENDED`] ended processes of a task listed.
    fn trim(&self, task_id: &str) {
        let mut table = self.table();
        let ended: Vec<String> = table
            .list
            .iter()
            .filter(|p| p.task_id == task_id && *p.settled.borrow())
            .map(|p| p.id.clone())
            .collect();
        let drop: HashSet<&String> = ended
            .iter()
            .take(ended.len().saturating_sub(KEPT_ENDED))
            .collect();
        table.list.retain(|p| !drop.contains(&p.id));
    }

    /// Before a call that may change files: what the processes changed so far is theirs.
    /// Hold the answer until [`ProcessTable::after_call`].
    pub async fn before_call(&self, gov: &Arc<Governance>) -> CallHold {
        let hold = self.calls.clone().read_owned().await;
        for p in self.live() {
            p.look(gov, &HashSet::new()).await;
        }
        CallHold { _shared: hold }
    }

    /// After it: what changed since, but for `changed` (the paths the call itself changed and
    /// accounted for), is the processes'.
    pub async fn after_call(&self, gov: &Arc<Governance>, hold: CallHold, changed: &[String]) {
        let changed: HashSet<String> = changed.iter().cloned().collect();
        for p in self.live() {
            p.look(gov, &changed).await;
        }
        drop(hold);
    }

    /// Looks at a process's changes now, unless a call that may change files is running (its
    /// look after will do it).
    pub async fn look_now(&self, gov: &Arc<Governance>, process: &Process) {
        if let Ok(_alone) = self.calls.try_write() {
            process.look(gov, &HashSet::new()).await;
        }
    }

    /// What Mandate found of the changes of `task_id`'s processes that the model has not read.
    pub fn unread_notes(&self, task_id: &str) -> Vec<String> {
        let mine: Vec<Arc<Process>> = self
            .table()
            .list
            .iter()
            .filter(|p| p.task_id == task_id)
            .cloned()
            .collect();
        mine.iter()
            .flat_map(|p| {
                p.take_notes()
                    .into_iter()
                    .map(|n| format!("Background process {}: {n}", p.id))
            })
            .collect()
    }
}

/// The paths a call changed and accounted for itself (recorded, or put back): a write's file,
/// a command's changes.
pub fn accounted_for(
    written: Option<&str>,
    consequences: &[crate::hooks::Consequence],
) -> Vec<String> {
    let mut paths: Vec<String> = written.map(str::to_string).into_iter().collect();
    for c in consequences {
        if let crate::hooks::Consequence::CommandFinished(outcome) = c {
            paths.extend(outcome.changed_in_scope.iter().cloned());
            paths.extend(outcome.changed_out_of_scope.iter().cloned());
        }
    }
    paths
}

impl Drop for ProcessTable {
    /// The workspace is closed: nothing it started goes on (no look is possible any more).
    fn drop(&mut self) {
        for p in &self.table().list {
            if !p.has_ended() {
                crate::sandbox::kill_group(Some(p.group));
            }
        }
    }
}

impl Process {
    fn lock(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn view(&self) -> ProcessView {
        let live = self.lock();
        ProcessView {
            process_id: self.id.clone(),
            task_id: self.task_id.clone(),
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            started_at: self.started_at.clone(),
            status: live.status,
            // What the window has not been sent yet follows in its own event.
            output_tail: {
                let with_unsent = live.log.tail(TAIL + live.unsent.len());
                let end = with_unsent.len().saturating_sub(live.unsent.len());
                with_unsent.get(..end).unwrap_or_default().to_string()
            },
            output_bytes: live.log.total(),
        }
    }

    pub fn status(&self) -> ProcessStatus {
        self.lock().status
    }

    /// Its group is gone and its output read to the end.
    pub fn has_ended(&self) -> bool {
        *self.ended.borrow()
    }

    /// It may still change files (its last look is not done).
    fn governs(&self) -> bool {
        !*self.settled.borrow()
    }

    fn changed(&self) {
        self.sink.emit(Event::ProcessChanged {
            process: self.view(),
        });
    }

    fn set_status(&self, status: ProcessStatus) {
        self.lock().status = status;
        self.changed();
    }

    /// Keeps what it printed; the window hears it at the next [`Process::flush`]. Whether
    /// there was anything.
    fn output(&self, text: String) -> bool {
        if text.is_empty() {
            return false;
        }
        let mut live = self.lock();
        live.log.push(&text);
        live.unsent.push_str(&text);
        // The window keeps no more than this of a process either.
        if live.unsent.len() > 4 * TAIL {
            let cut = live.unsent.len() - 4 * TAIL;
            let cut = (cut..live.unsent.len())
                .find(|i| live.unsent.is_char_boundary(*i))
                .unwrap_or(live.unsent.len());
            live.unsent.drain(..cut);
        }
        true
    }

    /// Sends the window what it printed since the last flush: a chatty process costs the
    /// page a few updates a second, not one per line.
    fn flush(&self) {
        let chunk = std::mem::take(&mut self.lock().unsent);
        if !chunk.is_empty() {
            self.sink.emit(Event::ProcessOutput {
                task_id: self.task_id.clone(),
                process_id: self.id.clone(),
                chunk,
            });
        }
    }

    /// What a look found, kept for the model and, when it is a warning, told to the person.
    fn noted(&self, looked: &govern::Looked, intent_id: &str) {
        let notes = looked.notes(intent_id);
        if let Some(warning) = looked.warning.as_ref().or(looked.problem.as_ref()) {
            self.sink.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: format!("Background process {}: {warning}", self.id),
            });
        }
        let mut live = self.lock();
        live.unread_notes = (live.unread_notes + notes.len()).min(MAX_NOTES);
        live.notes.extend(notes);
        let over = live.notes.len().saturating_sub(MAX_NOTES);
        live.notes.drain(..over);
    }

    fn take_notes(&self) -> Vec<String> {
        let mut live = self.lock();
        let unread = std::mem::take(&mut live.unread_notes);
        let from = live.notes.len().saturating_sub(unread);
        live.notes[from..].to_vec()
    }

    /// What it printed since `since` (default: where the last read ended), and the notes.
    pub fn read(&self, since: Option<u64>) -> Reading {
        let notes = self.take_notes();
        let view = self.view();
        let mut live = self.lock();
        let read = live.log.since(since.unwrap_or(live.read_at));
        live.read_at = read.next;
        Reading {
            view,
            since: read,
            notes,
        }
    }

    /// Waits until it printed past `offset` or ended, for at most `wait`.
    pub async fn wait_for_output(&self, offset: u64, wait: Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        while tokio::time::Instant::now() < deadline {
            if self.has_ended() || self.lock().log.total() > offset {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Where the model's next read starts by default.
    pub fn read_at(&self) -> u64 {
        self.lock().read_at
    }

    /// Asks it to end (the first asker is the one named).
    pub fn request_stop(&self, by: ProcessStopper) {
        self.stop.send_if_modified(|s| match s {
            None => {
                *s = Some(by);
                true
            }
            Some(_) => false,
        });
    }

    /// Waits until it has ended (for at most `wait`); whether it has.
    pub async fn wait_ended(&self, wait: Duration) -> bool {
        let mut ended = self.ended.subscribe();
        let _ = tokio::time::timeout(wait, ended.wait_for(|e| *e)).await;
        self.has_ended()
    }

    async fn wait_settled(&self) {
        let mut settled = self.settled.subscribe();
        let _ = settled.wait_for(|s| *s).await;
    }

    /// Holds it still, looks at its changes, lets it go on. One that cannot be held still is
    /// killed: it is not left to write unwatched. One that has ended gets its last look.
    async fn look(&self, gov: &Arc<Governance>, exclude: &HashSet<String>) {
        let mut slot = self.governed.lock().await;
        if self.has_ended() {
            let Some(mut governed) = slot.take() else {
                return;
            };
            drop(slot);
            let looked = govern::look(&mut governed, gov, exclude, true).await;
            self.noted(&looked, &governed.record.intent_id);
            return;
        }
        let Some(governed) = slot.as_mut() else {
            return;
        };
        let group = self.group;
        let held = tokio::task::spawn_blocking(move || crate::sandbox::freeze_group(group)).await;
        if !matches!(held, Ok(Ok(()))) {
            self.request_stop(ProcessStopper::Governance);
            crate::sandbox::kill_group(Some(group));
        }
        let looked = govern::look(governed, gov, exclude, false).await;
        if governed.watch.is_none() {
            // Nothing to compare what it writes next with: it is not left to write it.
            self.request_stop(ProcessStopper::Governance);
            crate::sandbox::kill_group(Some(group));
        }
        crate::sandbox::thaw_group(group);
        let intent = governed.record.intent_id.clone();
        drop(slot);
        self.noted(&looked, &intent);
    }

    /// Whether its last look is done (by the pump or by a call's look after).
    async fn looked_last(&self) -> bool {
        self.governed.lock().await.is_none()
    }

    /// The workspace was closed before its last look: only what was made for it goes.
    async fn unwatched(&self) {
        if let Some(governed) = self.governed.lock().await.take() {
            governed.sandbox.remove_made_dirs();
        }
    }
}
