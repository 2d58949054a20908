//! The interpreters, launchers and wrappers Mandate knows by name, and how each reads its
//! arguments (see [`super`]).

/// How a program treats its arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// Not an interpreter: every argument is a plain one.
    Program,
    /// An interpreter run on a script file.
    Script(&'static Syntax),
    Bun,
    Deno,
    /// Runs a package fetched into its cache (`npx`, `uvx`).
    Runner(&'static RunnerSyntax),
    /// A package manager: only its `exec`/`dlx`-like form runs a package.
    Manager(Manager),
    Env,
    /// Runs the command after its own options (and as many other words).
    Wrapper(&'static WrapperSyntax),
    Java,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Manager {
    Npm,
    Pnpm,
    Yarn,
    Uv,
    Pipx,
}

#[derive(Debug)]
pub(crate) struct Syntax {
    pub(super) name: &'static str,
    /// Options whose value is code to run (`-e`, `-c`).
    pub(super) inline: &'static [&'static str],
    /// Options naming a module found on a search path (`python -m`).
    pub(super) module: &'static [&'static str],
    /// Flags that keep the working directory off that search path (`python -I`).
    pub(super) isolating: &'static [&'static str],
    /// Flags that read the program from standard input.
    pub(super) stdin: &'static [&'static str],
    /// Other options that take a value.
    pub(super) valued: &'static [&'static str],
    /// Options whose value is code loaded before the script (`node --require`).
    pub(super) code: &'static [&'static str],
    /// Short flags may be combined (`-Im`).
    pub(super) clustered: bool,
    /// Files in the working directory it reads, which change what it runs.
    pub(super) project: &'static [&'static str],
    /// A script may be a URL or a registry name (`npm:`, `jsr:`): nothing to bind.
    pub(super) remote_scripts: bool,
}

impl Syntax {
    pub(super) fn takes_value(&self, opt: &str) -> bool {
        [self.inline, self.module, self.valued, self.code]
            .iter()
            .any(|list| list.contains(&opt))
    }
}

pub(super) const NODE: Syntax = Syntax {
    name: "node",
    inline: &["-e", "--eval", "-p", "--print"],
    module: &[],
    isolating: &[],
    stdin: &[],
    valued: &[
        "-C",
        "--conditions",
        "--env-file",
        "--env-file-if-exists",
        "--input-type",
        "--title",
        "--stack-size",
        "--max-old-space-size",
        "--inspect-port",
        "--redirect-warnings",
        "--watch-path",
    ],
    code: &[
        "-r",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
    ],
    clustered: false,
    project: &[],
    remote_scripts: false,
};

pub(super) const BUN: Syntax = Syntax {
    name: "bun",
    inline: &["-e", "--eval", "-p", "--print"],
    module: &[],
    isolating: &[],
    stdin: &[],
    valued: &[
        "--cwd",
        "--env-file",
        "--config",
        "-c",
        "--tsconfig-override",
    ],
    code: &["-r", "--preload", "--require", "--import"],
    clustered: false,
    project: &[],
    remote_scripts: false,
};

pub(super) const DENO: Syntax = Syntax {
    name: "deno",
    inline: &[],
    module: &[],
    isolating: &[],
    stdin: &[],
    valued: &[
        "-c",
        "--config",
        "--import-map",
        "--lock",
        "--cert",
        "--location",
        "--seed",
        "--v8-flags",
        "--env-file",
    ],
    code: &["--preload"],
    clustered: false,
    project: &[],
    remote_scripts: true,
};

pub(super) const PYTHON: Syntax = Syntax {
    name: "python",
    inline: &["-c"],
    module: &["-m"],
    isolating: &["-I", "-P"],
    stdin: &[],
    valued: &["-W", "-X", "--check-hash-based-pycs"],
    code: &[],
    clustered: true,
    project: &[],
    remote_scripts: false,
};

pub(super) const SHELL: Syntax = Syntax {
    name: "the shell",
    inline: &["-c"],
    module: &[],
    isolating: &[],
    stdin: &["-s", "-i"],
    valued: &["-o", "+o", "-O", "+O"],
    code: &["--rcfile", "--init-file"],
    clustered: true,
    project: &[],
    remote_scripts: false,
};

pub(super) const RUBY: Syntax = Syntax {
    name: "ruby",
    inline: &["-e"],
    module: &[],
    isolating: &[],
    stdin: &[],
    valued: &["-I", "-C", "-E", "--encoding"],
    code: &["-r"],
    clustered: false,
    project: &[],
    remote_scripts: false,
};

pub(super) const PERL: Syntax = Syntax {
    name: "perl",
    inline: &["-e", "-E"],
    module: &[],
    isolating: &[],
    stdin: &[],
    valued: &["-I", "-M", "-m", "-x"],
    code: &[],
    clustered: false,
    project: &[],
    remote_scripts: false,
};

pub(super) const PHP: Syntax = Syntax {
    name: "php",
    inline: &["-r", "-B", "-R", "-E"],
    module: &[],
    isolating: &[],
    stdin: &[],
    valued: &["-c", "-d", "-z", "-t"],
    code: &["-F"],
    clustered: false,
    project: &[],
    remote_scripts: false,
};

pub(super) const OTHER_SCRIPT: Syntax = Syntax {
    name: "the interpreter",
    inline: &["-e"],
    module: &[],
    isolating: &[],
    stdin: &[],
    valued: &["-l"],
    code: &[],
    clustered: false,
    project: &[],
    remote_scripts: false,
};

