//! The page runs in WebKit's web process, the layer Mandate trusts least: it renders what the
//! model wrote (sanitized, under a strict CSP, but a renderer bug is a way in). WebKitGTK can
//! confine that process with bubblewrap: no home directory, no network namespace of its own to
//! reach the person's services, a private `/tmp`, read-only system directories. The GTK 3 API
//! Tauri uses leaves it off by default; it is turned on here wherever bubblewrap works and
//! WebKit finds the programs it runs for it.
//!
//! The web process extension (`webkit-extension/lib.rs`) lives in Mandate's data directory,
//! which the sandbox does not show; WebKit is told to show that one directory, read-only, just
//! before it starts the first web process (the only moment it accepts it).

use std::ffi::CString;
use std::path::Path;
use std::sync::OnceLock;

/// The programs WebKitGTK runs for its sandbox (fixed when it was built).
const BWRAP: &str = "/usr/bin/bwrap";
const DBUS_PROXY: &str = "/usr/bin/xdg-dbus-proxy";

/// Asks WebKit for its sandbox (`WEBKIT_FORCE_SANDBOX=1`) when bubblewrap works here and both
/// programs WebKit needs exist. Before any thread: it sets an environment variable. Returns
/// whether the page runs sandboxed. `WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS=1` (WebKit's own
/// way out) is respected.
pub fn request() -> bool {
    if std::env::var_os("WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS").is_some_and(|v| v == "1") {
        return false;
    }
    let works = mandate_core::sandbox::Confinement::detect().bwrap.is_some()
        && Path::new(BWRAP).is_file()
        && Path::new(DBUS_PROXY).is_file();
    if works {
        std::env::set_var("WEBKIT_FORCE_SANDBOX", "1");
    }
    works
}

/// Shows `dir` (read-only) to the sandboxed web process: added to each web context when WebKit
/// is about to start its first web process (`initialize-web-extensions`); later it would be a
/// fatal error, so each context is done once.
pub fn show_directory(dir: &Path) {
    static DIR: OnceLock<CString> = OnceLock::new();
    let Ok(path) = CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return;
    };
    if DIR.set(path).is_err() {
        return; // done already
    }
    // SAFETY: looks up a signal of a registered type, and adds a hook that lives as long as
    // the process (its data is a static).
    unsafe {
        use webkit2gtk::glib::gobject_ffi;
        let context_type = webkit2gtk::ffi::webkit_web_context_get_type();
        let signal =
            gobject_ffi::g_signal_lookup(c"initialize-web-extensions".as_ptr(), context_type);
        if signal == 0 {
            return;
        }
        gobject_ffi::g_signal_add_emission_hook(
            signal,
            0,
            Some(before_web_process),
            std::ptr::null_mut(),
            None,
        );
    }

    unsafe extern "C" fn before_web_process(
        _hint: *mut webkit2gtk::glib::gobject_ffi::GSignalInvocationHint,
        n_params: std::ffi::c_uint,
        params: *const webkit2gtk::glib::gobject_ffi::GValue,
        _data: webkit2gtk::glib::ffi::gpointer,
    ) -> webkit2gtk::glib::ffi::gboolean {
        static DONE: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
        let Some(dir) = DIR.get() else {
            return 0;
        };
        if n_params == 0 || params.is_null() {
            return 1;
        }
        // SAFETY: the first parameter of a signal is its instance, here a WebKitWebContext.
        let context = unsafe { webkit2gtk::glib::gobject_ffi::g_value_get_object(params) }
            as *mut webkit2gtk::ffi::WebKitWebContext;
        let mut done = DONE.lock().unwrap_or_else(|p| p.into_inner());
        if context.is_null() || done.contains(&(context as usize)) {
            return 1;
        }
        done.push(context as usize);
        // SAFETY: a live context, before its first web process; the path outlives the call.
        unsafe {
            webkit2gtk::ffi::webkit_web_context_add_path_to_sandbox(context, dir.as_ptr(), 1)
        };
        1 // keep the hook: another context would need it too
    }
}
