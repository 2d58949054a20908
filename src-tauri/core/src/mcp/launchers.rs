//! How interpreters, launchers and wrappers read their arguments, as far as it decides which
//! code they run: the script or package, code given inline, options whose value is code, and
//! files in the working directory (the workspace) they consult first. Anything not understood
//! is checked as a plain argument; a form that runs code from the workspace is refused (see
//! [`super::launch`]).

mod kinds;

use super::launch::{Checks, Refusal};
pub(crate) use kinds::{kind_of, Kind};
use kinds::{
    Manager, RunnerSyntax, Syntax, WrapperSyntax, BUN, BUNX, DENO, NPX, PIPX, PNPM_DLX, UVX,
    YARN_DLX,
};

/// Checks what `kind` makes of `args`.
pub(super) fn examine_args(
    ch: &mut dyn Checks,
    kind: Kind,
    args: &[String],
    path: Option<&str>,
    depth: usize,
) -> Result<(), Refusal> {
    match kind {
        Kind::Program => plain(ch, args),
        Kind::Script(syntax) => script_line(ch, syntax, args),
        Kind::Bun => bun(ch, args),
        Kind::Deno => deno(ch, args),
        Kind::Runner(runner) => runner_line(ch, runner, args),
        Kind::Manager(manager) => manager_line(ch, manager, args),
        Kind::Env => env_line(ch, args, path, depth),
        Kind::Wrapper(wrapper) => wrapped(ch, wrapper, args, path, depth),
        Kind::Java => java(ch, args),
    }
}

fn plain(ch: &mut dyn Checks, args: &[String]) -> Result<(), Refusal> {
    args.iter().try_for_each(|a| ch.plain_arg(a))
}

/// Refused when the working directory holds one of `files`.
fn project_files(ch: &dyn Checks, files: &[&str], name: &str, why: &str) -> Result<(), Refusal> {
    for file in files {
        if std::fs::symlink_metadata(ch.root().join(file)).is_ok() {
            return Err(Refusal::Runs(format!(
                "`{name}` {why}, and the workspace has `{file}`, so the workspace could change the code that would run with the grant"
            )));
        }
    }
    Ok(())
}

/// The options in one argument, each with a value written in the same argument.
fn options_in(arg: &str, syntax: &Syntax) -> Vec<(String, Option<String>)> {
    if arg.starts_with("--") {
        return vec![match arg.split_once('=') {
            Some((name, value)) => (name.to_string(), Some(value.to_string())),
            None => (arg.to_string(), None),
        }];
    }
    if syntax.clustered {
        let mut out = Vec::new();
        let flags = arg.get(1..).unwrap_or("");
        for (at, c) in flags.char_indices() {
            let opt = format!("{}{c}", &arg[..1]);
            if syntax.takes_value(&opt) {
                let rest = &flags[at + c.len_utf8()..];
                out.push((opt, (!rest.is_empty()).then(|| rest.to_string())));
                break;
            }
            out.push((opt, None));
        }
        return out;
    }
    if !syntax.takes_value(arg) {
        if let Some(short) = arg.get(..2).filter(|s| syntax.takes_value(s)) {
            return vec![(short.to_string(), Some(arg[2..].to_string()))];
        }
    }
    vec![(arg.to_string(), None)]
}

