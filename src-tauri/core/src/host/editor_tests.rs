use super::*;
use std::os::unix::fs::PermissionsExt;

/// A PATH directory holding executables with these names.
fn bin(names: &[&str]) -> (tempfile::TempDir, EditorEnv) {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in names {
        let p = dir.path().join(name);
        std::fs::write(&p, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let env = EditorEnv {
        path: Some(dir.path().as_os_str().to_os_string()),
        visual: None,
        editor: None,
    };
    (dir, env)
}

fn args(l: &Launch) -> Vec<String> {
    l.args
        .iter()
        .map(|a| a.to_string_lossy().to_string())
        .collect()
}

const FILE: &str = "/ws/src/main.rs";

#[test]
fn each_editor_is_told_the_line_its_own_way() {
    let (dir, env) = bin(&["code", "zeditor", "idea", "subl"]);
    let file = Path::new(FILE);
    let code = launch_for("vscode", file, 12, &env).expect("code");
    assert_eq!(code.program, dir.path().join("code"));
    assert_eq!(args(&code), ["-g", "/ws/src/main.rs:12"]);
    let zed = launch_for("zed", file, 3, &env).expect("zed");
    assert_eq!(zed.program, dir.path().join("zeditor"), "the second name");
    assert_eq!(args(&zed), ["/ws/src/main.rs:3"]);
    let idea = launch_for("idea", file, 7, &env).expect("idea");
    assert_eq!(args(&idea), ["--line", "7", "/ws/src/main.rs"]);
    let subl = launch_for("sublime", file, 0, &env).expect("subl");
    assert_eq!(args(&subl), ["/ws/src/main.rs:1"], "line 0 is line 1");
}

#[test]
fn auto_takes_the_first_detected_and_says_when_there_is_none() {
    let (dir, env) = bin(&["subl", "zed"]);
    let l = launch_for("auto", Path::new(FILE), 1, &env).expect("auto");
    assert_eq!(l.program, dir.path().join("zed"));
    let detected: Vec<String> = options(&env)
        .into_iter()
        .filter(|o| o.detected)
        .map(|o| o.id)
        .collect();
    assert_eq!(detected, ["zed", "sublime"]);
    let (_dir, empty) = bin(&[]);
    assert_eq!(
        launch_for("auto", Path::new(FILE), 1, &empty),
        Err(EditorError::NoneFound)
    );
    assert_eq!(
        launch_for("vscode", Path::new(FILE), 1, &empty),
        Err(EditorError::NotFound("Visual Studio Code".into()))
    );
}

#[test]
fn names_that_are_not_plain_programs_are_never_looked_up() {
    let (dir, mut env) = bin(&["code"]);
    // Not executable: not found.
    let p = dir.path().join("subl");
    std::fs::write(&p, "").expect("write");
    assert!(launch_for("sublime", Path::new(FILE), 1, &env).is_err());
    // A relative PATH entry (the current directory) is ignored.
    env.path = Some(OsString::from(format!(".:{}", dir.path().display())));
    assert!(env.find("../code").is_none());
    assert!(env.find("sub/code").is_none());
    assert_eq!(env.find("code"), Some(dir.path().join("code")));
    assert!(!is_known("sh") && !is_known("../code") && is_known("zed"));
    assert_eq!(
        launch_for("/bin/sh", Path::new(FILE), 1, &env),
        Err(EditorError::Unknown("/bin/sh".into()))
    );
}

#[test]
fn terminal_editors_run_in_a_terminal_with_plus_line() {
    let (dir, mut env) = bin(&["x-terminal-emulator", "nvim", "hx"]);
    env.editor = Some("nvim -p".into());
    let l = launch_for("terminal", Path::new(FILE), 9, &env).expect("terminal");
    assert_eq!(l.program, dir.path().join("x-terminal-emulator"));
    let nvim = dir.path().join("nvim").display().to_string();
    assert_eq!(args(&l), ["-e", &nvim, "-p", "+9", FILE]);
    // $VISUAL wins over $EDITOR; helix takes FILE:LINE.
    env.visual = Some("hx".into());
    let l = launch_for("terminal", Path::new(FILE), 9, &env).expect("helix");
    assert_eq!(args(&l)[2], "/ws/src/main.rs:9");
}

#[test]
fn hostile_editor_variables_are_refused() {
    let (_dir, mut env) = bin(&["x-terminal-emulator", "vim"]);
    for value in [
        "vim; rm -rf ~",
        "vim $(id)",
        "vim `id`",
        "sh -c 'x'",
        "vim|tee",
        "vim\u{1b}[31m",
    ] {
        env.editor = Some(value.into());
        assert!(
            matches!(
                launch_for("terminal", Path::new(FILE), 1, &env),
                Err(EditorError::UnsupportedEditorVariable(_))
            ),
            "{value:?}"
        );
    }
    env.editor = Some("   ".into());
    assert_eq!(
        launch_for("terminal", Path::new(FILE), 1, &env),
        Err(EditorError::NoTerminalEditor)
    );
    env.editor = Some("vim".into());
    let (_none, mut no_terminal) = bin(&["vim"]);
    no_terminal.editor = Some("vim".into());
    assert_eq!(
        launch_for("terminal", Path::new(FILE), 1, &no_terminal),
        Err(EditorError::NoTerminal("vim".into()))
    );
}

#[test]
fn a_burst_of_launches_is_cut_off() {
    let launcher = Launcher::default();
    let launch = Launch {
        program: PathBuf::from("/bin/true"),
        args: Vec::new(),
    };
    for _ in 0..BURST {
        launcher.start(&launch, Path::new("/")).expect("start");
    }
    assert_eq!(
        launcher.start(&launch, Path::new("/")),
        Err(EditorError::TooMany)
    );
}
