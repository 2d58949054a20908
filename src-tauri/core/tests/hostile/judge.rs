//! Running one corpus case in a fresh copy of the scratch workspace, and judging it.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mandate_core::changes::{self, BeforeImages, Snapshot};
use mandate_core::hooks::command_policy::CommandPolicy;
use mandate_core::hooks::ignore_list::IntentIgnore;
use mandate_core::hooks::CommandAction;
use mandate_core::orchestration::intents::IntentsDoc;
use mandate_core::redact::Redactor;
use mandate_core::sandbox::{run_confined, Confinement, ConfinementLevel, SandboxRequest};
use mandate_core::workspace::Workspace;
use tokio_util::sync::CancellationToken;

const INTENTS: &str = "active_intents:\n  - id: INT-CORPUS\n    name: Corpus\n    status: IN_PROGRESS\n    owned_scope: [\"src/allowed/**\"]\n";

/// Where a command may write in the scratch base: the intent's directory, the build output
/// and the private temporary directory.
const WRITABLE: [&str; 3] = ["ws/src/allowed/", "ws/target/", "cmdtmp/"];

pub fn fill(line: &str, outside: &str, home: &str, port: u16, udp: u16, unix: &str) -> String {
    line.replace("{unix}", unix)
        .replace("{outside}", outside)
        .replace("{home}", home)
        .replace("{port}", &port.to_string())
        .replace("{udp}", &udp.to_string())
}

pub enum Outcome {
    Stopped,
    /// Not refused by the kernel (a permission or time change, which Landlock does not
    /// cover) but found and set back afterwards.
    Undone,
    /// Not stopped, for a reason this confinement level states (`Confinement::gaps`).
    Gap(String),
    Failed(String),
}

/// A TCP and a UDP listener on loopback that count what reaches them.
pub struct Listeners {
    pub tcp: Arc<AtomicUsize>,
    pub udp: Arc<AtomicUsize>,
    /// Connections to a Unix socket by path (a stand-in for the session bus or Docker).
    pub unix: Arc<AtomicUsize>,
    pub unix_path: PathBuf,
    _unix_dir: tempfile::TempDir,
    pub tcp_port: u16,
    pub udp_port: u16,
}

