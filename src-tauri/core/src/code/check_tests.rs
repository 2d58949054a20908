use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

use super::*;
use crate::code::check_run::{self, CheckFailure, CheckPlace};
use crate::sandbox::Confinement;

/// The fixtures' workspace root (pyright prints absolute paths).
const ROOT: &str = "/home/dev/proj";

/// Each folder of `check_cases/` holds a tool's output as it prints it and the problems read
/// from it; the folder's name (before a `_` suffix) names the tool.
#[test]
fn each_tools_output_reads_as_its_problems() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/code/check_cases");
    let mut seen = 0;
    for entry in std::fs::read_dir(&cases).expect("cases") {
        let dir = entry.expect("entry").path();
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let tool: Tool = serde_json::from_value(serde_json::json!(name))
            .or_else(|_| {
                let first = name.split('_').next().unwrap_or("");
                serde_json::from_value(serde_json::json!(first))
            })
            .unwrap_or_else(|e| panic!("{name}: no tool: {e}"));
        let output = std::fs::read_to_string(dir.join("output.txt")).expect("output");
        let expected: Vec<Problem> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).expect("x"))
                .unwrap_or_else(|e| panic!("{name}/expected.json: {e}"));
        assert_eq!(parse(tool, &output, Path::new(ROOT)), expected, "{name}");
        seen += 1;
    }
    assert!(seen >= 7, "only {seen} cases");
}

fn problem(path: &str, line: u32, message: &str) -> Problem {
    Problem {
        path: path.into(),
        line: Some(line),
        column: Some(1),
        severity: Severity::Error,
        message: message.into(),
        source: Tool::Cargo,
    }
}

#[test]
fn an_old_problem_is_not_new_where_it_moved_and_a_new_one_in_an_untouched_file_is() {
    let before = vec![
        problem("src/old.rs", 3, "unused import"),
        problem("src/lib.rs", 10, "mismatched types"),
    ];
    let now = vec![
        // Lines added above it: the same problem, moved.
        problem("src/lib.rs", 14, "mismatched types"),
        problem("src/old.rs", 3, "unused import"),
        // A file the edit did not touch, broken by it (a changed signature).
        problem("src/untouched.rs", 7, "expected 2 arguments, found 1"),
    ];
    assert_eq!(
        new_problems(&before, &now),
        vec![problem(
            "src/untouched.rs",
            7,
            "expected 2 arguments, found 1"
        )]
    );
    // Fixed problems are simply gone; nothing is new.
    assert_eq!(new_problems(&before, &[]), Vec::<Problem>::new());
}

#[test]
fn a_second_copy_of_an_old_problem_is_new_and_severity_counts() {
    let before = vec![problem("src/lib.rs", 1, "unused variable: `x`")];
    let mut warning = problem("src/lib.rs", 1, "unused variable: `x`");
    warning.severity = Severity::Warning;
    let now = vec![
        problem("src/lib.rs", 1, "unused variable: `x`"),
        problem("src/lib.rs", 8, "unused variable: `x`"),
        warning.clone(),
    ];
    assert_eq!(
        new_problems(&before, &now),
        vec![problem("src/lib.rs", 8, "unused variable: `x`"), warning]
    );
}

#[test]
fn the_description_lists_errors_first_and_counts_the_rest() {
    let mut problems: Vec<Problem> = (1..=5)
        .map(|n| {
            let mut p = problem("src/a.rs", n, &format!("w{n}"));
            p.severity = Severity::Warning;
            p
        })
        .collect();
    problems.push(problem("src/z.rs", 9, "broken"));
    assert_eq!(
        describe(&problems, 3),
        "src/z.rs:9:1: error: broken (cargo)\nsrc/a.rs:1:1: warning: w1 (cargo)\nsrc/a.rs:2:1: warning: w2 (cargo)\n… and 3 more"
    );
    assert_eq!(counted(&problems), "1 error and 5 warnings");
    assert_eq!(counted(&problems[5..]), "1 error");
}

fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().canonicalize().expect("canon").join("ws");
    std::fs::create_dir_all(&root).expect("mkdir");
    for (path, text) in files {
        let abs = root.join(path);
        std::fs::create_dir_all(abs.parent().expect("parent")).expect("mkdir");
        std::fs::write(abs, text).expect("write");
    }
    (tmp, root)
}

fn executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, "#!/bin/sh\n").expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn only_the_checks_that_are_installed_are_offered() {
    let (_tmp, root) = workspace(&[
        ("Cargo.toml", "[package]\nname = \"x\"\n"),
        ("tsconfig.json", "{}"),
        ("pyproject.toml", "[project]\n"),
        ("go.mod", "module x\n"),
    ]);
    let nothing = |_: &str| None;
    assert_eq!(detect(&root, &nothing), vec![]);
    let everything = |name: &str| Some(PathBuf::from(format!("/usr/bin/{name}")));
    assert_eq!(
        detect(&root, &everything),
        vec![
            (Tool::Cargo, "cargo check --message-format=short".into()),
            // No `node_modules/.bin/tsc`: a global tsc may be another version; not offered.
            (
                Tool::Ruff,
                "ruff check --output-format=concise --no-cache".into()
            ),
            (Tool::GoVet, "go vet ./...".into()),
        ]
    );
    executable(&root.join("node_modules/.bin/tsc"));
    executable(&root.join(".venv/bin/pyright"));
    let only_go = |name: &str| (name == "go").then(|| PathBuf::from("/usr/bin/go"));
    assert_eq!(
        detect(&root, &only_go),
        vec![
            (
                Tool::Tsc,
                "node_modules/.bin/tsc --noEmit --pretty false".into()
            ),
            (Tool::Pyright, ".venv/bin/pyright".into()),
            (Tool::GoVet, "go vet ./...".into()),
        ]
    );
}

