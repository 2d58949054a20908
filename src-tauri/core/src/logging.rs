//! Logs people can attach to a bug report: `tracing` into a daily-rotated file in the data
//! directory (`logs/mandate.log.YYYY-MM-DD`, the last seven kept), one span per task and per tool
//! call (tool, intent, hook decision, duration). What goes in: names, ids, paths, decisions,
//! counts and errors. What never goes in: secrets (keys live in `Secret`, whose `Debug` hides
//! them), file contents, prompts and model output.
//!
//! The level is `--log-level` (CLI), else `MANDATE_LOG` (an `EnvFilter` directive such as
//! `mandate_core=debug`), else `info`.

use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{Builder, Rotation};
use tracing_subscriber::EnvFilter;

pub const LOG_DIR: &str = "logs";
const PREFIX: &str = "mandate.log";

/// Keeps the background writer alive; dropping it flushes what is buffered.
pub struct LogGuard {
    _guard: Option<WorkerGuard>,
    pub dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("`{level}` is not a log level (use error, warn, info, debug or trace, or a filter such as mandate_core=debug)")]
    BadLevel { level: String },
    #[error("cannot write logs under {dir}: {message}")]
    Dir { dir: String, message: String },
}

/// The filter for `level` (or `MANDATE_LOG`, or `info`).
fn filter(level: Option<&str>) -> Result<EnvFilter, LogError> {
    let directive = match level {
        Some(l) => l.to_string(),
        None => std::env::var("MANDATE_LOG").unwrap_or_else(|_| "info".into()),
    };
    EnvFilter::try_new(&directive).map_err(|_| LogError::BadLevel { level: directive })
}

/// Checks a `--log-level` value without installing anything (for usage errors).
pub fn check_level(level: &str) -> Result<(), LogError> {
    filter(Some(level)).map(|_| ())
}

/// Installs the process's logger, writing under `data_dir/logs`. Call once, early.
pub fn init(data_dir: &Path, level: Option<&str>) -> Result<LogGuard, LogError> {
    let filter = filter(level)?;
    let dir = data_dir.join(LOG_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| LogError::Dir {
        dir: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let appender = Builder::new()
        .rotation(Rotation::DAILY)
        .filename_prefix(PREFIX)
        .max_log_files(7)
        .build(&dir)
        .map_err(|e| LogError::Dir {
            dir: dir.display().to_string(),
            message: e.to_string(),
        })?;
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .with_target(true)
        .try_init()
        .is_ok();
    Ok(LogGuard {
        _guard: installed.then_some(guard),
        dir,
    })
}

/// The newest log file's last `max_bytes` (for "Copy diagnostics").
pub fn recent(data_dir: &Path, max_bytes: usize) -> Option<String> {
    let dir = data_dir.join(LOG_DIR);
    let newest = std::fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
        .max_by_key(|e| e.file_name())?;
    let text = std::fs::read_to_string(newest.path()).ok()?;
    Some(crate::text::suffix(&text, max_bytes).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_levels_are_named_and_good_ones_accepted() {
        assert!(check_level("debug").is_ok());
        assert!(check_level("mandate_core=trace,warn").is_ok());
        let err = check_level("loud[").expect_err("bad");
        assert!(err.to_string().contains("loud["), "{err}");
    }
}
