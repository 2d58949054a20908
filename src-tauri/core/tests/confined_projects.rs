//! Real projects still build and test under confinement: `cargo test` (offline, no
//! dependencies), `npm test` running a node script, and `pytest`, each through the governed
//! entry point (`run_governed`) with an intent owning the sources. Their build and test code
//! is the agent's to write, so each project also tries, from inside its build or tests, to
//! rewrite the ledger, write outside the workspace and reach the network: the tests must pass
//! and none of that may happen.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mandate_core::hooks::command_policy::{CommandNeeds, CommandPolicy};
use mandate_core::hooks::ignore_list::IntentIgnore;
use mandate_core::hooks::CommandAction;
use mandate_core::redact::Redactor;
use mandate_core::sandbox::{run_governed, CommandContext, Confinement, GovernedRun};
use mandate_core::workspace::Workspace;
use tokio_util::sync::CancellationToken;

const LEDGER: &str = "{\"record\":1}\n";

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

struct Project {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    temp: tempfile::TempDir,
    listener: TcpListener,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

impl Project {
    fn new(files: &[(&str, String)]) -> Project {
        let tmp = tempfile::tempdir().expect("tmp");
        let base = tmp.path().canonicalize().expect("canon");
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(&outside).expect("mkdir");
        write(&root.join(".orchestration/agent_trace.jsonl"), LEDGER);
        for (path, text) in files {
            write(&root.join(path), text);
        }
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        listener.set_nonblocking(true).expect("nonblocking");
        Project {
            _tmp: tmp,
            root,
            outside,
            temp: mandate_core::sandbox::private_temp_dir().expect("temp"),
            listener,
        }
    }

    fn port(&self) -> u16 {
        self.listener.local_addr().expect("addr").port()
    }

    /// Runs `line` governed, under `level`, for an intent owning `scope`.
    fn run(&self, level: &Confinement, line: &str, scope: &[&str]) -> GovernedRun {
        self.run_with(level, line, scope, &Redactor::new())
    }

