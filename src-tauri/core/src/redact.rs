//! Secrets never leave: every secret value Mandate holds (API keys from the keyring or the
//! environment, later the secrets of MCP servers) is registered here, and every text that is
//! stored or sent to a model (command output, tool results, task history, lessons, notices,
//! the ledger, logs) goes through [`Redactor::redact`] first, or through a [`StreamRedactor`]
//! when it arrives in chunks.
//!
//! A registered value is also found in the usual encodings a command could print it in:
//! base64 (standard and URL-safe, at any alignment inside a longer encoded text), hex, the
//! reversed text and percent-encoding. Redaction is the second line: the first is that a
//! command never gets the value (allow-listed environment, `crate::sandbox`), and that the
//! value leaves Mandate's own environment at start-up ([`scrub_environment`]).

use std::borrow::Cow;
use std::sync::{OnceLock, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";
/// Shorter values are not registered: they would match ordinary words.
pub const MIN_SECRET_LEN: usize = 8;

/// The registered secrets and a matcher over every form of them.
#[derive(Default)]
pub struct Redactor {
    inner: RwLock<Inner>,
}

#[derive(Default)]
struct Inner {
    secrets: Vec<String>,
    patterns: Vec<Vec<u8>>,
    matcher: Option<AhoCorasick>,
    longest: usize,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.inner.read().map(|i| i.secrets.len()).unwrap_or(0);
        write!(f, "Redactor({count} secrets)")
    }
}

impl Redactor {
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// The process-wide registry: register every secret the app holds here.
    pub fn global() -> &'static Redactor {
        static GLOBAL: OnceLock<Redactor> = OnceLock::new();
        GLOBAL.get_or_init(Redactor::new)
    }

    /// Registers a secret value; returns `false` when it is too short to be told apart from
    /// ordinary text (it is then not registered, and the caller should say so).
    pub fn add(&self, secret: &str) -> bool {
        let secret = secret.trim();
        if secret.len() < MIN_SECRET_LEN {
            return false;
        }
        let Ok(mut inner) = self.inner.write() else {
            return false;
        };
        if inner.secrets.iter().any(|s| s == secret) {
            return true;
        }
        inner.secrets.push(secret.to_string());
        let mut patterns: Vec<Vec<u8>> = inner.secrets.iter().flat_map(|s| encodings(s)).collect();
        patterns.sort();
        patterns.dedup();
        patterns.retain(|p| p.len() >= MIN_SECRET_LEN);
        inner.longest = patterns.iter().map(Vec::len).max().unwrap_or(0);
        inner.matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .ok();
        inner.patterns = patterns;
        true
    }

    /// Whether `text` holds a registered secret in any known form.
    pub fn contains_secret(&self, text: &str) -> bool {
        let Ok(inner) = self.inner.read() else {
            return true;
        };
        inner
            .matcher
            .as_ref()
            .is_some_and(|m| m.is_match(text.as_bytes()))
    }

    /// `text` with every registered secret, in every known form, replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Ok(inner) = self.inner.read() else {
            return Cow::Owned(REDACTED.to_string());
        };
        let Some(matcher) = &inner.matcher else {
            return Cow::Borrowed(text);
        };
        if !matcher.is_match(text) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for m in matcher.find_iter(text) {
            // A match may start or end inside a multi-byte character only if the secret
            // does; widen it to whole characters.
            let start = crate::text::floor_boundary(text, m.start()).max(last);
            let end = crate::text::ceil_boundary(text, m.end());
            out.push_str(&text[last..start]);
            out.push_str(REDACTED);
            last = end;
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }

    /// A redactor for output that arrives in chunks (a secret may be split between two).
    pub fn stream(&self) -> StreamRedactor<'_> {
        StreamRedactor {
            redactor: self,
            carry: Vec::new(),
        }
    }

    /// How many bytes at the end of `text` could be the start of a secret in one of its forms:
    /// what a stream holds back until the next chunk says whether it is one. Only those: a
    /// dev server's short "ready" line must show when it is printed, not with the next one.
    fn partial_at_end(&self, text: &[u8]) -> usize {
        let Ok(inner) = self.inner.read() else {
            return 0;
        };
        let max = inner.longest.saturating_sub(1).min(text.len());
        (1..=max)
            .rev()
            .find(|&k| {
                let tail = &text[text.len() - k..];
                inner.patterns.iter().any(|p| p.starts_with(tail))
            })
            .unwrap_or(0)
    }
}

