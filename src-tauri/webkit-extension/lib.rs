//! Mandate's WebKit web process extension: loaded by WebKit into the web process that runs the
//! window's page, it does there what the window does in its own process once the page has
//! settled and when the window loses the focus: give the kernel back the clean pages of code
//! that start-up mapped and idle does not use (`pageout.rs`). The window asks for it with a
//! message (`pageout::MESSAGE`) and is told in the reply how many mappings were advised;
//! nothing in the page can send that message.
//!
//! `no_std`, with no crates: it is built by `build.rs` with `rustc` alone, embedded in the window
//! and written next to Mandate's data when the window starts (`lean::web_extension_dir`).
#![no_std]

#[path = "../src/pageout.rs"]
mod pageout;

use core::ffi::{c_char, c_int, c_ulong, c_void, CStr};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: ends the process; nothing here can panic in practice (no indexing past bounds,
    // no arithmetic that overflows), so this is never reached.
    unsafe { abort() }
}

#[link(name = "c")]
extern "C" {
    fn abort() -> !;
}

/// The precompiled `core` names the unwinder's personality routine in its unwind tables even
/// though this library never unwinds (`panic = abort`); defined here so the library loads.
#[no_mangle]
extern "C" fn rust_eh_personality() {}

#[link(name = "gobject-2.0")]
extern "C" {
    fn g_signal_connect_data(
        instance: *mut c_void,
        signal: *const c_char,
        handler: *const c_void,
        data: *mut c_void,
        destroy: *const c_void,
        flags: c_int,
    ) -> c_ulong;
}

#[link(name = "glib-2.0")]
extern "C" {
    fn g_variant_new_uint32(value: u32) -> *mut c_void;
}

#[link(name = "webkit2gtk-4.1")]
extern "C" {
    fn webkit_user_message_get_name(message: *mut c_void) -> *const c_char;
    fn webkit_user_message_new(name: *const c_char, parameters: *mut c_void) -> *mut c_void;
    fn webkit_user_message_send_reply(message: *mut c_void, reply: *mut c_void);
}

/// WebKit's entry point, called once when the web process loads the extension.
///
/// # Safety
/// Called by WebKit with its `WebKitWebExtension`.
#[no_mangle]
pub unsafe extern "C" fn webkit_web_extension_initialize(extension: *mut c_void) {
    let handler: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void) = page_created;
    // SAFETY: "page-created" passes (WebKitWebExtension*, WebKitWebPage*, gpointer).
    unsafe {
        g_signal_connect_data(
            extension,
            c"page-created".as_ptr(),
            handler as *const c_void,
            core::ptr::null_mut(),
            core::ptr::null(),
            0,
        )
    };
}

unsafe extern "C" fn page_created(_extension: *mut c_void, page: *mut c_void, _: *mut c_void) {
    let handler: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void) -> c_int =
        user_message_received;
    // SAFETY: "user-message-received" passes (WebKitWebPage*, WebKitUserMessage*, gpointer)
    // and wants a gboolean back.
    unsafe {
        g_signal_connect_data(
            page,
            c"user-message-received".as_ptr(),
            handler as *const c_void,
            core::ptr::null_mut(),
            core::ptr::null(),
            0,
        )
    };
}

unsafe extern "C" fn user_message_received(
    _page: *mut c_void,
    message: *mut c_void,
    _: *mut c_void,
) -> c_int {
    // SAFETY: WebKit passes a live message; its name is a NUL-terminated string it owns.
    let name = unsafe { webkit_user_message_get_name(message) };
    if name.is_null() || unsafe { CStr::from_ptr(name) } != pageout::MESSAGE {
        return 0; // not ours
    }
    let advised = pageout::give_back_clean_file_pages();
    // The reply says how many mappings were advised (the window's trace records it). Both the
    // reply and its parameter are floating references, which WebKit takes over.
    unsafe {
        let count = g_variant_new_uint32(u32::try_from(advised).unwrap_or(u32::MAX));
        let reply = webkit_user_message_new(pageout::MESSAGE.as_ptr(), count);
        webkit_user_message_send_reply(message, reply);
    }
    1
}
