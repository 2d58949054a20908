//! `mandate trace …`: verify (and `--git`), blame, merge, anchor, report, validate, export.
//! The `--json` outputs carry a `schema` field naming their stable form (see the README).

use std::path::Path;

use serde::Serialize;

use super::inspect::{blame, print_json};
use super::{ReportFormat, TraceAction, EXIT_ERROR, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::orchestration::anchor::{self, AnchorError, GitVerification, TRAILER};
use crate::orchestration::heads::HeadStore;
use crate::orchestration::ledger::{map_file, LEDGER_FILE};
use crate::orchestration::{export, merge, report, trace, validate};
use crate::protocol::{FindingKind, VerifyReport};
use crate::settings::AppDirs;

pub const VERIFY_SCHEMA: &str = "mandate.trace.verify/1";

pub fn trace(root: &Path, action: TraceAction, json: bool) -> i32 {
    match action {
        TraceAction::Verify { git } => verify(root, git.as_deref(), json),
        TraceAction::Blame { target } => blame(root, target, json),
        TraceAction::Merge {
            ours, theirs, path, ..
        } => merge_driver(root, &ours, &theirs, path.as_deref()),
        TraceAction::Anchor { message_file } => anchor_cmd(root, message_file.as_deref(), json),
        TraceAction::Report { range, format } => {
            report_cmd(root, &range, json || format == ReportFormat::Json)
        }
        TraceAction::Validate { file, strict } => validate_cmd(&file, strict, json),
        TraceAction::Export { output } => export_cmd(root, output.as_deref(), json),
    }
}

fn heads(root: &Path) -> HeadStore {
    HeadStore::new(&AppDirs::from_env().data, root)
}

fn anchor_exit(e: &AnchorError) -> i32 {
    match e {
        AnchorError::NotARepository(_) | AnchorError::BadRange(_) => EXIT_USAGE,
        AnchorError::Git(_) | AnchorError::Io(_) => EXIT_ERROR,
    }
}

#[derive(Serialize)]
struct VerifyOutput<'a> {
    schema: &'static str,
    /// `intact` or `tampered`.
    status: &'static str,
    exit_code: i32,
    #[serde(flatten)]
    report: &'a VerifyReport,
    notes: &'a [String],
    git: Option<&'a GitVerification>,
}

fn verify(root: &Path, git: Option<&str>, json: bool) -> i32 {
    let verification = match trace::verify_with(root, &heads(root)) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("mandate: cannot read the trace ledger: {e}");
            return EXIT_ERROR;
        }
    };
    let git_check = match git.map(|range| anchor::verify_git(root, Some(range))) {
        None => None,
        Some(Ok(g)) => Some(g),
        Some(Err(e)) => {
            eprintln!("mandate: {e}");
            return anchor_exit(&e);
        }
    };
    let report = &verification.report;
    let intact = report.chain_ok && git_check.as_ref().is_none_or(GitVerification::intact);
    let exit_code = if intact { EXIT_OK } else { EXIT_FAILED };
    if json {
        print_json(&VerifyOutput {
            schema: VERIFY_SCHEMA,
            status: if intact { "intact" } else { "tampered" },
            exit_code,
            report,
            notes: &verification.notes,
            git: git_check.as_ref(),
        });
        return exit_code;
    }
    println!(
        "{} records, {} ranges: {} intact, {} moved, {} superseded, {} changed by someone else, {} missing",
        report.records, report.ranges, report.intact, report.moved, report.superseded, report.changed, report.missing
    );
    for f in &report.findings {
        let kind = match f.kind {
            FindingKind::Intact => "intact",
            FindingKind::Moved => "moved",
            FindingKind::Changed => "changed",
            FindingKind::Missing => "missing",
            FindingKind::Tampered => "TAMPERED",
            FindingKind::Malformed => "MALFORMED",
        };
        let place = match (&f.path, &f.range) {
            (Some(p), Some(r)) => format!(" {p}:{}-{}", r.start_line, r.end_line),
            (Some(p), None) => format!(" {p}"),
            _ => String::new(),
        };
        let line = if f.ledger_line == 0 {
            "ledger".to_string()
        } else {
            format!("line {}", f.ledger_line)
        };
        println!("  {line}: {kind}{place}: {}", f.detail);
    }
    for n in &verification.notes {
        println!("note: {n}");
    }
    if let Some(g) = &git_check {
        print_git(g);
    }
    println!(
        "{}",
        if report.chain_ok {
            "chain: intact"
        } else {
            "chain: BROKEN (the ledger was tampered with)"
        }
    );
    if git_check.is_some() {
        println!(
            "{}",
            if intact {
                "git: intact"
            } else {
                "git: TAMPERED (anchored records were rewritten or dropped)"
            }
        );
    }
    exit_code
}

fn print_git(g: &GitVerification) {
    println!(
        "git {}: {} commits, {} anchors checked against the ledger at {} ({} records){}",
        g.range,
        g.commits,
        g.anchors,
        &g.end[..g.end.len().min(12)],
        g.records,
        if g.unanchored > 0 {
            format!(
                "; {} commits changed the ledger without an anchor (no commit hook: run `mandate init`)",
                g.unanchored
            )
        } else {
            String::new()
        }
    );
    for c in &g.chain_problems {
        println!(
            "  ledger at {} line {}: TAMPERED: {}",
            &g.end[..g.end.len().min(12)],
            c.line,
            c.detail
        );
    }
    for p in &g.problems {
        println!(
            "  commit {} ({}): TAMPERED: {}",
            &p.commit[..p.commit.len().min(12)],
            p.subject,
            p.detail
        );
    }
}

