//! The desktop around the host: the folder picker (GTK's own file chooser, run by the shell on
//! the main thread, so the page needs no dialog permission), the window title, its focus and
//! taskbar entry, and desktop notifications (sent by the shell, never by the page).

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use mandate_core::agent::EventSink as _;
use mandate_core::host::{Confirmation, Desktop, DesktopNote};
use mandate_core::protocol::Event;
use tauri::{AppHandle, Manager};

#[cfg(target_os = "linux")]
use crate::notifications::Notifier;

pub struct WindowDesktop {
    app: AppHandle,
    #[cfg(target_os = "linux")]
    notifier: Notifier,
}

impl WindowDesktop {
    pub fn new(app: AppHandle) -> WindowDesktop {
        #[cfg(target_os = "linux")]
        let shown = app.clone();
        WindowDesktop {
            #[cfg(target_os = "linux")]
            notifier: Notifier::new(Box::new(move |task_id| show_task(&shown, task_id))),
            app,
        }
    }
}

/// A notification was clicked: the window comes up (as the desktop allows) on the task.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn show_task(app: &AppHandle, task_id: String) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
    if let Some(shell) = app.try_state::<crate::ipc::Shell>() {
        shell.sink.emit(Event::ShowTask { task_id });
    }
}

pub fn title(root: &Path) -> String {
    format!("Mandate — {}", root.display())
}

/// The yes-or-no dialog, modal over the window; No is the default answer.
#[cfg(target_os = "linux")]
fn run_confirm(window: Option<tauri::WebviewWindow>, question: &Confirmation) -> bool {
    use gtk::prelude::*;
    let parent = window.and_then(|w| w.gtk_window().ok());
    let dialog = gtk::MessageDialog::new(
        parent.as_ref(),
        gtk::DialogFlags::MODAL | gtk::DialogFlags::DESTROY_WITH_PARENT,
        gtk::MessageType::Warning,
        gtk::ButtonsType::None,
        &question.title,
    );
    dialog.set_title(&question.title);
    dialog.set_secondary_text(Some(&question.message));
    dialog.add_button("_Cancel", gtk::ResponseType::Cancel);
    dialog.add_button(&question.accept, gtk::ResponseType::Accept);
    dialog.set_default_response(gtk::ResponseType::Cancel);
    let answer = dialog.run();
    dialog.close();
    answer == gtk::ResponseType::Accept
}

#[cfg(not(target_os = "linux"))]
fn run_confirm(_window: Option<tauri::WebviewWindow>, _question: &Confirmation) -> bool {
    false
}

#[async_trait]
impl Desktop for WindowDesktop {
    async fn confirm(&self, question: &Confirmation) -> bool {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let window = self.app.get_webview_window("main");
        let question = question.clone();
        let shown = self.app.run_on_main_thread(move || {
            let _ = tx.send(run_confirm(window, &question));
        });
        // No dialog, no answer: nothing is allowed.
        shown.is_ok() && rx.await.unwrap_or(false)
    }

    async fn pick_folder(&self, near: &Path) -> Option<PathBuf> {
        // Window tests cannot drive a native dialog; they name the folder it would return.
        if let Some(folder) = std::env::var_os("MANDATE_TEST_PICK_FOLDER") {
            return Some(PathBuf::from(folder));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let window = self.app.get_webview_window("main");
        // People mostly switch to a project beside this one.
        let start = near.parent().unwrap_or(near).to_path_buf();
        let shown = self.app.run_on_main_thread(move || {
            let _ = tx.send(run_picker(window, &start));
        });
        if shown.is_err() {
            return None;
        }
        rx.await.ok().flatten()
    }

    fn workspace_opened(&self, root: &Path) {
        if let Some(window) = self.app.get_webview_window("main") {
            let _ = window.set_title(&title(root));
        }
    }

    fn is_focused(&self) -> bool {
        // No window (not yet, or closing): nobody is looking at it.
        self.app
            .get_webview_window("main")
            .and_then(|w| w.is_focused().ok())
            .unwrap_or(false)
    }

    fn ask_attention(&self, asking: bool) {
        if let Some(window) = self.app.get_webview_window("main") {
            let kind = asking.then_some(tauri::UserAttentionType::Informational);
            let _ = window.request_user_attention(kind);
        }
    }

    #[cfg(target_os = "linux")]
    fn notify(&self, note: &DesktopNote) -> Option<u32> {
        self.notifier.notify(note)
    }

    #[cfg(target_os = "linux")]
    fn withdraw(&self, id: u32) {
        self.notifier.close(id);
    }

    #[cfg(not(target_os = "linux"))]
    fn notify(&self, _note: &DesktopNote) -> Option<u32> {
        None
    }

    #[cfg(not(target_os = "linux"))]
    fn withdraw(&self, _id: u32) {}
}

#[cfg(target_os = "linux")]
fn run_picker(window: Option<tauri::WebviewWindow>, start: &Path) -> Option<PathBuf> {
    use gtk::prelude::*;
    let parent = window.and_then(|w| w.gtk_window().ok());
    let dialog = gtk::FileChooserNative::new(
        Some("Open a folder as the workspace"),
        parent.as_ref(),
        gtk::FileChooserAction::SelectFolder,
        Some("Open"),
        Some("Cancel"),
    );
    dialog.set_modal(true);
    dialog.set_current_folder(start);
    // A nested main loop until the person answers; the window keeps drawing meanwhile.
    let answer = dialog.run();
    let folder = (answer == gtk::ResponseType::Accept)
        .then(|| dialog.filename())
        .flatten();
    dialog.destroy();
    folder
}

#[cfg(not(target_os = "linux"))]
fn run_picker(_window: Option<tauri::WebviewWindow>, _start: &Path) -> Option<PathBuf> {
    None
}
