//! A desktop notification service for the test's session bus: it owns
//! `org.freedesktop.Notifications` and records every call the app makes (spec 1.2: `Notify`,
//! `CloseNotification`, `GetCapabilities`, `GetServerInformation`), and can "click" a
//! notification (`ActionInvoked` with the `default` key) as a person would. For a screenshot,
//! [`Dunst`] shows them for real on the app's display.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use dbus::arg::PropMap;
use dbus::blocking::Connection;
use dbus::channel::{MatchingReceiver, Sender};
use dbus::message::MatchRule;
use dbus::Message;

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

/// One call the app made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    Notify {
        app_name: String,
        replaces_id: u32,
        app_icon: String,
        summary: String,
        body: String,
        actions: Vec<String>,
        /// The hints' names, sorted.
        hints: Vec<String>,
        expire_timeout: i32,
        /// The id the service answered.
        id: u32,
    },
    Close(u32),
    Capabilities,
}

enum Command {
    Click(u32),
    Stop,
}

pub struct FakeNotifications {
    calls: Arc<Mutex<Vec<Call>>>,
    commands: mpsc::Sender<Command>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeNotifications {
    /// Takes the service's name on the session bus (the test must run under one, as
    /// `make test` does with `dbus-run-session`).
    pub fn start() -> anyhow::Result<FakeNotifications> {
        let conn = Connection::new_session().context("connect to the session bus")?;
        let owner = conn
            .request_name(SERVICE, false, true, true)
            .context("ask for the notification service's name")?;
        anyhow::ensure!(
            owner == dbus::blocking::stdintf::org_freedesktop_dbus::RequestNameReply::PrimaryOwner,
            "another notification service owns {SERVICE}: {owner:?}"
        );
        let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
        let recorded = calls.clone();
        let mut next_id = 0u32;
        conn.start_receive(
            MatchRule::new_method_call(),
            Box::new(move |msg, conn| {
                let reply = answer(&msg, &recorded, &mut next_id);
                let _ = conn.send(reply);
                true
            }),
        );
        let (commands, received) = mpsc::channel();
        let thread = std::thread::spawn(move || serve(conn, received));
        Ok(FakeNotifications {
            calls,
            commands,
            thread: Some(thread),
        })
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("calls").clone()
    }

    /// The `Notify` calls so far.
    pub fn notes(&self) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| matches!(c, Call::Notify { .. }))
            .collect()
    }

    /// A person clicks notification `id`.
    pub fn click(&self, id: u32) {
        let _ = self.commands.send(Command::Click(id));
    }

    /// Another program on the bus sends the click signal for `id` (as any can).
    pub fn forge_click(id: u32) -> anyhow::Result<()> {
        let conn = Connection::new_session()?;
        let signal = Message::new_signal(PATH, SERVICE, "ActionInvoked")
            .map_err(anyhow::Error::msg)?
            .append2(id, "default");
        conn.send(signal)
            .map_err(|()| anyhow::anyhow!("the signal was not sent"))?;
        // Sent before the connection closes.
        conn.channel().flush();
        Ok(())
    }

    /// Gives the name back (another service may take it).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        let _ = self.commands.send(Command::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for FakeNotifications {
    fn drop(&mut self) {
        self.halt();
    }
}

fn serve(conn: Connection, commands: mpsc::Receiver<Command>) {
    loop {
        let _ = conn.process(Duration::from_millis(20));
        match commands.try_recv() {
            Ok(Command::Click(id)) => {
                if let Ok(signal) = Message::new_signal(PATH, SERVICE, "ActionInvoked") {
                    let _ = conn.send(signal.append2(id, "default"));
                }
            }
            Ok(Command::Stop) | Err(mpsc::TryRecvError::Disconnected) => {
                let _ = conn.release_name(SERVICE);
                return;
            }
            Err(mpsc::TryRecvError::Empty) => {}
        }
    }
}

type NotifyArgs = (
    String,
    u32,
    String,
    String,
    String,
    Vec<String>,
    PropMap,
    i32,
);

fn answer(msg: &Message, calls: &Mutex<Vec<Call>>, next_id: &mut u32) -> Message {
    let record = |call: Call| calls.lock().expect("calls").push(call);
    match msg.member().as_deref() {
        Some("GetCapabilities") => {
            record(Call::Capabilities);
            let caps = vec!["actions", "body", "body-markup"];
            msg.method_return().append1(caps)
        }
        Some("GetServerInformation") => msg
            .method_return()
            .append2("fake", "mandate-tests")
            .append2("1", "1.2"),
        Some("Notify") => match msg.read_all::<NotifyArgs>() {
            Ok((app_name, replaces_id, app_icon, summary, body, actions, hints, expire)) => {
                let id = match replaces_id {
                    0 => {
                        *next_id += 1;
                        *next_id
                    }
                    same => same,
                };
                let mut hints: Vec<String> = hints.into_keys().collect();
                hints.sort();
                record(Call::Notify {
                    app_name,
                    replaces_id,
                    app_icon,
                    summary,
                    body,
                    actions,
                    hints,
                    expire_timeout: expire,
                    id,
                });
                msg.method_return().append1(id)
            }
            Err(_) => refuse(msg, "org.freedesktop.DBus.Error.InvalidArgs"),
        },
        Some("CloseNotification") => {
            if let Ok(id) = msg.read1::<u32>() {
                record(Call::Close(id));
            }
            msg.method_return()
        }
        _ => refuse(msg, "org.freedesktop.DBus.Error.UnknownMethod"),
    }
}

fn refuse(msg: &Message, error: &'static str) -> Message {
    msg.error(
        &error.into(),
        c"the fake notification service does not do that",
    )
}

/// dunst (Debian package `dunst`) on `display`: real notifications on screen, for a screenshot.
/// (Started by the test, never by the bus: the test's windows have the focus, so no other test
/// sends a notification that would start one.)
pub struct Dunst(std::process::Child);

impl Dunst {
    pub fn start(display: &str) -> anyhow::Result<Dunst> {
        let config = std::env::temp_dir().join("mandate-tests-dunstrc");
        std::fs::write(&config, DUNSTRC)?;
        let child = std::process::Command::new("dunst")
            .arg("-config")
            .arg(&config)
            .env("DISPLAY", display)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("start dunst (Debian package dunst)")?;
        Ok(Dunst(child))
    }
}

impl Dunst {
    /// How many notifications dunst shows now; None until it owns the service's name (asked
    /// without starting any service the bus could activate for that name).
    pub fn displayed(&self) -> Option<u32> {
        use dbus::blocking::stdintf::org_freedesktop_dbus::Properties;
        let conn = Connection::new_session().ok()?;
        let bus = conn.with_proxy("org.freedesktop.DBus", "/", Duration::from_secs(2));
        let (owned,): (bool,) = bus
            .method_call("org.freedesktop.DBus", "NameHasOwner", (SERVICE,))
            .ok()?;
        owned.then_some(())?;
        conn.with_proxy(SERVICE, PATH, Duration::from_secs(2))
            .get("org.dunstproject.cmd0", "displayedLength")
            .ok()
    }
}

impl Drop for Dunst {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Big enough to read in a screenshot, never hidden by a timeout during the test.
const DUNSTRC: &str = r##"[global]
    font = Sans 11
    width = 420
    origin = top-right
    offset = 24x24
    frame_width = 2
    frame_color = "#8fa3ff"
    padding = 12
    horizontal_padding = 14
    format = "<b>%s</b>\n%b"
[urgency_normal]
    background = "#1f2430"
    foreground = "#e8ecf4"
    timeout = 0
"##;
