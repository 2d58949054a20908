//! Telling a person who is elsewhere that Mandate waits for them. When a task waits (an
//! approval, a question, a pause: see [`crate::agent::attention`]) and the window is not
//! focused, its taskbar entry asks for attention (until no task waits) and a desktop
//! notification says which task waits and for what. One notification per task at a time: a new
//! wait replaces the last one (never a stack of them), the same wait is not said twice, and a
//! wait that ends takes its notification down. A person looking at the window sees the card;
//! nothing else is said.
//!
//! The desktop calls block (the window's focus is asked of its main thread, a notification
//! goes over D-Bus), so they run off the async workers, one at a time and in the order the
//! waits began and ended.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;

use super::desktop::{Desktop, DesktopNote};
use crate::agent::{PersonNeeded, Waiting};

enum Call {
    Needed(PersonNeeded),
    NotNeeded(String),
}

/// Where the host sends what the person is needed for.
pub struct Attention {
    calls: mpsc::UnboundedSender<Call>,
    /// Desktop notifications are wanted (Settings); the taskbar entry asks either way.
    notifications: Arc<AtomicBool>,
}

impl Attention {
    /// Starts the worker that tells the desktop, on `runtime`.
    pub fn start(desktop: Arc<dyn Desktop>, runtime: &tokio::runtime::Handle) -> Arc<Attention> {
        let (calls, mut queue) = mpsc::unbounded_channel();
        let notifications = Arc::new(AtomicBool::new(true));
        let mut notices = Notices::new(desktop, notifications.clone());
        runtime.spawn(async move {
            while let Some(call) = queue.recv().await {
                let step = tokio::task::spawn_blocking(move || {
                    notices.apply(call);
                    notices
                });
                match step.await {
                    Ok(back) => notices = back,
                    Err(e) => {
                        tracing::warn!(error = %e, "desktop notifications stopped");
                        break;
                    }
                }
            }
        });
        Arc::new(Attention {
            calls,
            notifications,
        })
    }

    /// Whether a wait also shows a desktop notification (Settings → Notifications).
    pub fn set_notifications(&self, on: bool) {
        self.notifications.store(on, Ordering::SeqCst);
    }

    pub fn needed(&self, need: &PersonNeeded) {
        let _ = self.calls.send(Call::Needed(need.clone()));
    }

    pub fn not_needed(&self, task_id: &str) {
        let _ = self.calls.send(Call::NotNeeded(task_id.to_string()));
    }
}

/// A notification on screen: what it says the task waits for, and its id.
struct Shown {
    waiting: Waiting,
    id: u32,
}

/// The worker's state: the tasks the taskbar entry asks attention for, and the notification
/// each task has up.
struct Notices {
    desktop: Arc<dyn Desktop>,
    notifications: Arc<AtomicBool>,
    asking: HashSet<String>,
    shown: HashMap<String, Shown>,
}

impl Notices {
    fn new(desktop: Arc<dyn Desktop>, notifications: Arc<AtomicBool>) -> Notices {
        Notices {
            desktop,
            notifications,
            asking: HashSet::new(),
            shown: HashMap::new(),
        }
    }

    fn apply(&mut self, call: Call) {
        match call {
            Call::Needed(need) => self.needed(&need),
            Call::NotNeeded(task_id) => {
                if let Some(shown) = self.shown.remove(&task_id) {
                    self.desktop.withdraw(shown.id);
                }
                if self.asking.remove(&task_id) && self.asking.is_empty() {
                    self.desktop.ask_attention(false);
                }
            }
        }
    }

    fn needed(&mut self, need: &PersonNeeded) {
        if self.desktop.is_focused() {
            return;
        }
        self.asking.insert(need.task_id.clone());
        self.desktop.ask_attention(true);
        let up = self.shown.get(&need.task_id);
        if up.is_some_and(|s| s.waiting == need.waiting)
            || !self.notifications.load(Ordering::SeqCst)
        {
            return;
        }
        let note = DesktopNote {
            task_id: need.task_id.clone(),
            summary: summary(need.waiting).into(),
            body: format!("{}\n{}", need.title, upper_first(&need.what)),
            replaces: up.map_or(0, |s| s.id),
        };
        match self.desktop.notify(&note) {
            Some(id) => {
                self.shown.insert(
                    need.task_id.clone(),
                    Shown {
                        waiting: need.waiting,
                        id,
                    },
                );
            }
            // Nothing is shown (no notification service): the taskbar entry said it.
            None => {
                self.shown.remove(&need.task_id);
            }
        }
    }
}