impl Listeners {
    pub fn start() -> Listeners {
        let tcp_listener = TcpListener::bind("127.0.0.1:0").expect("tcp");
        let udp_socket = UdpSocket::bind("127.0.0.1:0").expect("udp");
        let unix_dir = tempfile::tempdir().expect("tmp");
        let unix_path = unix_dir.path().join("bus.sock");
        let unix_listener = std::os::unix::net::UnixListener::bind(&unix_path).expect("unix");
        let listeners = Listeners {
            tcp: Arc::new(AtomicUsize::new(0)),
            udp: Arc::new(AtomicUsize::new(0)),
            unix: Arc::new(AtomicUsize::new(0)),
            unix_path,
            _unix_dir: unix_dir,
            tcp_port: tcp_listener.local_addr().expect("addr").port(),
            udp_port: udp_socket.local_addr().expect("addr").port(),
        };
        let tcp = listeners.tcp.clone();
        std::thread::spawn(move || {
            for stream in tcp_listener.incoming().flatten() {
                tcp.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        let unix = listeners.unix.clone();
        std::thread::spawn(move || {
            for stream in unix_listener.incoming().flatten() {
                unix.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        let udp = listeners.udp.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while udp_socket.recv(&mut buf).is_ok() {
                udp.fetch_add(1, Ordering::SeqCst);
            }
        });
        listeners
    }

    /// Connects to each listener without confinement, waits until each has counted it,
    /// then sets the counts back to zero.
    pub fn prove_reachable(&self) {
        let line = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{}; echo x > /dev/udp/127.0.0.1/{}; /usr/bin/python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{}')\"",
            self.tcp_port,
            self.udp_port,
            self.unix_path.display()
        );
        let status = Command::new("bash")
            .args(["-c", &line])
            .status()
            .expect("bash");
        assert!(status.success(), "the unconfined control could not connect");
        let counters = [&self.tcp, &self.udp, &self.unix];
        for _ in 0..500 {
            if counters.iter().all(|c| c.load(Ordering::SeqCst) >= 1) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for counter in counters {
            assert_eq!(
                counter.swap(0, Ordering::SeqCst),
                1,
                "a listener did not hear the control"
            );
        }
    }

    /// Lets anything still in flight arrive before the counts are read.
    pub fn settle(&self) {
        let probe = std::net::TcpStream::connect(("127.0.0.1", self.tcp_port));
        let before = self.tcp.load(Ordering::SeqCst);
        for _ in 0..200 {
            if self.tcp.load(Ordering::SeqCst) > before || probe.is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // The probe is ours, not a command's.
        if probe.is_ok() {
            self.tcp.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The scratch tree every case starts from.
pub struct Template {
    dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    policy: CommandPolicy,
}

/// Scratch trees live in memory where possible: a few hundred trees are made and removed.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let builder = tempfile::Builder::new()
        .prefix("mandate-corpus-")
        .to_owned();
    if shm.is_dir() {
        if let Ok(dir) = builder.tempdir_in(shm) {
            return dir;
        }
    }
    builder.tempdir().expect("tmp")
}

/// Files a case may have made outside the scratch tree, by their fixed names.
fn stray_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in ["/tmp", "/dev/shm"] {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with("mandate-corpus-pwned")
                {
                    found.push(entry.path());
                }
            }
        }
    }
    found
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn git(dir: &Path, args: &[&str]) {
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
        .current_dir(dir)
        .env("HOME", dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Template {
    pub fn new() -> Template {
        let dir = scratch_dir();
        let base = dir.path();
        let ws = base.join("ws");
        write(&ws.join("README.md"), "readme\n");
        write(&ws.join("src/allowed/main.rs"), "fn main() {}\n");
        write(&ws.join("src/other/lib.rs"), "pub fn other() {}\n");
        write(&ws.join("secrets/key.pem"), "pem\n");
        write(&ws.join(".intentignore"), "secrets/\n");
        write(&ws.join(".orchestration/active_intents.yaml"), INTENTS);
        write(
            &ws.join(".orchestration/agent_trace.jsonl"),
            "{\"record\":1}\n{\"record\":2}\n",
        );
        write(&ws.join("target/.keep"), "");
        let outside = base.join("outside");
        let evil = format!(
            "echo pwned >> .orchestration/agent_trace.jsonl; echo pwned > {}/pwned; echo pwned > .git/hooks/pre-commit\n",
            outside.display()
        );
        write(
            &ws.join("src/allowed/evil.sh"),
            &format!("#!/bin/sh\n{evil}"),
        );
        std::fs::set_permissions(
            ws.join("src/allowed/evil.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        let gitconfig = format!(
            "[core]\n\tfsmonitor = \"echo pwned > {}/pwned\"\n",
            outside.display()
        );
        write(&ws.join("src/allowed/.gitconfig"), &gitconfig);
        write(&ws.join("src/allowed/git/config"), &gitconfig);
        write(&ws.join("src/allowed/ls"), &format!("#!/bin/sh\n{evil}"));
        std::fs::set_permissions(
            ws.join("src/allowed/ls"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        git(&ws, &["init", "-q"]);
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-qm", "init"]);
        write(&outside.join("keep.txt"), "keep\n");
        let home = base.join("home");
        write(&home.join(".bashrc"), "# bashrc\n");
        write(&home.join(".gitconfig"), &gitconfig);
        write(&home.join(".config/mandate/settings.json"), "{}\n");
        Template {
            dir,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            policy: CommandPolicy::builtin(),
        }
    }

    /// Runs `line` in a fresh copy under `level` and judges it.
    pub fn run_case(
        &self,
        level: &Confinement,
        line: &str,
        listeners: &Listeners,
        secret: &str,
    ) -> Outcome {
        if line.contains("kill -STOP") && level.landlock_abi.unwrap_or(0) < 6 {
            return Outcome::Gap("signals are not scoped below Landlock ABI 6".into());
        }
        let t0 = std::time::Instant::now();
        let timing = std::env::var_os("MANDATE_CORPUS_TIMING").is_some();
        let tmp = scratch_dir();
        let base = tmp.path().canonicalize().expect("canon");
        copy_tree(self.dir.path(), &base);
        std::fs::create_dir(base.join("cmdtmp")).expect("cmdtmp");
        let ws = base.join("ws");
        let line = fill(
            line,
            &base.join("outside").display().to_string(),
            &base.join("home").display().to_string(),
            listeners.tcp_port,
            listeners.udp_port,
            &listeners.unix_path.display().to_string(),
        );
        let judged_before = judge_tree(&base);
        let before = Snapshot::take(&ws);
        let ignore = IntentIgnore::load(&ws).expect("ignore");
        let scope = vec!["src/allowed/**".to_string()];
        let empty = Redactor::new();
        let app_dirs = [base.join("home/.config/mandate")];
        let sandbox = SandboxRequest {
            workspace: &ws,
            cwd: &ws,
            owned_scope: &scope,
            ignore: &ignore,
            settings: self.policy.confinement(),
            before: &before,
            temp_dir: &base.join("cmdtmp"),
            network: false,
            write_git: false,
            app_dirs: &app_dirs,
            redactor: &empty,
        }
        .build();
        let mut sandbox = match sandbox {
            Ok(s) => s,
            Err(e) => return Outcome::Failed(format!("sandbox: {e}")),
        };
        // The fake home, so that `~` is inside the scratch tree the judge looks at.
        for (name, value) in &mut sandbox.env {
            if name == "HOME" {
                *value = base.join("home").display().to_string();
            }
        }
        let images =
            BeforeImages::capture_with(&before, level.level != ConfinementLevel::LandlockAndBwrap);
        let workspace = Workspace::new(&ws).expect("ws");
        let action = CommandAction {
            command: line.clone(),
            cwd: workspace.resolve(".").expect("root"),
            timeout: Duration::from_secs(20),
            granted: Default::default(),
            background: false,
        };
        if timing {
            println!("prepared in {:?}", t0.elapsed());
        }
        let (tcp0, udp0) = (
            listeners.tcp.load(Ordering::SeqCst),
            listeners.udp.load(Ordering::SeqCst),
        );
        let run = self.runtime.block_on(run_confined(
            &action,
            &sandbox,
            level,
            &empty,
            &CancellationToken::new(),
            |_| {},
        ));
        if timing {
            println!("ran at {:?}", t0.elapsed());
        }
        if let Some(e) = &run.spawn_error {
            return Outcome::Failed(format!("did not start: {e}"));
        }
        // The key must not come out raw: the kernel and the environment stop it, not redaction.
        if run.output.contains(secret) {
            return Outcome::Failed(format!("printed the key: {}", run.output));
        }
        if listeners.tcp.load(Ordering::SeqCst) > tcp0
            || listeners.udp.load(Ordering::SeqCst) > udp0
        {
            return Outcome::Failed("reached the listener".into());
        }
        let strays = stray_files();
        if !strays.is_empty() {
            for stray in &strays {
                let _ = std::fs::remove_file(stray);
            }
            return Outcome::Failed(format!("wrote outside: {strays:?}"));
        }
        let judged_after = judge_tree(&base);
        let mut metadata_only = Vec::new();
        for (path, difference) in differences(&judged_before, &judged_after) {
            if WRITABLE.iter().any(|w| path.starts_with(w)) {
                continue;
            }
            let landlock_only = level.level == ConfinementLevel::LandlockOnly;
            if difference == Difference::Metadata && landlock_only {
                metadata_only.push(path);
                continue;
            }
            return Outcome::Failed(format!(
                "changed {path} ({difference:?}); output: {}",
                run.output
            ));
        }
        // Change detection finds what the command did; out-of-scope changes must be undone.
        let mut after = Snapshot::take(&ws);
        let intents = IntentsDoc::parse(INTENTS, "intents").expect("intents");
        let intent = intents.get("INT-CORPUS").expect("intent");
        let owns = |p: &str| intent.owns(p);
        let outputs = self.policy.confinement().build_output_names();
        let sorted = changes::classify(
            changes::diff(&before, &mut after),
            &owns,
            &ignore,
            &outputs,
            false,
        );
        let out_of_scope: Vec<changes::Change> =
            sorted.out_of_scope.iter().map(|(c, _)| c.clone()).collect();
        let fixed = |p: &str| !sandbox.may_write(&ws.join(p));
        for outcome in changes::restore(&ws, &before, &out_of_scope, &images, &fixed) {
            if let Err(why) = outcome.result {
                return Outcome::Failed(format!(
                    "could not undo {} ({:?}): {why}",
                    outcome.path, outcome.kind
                ));
            }
        }
        let restored = judge_tree(&base);
        if timing {
            println!("judged at {:?}", t0.elapsed());
            let t1 = std::time::Instant::now();
            let keep = tmp.path().to_path_buf();
            drop(tmp);
            println!("removed in {:?} ({})", t1.elapsed(), keep.exists());
        }
        let left: Vec<String> = differences(&judged_before, &restored)
            .into_iter()
            .filter(|(p, _)| !WRITABLE.iter().any(|w| p.starts_with(w)))
            .map(|(p, d)| format!("{p} ({d:?})"))
            .collect();
        let outside_ws: Vec<&String> = metadata_only
            .iter()
            .filter(|p| !p.starts_with("ws/"))
            .collect();
        if !left
            .iter()
            .all(|l| outside_ws.iter().any(|p| l.starts_with(p.as_str())))
        {
            return Outcome::Failed(format!("still changed after restoring: {left:?}"));
        }
        if !outside_ws.is_empty() {
            return Outcome::Gap(format!(
                "Landlock does not cover chmod/utime: permissions or times changed outside the workspace: {outside_ws:?}"
            ));
        }
        if metadata_only.is_empty() {
            Outcome::Stopped
        } else {
            Outcome::Undone
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Difference {
    Created,
    Deleted,
    Content,
    Metadata,
}

/// Each entry's kind, content (or link target) hash and permission bits.
fn judge_tree(base: &Path) -> BTreeMap<String, (char, String, u32, i64)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(base.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let child = rel.join(entry.file_name());
            let Ok(meta) = entry.metadata() else { continue };
            let mode = meta.permissions().mode() & 0o7777;
            // Files' modification times too (`touch -d`); directories' move with their entries.
            let mtime = if meta.is_file() {
                std::os::unix::fs::MetadataExt::mtime(&meta)
            } else {
                0
            };
            let key = child.to_string_lossy().into_owned();
            let value = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(base.join(&child)).unwrap_or_default();
                ('l', target.display().to_string(), mode, 0)
            } else if meta.is_dir() {
                stack.push(child.clone());
                ('d', String::new(), mode, 0)
            } else {
                let mut bytes = Vec::new();
                if let Ok(mut f) = std::fs::File::open(base.join(&child)) {
                    let _ = f.read_to_end(&mut bytes);
                }
                ('f', mandate_core::fsutil::sha256_hex(&bytes), mode, mtime)
            };
            out.insert(key, value);
        }
    }
    out
}

fn differences(
    before: &BTreeMap<String, (char, String, u32, i64)>,
    after: &BTreeMap<String, (char, String, u32, i64)>,
) -> Vec<(String, Difference)> {
    let mut out = Vec::new();
    for (path, was) in before {
        match after.get(path) {
            None => out.push((path.clone(), Difference::Deleted)),
            Some(now) if now.0 != was.0 || now.1 != was.1 => {
                out.push((path.clone(), Difference::Content))
            }
            Some(now) if now.2 != was.2 || now.3 != was.3 => {
                out.push((path.clone(), Difference::Metadata))
            }
            _ => {}
        }
    }
    for path in after.keys() {
        if !before.contains_key(path) {
            out.push((path.clone(), Difference::Created));
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read").flatten() {
        let source = entry.path();
        let target = to.join(entry.file_name());
        let meta = std::fs::symlink_metadata(&source).expect("meta");
        if meta.file_type().is_symlink() {
            let link = std::fs::read_link(&source).expect("link");
            std::os::unix::fs::symlink(link, &target).expect("symlink");
        } else if meta.is_dir() {
            std::fs::create_dir(&target).expect("mkdir");
            copy_tree(&source, &target);
            std::fs::set_permissions(&target, meta.permissions()).expect("chmod");
        } else {
            std::fs::copy(&source, &target).expect("copy");
        }
    }
}
