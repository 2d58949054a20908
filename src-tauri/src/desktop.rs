//! The desktop around the host: the folder picker (GTK's own file chooser, run by the shell on
//! the main thread, so the page needs no dialog permission) and the window title.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use mandate_core::host::Desktop;
use tauri::{AppHandle, Manager};

pub struct WindowDesktop {
    pub app: AppHandle,
}

pub fn title(root: &Path) -> String {
    format!("Mandate — {}", root.display())
}

#[async_trait]
impl Desktop for WindowDesktop {
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
