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

/// `DATA/web-sandbox-starting-PID`: written by a sandboxed window just before WebKit starts its
/// web process, removed at the first paint or when the window ends normally.
const STARTING: &str = "web-sandbox-starting-";
/// What a start that ended otherwise leaves (`webkit=VERSION time=SECONDS`): the window then
/// runs without the sandbox, for that WebKit and for a week at most.
const FAILED: &str = "web-sandbox-failed";
/// How long a failure is believed when WebKit stays the same.
const FAILURE_KEPT_SECS: u64 = 7 * 24 * 3600;

/// Whether this process asked WebKit for its sandbox.
static REQUESTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Asks WebKit for its sandbox (`WEBKIT_FORCE_SANDBOX=1`) when bubblewrap works here and both
/// programs WebKit needs exist. Before any thread: it sets an environment variable. Returns
/// whether the page runs sandboxed. `WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS=1` (WebKit's own
/// way out) is respected.
///
/// WebKit aborts the whole window when its sandbox cannot start (an unusual layout of the
/// file system can make bubblewrap refuse WebKit's mounts). So a sandboxed window marks the
/// moment WebKit starts its web process ([`arm`]) and unmarks its first paint ([`started`]); a
/// mark whose window is gone without painting means WebKit aborted it. The next start then
/// runs without the sandbox and says so on standard error, while WebKit stays the same version,
/// for a week at most (then it tries again), or until the person deletes
/// `DATA/web-sandbox-failed`. A window still starting meanwhile is not taken for a failure.
pub fn request(data: &Path) -> bool {
    if std::env::var_os("WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS").is_some_and(|v| v == "1") {
        return false;
    }
    // WebKit and GLib take only absolute paths (`MANDATE_DATA_DIR` may be relative).
    let data = &std::path::absolute(data).unwrap_or_else(|_| data.to_path_buf());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if let Some(failed) = failed_before(data, &webkit_version(), now, pid_is_a_window) {
        eprintln!(
            "mandate: the page runs without WebKit's sandbox: a window could not start with it \
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
    if !keep_webkit_out_of_the_cache_directory(&data.join("webkit").join("cache")) {
        return false;
    }
    std::env::set_var("WEBKIT_FORCE_SANDBOX", "1");
    REQUESTED.store(true, std::sync::atomic::Ordering::SeqCst);
    true
}

/// WebKit's version, as `MAJOR.MINOR.MICRO`.
fn webkit_version() -> String {
    // SAFETY: plain getters of constants compiled into the library.
    unsafe {
        format!(
            "{}.{}.{}",
            webkit2gtk::ffi::webkit_get_major_version(),
            webkit2gtk::ffi::webkit_get_minor_version(),
            webkit2gtk::ffi::webkit_get_micro_version()
        )
    }
}

/// Whether `pid` is a running Mandate window.
fn pid_is_a_window(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "mandate-window")
}

/// Marks that WebKit is about to start this sandboxed window's web process (see [`request`]).
pub fn arm(data: &Path) {
    if REQUESTED.load(std::sync::atomic::Ordering::SeqCst) {
        let _ = std::fs::create_dir_all(data);
        let _ = std::fs::write(starting_mark(data, std::process::id()), b"");
    }
}

fn starting_mark(data: &Path, pid: u32) -> std::path::PathBuf {
    data.join(format!("{STARTING}{pid}"))
}

/// WebKit lets the sandboxed page write GLib's user cache directory, all of it (for its font,
/// shader and media caches): by default `~/.cache`, where pre-commit, pip, Mandate's own MCP
/// servers and others keep code they run later. GLib reads `XDG_CACHE_HOME` once per process
/// and keeps the answer, so this process's GLib is given `dir` and the variable is then put
/// back as it was: WebKit binds `dir`, while Mandate's own code and every process it starts
/// (the web process included, which then finds no cache and makes do) see the person's.
///
/// The directory is emptied first: what a page wrote there in an earlier run is not read.
/// Returns false when GLib cannot be given it (the sandbox is then not asked for).
fn keep_webkit_out_of_the_cache_directory(dir: &Path) -> bool {
    let _ = std::fs::remove_dir_all(dir);
    if std::fs::create_dir_all(dir).is_err() {
        eprintln!(
            "mandate: the page runs without WebKit's sandbox: {} cannot be made",
            dir.display()
        );
        return false;
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
            "mandate: the page runs without WebKit's sandbox: GLib had read its cache directory \
             already ({}), which the sandbox would let the page write",
            seen.display()
        );
        return false;
    }
    true
}

