//! "Copy diagnostics": one text block a person can paste into a bug report. What goes in: the
//! version, the system, the confinement, the provider and model, the settings and the end of the
//! log. What never does: a key (only where it comes from), the custom instructions' text, a URL's
//! user name, password or query. Every secret the app knows is redacted from the whole block.

use std::fmt::Write as _;

use super::Host;
use crate::protocol::{Budget, SettingsView};

/// Lines of the log at the end of the block.
const LOG_LINES: usize = 200;

/// A URL without what could carry a secret (user info, query, fragment).
fn plain_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "(not a URL)".into(),
    }
}

fn os_name() -> String {
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown distribution".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    format!(
        "{pretty}; {} {}; kernel {kernel}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

fn budget_text(b: &Budget) -> String {
    let mut caps = Vec::new();
    if let Some(c) = b.max_cost_usd {
        caps.push(format!("${c}"));
    }
    if let Some(t) = b.max_tokens {
        caps.push(format!("{t} tokens"));
    }
    if caps.is_empty() {
        "no cap".into()
    } else {
        caps.join(", ")
    }
}

/// The last `n` lines of `text` (n ≥ 1).
fn last_lines(text: &str, n: usize) -> &str {
    let body = text.strip_suffix('\n').unwrap_or(text);
    match body.rmatch_indices('\n').nth(n.saturating_sub(1)) {
        Some((i, _)) => &text[i + 1..],
        None => text,
    }
}

fn settings_lines(out: &mut String, s: &SettingsView) {
    let yes = |b: bool| if b { "yes" } else { "no" };
    let _ = writeln!(
        out,
        "provider: {} (preset {})",
        s.provider.as_str(),
        s.preset
    );
    let _ = writeln!(out, "model: {}", s.model);
    let _ = writeln!(out, "base URL: {}", plain_url(&s.base_url));
    let _ = writeln!(
        out,
        "API key: {} (source: {})",
        if s.api_key_set { "set" } else { "not set" },
        s.api_key_source
    );
    if let Some(e) = &s.keyring_error {
        let _ = writeln!(out, "keyring: cannot be used: {e}");
    }
    let _ = writeln!(
        out,
        "approvals: ask before writes {}, ask before safe commands {}",
        yes(s.approval.ask_before_writes),
        yes(s.approval.ask_before_safe_commands)
    );
    let _ = writeln!(out, "editor: {}", s.editor);
    let _ = writeln!(out, "budget per task: {}", budget_text(&s.budget));
    let _ = writeln!(
        out,
        "custom instructions: {} characters (not included)",
        s.custom_instructions.chars().count()
    );
}

impl Host {
    pub(super) async fn diagnostics(&self) -> String {
        let settings = self.settings_view().await;
        let gov = self.governance();
        let (ledger, _) = self.check_ledger().await;
        let intents = gov.intents.snapshot().view();
        let data = self.dirs.data.clone();
        let (os, log) = tokio::task::spawn_blocking(move || {
            (os_name(), crate::logging::recent(&data, 256 * 1024))
        })
        .await
        .unwrap_or_default();

        let mut out = String::from("Mandate diagnostics\n");
        let _ = writeln!(out, "version: {}", env!("CARGO_PKG_VERSION"));
        let _ = writeln!(out, "system: {os}");
        let c = &settings.confinement;
        let _ = writeln!(
            out,
            "confinement: {}{}",
            c.summary,
            if c.confined {
                ""
            } else {
                " (commands are not confined)"
            }
        );
        for gap in &c.gaps {
            let _ = writeln!(out, "  does not stop: {gap}");
        }
        settings_lines(&mut out, &settings);
        let _ = writeln!(out, "workspace: {}", gov.root().display());
        let _ = writeln!(
            out,
            "intents: {} in {}{}",
            intents.intents.len(),
            intents.path,
            intents
                .error
                .as_deref()
                .map(|e| format!(" (does not load: {e})"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "ledger: {}",
            ledger.as_deref().unwrap_or("chain holds")
        );
        let _ = writeln!(out, "tasks: {}", self.task_list().len());
        match log {
            Some(log) => {
                let _ = writeln!(out, "\nlast {LOG_LINES} lines of the log:");
                out.push_str(last_lines(&log, LOG_LINES));
            }
            None => out.push_str("\nno log file was found\n"),
        }
        // The key is never written above; redacting catches it wherever else it might be.
        let redactor = crate::redact::Redactor::new();
        for profile in self.settings().profiles {
            if let Some(key) = self.profile_key(&profile).await.key {
                redactor.add(key.expose());
            }
        }
        let text = crate::redact::Redactor::global().redact(&out).into_owned();
        redactor.redact(&text).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_what_could_hold_a_secret() {
        assert_eq!(
            plain_url("https://user:pw@example.org/v1?key=abc#x"),
            "https://example.org/v1"
        );
        assert_eq!(plain_url("not a url"), "(not a URL)");
    }

    #[test]
    fn the_last_lines_are_kept() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc\n");
        assert_eq!(last_lines("a\nb\n", 5), "a\nb\n");
        assert_eq!(last_lines("", 5), "");
    }
}
