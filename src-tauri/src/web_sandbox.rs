//! The page runs in WebKit's web process, the layer Mandate trusts least: it renders what the
//! model wrote (sanitized, under a strict CSP, but a renderer bug is a way in). WebKitGTK can
//! confine that process with bubblewrap: no home directory, no network (the network process
//! fetches for it), a private `/tmp`, read-only system directories. The GTK 3 API
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

/// Set in the data directory while a sandboxed window starts, removed at its first paint.
const STARTING: &str = "web-sandbox-starting";
/// What a start that never painted leaves: the window then runs without the sandbox.
const FAILED: &str = "web-sandbox-failed";

/// Asks WebKit for its sandbox (`WEBKIT_FORCE_SANDBOX=1`) when bubblewrap works here and both
/// programs WebKit needs exist. Before any thread: it sets an environment variable. Returns
/// whether the page runs sandboxed. `WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS=1` (WebKit's own
/// way out) is respected.
///
/// WebKit aborts the whole window when its sandbox cannot start (an unusual layout of the
/// file system can make bubblewrap refuse WebKit's mounts), so a window that asked for it and
/// never painted leaves `DATA/web-sandbox-starting` behind; the next start turns that into
/// `DATA/web-sandbox-failed`, runs without the sandbox and says so on standard error, until the
/// person deletes that file.
pub fn request(data: &Path) -> bool {
    if std::env::var_os("WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS").is_some_and(|v| v == "1") {
        return false;
    }
    if let Some(failed) = failed_before(data) {
        eprintln!(
            "mandate: the page runs without WebKit's sandbox: the window did not start with it \
             before; delete {} to try again",
            failed.display()
        );
        return false;
    }
    let bus = std::env::var("DBUS_SESSION_BUS_ADDRESS").ok();
    let missing = if mandate_core::sandbox::Confinement::detect().bwrap.is_none() {
        Some("bubblewrap does not work here".to_string())
    } else if !Path::new(BWRAP).is_file() || !Path::new(DBUS_PROXY).is_file() {
        Some(format!("WebKit needs {BWRAP} and {DBUS_PROXY}"))
    } else if !session_bus_answers(bus.as_deref()) {
        Some(format!(
            "the session bus ({}) does not answer",
            bus.unwrap_or_default()
        ))
    } else {
        None
    };
    if let Some(why) = missing {
        eprintln!("mandate: the page runs without WebKit's sandbox: {why}");
        return false;
    }
    let _ = std::fs::create_dir_all(data);
    let _ = std::fs::write(data.join(STARTING), b"");
    keep_webkit_out_of_the_cache_directory(&data.join("webkit").join("cache"));
    std::env::set_var("WEBKIT_FORCE_SANDBOX", "1");
    true
}

/// WebKit lets the sandboxed page write GLib's user cache directory, all of it (for its font,
/// shader and media caches): by default `~/.cache`, where pre-commit, pip, Mandate's own MCP
/// servers and others keep code they run later. GLib reads `XDG_CACHE_HOME` once per process
/// and keeps the answer, so this process's GLib is given `dir` and the variable is then put
/// back as it was: WebKit binds `dir`, while Mandate's own code and every process it starts
/// (the web process included, which then finds no cache and makes do) see the person's.
fn keep_webkit_out_of_the_cache_directory(dir: &Path) {
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let original = std::env::var_os("XDG_CACHE_HOME");
    std::env::set_var("XDG_CACHE_HOME", dir);
    let seen = webkit2gtk::glib::user_cache_dir();
    match original {
        Some(value) => std::env::set_var("XDG_CACHE_HOME", value),
        None => std::env::remove_var("XDG_CACHE_HOME"),
    }
    if seen != dir {
        eprintln!(
            "mandate: GLib had read its cache directory already ({}); WebKit's sandbox lets the \
             page write there",
            seen.display()
        );
    }
}

/// Whether the session bus `address` names can be reached. WebKit's sandbox passes the bus to
/// the page through a proxy, and aborts the window when the proxy cannot start; a bus that is
/// named but gone (a stale address) would do that. Without an address GLib finds the bus its
/// own way, which is left to it.
fn session_bus_answers(address: Option<&str>) -> bool {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixStream};
    let Some(address) = address.filter(|a| !a.trim().is_empty()) else {
        return true;
    };
    address.split(';').any(|entry| {
        let Some((transport, params)) = entry.split_once(':') else {
            return false;
        };
        if transport != "unix" {
            return true; // tcp and others: not checked here
        }
        params.split(',').any(|param| match param.split_once('=') {
            Some(("path", path)) => UnixStream::connect(path).is_ok(),
            Some(("abstract", name)) => SocketAddr::from_abstract_name(name.as_bytes())
                .is_ok_and(|addr| UnixStream::connect_addr(&addr).is_ok()),
            Some(("dir" | "tmpdir", _)) => true, // a server's address, not a client's
            _ => false,
        })
    })
}

/// `DATA/web-sandbox-failed` when a window started with the sandbox before and never painted
/// (what it left, `DATA/web-sandbox-starting`, is renamed to it) or did so earlier.
fn failed_before(data: &Path) -> Option<std::path::PathBuf> {
    let (starting, failed) = (data.join(STARTING), data.join(FAILED));
    if starting.exists() {
        let _ = std::fs::rename(&starting, &failed);
    }
    failed.exists().then_some(failed)
}

/// The page has painted: the sandbox started (see [`request`]).
pub fn started(data: &Path) {
    let _ = std::fs::remove_file(data.join(STARTING));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_bus_that_is_named_but_gone_is_seen_before_webkit_aborts_on_it() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("bus");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let live = format!("unix:path={}", path.display());
        assert!(session_bus_answers(Some(&live)));
        assert!(session_bus_answers(None));
        assert!(!session_bus_answers(Some("unix:path=/nonexistent/bus")));
        assert!(session_bus_answers(Some(&format!(
            "unix:path=/nonexistent/bus;{live}"
        ))));
        assert!(!session_bus_answers(Some(
            "unix:abstract=/mandate/no-such-bus"
        )));
        drop(listener);
        std::fs::remove_file(&path).expect("rm");
        assert!(!session_bus_answers(Some(&live)));
    }

    #[test]
    fn a_sandboxed_start_that_never_painted_turns_the_sandbox_off_until_the_person_says() {
        let tmp = tempfile::tempdir().expect("tmp");
        let data = tmp.path();
        assert_eq!(failed_before(data), None, "a first start");
        // Asked for, then painted: nothing left.
        std::fs::write(data.join(STARTING), b"").expect("write");
        started(data);
        assert_eq!(failed_before(data), None);
        // Asked for, never painted (WebKit aborted the window).
        std::fs::write(data.join(STARTING), b"").expect("write");
        assert_eq!(failed_before(data), Some(data.join(FAILED)));
        assert!(!data.join(STARTING).exists());
        // And on every start after, until the file goes.
        assert_eq!(failed_before(data), Some(data.join(FAILED)));
        std::fs::remove_file(data.join(FAILED)).expect("rm");
        assert_eq!(failed_before(data), None);
    }
}
