//! The grant bound to the code it was given for: what changes take it back, and what an
//! entry in the older form is worth.

use std::os::unix::fs::{symlink, PermissionsExt as _};
use std::path::{Path, PathBuf};

use super::*;
use crate::mcp::config::{self, Source};

struct Place {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    out: PathBuf,
}

fn place() -> Place {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = tmp.path().canonicalize().expect("canonical");
    let (ws, out) = (base.join("ws"), base.join("out"));
    std::fs::create_dir_all(&ws).expect("mkdir");
    std::fs::create_dir_all(&out).expect("mkdir");
    executable(&out.join("srv-1"), "#!/bin/sh\necho one\n");
    executable(&out.join("srv-2"), "#!/bin/sh\necho two\n");
    symlink(out.join("srv-1"), out.join("srv")).expect("symlink");
    Place { _tmp: tmp, ws, out }
}

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn stdio(command: &Path, args: &[&Path]) -> Resolved {
    Resolved::Stdio {
        command: command.display().to_string(),
        args: args.iter().map(|a| a.display().to_string()).collect(),
        env: Vec::new(),
    }
}

fn def(resolved: &Resolved) -> ServerDef {
    let Resolved::Stdio { command, args, .. } = resolved else {
        panic!("stdio");
    };
    let text = serde_json::json!({"mcpServers": {"srv": {"command": command, "args": args}}});
    config::parse(&text.to_string(), Source::Settings, "mcp.json")
        .servers
        .remove(0)
}

#[test]
fn a_grant_lapses_when_the_code_it_was_given_for_changes() {
    let p = place();
    let data = p.out.join("data.txt");
    let resolved = stdio(&p.out.join("srv"), &[&data]);
    let def = def(&resolved);
    let grant = grant_for(&p.ws, &def, || Ok(resolved.clone())).expect("granted");
    assert_eq!(grant.definition, def.definition_hash());
    assert_eq!(grant.program, p.out.join("srv-1").display().to_string());
    // The script and the shell its first line names.
    assert_eq!(grant.code.len(), 2, "{grant:?}");
    verify(&grant, &resolved, &p.ws).expect("unchanged");

    // Rewritten in place, same length, at once: found (no cached hash hides it).
    executable(&p.out.join("srv-1"), "#!/bin/sh\necho ONE\n");
    let lapse = verify(&grant, &resolved, &p.ws).expect_err("changed");
    assert_eq!(
        lapse,
        Lapse::Changed(p.out.join("srv-1").display().to_string())
    );
    executable(&p.out.join("srv-1"), "#!/bin/sh\necho one\n");
    verify(&grant, &resolved, &p.ws).expect("as granted again");

    // The link now leads to another program.
    std::fs::remove_file(p.out.join("srv")).expect("rm");
    symlink(p.out.join("srv-2"), p.out.join("srv")).expect("symlink");
    assert!(matches!(
        verify(&grant, &resolved, &p.ws),
        Err(Lapse::Program { .. })
    ));
    std::fs::remove_file(p.out.join("srv")).expect("rm");
    symlink(p.out.join("srv-1"), p.out.join("srv")).expect("symlink");

    // A file its command line names appears: it was not part of what the person saw.
    std::fs::write(&data, "x").expect("write");
    assert_eq!(
        verify(&grant, &resolved, &p.ws),
        Err(Lapse::Added(data.display().to_string()))
    );

    // Repointed into the workspace: refused, not merely stale.
    std::fs::remove_file(&data).expect("rm");
    std::fs::copy(p.out.join("srv-1"), p.ws.join("srv-1")).expect("copy");
    std::fs::remove_file(p.out.join("srv")).expect("rm");
    symlink(p.ws.join("srv-1"), p.out.join("srv")).expect("symlink");
    assert!(matches!(
        verify(&grant, &resolved, &p.ws),
        Err(Lapse::Refused(Refusal::InWorkspace { .. }))
    ));
}

#[test]
fn a_stored_entry_is_in_force_only_for_its_definition_and_code() {
    let p = place();
    let resolved = stdio(&p.out.join("srv"), &[]);
    let def = def(&resolved);
    let grant = grant_for(&p.ws, &def, || Ok(resolved.clone())).expect("granted");
    let now = |entry: &WriteEntry| state(&p.ws, &def, Some(entry), || Ok(resolved.clone()));

    assert_eq!(
        now(&WriteEntry::Bound(grant.clone())),
        GrantState::InForce(Arc::new(grant.clone()))
    );
    assert_eq!(
        state(&p.ws, &def, None, || Ok(resolved.clone())),
        GrantState::NotGranted
    );
    // The form written before grants were bound to code: stale, never granted.
    let older = WriteEntry::Older(serde_json::json!(def.definition_hash()));
    assert_eq!(now(&older), GrantState::Stale(Lapse::Older.to_string()));
    let other = WriteGrant {
        definition: "0".repeat(64),
        ..grant.clone()
    };
    assert_eq!(
        now(&WriteEntry::Bound(other)),
        GrantState::Stale(Lapse::Definition.to_string())
    );
    // Its secrets cannot be filled in: stale, with the reason.
    assert!(matches!(
        state(&p.ws, &def, Some(&WriteEntry::Bound(grant.clone())), || Err("TOKEN is not set".into())),
        GrantState::Stale(why) if why.contains("TOKEN is not set")
    ));
    executable(&p.out.join("srv-1"), "#!/bin/sh\necho changed, longer\n");
    match now(&WriteEntry::Bound(grant)) {
        GrantState::Stale(why) => assert!(
            why.contains(&p.out.join("srv-1").display().to_string()) && why.contains("changed"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_command_line_that_runs_the_workspaces_code_is_never_granted() {
    let p = place();
    std::fs::write(p.ws.join("srv.js"), "code").expect("write");
    executable(&p.out.join("node"), "#!/bin/sh\n");
    let resolved = stdio(&p.out.join("node"), &[Path::new("srv.js")]);
    let def = def(&resolved);
    let err = grant_for(&p.ws, &def, || Ok(resolved.clone())).expect_err("refused");
    let shown = err.to_string();
    assert!(shown.contains("its script `srv.js`"), "{shown}");
    assert!(
        shown.contains(&p.ws.join("srv.js").display().to_string()),
        "{shown}"
    );
    let err = grant_for(&p.ws, &def, || Err("TOKEN is not set".into())).expect_err("unresolved");
    assert!(err.to_string().contains("store its secrets first"), "{err}");
}
