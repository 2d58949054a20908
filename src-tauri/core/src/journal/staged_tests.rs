//! The new bytes are written unnamed and named once on disk: the file a write leaves has the
//! mode a plain creation gives, keeps an existing file's mode, and leaves nothing beside it.

use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;

use super::*;
use crate::workspace::Workspace;

fn write(journal: &Journal, ledger: &Arc<Ledger>, ws: &Workspace, rel: &str, base: Option<&[u8]>) {
    let w = FileWrite::new(
        ws.resolve(rel).expect("resolve"),
        base.map(<[u8]>::to_vec),
        b"new\n".to_vec(),
        crate::orchestration::ledger::TraceEntry {
            task_id: "t".into(),
            intent_id: "INT-1".into(),
            model_id: "m".into(),
            tool: "write_to_file".into(),
            tool_call_id: "c".into(),
            contributor: crate::protocol::Contributor::Ai,
            mutation_declared: None,
            mutation_computed: None,
            approval: crate::orchestration::ledger::ApprovalRecord {
                by: crate::protocol::Approver::Policy,
                at: "2026-01-01T00:00:00Z".into(),
                accepted_hunks: Vec::new(),
                rejected_hunks: Vec::new(),
                edited: false,
                user_hooks: Vec::new(),
            },
            files: Vec::new(),
            extra: Default::default(),
        },
    );
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("rt")
        .block_on(journal.write(ledger.clone(), w, |_| None))
        .expect("write");
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("meta").permissions().mode() & 0o7777
}

#[test]
fn written_files_have_the_mode_a_creation_gives_or_keep_their_own_and_leave_nothing_beside() {
    let tmp = tempfile::tempdir().expect("tmp");
    fs::create_dir_all(tmp.path().join("ws/src")).expect("mkdir");
    let ws = Workspace::new(&tmp.path().join("ws")).expect("ws");
    let ledger = Arc::new(Ledger::with_data_dir(ws.root(), &tmp.path().join("data")));
    let journal = Journal::new(
        ws.root(),
        Arc::new(CheckpointStore::new(&tmp.path().join("data"), ws.root())),
    );
    // What a plain creation gives here (the umask applied to 0o666).
    let plain = tmp.path().join("plain");
    fs::File::create(&plain).expect("create");

    write(&journal, &ledger, &ws, "src/new.rs", None);
    assert_eq!(mode(&ws.root().join("src/new.rs")), mode(&plain));

    let script = ws.root().join("src/run.sh");
    fs::write(&script, "old\n").expect("write");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o751)).expect("chmod");
    write(&journal, &ledger, &ws, "src/run.sh", Some(b"old\n"));
    assert_eq!(mode(&script), 0o751);
    assert_eq!(fs::read(&script).expect("read"), b"new\n");

    let mut names: Vec<String> = fs::read_dir(ws.root().join("src"))
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["new.rs", "run.sh"]);
}
