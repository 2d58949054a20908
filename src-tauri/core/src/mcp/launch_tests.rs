//! Hostile command lines first: each one a branch or the agent could use to run its own code
//! under the person's grant, then the forms that must still be granted.

use std::os::unix::fs::{symlink, PermissionsExt as _};
use std::path::{Path, PathBuf};

use super::*;

struct Place {
    _tmp: tempfile::TempDir,
    /// The workspace (canonical).
    ws: PathBuf,
    /// A directory outside it, where "installed" programs live.
    out: PathBuf,
}

fn place() -> Place {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = tmp.path().canonicalize().expect("canonical");
    let (ws, out) = (base.join("ws"), base.join("out"));
    for dir in [&ws, &out, &out.join("bin")] {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    // Interpreters and launchers, found by name on PATH as the real ones would be.
    for name in [
        "node", "python3", "bash", "npx", "uvx", "npm", "deno", "bun", "env", "java", "srv",
    ] {
        // Not scripts: a script's interpreter would be part of what it runs.
        executable(&out.join("bin").join(name), "a program\n");
    }
    Place { _tmp: tmp, ws, out }
}

fn executable(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn file(path: &Path) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(path, "code\n").expect("write");
}

impl Place {
    fn path_var(&self) -> String {
        format!("{}:/usr/bin:/bin", self.out.join("bin").display())
    }

    fn examine_with(
        &self,
        command: &str,
        args: &[&str],
        own: &[(&str, &str)],
        path: &str,
    ) -> Result<Launch, Refusal> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let own: Vec<(String, String)> = own
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = vec![("PATH".to_string(), path.to_string())];
        examine(
            &CommandLine {
                command,
                args: &args,
                own_env: &own,
                env: &env,
            },
            &self.ws,
        )
    }

    fn examine(&self, command: &str, args: &[&str]) -> Result<Launch, Refusal> {
        self.examine_with(command, args, &[], &self.path_var())
    }

    fn refused(&self, command: &str, args: &[&str]) -> String {
        match self.examine(command, args) {
            Ok(launch) => panic!("{command} {args:?} was not refused: {launch:?}"),
            Err(why) => why.to_string(),
        }
    }
}

#[test]
fn a_program_in_the_workspace_is_refused_however_it_is_reached() {
    let p = place();
    executable(&p.ws.join("bin/server"), "#!/bin/sh\n");
    let why = p.refused("./bin/server", &[]);
    assert!(
        why.contains(&p.ws.join("bin").display().to_string()),
        "{why}"
    );
    assert!(why.contains("inside the workspace"), "{why}");
    // Through the PATH, by an absolute path, and through a link from outside.
    let on_path = format!("{}:/usr/bin", p.ws.join("bin").display());
    let why = p
        .examine_with("server", &[], &[], &on_path)
        .expect_err("a PATH entry in the workspace");
    assert!(why.to_string().contains("its PATH entry"), "{why}");
    for path in ["", ".", "bin"] {
        let shown = format!("/usr/bin:{path}");
        p.examine_with("srv", &[], &[], &shown)
            .expect_err("an empty or relative PATH entry is the workspace");
    }
    p.refused(&p.ws.join("bin/server").display().to_string(), &[]);
    symlink(p.ws.join("bin/server"), p.out.join("bin/linked")).expect("symlink");
    p.refused("linked", &[]);
    // A link outside to a link inside to a file outside: the one inside can be repointed.
    executable(&p.out.join("real"), "#!/bin/sh\n");
    symlink(p.out.join("real"), p.ws.join("hop")).expect("symlink");
    symlink(p.ws.join("hop"), p.out.join("bin/chain")).expect("symlink");
    let why = p.refused("chain", &[]);
    assert!(
        why.contains(&p.ws.join("hop").display().to_string()),
        "{why}"
    );
    // A directory link into the workspace on the way.
    symlink(&p.ws, p.out.join("tools")).expect("symlink");
    p.refused(&p.out.join("tools/bin/server").display().to_string(), &[]);
}

