//! Confinement figures: what confining a command adds to starting it, and finding every change
//! a command made in a 50,000-file workspace.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mandate_core::changes::{self, Snapshot};
use mandate_core::hooks::command_policy::CommandPolicy;
use mandate_core::hooks::ignore_list::IntentIgnore;
use mandate_core::redact::Redactor;
use mandate_core::sandbox::{ConfinedCommand, Confinement, Io, SandboxRequest};

use super::{data, median, ms, Row};

/// Confinement set-up per command: the sandbox built (scope directories, build outputs,
/// environment), the Landlock ruleset, then `bash -c true` spawned (from the spawner thread,
/// as Mandate does) and waited for; against
/// the same `bash --noprofile --norc -c true` spawned bare, interleaved in the same run.
pub fn setup(root: &Path) -> Vec<Row> {
    let dir = data::cached(root, "confine", "v1", |d| {
        for sub in ["src/auth", "src/db", "docs", "target", ".orchestration"] {
            std::fs::create_dir_all(d.join(sub)).expect("mkdir");
        }
        std::fs::write(d.join("Cargo.toml"), "[package]\n").expect("write");
    });
    let ws = dir.canonicalize().expect("ws");
    let policy = CommandPolicy::builtin();
    let ignore = IntentIgnore::empty();
    let before = Snapshot::take(&ws);
    let temp = mandate_core::sandbox::private_temp_dir().expect("temp");
    let scope = vec!["src/auth/**".to_string(), "docs/*.md".to_string()];
    let redactor = Redactor::new();
    let here = Confinement::detect();
    let mut levels = Vec::new();
    if here.landlock_abi.is_some() {
        levels.push(Confinement::from_parts(here.landlock_abi, None));
        if here.bwrap.is_some() {
            levels.push(here.clone());
            // Informative: bubblewrap building each command's whole view, as before the
            // namespace kept for the session (and where none can be kept).
            levels.push(here.clone().bwrap_per_command());
        }
    }
    let bare = || {
        let t = Instant::now();
        let status = Command::new(mandate_core::sandbox::bash())
            .args(["--noprofile", "--norc", "-c", "true"])
            .stdin(Stdio::null())
            .status();
        assert!(status.is_ok_and(|s| s.success()));
        t.elapsed()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut rows = Vec::new();
    for level in levels {
        let per_command = level.bwrap.is_some() && level != here;
        let mut parts: [Vec<Duration>; 3] = Default::default();
        let mut confined = || {
            let t = Instant::now();
            let sandbox = SandboxRequest {
                workspace: &ws,
                cwd: &ws,
                owned_scope: &scope,
                ignore: &ignore,
                settings: policy.confinement(),
                before: &before,
                temp_dir: temp.path(),
                network: false,
                write_git: false,
                app_dirs: &[],
                redactor: &redactor,
            }
            .build()
            .expect("sandbox");
            let built = t.elapsed();
            let mut cmd = ConfinedCommand::command(&sandbox, &level, "true").expect("command");
            cmd.stdin(Io::Null);
            let prepared = t.elapsed();
            // As Mandate starts it: from the spawner thread, waited for in a runtime.
            let status = rt.block_on(async { mandate_core::sandbox::spawn(cmd)?.wait().await });
            assert!(status.is_ok_and(|s| s.success()), "confined `true` failed");
            let total = t.elapsed();
            parts[0].push(built);
            parts[1].push(prepared - built);
            parts[2].push(total - prepared);
            total
        };
        // bubblewrap alone with the arguments every command gets, run as the bare `bash` is:
        // what bubblewrap's own start costs on this machine before anything of Mandate's.
        let floor = |bwrap: &Path| {
            let t = Instant::now();
            let status = Command::new(bwrap)
                .args(mandate_core::sandbox::bwrap_fixed_arguments())
                .arg("--")
                .arg(mandate_core::sandbox::bash())
                .args(["--noprofile", "--norc", "-c", "true"])
                .stdin(Stdio::null())
                .status();
            assert!(status.is_ok_and(|s| s.success()), "bwrap alone failed");
            t.elapsed()
        };
        let first_bare = bare();
        // The first command at this level: everything kept per session (the watchdog, the
        // spawner thread, the hidden paths and the secrets found around the workspace, the
        // namespace kept for the session) is made here.
        let first = confined();
        // The first run counts in the median too.
        let (mut plain, mut boxed, mut alone) = (vec![first_bare], vec![first], Vec::new());
        for _ in 0..100 {
            plain.push(bare());
            if let (Some(bwrap), false) = (&level.bwrap, per_command) {
                alone.push(floor(bwrap));
            }
            boxed.push(confined());
        }
        let (plain, boxed) = (median(plain), median(boxed));
        let [built, prepared, spawned] = parts.map(median);
        println!(
            "    {}: sandbox built {}, ruleset and arguments {}, spawn to exit {}",
            level.summary(),
            ms(built),
            ms(prepared),
            ms(spawned)
        );
        let added = boxed.saturating_sub(plain);
        let alone = (!alone.is_empty()).then(|| median(alone));
        rows.push(Row {
            figure: match (level.bwrap.is_some(), per_command) {
                (true, false) => "command confinement set-up, landlock + bwrap (median)",
                (true, true) => {
                    "  ... bubblewrap per command, as before the kept namespace (median)"
                }
                _ => "command confinement set-up, landlock only (median)",
            },
            measured: format!(
                "{} (+{}); first run {} (+{})",
                ms(boxed),
                ms(added),
                ms(first),
                ms(first.saturating_sub(first_bare))
            ),
            reference: format!("bare bash -c true {}", ms(plain)),
            ratio: format!("{:.2}x", boxed.as_secs_f64() / plain.as_secs_f64()),
            budget: if per_command {
                "(informative)"
            } else {
                "<= +5 ms"
            },
            ok: per_command || added <= Duration::from_millis(5),
        });
        if let Some(alone) = alone.filter(|_| !per_command) {
            rows.push(Row {
                figure: "  ... bubblewrap alone, the arguments every command gets (median)",
                measured: format!(
                    "{} (+{}); a command in the kept namespace {} faster",
                    ms(alone),
                    ms(alone.saturating_sub(plain)),
                    ms(alone.saturating_sub(boxed))
                ),
                reference: format!("bare bash -c true {}", ms(plain)),
                ratio: format!("{:.2}x", alone.as_secs_f64() / plain.as_secs_f64()),
                budget: "(informative)",
                ok: true,
            });
        }
    }
    if rows.is_empty() {
        println!("    no confinement on this machine: set-up not measured");
    }
    rows
}

/// Change detection after a command in a 50,000-file workspace: the snapshot before and
/// after (every entry, `.git/` and ignored files included) and the diff, with 20 files
/// changed, created or deleted in between; `find` stamping the same tree is the reference.
pub fn detection(root: &Path) -> Vec<Row> {
    let dir = data::cached(root, "hooks", "v1", data::hooks_workspace);
    let scratch = dir.join("mod0999/bench-scratch");
    let once = || {
        let _ = std::fs::remove_dir_all(&scratch);
        let t = Instant::now();
        let before = Snapshot::take(&dir);
        let took_before = t.elapsed();
        std::fs::create_dir_all(&scratch).expect("mkdir");
        for i in 0..20 {
            std::fs::write(scratch.join(format!("new{i}.rs")), "x").expect("write");
        }
        let t = Instant::now();
        let mut after = Snapshot::take(&dir);
        let found = changes::diff(&before, &mut after);
        let took_after = t.elapsed();
        assert_eq!(found.len(), 21, "the scratch directory and its 20 files");
        (took_before, took_after, before.len())
    };
    once();
    let mut befores = Vec::new();
    let mut afters = Vec::new();
    let mut entries = 0;
    for _ in 0..7 {
        let (b, a, n) = once();
        befores.push(b);
        afters.push(a);
        entries = n;
    }
    // Under bubblewrap only the writable directories are read again (here one module).
    let within = vec!["mod0999".to_string()];
    let _ = std::fs::remove_dir_all(&scratch);
    let before_all = Snapshot::take(&dir);
    std::fs::create_dir_all(&scratch).expect("mkdir");
    for i in 0..20 {
        std::fs::write(scratch.join(format!("new{i}.rs")), "x").expect("write");
    }
    let mut partial = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        let mut after = Snapshot::take_within(&dir, &within);
        let found = changes::diff_within(&before_all, &mut after, &within);
        partial.push(t.elapsed());
        assert_eq!(found.len(), 21);
    }
    let partial = median(partial);
    let _ = std::fs::remove_dir_all(&scratch);
    let (before, after) = (median(befores), median(afters));
    let find = {
        let run = || {
            let t = Instant::now();
            let ok = Command::new("find")
                .arg(&dir)
                .args(["-printf", "%s %T@ %C@ %i %m\\n"])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            ok.then(|| t.elapsed())
        };
        run();
        let v: Vec<Duration> = (0..5).filter_map(|_| run()).collect();
        (!v.is_empty()).then(|| median(v))
    };
    println!(
        "    change detection: {entries} entries; snapshot before the command {}, after it + diff {}",
        ms(before),
        ms(after)
    );
    vec![
        Row {
            figure: "change detection after a command, 50k files (full snapshot + diff)",
            measured: ms(after),
            reference: find.map_or("find not found".into(), |f| {
                format!("find -printf stat {}", ms(f))
            }),
            ratio: find.map_or(String::new(), |f| {
                format!("{:.2}x", after.as_secs_f64() / f.as_secs_f64())
            }),
            budget: "<= 100 ms",
            ok: after <= Duration::from_millis(100),
        },
        Row {
            figure: "  ... under bubblewrap (only the writable directories read again)",
            measured: ms(partial),
            reference: String::new(),
            ratio: String::new(),
            budget: "<= 100 ms",
            ok: partial <= Duration::from_millis(100),
        },
    ]
}