    fn run_with(
        &self,
        level: &Confinement,
        line: &str,
        scope: &[&str],
        redactor: &Redactor,
    ) -> GovernedRun {
        let scope: Vec<String> = scope.iter().map(|s| s.to_string()).collect();
        let globs = mandate_core::orchestration::intents::compile_scope(&scope).expect("globs");
        let owns = move |p: &str| globs.is_match(p);
        let policy = CommandPolicy::builtin();
        let ignore = IntentIgnore::load(&self.root).expect("ignore");
        let ws = Workspace::new(&self.root).expect("ws");
        let cx = CommandContext {
            workspace: ws.root(),
            owned_scope: &scope,
            owns: &owns,
            ignore: &ignore,
            policy: &policy,
            confinement: level,
            temp_dir: self.temp.path(),
            granted: CommandNeeds::default(),
            app_dirs: &[],
            redactor,
        };
        let action = CommandAction {
            command: line.to_string(),
            cwd: ws.resolve(".").expect("root"),
            timeout: Duration::from_secs(600),
            granted: Default::default(),
            background: false,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime
            .block_on(run_governed(
                &action,
                &cx,
                &CancellationToken::new(),
                |_| {},
            ))
            .expect("governed run")
    }

    /// Nothing the project's hostile code tried happened.
    fn assert_untouched(&self, level: &Confinement, run: &GovernedRun) {
        let name = level.summary();
        let ledger = std::fs::read_to_string(self.root.join(".orchestration/agent_trace.jsonl"));
        assert_eq!(ledger.expect("ledger"), LEDGER, "{name}");
        assert!(
            std::fs::read_dir(&self.outside)
                .expect("outside")
                .next()
                .is_none(),
            "{name}: wrote outside"
        );
        assert!(
            self.listener.accept().is_err(),
            "{name}: reached the network"
        );
        assert!(
            run.changes.out_of_scope.is_empty(),
            "{name}: out of scope: {:?}",
            run.changes.out_of_scope
        );
    }
}

/// Code a project's build or tests run: it tries what an agent could hide there, and prints
/// `refused` or `ESCAPED` for each attempt.
fn hostile_lines(project: &Project, lang: &str) -> String {
    let ledger = project.root.join(".orchestration/agent_trace.jsonl");
    let outside = project.outside.join("pwned");
    let port = project.port();
    match lang {
        "rust" => format!(
            "for (what, failed) in [\n        (\"ledger\", std::fs::write({ledger:?}, \"\").is_err()),\n        (\"outside\", std::fs::write({outside:?}, \"x\").is_err()),\n        (\"network\", std::net::TcpStream::connect((\"127.0.0.1\", {port})).is_err()),\n    ] {{\n        println!(\"cargo:warning={{what}} {{}}\", if failed {{ \"refused\" }} else {{ \"ESCAPED\" }});\n    }}\n"
        ),
        "js" => format!(
            "const fs = require('fs');\nfor (const [what, path] of [['ledger', {ledger:?}], ['outside', {outside:?}]]) {{\n  try {{ fs.writeFileSync(path, ''); console.log(what + ' ESCAPED'); }} catch (e) {{ console.log(what + ' refused'); }}\n}}\nconst net = require('net');\nawait_connect = new Promise((done) => {{\n  net.connect({port}, '127.0.0.1').on('connect', () => {{ console.log('network ESCAPED'); done(); }}).on('error', () => {{ console.log('network refused'); done(); }});\n}});\n"
        ),
        _ => format!(
            "import socket\nfor what, path in (('ledger', {ledger:?}), ('outside', {outside:?})):\n    try:\n        open(path, 'w').write('')\n        print(what, 'ESCAPED')\n    except OSError:\n        print(what, 'refused')\ntry:\n    socket.create_connection(('127.0.0.1', {port}), 2)\n    print('network ESCAPED')\nexcept OSError:\n    print('network refused')\n"
        ),
    }
}

/// The hostile code ran, and every attempt was refused.
fn assert_refused(level: &Confinement, output: &str) {
    assert!(!output.contains("ESCAPED"), "{}: {output}", level.summary());
    for what in ["ledger refused", "outside refused", "network refused"] {
        assert!(
            output.contains(what),
            "{}: `{what}` missing: {output}",
            level.summary()
        );
    }
}

#[test]
fn cargo_test_works_confined_and_its_build_script_cannot_escape() {
    for level in levels() {
        let mut project = Project::new(&[]);
        let build = format!("fn main() {{\n    {}}}\n", hostile_lines(&project, "rust"));
        for (path, text) in [
            ("Cargo.toml", "[package]\nname = \"confined\"\nversion = \"0.1.0\"\nedition = \"2021\"\nbuild = \"build.rs\"\n\n[workspace]\n".to_string()),
            ("build.rs", build),
            ("src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 2), 4); }\n}\n".to_string()),
        ] {
            write(&project.root.join(path), &text);
        }
        // The lock file is the project's, written before (the intent does not own it).
        let lock = Command::new("cargo")
            .args(["generate-lockfile", "--offline"])
            .current_dir(&project.root)
            .output()
            .expect("cargo");
        assert!(
            lock.status.success(),
            "{}",
            String::from_utf8_lossy(&lock.stderr)
        );
        let run = project.run(&level, "cargo test --offline -vv 2>&1", &["src/**"]);
        assert_eq!(
            run.run.exit_code,
            Some(0),
            "{}: {}",
            level.summary(),
            run.run.output
        );
        assert!(
            run.run.output.contains("test result: ok. 1 passed"),
            "{}",
            run.run.output
        );
        assert!(run
            .changes
            .permitted
            .iter()
            .any(|(c, _)| c.path.starts_with("target/")));
        project.assert_untouched(&level, &run);
        assert_refused(&level, &run.run.output);
        project.temp = mandate_core::sandbox::private_temp_dir().expect("temp");
    }
}

#[test]
fn npm_test_works_confined_and_its_script_cannot_escape() {
    for level in levels() {
        let project = Project::new(&[]);
        let test = format!(
            "const assert = require('assert');\nassert.strictEqual(1 + 1, 2);\nlet await_connect;\n{}await_connect.then(() => console.log('node tests passed'));\n",
            hostile_lines(&project, "js")
        );
        write(&project.root.join("test/run.js"), &test);
        write(
            &project.root.join("package.json"),
            "{\"name\": \"confined\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node test/run.js\"}}\n",
        );
        let run = project.run(&level, "npm test 2>&1", &["test/**", "src/**"]);
        assert_eq!(
            run.run.exit_code,
            Some(0),
            "{}: {}",
            level.summary(),
            run.run.output
        );
        assert!(
            run.run.output.contains("node tests passed"),
            "{}",
            run.run.output
        );
        project.assert_untouched(&level, &run);
        assert_refused(&level, &run.run.output);
    }
}

#[test]
fn pytest_works_confined_and_its_tests_cannot_escape() {
    let pytest_here = Command::new("pytest")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        pytest_here,
        "pytest is missing: `make test-deps` installs python3-pytest"
    );
    for level in levels() {
        let project = Project::new(&[]);
        let test = format!(
            "from calc import add\n\n\ndef test_add():\n{}    assert add(2, 3) == 5\n",
            hostile_lines(&project, "py")
                .lines()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        );
        write(
            &project.root.join("src/calc.py"),
            "def add(a, b):\n    return a + b\n",
        );
        write(&project.root.join("tests/test_calc.py"), &test);
        write(
            &project.root.join("pytest.ini"),
            "[pytest]\npythonpath = src\n",
        );
        let run = project.run(&level, "pytest -q -s 2>&1", &["src/**", "tests/**"]);
        assert_eq!(
            run.run.exit_code,
            Some(0),
            "{}: {}",
            level.summary(),
            run.run.output
        );
        assert!(run.run.output.contains("1 passed"), "{}", run.run.output);
        project.assert_untouched(&level, &run);
        assert_refused(&level, &run.run.output);
    }
}

#[test]
fn out_of_scope_changes_inside_a_writable_directory_are_found_and_undone() {
    for level in levels() {
        let project = Project::new(&[
            ("src/main.rs", "fn main() {}\n".to_string()),
            ("src/db/pool.rs", "pool\n".to_string()),
        ]);
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &["commit", "-qm", "init"],
        ] {
            let out = Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .current_dir(&project.root)
                .output()
                .expect("git");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // `src/*.rs` is covered by the directory `src`, which holds `src/db/` too.
        let line = "echo new > src/lib.rs; echo pwned > src/db/pool.rs; echo x > src/db/new.rs";
        let run = project.run(&level, line, &["src/*.rs"]);
        let name = level.summary();
        let in_scope: Vec<&str> = run
            .changes
            .in_scope
            .iter()
            .map(|c| c.path.as_str())
            .collect();
        assert_eq!(in_scope, ["src/lib.rs"], "{name}");
        assert_eq!(
            run.changes.out_of_scope_paths(),
            ["src/db/new.rs", "src/db/pool.rs"],
            "{name}"
        );
        let results: Vec<_> = run
            .restored
            .iter()
            .map(|o| (o.path.as_str(), o.result.clone()))
            .collect();
        assert_eq!(
            results,
            [
                (
                    "src/db/new.rs",
                    Ok(mandate_core::changes::Restored::Removed)
                ),
                (
                    "src/db/pool.rs",
                    Ok(mandate_core::changes::Restored::FromGit)
                ),
            ],
            "{name}"
        );
        assert_eq!(
            std::fs::read_to_string(project.root.join("src/db/pool.rs")).expect("read"),
            "pool\n"
        );
        assert!(!project.root.join("src/db/new.rs").exists());
        assert_eq!(
            std::fs::read_to_string(project.root.join("src/lib.rs")).expect("read"),
            "new\n"
        );
    }
}

#[test]
fn a_key_in_command_output_never_leaves_in_any_usual_form() {
    const KEY: &str = "sk-live-3vQ8mZ1xR7nT4kP9wB2yD6fH0jL5sC";
    let redactor = Redactor::new();
    assert!(redactor.add(KEY));
    for level in levels() {
        let project = Project::new(&[]);
        let line = format!(
            "echo {KEY}; printf %s {KEY} | base64; printf 'k=%s' {KEY} | base64 -w0; echo; printf %s {KEY} | xxd -p | tr -d '\\n'; echo; printf %s {KEY} | rev; for i in 1 2 3; do printf %s {KEY}; done"
        );
        let mut streamed = String::new();
        let run = {
            let run = project.run_with(&level, &line, &[], &redactor);
            streamed.push_str(&run.run.output);
            run
        };
        assert_eq!(run.run.exit_code, Some(0), "{}", run.run.output);
        assert!(
            run.run.output.contains(mandate_core::redact::REDACTED),
            "{}",
            run.run.output
        );
        assert!(
            !redactor.contains_secret(&streamed),
            "{}: {streamed}",
            level.summary()
        );
    }
}