#[test]
fn an_interpreters_script_or_module_in_the_workspace_is_refused() {
    let p = place();
    file(&p.ws.join("tools/srv.js"));
    file(&p.ws.join("srv.py"));
    file(&p.ws.join("run.sh"));
    let why = p.refused("node", &["tools/srv.js"]);
    assert!(why.contains("its script `tools/srv.js`"), "{why}");
    assert!(
        why.contains(&p.ws.join("tools").display().to_string()),
        "{why}"
    );
    p.refused("node", &["--enable-source-maps", "tools/srv.js"]);
    p.refused("node", &["."]);
    p.refused("python3", &["srv.py"]);
    p.refused("python3", &["-u", "-W", "ignore", "srv.py"]);
    p.refused("bash", &["./run.sh"]);
    p.refused("bash", &["-e", "run.sh"]);
    // Through a link outside that points at the workspace's script.
    symlink(p.ws.join("tools/srv.js"), p.out.join("srv.js")).expect("symlink");
    p.refused("node", &[&p.out.join("srv.js").display().to_string()]);
    // Code that is not a file, or that Python finds in its working directory.
    for (command, args) in [
        ("python3", &["-m", "pkg"][..]),
        ("python3", &["-mpkg"]),
        ("python3", &["-c", "import srv"]),
        ("python3", &["-Bc", "import srv"]),
        ("python3", &[]),
        ("python3", &["-"]),
        ("node", &["-e", "require('./tools/srv.js')"]),
        ("node", &["--eval=require('./x')"]),
        ("bash", &["-c", "node tools/srv.js"]),
        ("bash", &["-ec", "node tools/srv.js"]),
        ("bash", &["-s"]),
        ("bash", &[]),
        ("node", &["/nonexistent/srv.js"]),
    ] {
        p.refused(command, args);
    }
    let why = p.refused("python3", &["-m", "pkg"]);
    assert!(why.contains("add `-I`"), "{why}");
}

#[test]
fn code_loaded_by_an_option_or_a_variable_from_the_workspace_is_refused() {
    let p = place();
    file(&p.ws.join("hook.js"));
    file(&p.out.join("srv.js"));
    let srv = p.out.join("srv.js").display().to_string();
    p.refused("node", &["-r", "./hook.js", &srv]);
    p.refused("node", &["--import=./hook.js", &srv]);
    file(&p.ws.join(".env.local"));
    p.refused("node", &["--env-file", ".env.local", &srv]);
    std::fs::create_dir_all(p.ws.join("node_modules")).expect("mkdir");
    let why = p.refused("node", &["--require", "tsx", &srv]);
    assert!(why.contains("node_modules"), "{why}");
    for (name, value) in [
        ("PYTHONPATH", "."),
        ("PYTHONPATH", "/usr/lib:"),
        ("NODE_OPTIONS", "--require ./hook.js"),
        ("NODE_PATH", "node_modules"),
        ("LD_PRELOAD", "./hook.js"),
        ("HOME", "."),
        ("XDG_CONFIG_HOME", "."),
        ("CONFIG", "./hook.js"),
    ] {
        let why = p
            .examine_with("node", &[&srv], &[(name, value)], &p.path_var())
            .expect_err(name);
        assert!(why.to_string().contains(name), "{why}");
    }
    // `env` is followed to the program it runs.
    p.refused("env", &["node", "hook.js"]);
    p.refused("env", &["PATH=./bin:/usr/bin", "srv"]);
    p.refused("env", &["-S", "node hook.js"]);
}

#[test]
fn arguments_naming_the_workspaces_files_are_refused_but_the_workspace_itself_is_not() {
    let p = place();
    file(&p.ws.join("config.json"));
    for arg in [
        "config.json",
        "./config.json",
        "--config=config.json",
        "./not/yet.js",
    ] {
        p.refused("srv", &[arg]);
    }
    let absolute = p.ws.join("config.json").display().to_string();
    p.refused("srv", &["--config", &absolute]);
    // The workspace is its working directory anyway; words that are not paths pass.
    let launch = p
        .examine(
            "srv",
            &[
                ".",
                "--root",
                &p.ws.display().to_string(),
                "--port",
                "8080",
                "stdio",
            ],
        )
        .expect("granted");
    assert_eq!(launch.program, p.out.join("bin/srv"));
    assert!(launch.files.is_empty(), "{launch:?}");
}

#[test]
fn launchers_are_refused_where_the_workspace_could_take_precedence_over_the_registry() {
    let p = place();
    // Nothing in the workspace for them to find: the package comes from the registry into
    // the server's own cache.
    p.examine(
        "npx",
        &["-y", "@modelcontextprotocol/server-filesystem", "."],
    )
    .expect("npx from the registry");
    p.examine("uvx", &["mcp-server-git", "--repository", "."])
        .expect("uvx from the registry");
    p.examine("npm", &["exec", "--yes", "some-server"])
        .expect("npm exec from the registry");
    file(&p.ws.join("pkg/package.json"));
    p.refused("npx", &["./pkg"]);
    p.refused("npx", &["file:pkg"]);
    p.refused("npx", &["-c", "some-server"]);
    p.refused("npm", &["run", "server"]);
    p.refused("npm", &["start"]);
    p.refused("uv", &["run", "server.py"]);
    for project in ["package.json", "node_modules", ".npmrc"] {
        let at = p.ws.join(project);
        file(&at);
        let why = p.refused("npx", &["-y", "some-server"]);
        assert!(why.contains(&format!("has `{project}`")), "{why}");
        p.refused("npm", &["exec", "some-server"]);
        std::fs::remove_file(&at).expect("rm");
    }
    file(&p.ws.join(".python-version"));
    p.refused("uvx", &["mcp-server-git"]);
}