/// The forms of `secret` to look for.
fn encodings(secret: &str) -> Vec<Vec<u8>> {
    let bytes = secret.as_bytes();
    let mut out = vec![
        bytes.to_vec(),
        secret.chars().rev().collect::<String>().into_bytes(),
    ];
    out.push(hex::encode(bytes).into_bytes());
    out.push(hex::encode_upper(bytes).into_bytes());
    let percent: String = bytes.iter().map(|b| format!("%{b:02X}")).collect();
    out.push(percent.clone().into_bytes());
    out.push(percent.to_lowercase().into_bytes());
    // In base64 the secret's characters depend on where it starts inside the encoded text:
    // for each of the three alignments keep the characters made of the secret's bits alone.
    for engine in [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::URL_SAFE,
    ] {
        for shift in 0..3usize {
            let mut padded = vec![0u8; shift];
            padded.extend_from_slice(bytes);
            let encoded = engine.encode(&padded);
            let start = (8 * shift).div_ceil(6);
            let end = (8 * (shift + bytes.len())) / 6;
            if let Some(part) = encoded.get(start..end) {
                out.push(part.as_bytes().to_vec());
            }
        }
    }
    out
}

/// How many bytes at the end of `bytes` are a UTF-8 character not complete yet.
fn incomplete_char_at_end(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(4) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 != 0x80 {
            let len = match byte {
                0xF0.. => 4,
                0xE0.. => 3,
                0xC0.. => 2,
                _ => 1,
            };
            return if len > back { back } else { 0 };
        }
    }
    0
}

/// Redacts output that arrives in chunks: holds back the end of each chunk that could be the
/// start of a secret completed by the next one. Call [`StreamRedactor::finish`] at the end.
pub struct StreamRedactor<'r> {
    redactor: &'r Redactor,
    carry: Vec<u8>,
}

impl StreamRedactor<'_> {
    /// Takes the next chunk of raw output; returns the text that can be passed on now.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        self.carry.extend_from_slice(chunk);
        let keep = self
            .redactor
            .partial_at_end(&self.carry)
            .max(incomplete_char_at_end(&self.carry));
        let mut cut = self.carry.len().saturating_sub(keep);
        // Never cut inside a UTF-8 character.
        while cut > 0 && cut < self.carry.len() && (self.carry[cut] & 0xC0) == 0x80 {
            cut -= 1;
        }
        // A secret that starts before the cut ends after it: pass it on whole, redacted.
        if let Ok(inner) = self.redactor.inner.read() {
            if let Some(matcher) = &inner.matcher {
                for m in matcher.find_iter(&self.carry) {
                    if m.start() < cut && m.end() > cut {
                        cut = m.end();
                    }
                }
            }
        }
        let ready: Vec<u8> = self.carry.drain(..cut).collect();
        self.redactor
            .redact(&String::from_utf8_lossy(&ready))
            .into_owned()
    }

    /// The rest of the output, redacted.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.carry);
        self.redactor
            .redact(&String::from_utf8_lossy(&rest))
            .into_owned()
    }
}

/// Takes the named variables out of Mandate's environment at start-up and registers their
/// values with the global redactor; returns the values found (e.g. `MANDATE_API_KEY`) for the
/// caller to use. `std::env::remove_var` alone leaves the value in `/proc/self/environ`,
/// which shows the block the process started with, so that block is overwritten as well.
///
/// Call it first thing in `main`, before any thread starts: the environment is not
/// thread-safe to change.
pub fn scrub_environment(names: &[&str]) -> Vec<(String, crate::secrets::Secret)> {
    let mut found = Vec::new();
    for name in names {
        if let Ok(value) = std::env::var(name) {
            Redactor::global().add(&value);
            found.push((name.to_string(), crate::secrets::Secret::new(value)));
            // SAFETY: documented above: called before threads exist.
            unsafe { std::env::remove_var(name) };
        }
    }
    if !found.is_empty() {
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        overwrite_initial_environment(&names);
    }
    found
}

/// Overwrites `NAME=value` entries in the environment block the kernel shows as
/// `/proc/self/environ` (between `env_start` and `env_end` of `/proc/self/stat`).
fn overwrite_initial_environment(names: &[&str]) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return;
    };
    // Fields after the command name, which is in parentheses and may contain anything.
    let Some(after) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
        return;
    };
    let fields: Vec<&str> = after.split_whitespace().collect();
    // env_start and env_end are fields 50 and 51; the first after `)` is field 3.
    let parse = |i: usize| fields.get(i).and_then(|f| f.parse::<usize>().ok());
    let (Some(start), Some(end)) = (parse(47), parse(48)) else {
        return;
    };
    if start == 0 || end <= start || end - start > 16 * 1024 * 1024 {
        return;
    }
    // SAFETY: the kernel reports this range as this process's initial environment block,
    // which lies in its own writable stack mapping for the whole life of the process. The
    // variables were removed from `environ` just before, so no live reference reads them.
    let block = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
    let mut at = 0;
    while at < block.len() {
        let len = block[at..]
            .iter()
            .position(|b| *b == 0)
            .unwrap_or(block.len() - at);
        let entry = &mut block[at..at + len];
        if let Some(eq) = entry.iter().position(|b| *b == b'=') {
            if names.iter().any(|n| n.as_bytes() == &entry[..eq]) {
                for b in &mut entry[eq + 1..] {
                    *b = b'x';
                }
            }
        }
        at += len + 1;
    }
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