#[derive(Debug)]
pub(crate) struct RunnerSyntax {
    pub(super) name: &'static str,
    /// Options whose value is a package to fetch.
    pub(super) packages: &'static [&'static str],
    /// Options whose value is code (`npx -c`).
    pub(super) inline: &'static [&'static str],
    pub(super) valued: &'static [&'static str],
    /// Files in the working directory that would take precedence over the registry.
    pub(super) project: &'static [&'static str],
    /// Why those files matter, for the message.
    pub(super) why: &'static str,
}

pub(super) const NODE_PROJECT: &[&str] = &["package.json", "node_modules", ".npmrc"];
pub(super) const NODE_WHY: &str = "runs a package the workspace's `node_modules` or `package.json` provides (and reads its `.npmrc`) before the registry";

pub(super) const NPX: RunnerSyntax = RunnerSyntax {
    name: "npx",
    packages: &["-p", "--package"],
    inline: &["-c", "--call"],
    valued: &[
        "--cache",
        "--userconfig",
        "--registry",
        "--prefix",
        "--node-options",
        "--workspace",
        "-w",
    ],
    project: NODE_PROJECT,
    why: NODE_WHY,
};

pub(super) const PNPM_DLX: RunnerSyntax = RunnerSyntax {
    name: "pnpm dlx",
    packages: &["--package"],
    inline: &["-c", "--shell-mode"],
    valued: &["--dir", "-C", "--registry"],
    project: &[
        "package.json",
        "node_modules",
        ".npmrc",
        "pnpm-workspace.yaml",
    ],
    why: NODE_WHY,
};

pub(super) const YARN_DLX: RunnerSyntax = RunnerSyntax {
    name: "yarn dlx",
    packages: &["-p", "--package"],
    inline: &[],
    valued: &["--cwd"],
    project: &[
        "package.json",
        "node_modules",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".pnp.cjs",
    ],
    why: NODE_WHY,
};

pub(super) const BUNX: RunnerSyntax = RunnerSyntax {
    name: "bunx",
    packages: &["-p", "--package"],
    inline: &[],
    valued: &["--cwd"],
    project: &["package.json", "node_modules", ".npmrc", "bunfig.toml"],
    why: "runs a package the workspace's `node_modules` or `package.json` provides (and reads its `bunfig.toml`) before the registry",
};

pub(super) const UVX: RunnerSyntax = RunnerSyntax {
    name: "uvx",
    packages: &["--from", "--with", "--with-editable"],
    inline: &[],
    valued: &[
        "--with-requirements",
        "-p",
        "--python",
        "--index",
        "--index-url",
        "--default-index",
        "--extra-index-url",
        "--find-links",
        "-f",
        "--directory",
        "--project",
        "--config-file",
        "-c",
        "--constraints",
        "--overrides",
        "--build-constraints",
        "--env-file",
    ],
    project: &[".venv", ".python-version", ".python-versions"],
    why: "may take its Python interpreter from the workspace (`.venv`, `.python-version`)",
};

pub(super) const PIPX: RunnerSyntax = RunnerSyntax {
    name: "pipx run",
    packages: &["--spec"],
    inline: &[],
    valued: &["--python", "--pip-args", "--index-url", "-i"],
    project: &[],
    why: "",
};

#[derive(Debug)]
pub(crate) struct WrapperSyntax {
    /// Options that take a value.
    pub(super) valued: &'static [&'static str],
    /// Words after the options before the command (`timeout DURATION`).
    pub(super) words: usize,
}

pub(super) const NOHUP: WrapperSyntax = WrapperSyntax {
    valued: &[],
    words: 0,
};
pub(super) const NICE: WrapperSyntax = WrapperSyntax {
    valued: &["-n"],
    words: 0,
};
pub(super) const TIMEOUT: WrapperSyntax = WrapperSyntax {
    valued: &["-s", "-k"],
    words: 1,
};
pub(super) const STDBUF: WrapperSyntax = WrapperSyntax {
    valued: &["-i", "-o", "-e"],
    words: 0,
};

/// The kind of a program, by its name.
pub(crate) fn kind_of(command: &str) -> Option<Kind> {
    let name = command.rsplit('/').next().unwrap_or(command);
    let versioned = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    let kind = match name {
        "node" | "nodejs" | "tsx" | "ts-node" | "ts-node-esm" => Kind::Script(&NODE),
        "bun" => Kind::Bun,
        "deno" => Kind::Deno,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "fish" | "rbash" => {
            Kind::Script(&SHELL)
        }
        "ruby" => Kind::Script(&RUBY),
        "perl" => Kind::Script(&PERL),
        "php" => Kind::Script(&PHP),
        "Rscript" | "luajit" => Kind::Script(&OTHER_SCRIPT),
        "npx" => Kind::Runner(&NPX),
        "pnpx" => Kind::Runner(&PNPM_DLX),
        "bunx" => Kind::Runner(&BUNX),
        "uvx" => Kind::Runner(&UVX),
        "npm" => Kind::Manager(Manager::Npm),
        "pnpm" => Kind::Manager(Manager::Pnpm),
        "yarn" => Kind::Manager(Manager::Yarn),
        "uv" => Kind::Manager(Manager::Uv),
        "pipx" => Kind::Manager(Manager::Pipx),
        "env" => Kind::Env,
        "nohup" => Kind::Wrapper(&NOHUP),
        "nice" => Kind::Wrapper(&NICE),
        "timeout" => Kind::Wrapper(&TIMEOUT),
        "stdbuf" => Kind::Wrapper(&STDBUF),
        "java" => Kind::Java,
        _ if versioned("python") || versioned("pypy") => Kind::Script(&PYTHON),
        _ if versioned("lua") => Kind::Script(&OTHER_SCRIPT),
        _ => return None,
    };
    Some(kind)
}