#[test]
fn the_persons_file_overrides_detection_or_turns_it_off() {
    let (_tmp, root) = workspace(&[("Cargo.toml", "[package]\nname = \"x\"\n")]);
    let set = |text: &str| {
        std::fs::create_dir_all(root.join(".mandate")).expect("mkdir");
        std::fs::write(root.join(CONFIG_FILE), text).expect("write");
        setting(&root)
    };
    assert_eq!(
        set(r#"{"command": "off"}"#),
        Ok(CheckSetting {
            choice: Choice::Off,
            timeout: DEFAULT_TIMEOUT
        })
    );
    assert_eq!(commands(&root), Ok(vec![]));
    assert_eq!(
        set(r#"{"command": "cargo clippy --message-format=short", "timeout_seconds": 300}"#),
        Ok(CheckSetting {
            choice: Choice::Command {
                line: "cargo clippy --message-format=short".into(),
                tool: Tool::Cargo
            },
            timeout: std::time::Duration::from_secs(300)
        })
    );
    assert_eq!(
        set(r#"{"command": "make lint", "format": "tsc"}"#).map(|s| s.choice),
        Ok(Choice::Command {
            line: "make lint".into(),
            tool: Tool::Tsc
        })
    );
    assert_eq!(
        set(r#"{"command": "./scripts/lint.sh"}"#).map(|s| s.choice),
        Ok(Choice::Command {
            line: "./scripts/lint.sh".into(),
            tool: Tool::Other
        })
    );
    assert!(
        set(r#"{"comand": "x"}"#).is_err(),
        "an unknown key is refused"
    );
    assert!(set(r#"{"timeout_seconds": 0}"#).is_err());
    assert!(set("{\"command\": \"a\\nb\"}").is_err());
    // The file is the person's: the agent may not write it, nor a command.
    assert!(crate::workspace::protected_reason(CONFIG_FILE).is_some());
}

/// The confinement levels this machine offers (Landlock alone, then with bubblewrap).
fn levels() -> Vec<Confinement> {
    let here = Confinement::detect();
    let mut out = Vec::new();
    if here.landlock_abi.is_some() {
        out.push(Confinement::from_parts(here.landlock_abi, None));
        if here.bwrap.is_some() {
            out.push(here);
        }
    }
    out
}

/// Every file under `root` with its bytes and mode.
fn tree(root: &Path) -> Vec<(String, Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("dir") {
            let path = entry.expect("entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("meta");
            let rel = path.strip_prefix(root).expect("rel").display().to_string();
            if meta.is_dir() {
                dirs.push(path.clone());
                out.push((rel, Vec::new(), meta.permissions().mode()));
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out.push((rel, bytes, meta.permissions().mode()));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_hostile_check_cannot_change_the_workspace() {
    let levels = levels();
    if levels.is_empty() {
        eprintln!("no Landlock here: nothing to test");
        return;
    }
    for confinement in levels {
        let (tmp, root) = workspace(&[
            ("src/main.rs", "fn main() {}\n"),
            ("target/debug/keep", "build output\n"),
            (".mandate/check.json", "{\"command\": \"off\"}\n"),
        ]);
        let before = tree(&root);
        let cache = tmp
            .path()
            .canonicalize()
            .expect("canon")
            .join("cache/build");
        // What a configured command (or a build script `cargo check` runs) could try.
        let line = "touch x; echo hacked > src/main.rs; rm -f src/main.rs; touch target/debug/new; \
                    echo '{}' > .mandate/check.json; chmod 777 src/main.rs; mkdir evil; \
                    mkdir -p \"$CARGO_TARGET_DIR\" && touch \"$CARGO_TARGET_DIR/reached\"; touch \"$CARGO_TARGET_DIR/../../beside\"; \
                    echo 'src/main.rs:1:1: error: ran to the end'; exit 1";
        let commands = vec![CheckCommand {
            tool: Tool::Other,
            line: line.into(),
            timeout: std::time::Duration::from_secs(30),
        }];
        let policy = crate::hooks::command_policy::CommandPolicy::builtin();
        let place = CheckPlace {
            root: &root,
            confinement: &confinement,
            app_dirs: &[],
            settings: policy.confinement(),
            cache_dir: Some(&cache),
        };
        let checked = check_run::run(&commands, &place, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", confinement.summary()));
        assert_eq!(
            checked.problems,
            vec![Problem {
                path: "src/main.rs".into(),
                line: Some(1),
                column: Some(1),
                severity: Severity::Error,
                message: "ran to the end".into(),
                source: Tool::Other,
            }],
            "{}",
            confinement.summary()
        );
        assert_eq!(tree(&root), before, "{}", confinement.summary());
        // Its own cache is where it may write.
        assert!(cache.join("target/reached").exists());
        // Nothing beside it (where Mandate keeps the last result).
        assert!(!cache.join("../beside").exists());
        eprintln!("held under {}", confinement.summary());
    }
}

#[tokio::test]
async fn a_check_that_runs_too_long_is_stopped_and_said() {
    let Some(confinement) = levels().pop() else {
        return;
    };
    let (_tmp, root) = workspace(&[("src/main.rs", "fn main() {}\n")]);
    let commands = vec![CheckCommand {
        tool: Tool::Other,
        line: "sleep 30".into(),
        timeout: std::time::Duration::from_millis(300),
    }];
    let policy = crate::hooks::command_policy::CommandPolicy::builtin();
    let place = CheckPlace {
        root: &root,
        confinement: &confinement,
        app_dirs: &[],
        settings: policy.confinement(),
        cache_dir: None,
    };
    let started = std::time::Instant::now();
    let failure = check_run::run(&commands, &place, &Default::default()).await;
    assert!(
        matches!(failure, Err(CheckFailure::TimedOut { .. })),
        "{failure:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let missing = vec![CheckCommand {
        tool: Tool::Other,
        line: "no-such-checker --all".into(),
        timeout: std::time::Duration::from_secs(10),
    }];
    let failure = check_run::run(&missing, &place, &Default::default()).await;
    assert!(
        matches!(failure, Err(CheckFailure::NotFound { .. })),
        "{failure:?}"
    );
}