/// Git runs this with the work tree's top level as the current directory; PATH (%P) says
/// which ledger it is, so the merge's tip is vouched for in that workspace's heads.
fn merge_driver(root: &Path, ours: &Path, theirs: &Path, path: Option<&str>) -> i32 {
    let map = |p: &Path| {
        std::fs::File::open(p)
            .and_then(|f| map_file(&f, true))
            .map_err(|e| {
                eprintln!("mandate: cannot read {}: {e}", p.display());
                EXIT_ERROR
            })
    };
    let (ours_map, theirs_map) = match (map(ours), map(theirs)) {
        (Ok(o), Ok(t)) => (o, t),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    // OURS is mapped while the result is written: write beside it, then rename over it.
    let name = ours
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = ours.with_file_name(format!(".{name}.mandate-merge-{}", std::process::id()));
    let written = (|| {
        let file = std::fs::File::create(&tmp)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let summary = merge::merge_to(
            ours_map.as_deref().unwrap_or(&[]),
            theirs_map.as_deref().unwrap_or(&[]),
            &mut out,
        )?;
        out.into_inner().map_err(|e| e.into_error())?;
        std::fs::rename(&tmp, ours)?;
        Ok::<_, merge::MergeWriteError>(summary)
    })();
    let merged = match written {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            eprintln!("mandate: cannot merge {}: {e}", path.unwrap_or(LEDGER_FILE));
            return match e {
                merge::MergeWriteError::Merge(_) => EXIT_FAILED,
                merge::MergeWriteError::Io(_) => EXIT_ERROR,
            };
        }
    };
    let workspace = match path.and_then(|p| p.strip_suffix(LEDGER_FILE)) {
        Some(dir) => root.join(dir),
        None => root.to_path_buf(),
    };
    if let Some(tip) = &merged.merge_tip {
        if let Err(e) = heads(&workspace).record_merge(tip) {
            eprintln!("mandate: the ledgers were merged, but {e}; `trace verify` will not vouch for the merge until it is committed");
        }
        eprintln!(
            "mandate: merged the trace ledger: {} shared records, {} from ours, {} from theirs, joined by a merge record",
            merged.common, merged.from_ours, merged.from_theirs
        );
    }
    EXIT_OK
}

fn anchor_cmd(root: &Path, message_file: Option<&Path>, json: bool) -> i32 {
    let anchor = match anchor::staged_anchor(root) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mandate: {e}");
            return anchor_exit(&e);
        }
    };
    let Some(anchor) = anchor else {
        // Nothing staged: nothing to anchor.
        if json {
            print_json(&serde_json::json!({"anchor": null}));
        }
        return EXIT_OK;
    };
    if let Some(file) = message_file {
        if let Err(e) = anchor::write_trailer(root, file, &anchor) {
            eprintln!("mandate: {e}");
            return anchor_exit(&e);
        }
    }
    if json {
        print_json(
            &serde_json::json!({"anchor": anchor, "trailer": format!("{TRAILER}: {}", anchor.value())}),
        );
    } else if message_file.is_none() {
        println!("{TRAILER}: {}", anchor.value());
    }
    EXIT_OK
}

fn report_cmd(root: &Path, range: &str, json: bool) -> i32 {
    match report::report(root, range) {
        Ok(r) => {
            if json {
                print_json(&r);
            } else {
                print!("{}", report::markdown(&r));
            }
            EXIT_OK
        }
        Err(e) => {
            eprintln!("mandate: {e}");
            anchor_exit(&e)
        }
    }
}

fn validate_cmd(file: &Path, strict: bool, json: bool) -> i32 {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("mandate: cannot read {}: {e}", file.display());
            return if e.kind() == std::io::ErrorKind::NotFound {
                EXIT_USAGE
            } else {
                EXIT_ERROR
            };
        }
    };
    let v = validate::validate(&file.display().to_string(), &bytes, strict);
    if json {
        print_json(&v);
    } else {
        for i in &v.issues {
            let level = match i.severity {
                validate::Severity::Error => "error",
                validate::Severity::Warning => "warning",
            };
            let at = if i.pointer.is_empty() {
                String::new()
            } else {
                format!(" {}", i.pointer)
            };
            println!("line {}: {level}{at}: {}", i.line, i.message);
        }
        if v.issues.len() < v.errors + v.warnings {
            println!("(only the first {} issues are listed)", v.issues.len());
        }
        println!(
            "{}: {} records, {} valid; {} errors, {} warnings",
            v.file, v.records, v.valid, v.errors, v.warnings
        );
    }
    if v.ok() {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

fn export_cmd(root: &Path, output: Option<&Path>, json: bool) -> i32 {
    match export::export(root, output) {
        Ok(e) => {
            if json {
                print_json(&e);
            } else {
                println!(
                    "wrote {} records to {} ({} lines left out: merges, acceptances, lines that are not records)",
                    e.records, e.file, e.skipped
                );
            }
            EXIT_OK
        }
        Err(e) => {
            eprintln!("mandate: cannot export the trace ledger: {e}");
            EXIT_ERROR
        }
    }
}