fn summary(waiting: Waiting) -> &'static str {
    match waiting {
        Waiting::Approval => "Mandate needs your approval",
        Waiting::Question => "Mandate has a question for you",
        Waiting::Paused => "Mandate paused a task",
    }
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    use async_trait::async_trait;
    use pretty_assertions::assert_eq;

    use super::*;

    /// A desktop that records what it was asked to show.
    #[derive(Default)]
    struct Screen {
        focused: AtomicBool,
        said: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl Desktop for Screen {
        async fn pick_folder(&self, _near: &Path) -> Option<PathBuf> {
            None
        }
        fn workspace_opened(&self, _root: &Path) {}
        fn is_focused(&self) -> bool {
            self.focused.load(Ordering::SeqCst)
        }
        fn ask_attention(&self, asking: bool) {
            let line = if asking {
                "attention"
            } else {
                "attention over"
            };
            self.said.lock().expect("said").push(line.into());
        }
        fn notify(&self, note: &DesktopNote) -> Option<u32> {
            let mut said = self.said.lock().expect("said");
            said.push(format!(
                "notify {} replacing {}: {} | {}",
                note.task_id, note.replaces, note.summary, note.body
            ));
            Some(said.len() as u32)
        }
        fn withdraw(&self, id: u32) {
            self.said
                .lock()
                .expect("said")
                .push(format!("withdraw {id}"));
        }
        async fn confirm(&self, _: &crate::host::Confirmation) -> bool {
            false
        }
    }

    fn need(task: &str, waiting: Waiting, what: &str) -> Call {
        Call::Needed(PersonNeeded {
            task_id: task.into(),
            title: format!("Task {task}"),
            waiting,
            what: what.into(),
        })
    }

    fn said(screen: &Screen) -> Vec<String> {
        std::mem::take(&mut *screen.said.lock().expect("said"))
    }

    #[test]
    fn with_notifications_off_only_the_taskbar_asks() {
        let screen = Arc::new(Screen::default());
        let mut notices = Notices::new(screen.clone(), Arc::new(AtomicBool::new(false)));
        notices.apply(need("a", Waiting::Approval, "run `make`"));
        notices.apply(Call::NotNeeded("a".into()));
        assert_eq!(said(&screen), vec!["attention", "attention over"]);
    }

    #[test]
    fn a_focused_window_is_left_alone() {
        let screen = Arc::new(Screen::default());
        screen.focused.store(true, Ordering::SeqCst);
        let mut notices = Notices::new(screen.clone(), Arc::new(AtomicBool::new(true)));
        notices.apply(need("a", Waiting::Approval, "run `make`"));
        notices.apply(Call::NotNeeded("a".into()));
        assert_eq!(said(&screen), Vec::<String>::new());
    }

    #[test]
    fn unfocused_one_notification_per_task_replaced_and_taken_down_when_the_wait_ends() {
        let screen = Arc::new(Screen::default());
        let mut notices = Notices::new(screen.clone(), Arc::new(AtomicBool::new(true)));
        notices.apply(need("a", Waiting::Approval, "run `make`"));
        // The same wait said again (a burst): the taskbar asks, no second notification.
        notices.apply(need("a", Waiting::Approval, "run `make test`"));
        // Another task has its own.
        notices.apply(need("b", Waiting::Question, "which database?"));
        // The first task now waits for something else: its notification is replaced.
        notices.apply(need("a", Waiting::Paused, "the task reached its budget"));
        notices.apply(Call::NotNeeded("a".into()));
        notices.apply(Call::NotNeeded("a".into()));
        // The taskbar stops asking once no task waits.
        notices.apply(Call::NotNeeded("b".into()));
        assert_eq!(
            said(&screen),
            vec![
                "attention",
                "notify a replacing 0: Mandate needs your approval | Task a\nRun `make`",
                "attention",
                "attention",
                "notify b replacing 0: Mandate has a question for you | Task b\nWhich database?",
                "attention",
                "notify a replacing 2: Mandate paused a task | Task a\nThe task reached its budget",
                "withdraw 7",
                "withdraw 5",
                "attention over",
            ]
        );
        // After its wait ended, the next one is a new notification.
        notices.apply(need("a", Waiting::Approval, "write src/x.rs"));
        assert_eq!(
            said(&screen),
            vec![
                "attention",
                "notify a replacing 0: Mandate needs your approval | Task a\nWrite src/x.rs",
            ]
        );
    }
}