/// An interpreter run on a script: refused for inline code, code from standard input, a
/// module looked up from the working directory; the script must be a file outside the
/// workspace; what follows it is the script's own arguments.
fn script_line(ch: &mut dyn Checks, syntax: &Syntax, args: &[String]) -> Result<(), Refusal> {
    let name = syntax.name;
    project_files(
        ch,
        syntax.project,
        name,
        "reads its configuration from its working directory",
    )?;
    let (mut i, mut isolated, mut module) = (0, false, None::<String>);
    let script = loop {
        let Some(arg) = args.get(i) else { break None };
        if arg == "--" {
            break args.get(i + 1).map(|_| i + 1);
        }
        if arg == "-" {
            return Err(Refusal::Runs(format!(
                "`{name} -` reads its program from standard input, so the code it runs cannot be bound to the grant"
            )));
        }
        let is_option = (arg.starts_with('-') || (name == "the shell" && arg.starts_with('+')))
            && arg.len() > 1;
        if !is_option {
            break Some(i);
        }
        for (opt, attached) in options_in(arg, syntax) {
            if syntax.inline.contains(&opt.as_str()) {
                return Err(Refusal::Runs(format!(
                    "`{name} {opt}` runs code written on its command line, not a script file, so the code it runs cannot be bound to the grant"
                )));
            }
            if syntax.stdin.contains(&opt.as_str()) {
                return Err(Refusal::Runs(format!(
                    "`{name} {opt}` reads its program from standard input, so the code it runs cannot be bound to the grant"
                )));
            }
            if syntax.isolating.contains(&opt.as_str()) {
                isolated = true;
            }
            let value = if syntax.takes_value(&opt) && attached.is_none() {
                i += 1;
                args.get(i).cloned()
            } else {
                attached
            };
            let Some(value) = value else { continue };
            if syntax.module.contains(&opt.as_str()) {
                module = Some(value);
            } else if syntax.code.contains(&opt.as_str()) {
                code_option(ch, syntax, &opt, &value)?;
            } else if syntax.valued.contains(&opt.as_str()) {
                ch.option_value(&opt, &value)?;
            } else {
                // An option it does not know of (`--allow-read=.`): its value is an argument.
                ch.plain_arg(&value)?;
            }
        }
        if module.is_some() {
            break None;
        }
        i += 1;
    };
    if let Some(module) = module {
        if !isolated {
            return Err(Refusal::Runs(format!(
                "`{name} -m {}` looks for modules in its working directory, the workspace, first; add `-I` (or `-P`) so that it does not",
                super::config::printable(&module, 80)
            )));
        }
        return plain(ch, args.get(i + 1..).unwrap_or(&[]));
    }
    let Some(at) = script else {
        return Err(Refusal::Runs(format!(
            "`{name}` is given no script file, so it would run code from its standard input"
        )));
    };
    let given = &args[at];
    let remote = syntax.remote_scripts
        && (given.contains("://") || given.starts_with("npm:") || given.starts_with("jsr:"));
    if !remote {
        ch.code_arg("its script", given)?;
    }
    plain(ch, &args[at + 1..])
}

/// An option whose value is code: a file outside the workspace, or a module name looked up
/// from the working directory's `node_modules` (refused when the workspace has one).
fn code_option(
    ch: &mut dyn Checks,
    syntax: &Syntax,
    opt: &str,
    value: &str,
) -> Result<(), Refusal> {
    let by_path = value.starts_with('.') || value.starts_with('/') || value.contains("://");
    if by_path || syntax.name == "the shell" {
        return ch.code_arg(&format!("the code of `{opt}`"), value);
    }
    project_files(
        ch,
        &["node_modules", "package.json"],
        &format!(
            "{} {opt} {}",
            syntax.name,
            super::config::printable(value, 80)
        ),
        "loads a module found from its working directory",
    )
}

fn bun(ch: &mut dyn Checks, args: &[String]) -> Result<(), Refusal> {
    project_files(
        ch,
        &["bunfig.toml"],
        "bun",
        "reads its `bunfig.toml` (preloads) from its working directory",
    )?;
    match args.iter().position(|a| !a.starts_with('-')) {
        Some(at) if args[at] == "x" => {
            plain(ch, &args[..at])?;
            runner_line(ch, &BUNX, &args[at + 1..])
        }
        Some(at) if args[at] == "run" => {
            plain(ch, &args[..at])?;
            script_line(ch, &BUN, &args[at + 1..])
        }
        _ => script_line(ch, &BUN, args),
    }
}

