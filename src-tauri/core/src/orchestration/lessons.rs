//! `.orchestration/AGENT.md`: lessons shared by every task in the workspace, appended when a
//! command the agent ran fails and when the agent or the user records one.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

pub const LESSONS_FILE: &str = crate::orchestration_file!("AGENT.md");
const HEADER: &str = "# Shared lessons\n\nAppended by Mandate when a command fails or a lesson is recorded. Read by every task.\n";

/// Appends one lesson under a dated heading; the file is created with a header if missing.
pub fn append(root: &Path, source: &str, lesson: &str) -> std::io::Result<()> {
    let path = root.join(LESSONS_FILE);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
    file.lock()?;
    let mut text = String::new();
    if file.metadata()?.len() == 0 {
        text.push_str(HEADER);
    }
    // The lessons file is read by every later task and may be committed: never a secret in it.
    let lesson = crate::redact::Redactor::global()
        .redact(lesson.trim())
        .replace('\r', "");
    let when = super::ledger::now_rfc3339();
    text.push_str(&format!(
        "\n## {} ({source})\n\n",
        crate::text::prefix(&when, 19)
    ));
    for line in lesson.lines() {
        text.push_str(&format!("{line}\n"));
    }
    file.write_all(text.as_bytes())?;
    file.sync_data()?;
    file.unlock()
}

/// The lessons for the prompt, at most `max_bytes` from the end (the newest matter most).
pub fn read_recent(root: &Path, max_bytes: usize) -> Option<String> {
    let text = std::fs::read_to_string(root.join(LESSONS_FILE)).ok()?;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(crate::text::suffix(text, max_bytes).to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn appends_under_a_header() {
        let tmp = tempfile::tempdir().expect("tmp");
        super::append(
            tmp.path(),
            "command failed",
            "`cargo test` needs `--workspace` here",
        )
        .expect("append");
        super::append(tmp.path(), "recorded", "second").expect("append");
        let text = super::read_recent(tmp.path(), 10_000).expect("text");
        assert!(text.starts_with("# Shared lessons"));
        assert_eq!(text.matches("## ").count(), 2);
        assert!(text.contains("(command failed)"));
    }
}