/// Whether the session bus `address` names can be reached. WebKit's sandbox passes the bus to
/// the page through a proxy, and aborts the window when the proxy cannot start; a bus that is
/// named but gone (a stale address) would do that. Without an address GLib finds the bus its
/// own way, which is left to it.
fn session_bus_answers(address: Option<&str>) -> bool {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::ffi::OsStrExt;
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
            Some(("path", path)) => {
                UnixStream::connect(std::ffi::OsStr::from_bytes(&unescape(path))).is_ok()
            }
            Some(("abstract", name)) => SocketAddr::from_abstract_name(unescape(name))
                .is_ok_and(|addr| UnixStream::connect_addr(&addr).is_ok()),
            Some(("dir" | "tmpdir", _)) => true, // a server's address, not a client's
            _ => false,
        })
    })
}

/// A D-Bus address value with its `%XX` escapes undone.
fn unescape(value: &str) -> Vec<u8> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// `DATA/web-sandbox-failed` when a sandboxed window ended before its first paint (its mark is
/// left and its process is gone: `window_alive` says which are running), now or before, with
/// this WebKit `version` and less than a week before `now`. A failure that no longer holds is
/// removed.
fn failed_before(
    data: &Path,
    version: &str,
    now: u64,
    window_alive: impl Fn(u32) -> bool,
) -> Option<std::path::PathBuf> {
    let failed = data.join(FAILED);
    let marks = std::fs::read_dir(data).into_iter().flatten().flatten();
    for entry in marks {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(STARTING))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || window_alive(pid) {
            continue; // still starting
        }
        let _ = std::fs::remove_file(entry.path());
        let _ = std::fs::write(&failed, format!("webkit={version} time={now}\n"));
    }
    let text = std::fs::read_to_string(&failed).ok()?;
    let field = |key: &str| {
        text.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_string)
    };
    let when: u64 = field("time").and_then(|t| t.parse().ok()).unwrap_or(0);
    let holds =
        field("webkit").as_deref() == Some(version) && now.saturating_sub(when) < FAILURE_KEPT_SECS;
    if !holds {
        let _ = std::fs::remove_file(&failed);
        return None;
    }
    Some(failed)
}

/// The page has painted, or the window ends normally: the sandbox did not fail it.
pub fn started(data: &Path) {
    let _ = std::fs::remove_file(starting_mark(data, std::process::id()));
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
        let escaped = format!(
            "unix:path={}",
            path.display().to_string().replace('/', "%2f")
        );
        assert!(session_bus_answers(Some(&escaped)));
        drop(listener);
        std::fs::remove_file(&path).expect("rm");
        assert!(!session_bus_answers(Some(&live)));
    }

    #[test]
    fn a_window_gone_before_painting_turns_the_sandbox_off_for_that_webkit_and_a_week() {
        let tmp = tempfile::tempdir().expect("tmp");
        let data = tmp.path();
        let none = |_: u32| false;
        let day = 24 * 3600;
        assert_eq!(
            failed_before(data, "2.50.6", 1000, none),
            None,
            "a first start"
        );
        // Another window, still starting: not a failure.
        std::fs::write(starting_mark(data, 4242), b"").expect("write");
        assert_eq!(failed_before(data, "2.50.6", 1000, |p| p == 4242), None);
        // Gone without painting: a failure, believed for this WebKit, for a week.
        assert_eq!(
            failed_before(data, "2.50.6", 1000, none),
            Some(data.join(FAILED))
        );
        assert!(!starting_mark(data, 4242).exists());
        assert!(failed_before(data, "2.50.6", 1000 + 6 * day, none).is_some());
        assert_eq!(
            failed_before(data, "2.52.0", 1000 + day, none),
            None,
            "a new WebKit"
        );
        assert!(!data.join(FAILED).exists());
        std::fs::write(starting_mark(data, 4243), b"").expect("write");
        assert!(failed_before(data, "2.50.6", 2000, none).is_some());
        assert_eq!(
            failed_before(data, "2.50.6", 2000 + 8 * day, none),
            None,
            "a week on"
        );
        // Painted (or ended normally): nothing left behind.
        std::fs::write(starting_mark(data, std::process::id()), b"").expect("write");
        started(data);
        assert!(!starting_mark(data, std::process::id()).exists());
        assert_eq!(failed_before(data, "2.50.6", 3000, none), None);
    }
}
