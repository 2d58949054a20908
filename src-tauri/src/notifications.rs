//! Desktop notifications through the freedesktop Notifications service on the session bus
//! (`org.freedesktop.Notifications`, spec 1.2), sent by the shell for the host: the page never
//! sends one and has no permission to. Uses libdbus, which the keyring already links.
//!
//! One thread owns the connection, opened on the first notification: it sends, replaces and
//! closes notifications in the order asked, and while any is up it listens for a click
//! (`ActionInvoked` with the `default` key), which brings the window up on the task. Any
//! program on the bus can send that signal: only the service's own is heard.

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dbus::arg::{PropMap, Variant};
use dbus::blocking::Connection;
use dbus::message::MatchRule;
use mandate_core::host::DesktopNote;

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// A service that does not answer in this time is not waited for (the taskbar entry still
/// asks for attention).
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// How often clicks are looked for while a notification is up.
const LISTEN: Duration = Duration::from_millis(200);
/// The desktop entry and icon name the packaging installs.
const DESKTOP_ENTRY: &str = "dev.mandate.app";

enum Call {
    Notify(DesktopNote, mpsc::Sender<Option<u32>>),
    Close(u32),
}

/// What the shell does when a notification is clicked: the task's id.
pub type OnClick = Box<dyn Fn(String) + Send + 'static>;

pub struct Notifier {
    calls: Mutex<Option<mpsc::Sender<Call>>>,
    on_click: Mutex<Option<OnClick>>,
}

impl Notifier {
    pub fn new(on_click: OnClick) -> Notifier {
        Notifier {
            calls: Mutex::default(),
            on_click: Mutex::new(Some(on_click)),
        }
    }

    /// Shows `note`; its id, or None when no notification service answered.
    pub fn notify(&self, note: &DesktopNote) -> Option<u32> {
        let (answer, answered) = mpsc::channel();
        self.send(Call::Notify(note.clone(), answer))?;
        answered.recv().ok().flatten()
    }

    pub fn close(&self, id: u32) {
        let _ = self.send(Call::Close(id));
    }

    /// Hands `call` to the connection's thread, started on first use.
    fn send(&self, call: Call) -> Option<()> {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        if calls.is_none() {
            let on_click = self
                .on_click
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()?;
            let (tx, rx) = mpsc::channel();
            std::thread::Builder::new()
                .name("notifications".into())
                .spawn(move || serve(rx, on_click))
                .ok()?;
            *calls = Some(tx);
        }
        calls.as_ref()?.send(call).ok()
    }
}

/// What the service can do, asked once.
struct Service {
    conn: Connection,
    markup: bool,
    /// Notifications up: id -> task.
    up: Arc<Mutex<HashMap<u32, String>>>,
    /// The unique bus name of the service that showed them (signals from others are forged).
    owner: Arc<Mutex<String>>,
}

fn serve(calls: mpsc::Receiver<Call>, on_click: OnClick) {
    let Some(service) = connect(on_click) else {
        // No session bus: every notification answers None (said once in the log).
        for call in calls {
            if let Call::Notify(_, answer) = call {
                let _ = answer.send(None);
            }
        }
        return;
    };
    loop {
        let waiting = !service
            .up
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty();
        // Nothing up: nothing can be clicked, so the thread sleeps until asked.
        let call = match waiting {
            true => calls.recv_timeout(LISTEN),
            false => calls.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match call {
            Ok(Call::Notify(note, answer)) => {
                let _ = answer.send(service.notify(&note));
            }
            Ok(Call::Close(id)) => service.close(id),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        while let Ok(true) = service.conn.process(Duration::ZERO) {}
    }
}

fn connect(on_click: OnClick) -> Option<Service> {
    let conn = match Connection::new_session() {
        Ok(conn) => conn,
        Err(e) => {
            tracing::info!(error = %e, "no session bus: no desktop notifications");
            return None;
        }
    };
    let up: Arc<Mutex<HashMap<u32, String>>> = Arc::default();
    let owner: Arc<Mutex<String>> = Arc::default();
    let (clicked, heard) = (up.clone(), owner.clone());
    let invoked = MatchRule::new_signal(SERVICE, "ActionInvoked");
    let listening = conn.add_match(invoked, move |(id, key): (u32, String), _, msg| {
        let sender = msg.sender().map(|s| s.to_string()).unwrap_or_default();
        if sender.is_empty() || *heard.lock().unwrap_or_else(|p| p.into_inner()) != sender {
            tracing::info!(%sender, "a click not sent by the notification service was ignored");
            return true;
        }
        let task = clicked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned();
        if let (Some(task), "default") = (task, key.as_str()) {
            on_click(task);
        }
        true
    });
    let closed = up.clone();
    let gone = MatchRule::new_signal(SERVICE, "NotificationClosed");
    let forgetting = conn.add_match(gone, move |(id, _why): (u32, u32), _, _| {
        closed.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        true
    });
    if let Err(e) = listening.and(forgetting) {
        tracing::info!(error = %e, "clicks on notifications are not heard");
    }
    let caps: Vec<String> = conn
        .with_proxy(SERVICE, PATH, CALL_TIMEOUT)
        .method_call(SERVICE, "GetCapabilities", ())
        .map(|(caps,): (Vec<String>,)| caps)
        .unwrap_or_default();
    Some(Service {
        markup: caps.iter().any(|c| c == "body-markup"),
        conn,
        up,
        owner,
    })
}

impl Service {
    fn notify(&self, note: &DesktopNote) -> Option<u32> {
        let body = match self.markup {
            true => escape(&note.body),
            false => note.body.clone(),
        };
        let mut hints = PropMap::new();
        hints.insert("urgency".into(), Variant(Box::new(1u8)));
        hints.insert(
            "desktop-entry".into(),
            Variant(Box::new(DESKTOP_ENTRY.to_string())),
        );
        let actions = vec!["default".to_string(), "Show the task".to_string()];
        let sent: Result<(u32,), dbus::Error> = self
            .conn
            .with_proxy(SERVICE, PATH, CALL_TIMEOUT)
            .method_call(
                SERVICE,
                "Notify",
                (
                    "Mandate",
                    note.replaces,
                    DESKTOP_ENTRY,
                    note.summary.as_str(),
                    body,
                    actions,
                    hints,
                    -1i32,
                ),
            );
        if sent.is_ok() {
            self.learn_owner();
        }
        let mut up = self.up.lock().unwrap_or_else(|p| p.into_inner());
        up.remove(&note.replaces);
        match sent {
            Ok((id,)) => {
                up.insert(id, note.task_id.clone());
                Some(id)
            }
            Err(e) => {
                tracing::info!(error = %e, "the desktop notification was not shown");
                None
            }
        }
    }

    /// Who owns the service's name now (it may have been restarted since the last time).
    fn learn_owner(&self) {
        let asked: Result<(String,), dbus::Error> = self
            .conn
            .with_proxy(
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                CALL_TIMEOUT,
            )
            .method_call("org.freedesktop.DBus", "GetNameOwner", (SERVICE,));
        if let Ok((unique,)) = asked {
            *self.owner.lock().unwrap_or_else(|p| p.into_inner()) = unique;
        }
    }

    fn close(&self, id: u32) {
        let closed: Result<(), dbus::Error> = self
            .conn
            .with_proxy(SERVICE, PATH, CALL_TIMEOUT)
            .method_call(SERVICE, "CloseNotification", (id,));
        if let Err(e) = closed {
            tracing::debug!(error = %e, "a notification was not closed");
        }
        self.up
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

/// The body as text, for a service that reads it as markup.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
