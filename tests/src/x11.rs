//! The app's X display seen from outside, as a window manager would: which window has the
//! keyboard focus, taking it away (the person went back to their editor), and whether a
//! window asks for attention (its urgency hint). Through libX11, which the window links.

use std::ffi::{c_char, c_int, c_long, c_ulong, c_void, CString};

#[link(name = "X11")]
extern "C" {
    fn XOpenDisplay(name: *const c_char) -> *mut c_void;
    fn XCloseDisplay(display: *mut c_void) -> c_int;
    fn XGetInputFocus(display: *mut c_void, focus: *mut c_ulong, revert: *mut c_int) -> c_int;
    fn XSetInputFocus(display: *mut c_void, focus: c_ulong, revert: c_int, time: c_ulong) -> c_int;
    fn XGetWMHints(display: *mut c_void, window: c_ulong) -> *mut WmHints;
    fn XFree(data: *mut c_void) -> c_int;
    fn XSync(display: *mut c_void, discard: c_int) -> c_int;
}

/// The start of Xlib's `XWMHints` (only `flags` is read).
#[repr(C)]
struct WmHints {
    flags: c_long,
}

const URGENCY_HINT: c_long = 1 << 8;
/// `None` as a focus: the keyboard goes nowhere.
const NO_WINDOW: c_ulong = 0;
const REVERT_TO_NONE: c_int = 0;
const CURRENT_TIME: c_ulong = 0;

/// A connection to one X display.
pub struct XDisplay(*mut c_void);

impl XDisplay {
    pub fn open(name: &str) -> anyhow::Result<XDisplay> {
        let name = CString::new(name)?;
        // SAFETY: a NUL-terminated name; a null result is checked.
        let display = unsafe { XOpenDisplay(name.as_ptr()) };
        anyhow::ensure!(!display.is_null(), "cannot open the X display");
        Ok(XDisplay(display))
    }

    /// The window with the keyboard focus (0: none; 1: the pointer's).
    pub fn focus(&self) -> u64 {
        let (mut focus, mut revert) = (0, 0);
        // SAFETY: an open display and two out-parameters.
        unsafe { XGetInputFocus(self.0, &mut focus, &mut revert) };
        focus
    }

    /// Takes the keyboard focus away from every window.
    pub fn unfocus(&self) {
        // SAFETY: an open display; setting the focus to None is always allowed.
        unsafe {
            XSetInputFocus(self.0, NO_WINDOW, REVERT_TO_NONE, CURRENT_TIME);
            XSync(self.0, 0);
        }
    }

    /// Whether `window` asks for attention (its WM_HINTS carry the urgency flag).
    pub fn urgent(&self, window: u64) -> bool {
        // SAFETY: an open display; the hints are freed once read; null means none.
        unsafe {
            let hints = XGetWMHints(self.0, window as c_ulong);
            if hints.is_null() {
                return false;
            }
            let urgent = (*hints).flags & URGENCY_HINT != 0;
            XFree(hints.cast());
            urgent
        }
    }
}

impl Drop for XDisplay {
    fn drop(&mut self) {
        // SAFETY: opened by `open`, closed once.
        unsafe { XCloseDisplay(self.0) };
    }
}

// The connection is used from one test at a time, never from two threads at once.
unsafe impl Send for XDisplay {}