fn deno(ch: &mut dyn Checks, args: &[String]) -> Result<(), Refusal> {
    project_files(
        ch,
        &[
            "deno.json",
            "deno.jsonc",
            "package.json",
            "node_modules",
            "import_map.json",
        ],
        "deno",
        "reads its configuration (an import map) and packages from its working directory",
    )?;
    match args.iter().position(|a| !a.starts_with('-')) {
        Some(at) if matches!(args[at].as_str(), "run" | "serve") => {
            plain(ch, &args[..at])?;
            script_line(ch, &DENO, &args[at + 1..])
        }
        Some(at)
            if args[at]
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-') =>
        {
            Err(Refusal::Runs(format!(
                "`deno {}` does not run a script file it is given, so the code it runs cannot be bound to the grant",
                super::config::printable(&args[at], 40)
            )))
        }
        _ => script_line(ch, &DENO, args),
    }
}

/// A launcher that fetches a package into its cache and runs it.
fn runner_line(ch: &mut dyn Checks, runner: &RunnerSyntax, args: &[String]) -> Result<(), Refusal> {
    project_files(ch, runner.project, runner.name, runner.why)?;
    let mut i = 0;
    let mut named_package = false;
    let at = loop {
        let Some(arg) = args.get(i) else { break None };
        if arg == "--" {
            break args.get(i + 1).map(|_| i + 1);
        }
        if !arg.starts_with('-') || arg.len() == 1 {
            break Some(i);
        }
        let (opt, attached) = match arg.split_once('=') {
            Some((o, v)) => (o.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        if runner.inline.contains(&opt.as_str()) {
            return Err(Refusal::Runs(format!(
                "`{} {opt}` runs a command line written in its arguments, so the code it runs cannot be bound to the grant",
                runner.name
            )));
        }
        let takes =
            runner.packages.contains(&opt.as_str()) || runner.valued.contains(&opt.as_str());
        let value = if takes && attached.is_none() {
            i += 1;
            args.get(i).cloned()
        } else {
            attached
        };
        if let Some(value) = value {
            if runner.packages.contains(&opt.as_str()) {
                named_package = true;
                package(ch, &value)?;
            } else if takes {
                ch.option_value(&opt, &value)?;
            } else {
                ch.plain_arg(&value)?;
            }
        }
        i += 1;
    };
    let Some(at) = at else {
        return Err(Refusal::Runs(format!(
            "`{}` names no package to run",
            runner.name
        )));
    };
    if named_package {
        // `npx -p PKG CMD`: the command is one of the package's programs.
        ch.option_value("the command", &args[at])?;
    } else {
        package(ch, &args[at])?;
    }
    plain(ch, &args[at + 1..])
}

/// A package to fetch: a registry name, or a local path (then it is code, outside).
fn package(ch: &mut dyn Checks, spec: &str) -> Result<(), Refusal> {
    let local = ["file:", "link:", "git+file://"]
        .iter()
        .find_map(|p| spec.strip_prefix(p));
    match local {
        Some(path) => ch.code_arg("its package", path),
        None if spec.starts_with('.') || spec.starts_with('/') => ch.code_arg("its package", spec),
        None => ch.option_value("its package", spec),
    }
}

fn manager_line(ch: &mut dyn Checks, manager: Manager, args: &[String]) -> Result<(), Refusal> {
    let at = args.iter().position(|a| !a.starts_with('-'));
    let sub = |n: usize| at.and_then(|a| args.get(a + n)).map(String::as_str);
    let (runner, rest_from) = match (manager, sub(0), sub(1)) {
        (Manager::Npm, Some("exec" | "x"), _) => (&NPX, 1),
        (Manager::Pnpm, Some("dlx"), _) => (&PNPM_DLX, 1),
        (Manager::Yarn, Some("dlx"), _) => (&YARN_DLX, 1),
        (Manager::Uv, Some("tool"), Some("run")) => (&UVX, 2),
        (Manager::Pipx, Some("run"), _) => (&PIPX, 1),
        (_, word, _) => {
            let name = match manager {
                Manager::Npm => "npm",
                Manager::Pnpm => "pnpm",
                Manager::Yarn => "yarn",
                Manager::Uv => "uv",
                Manager::Pipx => "pipx",
            };
            return Err(Refusal::Runs(format!(
                "`{name} {}` runs what the workspace's project defines (its scripts, its environment), so the workspace could change the code that would run with the grant",
                super::config::printable(word.unwrap_or(""), 40)
            )));
        }
    };
    let at = at.unwrap_or(0);
    args[..at]
        .iter()
        .try_for_each(|a| ch.option_value("an option", a))?;
    runner_line(ch, runner, &args[at + rest_from..])
}

/// `env [-i] [-u NAME] [NAME=VALUE]… COMMAND ARGS…`: the command is found on the `PATH` it
/// sets, and examined in turn.
fn env_line(
    ch: &mut dyn Checks,
    args: &[String],
    path: Option<&str>,
    depth: usize,
) -> Result<(), Refusal> {
    let (mut i, mut new_path, mut cleared) = (0, None::<String>, false);
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "--" => {
                i += 1;
                break;
            }
            "-i" | "--ignore-environment" | "-" => cleared = true,
            "-0" | "--null" | "-v" | "--debug" => {}
            "-u" | "--unset" => i += 1,
            a if a.starts_with("--unset=") => {}
            a if a.starts_with("-S") || a.starts_with("--split-string") => {
                return Err(Refusal::Runs(
                    "`env -S` splits a command line written in one argument, so the code it runs cannot be bound to the grant".into(),
                ))
            }
            a if a.starts_with("-C") || a.starts_with("--chdir") => {
                return Err(Refusal::Runs(
                    "`env -C` changes the working directory the grant was checked from".into(),
                ))
            }
            a if a.starts_with('-') => {}
            a => match a.split_once('=') {
                Some((name, value)) => {
                    ch.variable(name, value)?;
                    if name == "PATH" {
                        new_path = Some(value.to_string());
                    }
                }
                None => break,
            },
        }
        i += 1;
    }
    let Some(command) = args.get(i) else {
        return Err(Refusal::Runs("`env` names no program to run".into()));
    };
    let path = match (new_path.as_deref(), cleared) {
        (Some(p), _) => Some(p),
        (None, true) => Some("/bin:/usr/bin"),
        (None, false) => path,
    };
    ch.command_line(command, &args[i + 1..], path, depth + 1)
}

