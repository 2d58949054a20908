//! `mandate trace export`: the ledger's records at the specification's reference location,
//! `.agent-trace/traces.jsonl`, for tools that read it.
//!
//! The file is a copy for other tools, rewritten whole (atomically) on each export; the
//! ledger stays the evidence. Each record is written as it is in the ledger except for its
//! `version`, given in the `x.y.z` form the specification's current README asks for
//! (`0.1.0`), so strict readers accept it (Mandate's `digest` in `metadata` is of the ledger's
//! form). Mandate's own structural records (merges, acceptances: no files) and lines that are
//! not records are left out.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::chain;
use super::ledger::map_ledger;
use crate::fsutil::write_atomic;

pub const EXPORT_FILE: &str = ".agent-trace/traces.jsonl";
pub const EXPORT_VERSION: &str = "0.1.0";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Export {
    pub file: String,
    pub records: usize,
    /// Structural records and lines that are not records, left out.
    pub skipped: usize,
}

/// Writes the export to `out` (default: `.agent-trace/traces.jsonl` in the workspace).
pub fn export(root: &Path, out: Option<&Path>) -> std::io::Result<Export> {
    let target: PathBuf = out.map_or_else(|| root.join(EXPORT_FILE), Path::to_path_buf);
    let map = map_ledger(root)?;
    let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
    let mut text = String::with_capacity(bytes.len());
    let (mut records, mut skipped) = (0, 0);
    for line in chain::split_lines(bytes) {
        let record = serde_json::from_slice::<Value>(line).ok().filter(|r| {
            r.get("files")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty())
        });
        let Some(mut record) = record else {
            skipped += 1;
            continue;
        };
        record["version"] = Value::String(EXPORT_VERSION.into());
        text.push_str(&super::ledger::canonical_json(&record));
        text.push('\n');
        records += 1;
    }
    write_atomic(&target, text.as_bytes())?;
    Ok(Export {
        file: target.display().to_string(),
        records,
        skipped,
    })
}
