//! Opens a workspace file in the person's editor, at a line.
//!
//! The UI names only a path and a line. The program comes from a fixed list (found on the PATH,
//! chosen in Settings), the path is resolved inside the workspace by the caller, and the editor
//! is started with an argument vector, never through a shell: nothing the page sends can become
//! a program or an option.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::protocol::EditorOption;

/// How an editor is told the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineStyle {
    /// `code -g FILE:LINE`
    Goto,
    /// `zed FILE:LINE`, `subl FILE:LINE`
    Colon,
    /// `idea --line LINE FILE`
    JetBrains,
    /// `$VISUAL`/`$EDITOR` in a terminal emulator.
    Terminal,
}

struct EditorSpec {
    id: &'static str,
    label: &'static str,
    /// Program names tried on the PATH, in order.
    programs: &'static [&'static str],
    style: LineStyle,
}

/// In the order `auto` tries them.
const EDITORS: &[EditorSpec] = &[
    EditorSpec {
        id: "vscode",
        label: "Visual Studio Code",
        programs: &["code"],
        style: LineStyle::Goto,
    },
    EditorSpec {
        id: "vscodium",
        label: "VSCodium",
        programs: &["codium"],
        style: LineStyle::Goto,
    },
    EditorSpec {
        id: "zed",
        label: "Zed",
        programs: &["zed", "zeditor"],
        style: LineStyle::Colon,
    },
    EditorSpec {
        id: "idea",
        label: "IntelliJ IDEA",
        programs: &["idea", "idea.sh"],
        style: LineStyle::JetBrains,
    },
    EditorSpec {
        id: "rustrover",
        label: "RustRover",
        programs: &["rustrover", "rustrover.sh"],
        style: LineStyle::JetBrains,
    },
    EditorSpec {
        id: "pycharm",
        label: "PyCharm",
        programs: &["pycharm", "pycharm.sh"],
        style: LineStyle::JetBrains,
    },
    EditorSpec {
        id: "webstorm",
        label: "WebStorm",
        programs: &["webstorm", "webstorm.sh"],
        style: LineStyle::JetBrains,
    },
    EditorSpec {
        id: "goland",
        label: "GoLand",
        programs: &["goland", "goland.sh"],
        style: LineStyle::JetBrains,
    },
    EditorSpec {
        id: "clion",
        label: "CLion",
        programs: &["clion", "clion.sh"],
        style: LineStyle::JetBrains,
    },
    EditorSpec {
        id: "sublime",
        label: "Sublime Text",
        programs: &["subl"],
        style: LineStyle::Colon,
    },
    EditorSpec {
        id: "terminal",
        label: "$VISUAL / $EDITOR in a terminal",
        programs: &[],
        style: LineStyle::Terminal,
    },
];

