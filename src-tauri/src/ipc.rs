//! The IPC bus: exactly one request command and one subscription channel.
//!
//! `request` takes the invoke body itself as the request (raw JSON from the untrusted page), so a
//! malformed or unknown message is answered with a typed `IpcError`, never a panic or an untyped
//! framework error. `subscribe` hands the host a `Channel` for its events.

use std::io::Write;
use std::sync::{Arc, Mutex};

use mandate_core::agent::EventSink;
use mandate_core::host::Host;
use mandate_core::protocol::{Event, IpcError, IpcErrorCode, Reply};
use tauri::ipc::{Channel, InvokeBody};
use tauri::State;

/// Events go to the channel of the page on screen: a page subscribes once per load, and a
/// reload (after switching workspaces) replaces the previous page's channel. Notices said
/// before any page listens (what opening the workspace found, a settings file that did not
/// load) are kept and given to the first page that subscribes.
#[derive(Default)]
pub struct ChannelSink {
    channels: Mutex<Vec<Channel<Event>>>,
    early: Mutex<Vec<Event>>,
    trace: Option<Arc<IpcTrace>>,
}

/// At most this many notices wait for a page.
const MAX_EARLY_NOTICES: usize = 32;

impl ChannelSink {
    pub fn new(trace: Option<Arc<IpcTrace>>) -> Self {
        Self {
            channels: Mutex::default(),
            early: Mutex::default(),
            trace,
        }
    }

    fn replace(&self, channel: Channel<Event>) {
        let early = std::mem::take(&mut *self.early.lock().unwrap_or_else(|p| p.into_inner()));
        for event in early {
            let _ = channel.send(event);
        }
        *self.channels.lock().unwrap_or_else(|p| p.into_inner()) = vec![channel];
    }
}

impl EventSink for ChannelSink {
    fn emit(&self, event: Event) {
        if let Some(trace) = &self.trace {
            trace.record("event", &event);
        }
        let mut channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if channels.is_empty() && matches!(event, Event::Notice { .. }) {
            let mut early = self.early.lock().unwrap_or_else(|p| p.into_inner());
            if early.len() < MAX_EARLY_NOTICES {
                early.push(event);
            }
            return;
        }
        // A channel whose page went away fails to send; drop it.
        channels.retain(|c| c.send(event.clone()).is_ok());
    }
}

/// With `MANDATE_IPC_TRACE=FILE`, every payload the host sends to the page is appended to FILE
/// as a JSON line (for tests that check what crosses the boundary), and so is every navigation
/// the window refuses (so a test can wait for the decision instead of guessing its time).
pub struct IpcTrace {
    file: Mutex<std::fs::File>,
}

impl IpcTrace {
    pub fn from_env() -> Option<Self> {
        let path = std::env::var_os("MANDATE_IPC_TRACE")?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()?;
        Some(Self {
            file: Mutex::new(file),
        })
    }

    pub fn refused_navigation(&self, url: &str) {
        self.record("navigation_refused", &url);
    }

    /// How many read-only file mappings a process of the window (`window`, `web`) gave back
    /// (`lean::give_back_idle_pages`).
    pub fn pages_given_back(&self, process: &str, mappings: u32) {
        self.record(
            "pages_given_back",
            &serde_json::json!({"process": process, "mappings": mappings}),
        );
    }

    fn record<T: serde::Serialize>(&self, direction: &str, payload: &T) {
        let line = serde_json::json!({"direction": direction, "payload": payload});
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(file, "{line}");
    }
}

/// [`crate::lean::give_back_idle_pages`], what each process gave back recorded in the trace.
pub fn give_back_idle_pages(window: &tauri::WebviewWindow, trace: Option<Arc<IpcTrace>>) {
    crate::lean::give_back_idle_pages(window, move |process, mappings| {
        if let Some(trace) = &trace {
            trace.pages_given_back(process, mappings);
        }
    });
}

/// With `MANDATE_STARTUP_TRACE=FILE`, the wall-clock time (ns since the epoch) at which the page
/// first subscribes — right after its first frame — is written to FILE, for the start-up benchmark.
fn mark_first_paint(window: tauri::WebviewWindow, trace: Option<Arc<IpcTrace>>) {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    #[cfg(target_os = "linux")]
    crate::web_sandbox::started(&mandate_core::settings::AppDirs::from_env().data);
    // Once the page has settled, what start-up alone used goes back to the kernel.
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(3));
        give_back_idle_pages(&window, trace);
    });
    if let Some(path) = std::env::var_os("MANDATE_STARTUP_TRACE") {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let _ = std::fs::write(path, now.to_string());
    }
}

pub struct Shell {
    pub host: Arc<Host>,
    pub sink: Arc<ChannelSink>,
}

#[tauri::command]
pub async fn request(
    state: State<'_, Shell>,
    request: tauri::ipc::Request<'_>,
) -> Result<Reply, IpcError> {
    let raw = match request.body() {
        InvokeBody::Json(value) => value.clone(),
        InvokeBody::Raw(bytes) => serde_json::from_slice(bytes).map_err(|e| {
            IpcError::new(
                IpcErrorCode::MalformedRequest,
                format!("the request is not JSON: {e}"),
            )
        })?,
    };
    let result = state.host.handle_json(raw).await;
    if let Some(trace) = &state.sink.trace {
        match &result {
            Ok(reply) => trace.record("reply", reply),
            Err(error) => trace.record("error", error),
        }
    }
    result
}

#[tauri::command]
pub fn subscribe(
    window: tauri::WebviewWindow,
    state: State<'_, Shell>,
    channel: Channel<Event>,
) -> Result<(), IpcError> {
    mark_first_paint(window, state.sink.trace.clone());
    state.sink.replace(channel);
    state.host.page_ready();
    state.host.start_watching();
    Ok(())
}