#[test]
fn deno_bun_and_java_read_their_project_or_class_path_from_the_working_directory() {
    let p = place();
    file(&p.out.join("srv.ts"));
    let srv = p.out.join("srv.ts").display().to_string();
    p.examine("deno", &["run", "--allow-read=.", "--allow-write=.", &srv])
        .expect("deno on a script outside");
    p.examine("deno", &["run", "-A", "npm:@scope/server"])
        .expect("deno on a registry package");
    p.refused("deno", &["task", "server"]);
    p.refused("deno", &["eval", "console.log(1)"]);
    file(&p.ws.join("deno.json"));
    p.refused("deno", &["run", &srv]);
    p.examine("bun", &["run", &srv])
        .expect("bun on a script outside");
    p.refused("bun", &["run", "server"]);
    file(&p.ws.join("bunfig.toml"));
    p.refused("bun", &[&srv]);
    p.refused("java", &["Main"]);
    file(&p.out.join("srv.jar"));
    let jar = p.out.join("srv.jar").display().to_string();
    let launch = p
        .examine("java", &["-jar", &jar, "."])
        .expect("a jar outside");
    assert_eq!(launch.files, vec![p.out.join("srv.jar")]);
    p.refused("java", &["-cp", ".", "Main"]);
}

#[test]
fn what_is_granted_names_every_file_it_runs_outside_the_workspace() {
    let p = place();
    file(&p.out.join("lib/srv.py"));
    file(&p.out.join("hook.js"));
    symlink(p.out.join("lib/srv.py"), p.out.join("srv-link.py")).expect("symlink");
    let launch = p
        .examine(
            "python3",
            &[
                "-I",
                &p.out.join("srv-link.py").display().to_string(),
                "--root",
                ".",
            ],
        )
        .expect("granted");
    assert_eq!(launch.program, p.out.join("bin/python3"));
    assert_eq!(launch.files, vec![p.out.join("lib/srv.py")]);
    let launch = p
        .examine(
            "env",
            &[
                "node",
                "-r",
                &p.out.join("hook.js").display().to_string(),
                &p.out.join("lib/srv.py").display().to_string(),
            ],
        )
        .expect("granted");
    assert_eq!(launch.program, p.out.join("bin/env"));
    assert_eq!(
        launch.files,
        vec![
            p.out.join("bin/node"),
            p.out.join("hook.js"),
            p.out.join("lib/srv.py")
        ]
    );
    p.examine("python3", &["-Im", "pkg"])
        .expect("isolated from its working directory");
    match p.examine("missing-program", &[]) {
        Err(Refusal::NotFound(name)) => assert_eq!(name, "missing-program"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_script_programs_interpreter_in_the_workspace_is_refused() {
    let p = place();
    executable(&p.ws.join("venv/bin/python"), "#!/bin/sh\n");
    executable(&p.out.join("bin/relative"), "#!venv/bin/python\nprint(1)\n");
    let inside = format!("#!{}\nprint(1)\n", p.ws.join("venv/bin/python").display());
    executable(&p.out.join("bin/absolute"), &inside);
    executable(
        &p.out.join("bin/by-env"),
        "#!/usr/bin/env -S python3 -m pkg\n",
    );
    for program in ["relative", "absolute", "by-env"] {
        let why = p.refused(program, &[]);
        assert!(why.contains("interpreter"), "{program}: {why}");
    }
    // Through `env` on a PATH that leads into the workspace.
    executable(&p.out.join("bin/via-env"), "#!/usr/bin/env fakepy\n");
    executable(&p.ws.join("bin/fakepy"), "#!/bin/sh\n");
    let path = format!(
        "{}:{}",
        p.out.join("bin").display(),
        p.ws.join("bin").display()
    );
    p.examine_with("via-env", &[], &[], &path)
        .expect_err("a PATH entry in the workspace");
    // Outside, the interpreter is bound with the script.
    executable(&p.out.join("bin/fine"), "#!/usr/bin/env python3\n");
    let launch = p.examine("fine", &[]).expect("granted");
    assert!(
        launch.files.contains(&p.out.join("bin/python3")),
        "{launch:?}"
    );
}