/// Terminal emulators and the argument that precedes the command they run.
const TERMINALS: &[(&str, &[&str])] = &[
    ("x-terminal-emulator", &["-e"]),
    ("gnome-terminal", &["--"]),
    ("konsole", &["-e"]),
    ("xfce4-terminal", &["-x"]),
    ("alacritty", &["-e"]),
    ("kitty", &[]),
    ("xterm", &["-e"]),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditorError {
    #[error("no editor was found: install VS Code, Zed, a JetBrains IDE or Sublime Text, or set $VISUAL or $EDITOR, then choose it in Settings")]
    NoneFound,
    #[error("the editor `{0}` in the settings is not one Mandate knows; choose one in Settings")]
    Unknown(String),
    #[error("{0} was not found on the PATH; choose another editor in Settings")]
    NotFound(String),
    #[error("$VISUAL and $EDITOR are not set, so there is no editor to run in a terminal")]
    NoTerminalEditor,
    #[error("the editor command `{0}` is not a plain command (quotes and shell syntax are not supported)")]
    UnsupportedEditorVariable(String),
    #[error("no terminal emulator was found to run {0} in")]
    NoTerminal(String),
    #[error("too many files were opened at once; try again in a moment")]
    TooMany,
    #[error("could not start {program}: {message}")]
    Spawn { program: String, message: String },
}

/// Whether `id` names an editor Mandate knows.
pub fn is_known(id: &str) -> bool {
    EDITORS.iter().any(|e| e.id == id)
}

/// What the host reads from its environment to find editors (a value, so tests pass their own).
#[derive(Debug, Clone, Default)]
pub struct EditorEnv {
    pub path: Option<OsString>,
    pub visual: Option<String>,
    pub editor: Option<String>,
}

impl EditorEnv {
    pub fn from_process() -> Self {
        Self {
            path: std::env::var_os("PATH"),
            visual: std::env::var("VISUAL").ok(),
            editor: std::env::var("EDITOR").ok(),
        }
    }

    fn find(&self, name: &str) -> Option<PathBuf> {
        let name = Path::new(name);
        if name.is_absolute() {
            return is_executable(name).then(|| name.to_path_buf());
        }
        if name.components().count() != 1 {
            return None;
        }
        std::env::split_paths(self.path.as_deref()?)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
    }

    /// `$VISUAL`, else `$EDITOR`, split into words.
    fn terminal_editor(&self) -> Result<Vec<String>, EditorError> {
        let value = [&self.visual, &self.editor]
            .into_iter()
            .flatten()
            .map(|v| v.trim())
            .find(|v| !v.is_empty())
            .ok_or(EditorError::NoTerminalEditor)?;
        if value
            .chars()
            .any(|c| "'\"\\$`;&|<>()*?[]{}~#!".contains(c) || c.is_control())
        {
            return Err(EditorError::UnsupportedEditorVariable(value.to_string()));
        }
        Ok(value.split_whitespace().map(str::to_string).collect())
    }

    fn detected(&self, spec: &EditorSpec) -> bool {
        match spec.style {
            LineStyle::Terminal => {
                self.terminal_editor()
                    .ok()
                    .and_then(|words| self.find(&words[0]))
                    .is_some()
                    && TERMINALS.iter().any(|(t, _)| self.find(t).is_some())
            }
            _ => spec.programs.iter().any(|p| self.find(p).is_some()),
        }
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Every known editor, with whether it is on this machine.
pub fn options(env: &EditorEnv) -> Vec<EditorOption> {
    EDITORS
        .iter()
        .map(|spec| EditorOption {
            id: spec.id.to_string(),
            label: spec.label.to_string(),
            detected: env.detected(spec),
        })
        .collect()
}

/// A program and its arguments, ready to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

/// The command that opens `file` (absolute, inside the workspace) at `line` in editor `choice`
/// (`auto` or an editor id).
pub fn launch_for(
    choice: &str,
    file: &Path,
    line: u32,
    env: &EditorEnv,
) -> Result<Launch, EditorError> {
    let line = line.max(1);
    let spec = if choice == "auto" {
        EDITORS
            .iter()
            .find(|s| env.detected(s))
            .ok_or(EditorError::NoneFound)?
    } else {
        EDITORS
            .iter()
            .find(|s| s.id == choice)
            .ok_or_else(|| EditorError::Unknown(choice.to_string()))?
    };
    let at_line = || {
        let mut arg = file.as_os_str().to_os_string();
        arg.push(format!(":{line}"));
        arg
    };
    let program = || {
        spec.programs
            .iter()
            .find_map(|p| env.find(p))
            .ok_or_else(|| EditorError::NotFound(spec.label.to_string()))
    };
    let (program, args) = match spec.style {
        LineStyle::Goto => (program()?, vec!["-g".into(), at_line()]),
        LineStyle::Colon => (program()?, vec![at_line()]),
        LineStyle::JetBrains => (
            program()?,
            vec!["--line".into(), line.to_string().into(), file.into()],
        ),
        LineStyle::Terminal => return in_terminal(file, line, env),
    };
    Ok(Launch { program, args })
}

fn in_terminal(file: &Path, line: u32, env: &EditorEnv) -> Result<Launch, EditorError> {
    let words = env.terminal_editor()?;
    let editor = env
        .find(&words[0])
        .ok_or_else(|| EditorError::NotFound(words[0].clone()))?;
    let (terminal, prefix) = TERMINALS
        .iter()
        .find_map(|(name, prefix)| env.find(name).map(|t| (t, *prefix)))
        .ok_or_else(|| EditorError::NoTerminal(words[0].clone()))?;
    let mut args: Vec<OsString> = prefix.iter().map(OsString::from).collect();
    args.push(editor.into());
    args.extend(words[1..].iter().map(OsString::from));
    let name = Path::new(&words[0])
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    if matches!(name.as_str(), "hx" | "helix") {
        let mut arg = file.as_os_str().to_os_string();
        arg.push(format!(":{line}"));
        args.push(arg);
    } else {
        // vi, vim, nvim, nano, emacs, micro, kak, joe, ne: `+LINE FILE`.
        args.push(format!("+{line}").into());
        args.push(file.into());
    }
    Ok(Launch {
        program: terminal,
        args,
    })
}

/// At most this many editors started per window of time: a page that went wrong cannot flood
/// the desktop with windows.
const BURST: usize = 5;
const WINDOW: Duration = Duration::from_secs(10);

#[derive(Default)]
pub struct Launcher {
    recent: Mutex<Vec<Instant>>,
}

impl Launcher {
    /// Starts the editor in its own process group (closing Mandate's terminal leaves it open),
    /// with the workspace as its directory, and reaps it when it exits.
    pub fn start(&self, launch: &Launch, cwd: &Path) -> Result<(), EditorError> {
        {
            let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            recent.retain(|t| now.duration_since(*t) < WINDOW);
            if recent.len() >= BURST {
                return Err(EditorError::TooMany);
            }
            recent.push(now);
        }
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new(&launch.program)
            .args(&launch.args)
            .current_dir(cwd)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| EditorError::Spawn {
                program: launch.program.display().to_string(),
                message: e.to_string(),
            })?;
        let mut child = child;
        std::thread::spawn(move || child.wait());
        Ok(())
    }
}

#[cfg(test)]
#[path = "editor_tests.rs"]
mod tests;
