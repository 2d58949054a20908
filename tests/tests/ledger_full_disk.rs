//! A full disk: the ledger lives on a small tmpfs that fills up. An append that does not fit
//! leaves no partial line, says so, and appends resume once there is space again. Needs the
//! right to mount (root); elsewhere it says why it was skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use mandate_tests::app::mandate_bin;
use serde_json::Value;

const STRESS: &str = env!("CARGO_BIN_EXE_ledger-stress");

/// A mounted tmpfs, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mounting a tmpfs is not permitted here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn run(program: &Path, args: &[&str], data: &Path) -> (bool, String) {
    let out = Command::new(program)
        .args(args)
        .env("MANDATE_DATA_DIR", data)
        .output()
        .expect("run");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn a_full_disk_leaves_no_partial_line_and_appends_resume_with_space() {
    let fs = match Tmpfs::mount("192k") {
        Ok(fs) => fs,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let data = tempfile::tempdir().expect("data dir");
    let ws: PathBuf = fs.path().join("ws");
    std::fs::create_dir_all(ws.join(".orchestration")).expect("mkdir");
    // Ballast to free later.
    std::fs::write(fs.path().join("ballast"), vec![b'.'; 32 * 1024]).expect("ballast");
    let ws_s = ws.display().to_string();

    let (ok, said) = run(STRESS.as_ref(), &["fill", &ws_s], data.path());
    assert!(ok, "{said}");
    assert!(
        said.contains("No space left on device") && said.contains("nothing partial remains"),
        "{said}"
    );
    let text =
        std::fs::read_to_string(ws.join(".orchestration/agent_trace.jsonl")).expect("ledger");
    assert!(text.ends_with('\n'), "no partial last line");
    let records = text.lines().count();
    assert!(records > 10, "{records} records before the disk was full");
    for line in text.lines() {
        let _: Value = serde_json::from_str(line).expect("every line is a whole record");
    }
    let verify = |expect: &str| {
        let (ok, said) = run(
            &mandate_bin(),
            &["trace", "verify", "--workspace", &ws_s],
            data.path(),
        );
        assert!(ok && said.contains(expect), "{said}");
    };
    verify("chain: intact");

    std::fs::remove_file(fs.path().join("ballast")).expect("free space");
    let (ok, said) = run(
        STRESS.as_ref(),
        &["append", &ws_s, "after", "3"],
        data.path(),
    );
    assert!(ok, "{said}");
    let text =
        std::fs::read_to_string(ws.join(".orchestration/agent_trace.jsonl")).expect("ledger");
    assert_eq!(text.lines().count(), records + 3);
    verify(&format!("{} records", records + 3));
    verify("chain: intact");
}
