//! Building the process for one command: `bash --noprofile --norc -c LINE` under the
//! confinement this machine offers. Everything that allocates or opens files happens here, in
//! the parent; the code that runs between clone and exec (`super::vspawn`) only makes system
//! calls. The process dies with Mandate (`PR_SET_PDEATHSIG`); spawn it with
//! [`super::spawner::spawn`], from the thread that lives as long as Mandate.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::sync::Arc;

use super::landlock_rules::{self, Restrict};
use super::vspawn::{Io, Launch};
use super::{bwrap, seccomp, CommandSandbox, Confinement, ConfinementLevel, SandboxError};

/// The one shell commands run in: the shell the command policy parses.
pub fn bash() -> &'static str {
    if Path::new("/bin/bash").is_file() {
        "/bin/bash"
    } else if Path::new("/usr/bin/bash").is_file() {
        "/usr/bin/bash"
    } else {
        "bash"
    }
}

/// A command line, ready to spawn under a [`CommandSandbox`].
pub struct ConfinedCommand;

/// What the confined process is: a command of the agent, or an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Command,
    /// Long-lived, with the network; it must stay in its process group (see
    /// [`seccomp::server_filter`]) so that stopping the group between calls stops it all.
    Server,
}

impl ConfinedCommand {
    /// The process for `line`: its environment, working directory and confinement are set;
    /// its standard streams are the caller's (inherited unless set). The child starts a new
    /// session (its pid is its process group: kill that group to stop everything it started).
    pub fn command(
        sandbox: &CommandSandbox,
        confinement: &Confinement,
        line: &str,
    ) -> Result<Launch, SandboxError> {
        let args = ["--noprofile", "--norc", "-c", line].map(OsString::from);
        build(
            sandbox,
            confinement,
            bash().as_ref(),
            &args,
            Purpose::Command,
        )
    }

    /// The process of an MCP server: `program` with `args` (an argv, never a shell line),
    /// confined as a command, with the network, and unable to leave its process group or
    /// session (`setsid` and `setpgid` are refused), so that [`super::freeze_group`] stops
    /// everything it started. Its pid is its process group.
    pub fn server(
        sandbox: &CommandSandbox,
        confinement: &Confinement,
        program: &str,
        args: &[String],
    ) -> Result<Launch, SandboxError> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        build(
            sandbox,
            confinement,
            program.as_ref(),
            &args,
            Purpose::Server,
        )
    }
}

fn c_string(s: impl AsRef<OsStr>) -> Result<CString, SandboxError> {
    CString::new(s.as_ref().as_bytes()).map_err(|_| {
        SandboxError::Spawn(format!(
            "`{}` contains a NUL byte",
            s.as_ref().to_string_lossy()
        ))
    })
}