/// What keeping nested repositories' `.git` (all but their objects) before each run costs: a
/// workspace of 50 vendored clones with 20 files and 3 commits each, the copies taken as under
/// bubblewrap (only the nested `.git`); the snapshot of the same workspace is the reference.
pub fn nested_images(root: &Path) -> Vec<Row> {
    let dir = data::cached(root, "nested-git", "v1", |d| {
        for r in 0..50 {
            let repo = d.join(format!("vendor/rep{r:02}"));
            std::fs::create_dir_all(&repo).expect("mkdir");
            let git = |args: &[&str]| {
                let ok = Command::new("git")
                    .args(["-c", "user.name=b", "-c", "user.email=b@b"])
                    .args(["-c", "commit.gpgsign=false"])
                    .args(args)
                    .current_dir(&repo)
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                assert!(ok, "git {args:?}");
            };
            git(&["init", "-q"]);
            for c in 0..3 {
                for f in 0..20 {
                    std::fs::write(repo.join(format!("f{f:02}.rs")), format!("// {c}\n"))
                        .expect("write");
                }
                git(&["add", "."]);
                git(&["commit", "-qm", &format!("c{c}")]);
            }
        }
    });
    let bound: Vec<String> = (0..50).map(|r| format!("vendor/rep{r:02}/.git")).collect();
    let mut snapshots = Vec::new();
    let (mut copies, mut copies_bound) = (Vec::new(), Vec::new());
    let mut kept = 0;
    for _ in 0..9 {
        let t = Instant::now();
        let before = Snapshot::take(&dir);
        snapshots.push(t.elapsed());
        let t = Instant::now();
        let images = changes::BeforeImages::capture_with(&before, false);
        copies.push(t.elapsed());
        kept = images.kept_bytes();
        let t = Instant::now();
        let images = changes::BeforeImages::capture_except(&before, false, &bound);
        copies_bound.push(t.elapsed());
        assert_eq!(images.kept_bytes(), 0);
    }
    let (snapshot, copy, bound) = (median(snapshots), median(copies), median(copies_bound));
    println!(
        "    nested .git kept before a run: 50 clones, {} KiB copied in {} ({} when bubblewrap binds them read-only); snapshot {}",
        kept / 1024,
        ms(copy),
        ms(bound),
        ms(snapshot)
    );
    vec![Row {
        figure: "nested repositories' .git kept before a run (Landlock alone), 50 clones (median)",
        measured: ms(copy),
        reference: format!("snapshot of the same workspace {}", ms(snapshot)),
        ratio: format!("{:.2}x", copy.as_secs_f64() / snapshot.as_secs_f64()),
        budget: "<= the snapshot",
        ok: copy <= snapshot,
    }]
}
