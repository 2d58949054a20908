//! Gives the kernel back the pages of code and read-only data that a process mapped from files
//! and does not use while idle. Almost all are clean copies of files, dropped without writing
//! anything; what runs again later is mapped again from the page cache on its first use. The
//! exception is a library's relocated data, made read-only after the loader wrote it (RELRO, a
//! few pages per library): where there is swap, those go there. Writable and shared mappings
//! are left alone (their pages are private copies or shared memory, which this would push to
//! swap).
//!
//! Written with `core` alone and the C library's calls, because the same file is built into the
//! window (`lean.rs`) and into the web process extension (`webkit-extension/lib.rs`, a `no_std`
//! library loaded by WebKit's web process), which must stay small.

use core::ffi::{c_char, c_int, c_void};

/// The name of the message the window sends the web process extension to do the same there.
pub const MESSAGE: &core::ffi::CStr = c"mandate:give-back-idle-pages";

const O_RDONLY: c_int = 0;
const O_CLOEXEC: c_int = 0o2000000;
const MADV_PAGEOUT: c_int = 21;

#[link(name = "c")]
extern "C" {
    fn open(path: *const c_char, flags: c_int, ...) -> c_int;
    fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize;
    fn close(fd: c_int) -> c_int;
    fn madvise(addr: *mut c_void, length: usize, advice: c_int) -> c_int;
}

/// Advises `MADV_PAGEOUT` over every read-only mapping of a file in this process, as
/// `/proc/self/maps` lists them. Returns how many mappings were advised.
pub fn give_back_clean_file_pages() -> usize {
    // SAFETY: a constant, NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { open(c"/proc/self/maps".as_ptr(), O_RDONLY | O_CLOEXEC) };
    if fd < 0 {
        return 0;
    }
    let mut buf = [0u8; 4096];
    let mut line = MapsLine::default();
    let mut advised = 0;
    loop {
        // SAFETY: reads at most `buf.len()` bytes into `buf`.
        let n = unsafe { read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        for &byte in &buf[..n as usize] {
            if let Some((start, end)) = line.push(byte) {
                // SAFETY: advice on a read-only file mapping of this process, as listed by the
                // kernel; its contents stay as they are (they are read back from the file when
                // next used). A mapping gone since the listing makes the call fail, which is
                // ignored.
                unsafe { madvise(start as *mut c_void, end - start, MADV_PAGEOUT) };
                advised += 1;
            }
        }
    }
    // SAFETY: the descriptor opened above.
    unsafe { close(fd) };
    advised
}

/// One line of `/proc/PID/maps`, read a byte at a time:
/// `start-end perms offset device inode   path` (the path may hold spaces, or be missing).
#[derive(Default)]
pub struct MapsLine {
    /// Index of the field being read (0 = range, 1 = perms, …, 5 = path).
    field: u8,
    /// Bytes read of the current field.
    at: u16,
    in_space: bool,
    start: usize,
    end: usize,
    after_dash: bool,
    read_only: bool,
    shared: bool,
    file: bool,
    bad: bool,
}

impl MapsLine {
    /// Takes the next byte; at the end of a line, returns the range to advise if the line is a
    /// read-only mapping of a file, and starts over.
    pub fn push(&mut self, byte: u8) -> Option<(usize, usize)> {
        if byte == b'\n' {
            let done = core::mem::take(self);
            let wanted = !done.bad
                && done.field >= 5
                && done.file
                && done.read_only
                && !done.shared
                && done.after_dash
                && done.end > done.start;
            return wanted.then_some((done.start, done.end));
        }
        if self.field >= 5 {
            return None; // the rest of the path
        }
        if byte == b' ' {
            self.in_space = true;
            return None;
        }
        if self.in_space {
            self.in_space = false;
            self.field += 1;
            self.at = 0;
            if self.field == 5 {
                self.file = byte == b'/';
                return None;
            }
        }
        match self.field {
            0 => match byte {
                b'-' if !self.after_dash => self.after_dash = true,
                _ => match (byte as char).to_digit(16) {
                    Some(digit) => {
                        let value = if self.after_dash {
                            &mut self.end
                        } else {
                            &mut self.start
                        };
                        match value
                            .checked_mul(16)
                            .and_then(|v| v.checked_add(digit as usize))
                        {
                            Some(v) => *value = v,
                            None => self.bad = true,
                        }
                    }
                    None => self.bad = true,
                },
            },
            // "r-xp": the second letter says whether the mapping can be written, the fourth
            // whether it is shared.
            1 if self.at == 1 => self.read_only = byte == b'-',
            1 if self.at == 3 => self.shared = byte == b's',
            _ => {}
        }
        self.at = self.at.saturating_add(1);
        None
    }
}

#[cfg(test)]
#[path = "pageout_tests.rs"]
mod tests;