fn build(
    sandbox: &CommandSandbox,
    confinement: &Confinement,
    program: &OsStr,
    args: &[OsString],
    purpose: Purpose,
) -> Result<Launch, SandboxError> {
    let with_bwrap = confinement.level == ConfinementLevel::LandlockAndBwrap;
    let abi = confinement.landlock_abi.unwrap_or(0);
    let net_namespace = !sandbox.network && confinement.net_namespace();
    // Kept off the network by Landlock (TCP) and the system-call filter (the rest).
    let filtered = confinement.is_confined() && !sandbox.network && !net_namespace;
    let landlock = match confinement.level {
        ConfinementLevel::None => None,
        // bubblewrap's mounts would be refused under Landlock file rules; with or without it,
        // Landlock scopes signals and abstract sockets, and refuses TCP unless an empty
        // network namespace already has none.
        level => landlock_rules::prepare(
            sandbox,
            Restrict {
                filesystem: level == ConfinementLevel::LandlockOnly,
                tcp: filtered,
            },
        )?,
    };
    // The namespace kept for the session where it works and holds this command's view (an
    // empty network namespace is bubblewrap's per command). Its first process shares
    // Mandate's memory: the command must be in a Landlock domain, which refuses it `ptrace`
    // and `/proc/1/mem` of a process outside.
    let keep = with_bwrap && !net_namespace && landlock.is_some() && !confinement.bwrap_per_command;
    let kept = match (&confinement.bwrap, keep) {
        (Some(bwrap), true) => super::kept::session(bwrap).and_then(|s| s.plan(sandbox)),
        _ => None,
    };
    let (exe, argv, cwd): (OsString, Vec<OsString>, _) = match (&confinement.bwrap, with_bwrap) {
        (Some(bwrap), true) if kept.is_none() => {
            let mut argv = vec![bwrap.clone().into_os_string()];
            argv.extend(bwrap::arguments(sandbox, net_namespace));
            argv.push("--".into());
            argv.push(program.to_os_string());
            argv.extend(args.iter().cloned());
            (bwrap.clone().into_os_string(), argv, None)
        }
        (None, true) => {
            return Err(SandboxError::Spawn(
                "the confinement names bubblewrap but no bubblewrap program".into(),
            ))
        }
        (Some(_), true) => {
            // The directory is changed inside the command's view.
            let mut argv = vec![program.to_os_string()];
            argv.extend(args.iter().cloned());
            (program.to_os_string(), argv, None)
        }
        _ => {
            let mut argv = vec![program.to_os_string()];
            argv.extend(args.iter().cloned());
            (program.to_os_string(), argv, Some(c_string(&sandbox.cwd)?))
        }
    };
    let envp = sandbox
        .env
        .iter()
        .map(|(k, v)| {
            let mut kv = OsString::from(k);
            kv.push("=");
            kv.push(v);
            c_string(kv)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let filter = match purpose {
        // Unix sockets by path: below Landlock ABI 9 only the filter refuses them without
        // bubblewrap; with it they reach only what its mounts show (not `/run`, not `/tmp`).
        Purpose::Command if filtered => seccomp::command_filter(Some(
            confinement.level == ConfinementLevel::LandlockOnly && abi < 9,
        )),
        Purpose::Command => seccomp::command_filter(None),
        Purpose::Server => seccomp::server_filter(),
    };
    if filter.is_none() && (purpose == Purpose::Server || confinement.is_confined()) {
        return Err(SandboxError::Landlock(
            "no system-call filter for this architecture: a confined process could leave its process group".into(),
        ));
    }
    // What the process starts is killed with its group when Mandate dies (see `reaper`).
    let reaper = super::reaper::channel().map_err(|e| {
        SandboxError::Spawn(format!(
            "the watchdog that ends confined processes with Mandate could not be started: {e}"
        ))
    })?;
    // bubblewrap needs its capabilities to build the namespaces; it drops them for the
    // command itself (`--cap-drop ALL`).
    let drop_capabilities = !with_bwrap;
    let child = ChildSetup {
        landlock,
        filter,
        drop_capabilities,
        parent: parent_pid(),
        reaper: Some(reaper),
    };
    Ok(Launch {
        program: c_string(exe)?,
        argv: argv.iter().map(c_string).collect::<Result<_, _>>()?,
        envp,
        cwd,
        setup: child,
        io: [Io::Inherit; 3],
        kept,
    })
}

/// What the child does between clone and exec.
pub(super) struct ChildSetup {
    landlock: Option<OwnedFd>,
    filter: Option<Vec<libc::sock_filter>>,
    drop_capabilities: bool,
    /// Mandate's pid: a child whose parent is already another process (Mandate died between
    /// the fork and `PR_SET_PDEATHSIG`) does not run.
    parent: libc::pid_t,
    /// The watchdog's pipe: the process registers its group there before it runs.
    reaper: Option<Arc<OwnedFd>>,
}

pub(super) fn parent_pid() -> libc::pid_t {
    // SAFETY: getpid takes no argument and cannot fail.
    unsafe { libc::getpid() }
}

fn check(rc: libc::c_long) -> std::io::Result<()> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl ChildSetup {
    pub(super) fn apply(&self) -> std::io::Result<()> {
        self.apply_outer()?;
        self.apply_inner(self.drop_capabilities)
    }

    /// The part that ties the process to Mandate: it dies with Mandate, starts a session, and
    /// registers its group with the watchdog.
    pub(super) fn apply_outer(&self) -> std::io::Result<()> {
        // SAFETY (whole block): plain system calls with integer arguments.
        unsafe {
            // Dies with Mandate (with the thread that forked it: see `super::spawner`), even
            // when Mandate is killed; if Mandate is already gone, it does not start at all.
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) as libc::c_long)?;
            if libc::getppid() != self.parent {
                // Only an error number reaches the parent (which is gone anyway).
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            // A new session: no controlling terminal to type into, one group to kill.
            check(libc::setsid() as libc::c_long)?;
            // Before any code of the command runs: what it starts dies with Mandate even
            // when Mandate is killed right after this. No watchdog, no command.
            if let Some(reaper) = &self.reaper {
                super::reaper::register_self(reaper.as_raw_fd())?;
            }
        }
        Ok(())
    }

    /// The part that confines the process itself, last before `execve`.
    pub(super) fn apply_inner(&self, drop_capabilities: bool) -> std::io::Result<()> {
        // SAFETY (whole block): plain system calls with integer arguments or pointers to data
        // owned by `self`, valid for the call.
        unsafe {
            // Descriptors Mandate holds must not leak into the command.
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            if drop_capabilities {
                drop_all_capabilities()?;
            }
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) as libc::c_long)?;
            if let Some(filter) = &self.filter {
                seccomp::install(filter)?;
            }
            if let Some(ruleset) = &self.landlock {
                check(libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    ruleset.as_raw_fd(),
                    0u32,
                ))?;
            }
        }
        Ok(())
    }

    /// The descriptors the set-up itself uses (the Landlock ruleset), which a process that
    /// closes all others before it applies [`Self::apply_inner`] must keep.
    pub(super) fn own_descriptors(&self) -> impl Iterator<Item = libc::c_int> + '_ {
        self.landlock.iter().map(|fd| fd.as_raw_fd())
    }
}

/// Empties the bounding, ambient, effective, permitted and inheritable sets, so a command
/// started by root gets no privilege back at exec (it could otherwise read any process's
/// environment). Unprivileged processes have nothing to drop; their errors are ignored.
unsafe fn drop_all_capabilities() -> std::io::Result<()> {
    const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;
    // SAFETY: prctl and capset with integer arguments and stack data valid for the calls.
    unsafe {
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(libc::PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        let header = Header {
            version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
            pid: 0,
        };
        let data = [
            Data {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
            Data {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
        ];
        check(libc::syscall(
            libc::SYS_capset,
            &header as *const Header,
            data.as_ptr(),
        ))
    }
}

/// The child's setup without confinement, expecting `parent` as its parent (tests of the
/// parent-death guard, and the trial of the namespace kept for the session).
pub(super) fn plain_setup(parent: libc::pid_t) -> ChildSetup {
    ChildSetup {
        landlock: None,
        filter: None,
        drop_capabilities: false,
        parent,
        reaper: None,
    }
}
