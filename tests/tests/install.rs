//! `make install` into a scratch prefix gives a working `mandate` on the PATH, with its desktop
//! entry and icons, and `make uninstall` takes back exactly that. CI installs the binaries its
//! test build made (`BUILT=`): building the release a second time would double CI's build.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mandate_tests::app::{mandate_bin, UserDirs};

const APP_ID: &str = "dev.mandate.app";
const ICON_SIZES: [u32; 4] = [32, 48, 64, 128];

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the checkout holds tests/")
        .to_path_buf()
}

fn make(args: &[String]) -> Output {
    let built = mandate_bin()
        .parent()
        .expect("the binary's directory")
        .display()
        .to_string();
    let out = Command::new("make")
        .arg("-C")
        .arg(checkout())
        .arg("--no-print-directory")
        .args(args)
        .arg(format!("BUILT={built}"))
        .output()
        .expect("run make");
    assert!(
        out.status.success(),
        "make {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every path under `root`, relative to it, sorted.
fn tree(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(
                path.strip_prefix(root)
                    .expect("under root")
                    .display()
                    .to_string(),
            );
            if path.is_dir() && !path.is_symlink() {
                walk(&path, root, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Width and height of a PNG, from its header.
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).expect("read icon");
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is a PNG",
        path.display()
    );
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    (be(16), be(20))
}

/// Runs an installed program found through PATH alone, away from the checkout.
fn installed(prefix: &Path, dirs: &UserDirs, cwd: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", prefix.join("bin").display()),
        )
        .env("HOME", dirs.home.path())
        .envs(dirs.env())
        .output()
        .unwrap_or_else(|e| panic!("run {program} from the PATH: {e}"))
}

#[test]
fn make_install_gives_a_working_mandate_and_uninstall_takes_back_exactly_what_it_put() {
    let scratch = tempfile::tempdir().expect("tempdir");
    // A space in the prefix, and a file of someone else's already in its bin/.
    let prefix = scratch.path().join("my prefix");
    std::fs::create_dir_all(prefix.join("bin")).expect("bin");
    std::fs::write(prefix.join("bin/other-tool"), "#!/bin/sh\n").expect("other tool");
    let before = tree(&prefix);
    let prefix_arg = format!("PREFIX={}", prefix.display());

    make(&["install".into(), prefix_arg.clone()]);
    // Again: an update replaces what the first put, and the list of what to remove stays whole.
    make(&["install".into(), prefix_arg.clone()]);

    let dirs = UserDirs::new();
    let elsewhere = scratch.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("cwd");
    let version = env!("CARGO_PKG_VERSION");
    let out = installed(&prefix, &dirs, &elsewhere, "mandate", &["--version"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "mandate --version: {out:?}");
    assert!(said.starts_with(&format!("mandate {version}")), "{said}");
    let out = installed(&prefix, &dirs, &elsewhere, "mandate-window", &["--version"]);
    assert!(out.status.success(), "mandate-window --version: {out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&format!("mandate-window {version}")),
        "{out:?}"
    );

    // A real subcommand, from the PATH, in a repository of its own.
    let repo = scratch.path().join("project");
    std::fs::create_dir_all(&repo).expect("project");
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .expect("git init");
    assert!(git.success());
    let out = installed(&prefix, &dirs, &repo, "mandate", &["init", "--no-hook"]);
    assert!(out.status.success(), "mandate init: {out:?}");
    let out = installed(&prefix, &dirs, &repo, "mandate", &["intents", "validate"]);
    assert!(out.status.success(), "mandate intents validate: {out:?}");
    assert!(repo.join(".orchestration/active_intents.yaml").is_file());

    // The desktop entry: valid, starting the installed binary, naming the installed icon.
    let entry = prefix.join(format!("share/applications/{APP_ID}.desktop"));
    let validate = Command::new("desktop-file-validate")
        .arg(&entry)
        .output()
        .expect("desktop-file-validate (make test-deps installs desktop-file-utils)");
    assert!(validate.status.success(), "{validate:?}");
    assert!(validate.stdout.is_empty(), "no warnings: {validate:?}");
    let text = std::fs::read_to_string(&entry).expect("entry");
    let exec = format!("Exec=\"{}\" open", prefix.join("bin/mandate").display());
    assert!(text.lines().any(|l| l == exec), "{text}");
    assert!(
        text.lines().any(|l| l == format!("Icon={APP_ID}")),
        "{text}"
    );
    for size in ICON_SIZES {
        let icon = prefix.join(format!(
            "share/icons/hicolor/{size}x{size}/apps/{APP_ID}.png"
        ));
        assert_eq!(png_size(&icon), (size, size), "{}", icon.display());
    }

    // A list of installed files that names something outside the prefix (edited by hand, or
    // by anything else) does not make the uninstall remove it.
    let outside = scratch.path().join("precious.txt");
    std::fs::write(&outside, "keep me").expect("outside file");
    let manifest = prefix.join("lib/mandate/installed");
    let mut listed = std::fs::read_to_string(&manifest).expect("the list of what was installed");
    listed.push_str(&format!(
        "file\t{}\nfile\t{}/../precious.txt\ndir\t{}\n",
        outside.display(),
        prefix.display(),
        scratch.path().display()
    ));
    std::fs::write(&manifest, listed).expect("edit the list");

    make(&["uninstall".into(), prefix_arg.clone()]);
    assert_eq!(tree(&prefix), before, "only what was there before is left");
    assert!(
        outside.is_file(),
        "a file outside the prefix is never removed"
    );
    // Nothing installed: uninstalling again says so and changes nothing.
    make(&["uninstall".into(), prefix_arg]);
    assert_eq!(tree(&prefix), before);
}

#[test]
fn destdir_stages_the_install_and_the_files_name_the_final_prefix() {
    let stage = tempfile::tempdir().expect("tempdir");
    let destdir = format!("DESTDIR={}", stage.path().display());
    make(&[
        "install".into(),
        destdir.clone(),
        "PREFIX=/usr/local".into(),
    ]);
    let staged = stage.path().join("usr/local");
    assert!(staged.join("bin/mandate").is_file());
    assert!(staged.join("bin/mandate-window").is_file());
    let entry =
        std::fs::read_to_string(staged.join(format!("share/applications/{APP_ID}.desktop")))
            .expect("entry");
    assert!(
        entry
            .lines()
            .any(|l| l == "Exec=\"/usr/local/bin/mandate\" open"),
        "the entry names where the files will be, not the stage: {entry}"
    );
    make(&["uninstall".into(), destdir, "PREFIX=/usr/local".into()]);
    assert_eq!(
        tree(stage.path()),
        Vec::<String>::new(),
        "the stage is empty again"
    );
}