fn wrapped(
    ch: &mut dyn Checks,
    wrapper: &WrapperSyntax,
    args: &[String],
    path: Option<&str>,
    depth: usize,
) -> Result<(), Refusal> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if !arg.starts_with('-') || arg.len() == 1 {
            break;
        }
        if wrapper.valued.contains(&arg.as_str()) {
            i += 1;
        }
        i += 1;
    }
    i += wrapper.words;
    let Some(command) = args.get(i) else {
        return Err(Refusal::Runs("it names no program to run".into()));
    };
    ch.command_line(command, &args[i + 1..], path, depth + 1)
}

/// `java -jar FILE` or `java -cp PATHS CLASS`: without either, classes come from the
/// working directory.
fn java(ch: &mut dyn Checks, args: &[String]) -> Result<(), Refusal> {
    let mut i = 0;
    let mut found = false;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "-jar" => {
                let jar = args.get(i + 1).map(String::as_str).unwrap_or("");
                ch.code_arg("its jar", jar)?;
                return plain(ch, args.get(i + 2..).unwrap_or(&[]));
            }
            "-cp" | "-classpath" | "--class-path" | "-p" | "--module-path" => {
                let paths = args.get(i + 1).map(String::as_str).unwrap_or("");
                for entry in paths.split(':') {
                    ch.code_arg("its class path entry", entry)?;
                }
                found = true;
                i += 2;
            }
            a if a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    if !found {
        return Err(Refusal::Runs(
            "`java` without `-jar` or a class path loads classes from its working directory, the workspace".into(),
        ));
    }
    plain(ch, args.get(i..).unwrap_or(&[]))
}
