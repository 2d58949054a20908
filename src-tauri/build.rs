//! Declares the app manifest so that Mandate's own commands are ACL-checked: the window may
//! call only what `capabilities/main.json` grants. On Linux, also builds the WebKit web process
//! extension (`webkit-extension/lib.rs`, `no_std`, no crates) with `rustc` alone into
//! `OUT_DIR`, where the window embeds it (`lean::web_extension_dir`). Release builds also
//! carry the commit they were built from in `--version`.
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(&["request", "subscribe"]));
    if let Err(error) = tauri_build::try_build(attributes) {
        eprintln!("tauri-build failed: {error:#}");
        std::process::exit(1);
    }
    version();
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        web_extension();
        link_flags();
    }
}

/// Link flags for the binaries, each only where the linker takes it:
/// - their relative relocations packed (`DT_RELR`, glibc 2.36 and binutils 2.38 on): about
///   0.9 MB less in the window binary, which is position-independent like every binary here,
///   and less work for the loader at start-up;
/// - in release builds, the toolchain's own LLVM linker (which rustc already links with on
///   x86-64 Linux) folding functions whose code is identical (`--icf=all`): the same future
///   polled, dropped or spawned under many types compiles to the same bytes many times over
///   (0.2 MB of the window). Rust makes no promise that two functions have different
///   addresses, and the only C linked in (tree-sitter's runtime) never compares them.
fn link_flags() {
    const RELR: &str = "-Wl,-z,pack-relative-relocs";
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let probe = out.join("link-probe.c");
    if std::fs::write(&probe, "int main(void) { return 0; }\n").is_err() {
        return;
    }
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let cc = std::env::var_os("RUSTC_LINKER").unwrap_or_else(|| "cc".into());
    let links = |flags: &[String]| {
        Command::new(&cc)
            .args(flags)
            .arg(&probe)
            .arg("-o")
            .arg(out.join("link-probe"))
            .output()
            .is_ok_and(|o| o.status.success() && o.stderr.is_empty())
    };
    let mut flags: Vec<String> = Vec::new();
    if std::env::var("PROFILE").as_deref() == Ok("release") {
        if let Some(lld) = toolchain_lld() {
            let fold = vec![
                format!("-B{}", lld.display()),
                "-fuse-ld=lld".to_string(),
                "-Wl,--icf=all".to_string(),
            ];
            if links(&fold) {
                flags = fold;
            }
        }
    }
    let mut with_relr = flags.clone();
    with_relr.push(RELR.to_string());
    if links(&with_relr) {
        flags = with_relr;
    }
    for flag in flags {
        println!("cargo:rustc-link-arg-bins={flag}");
    }
}

/// The folder of the toolchain's `ld.lld` (rustc's `gcc-ld`), if it has one.
fn toolchain_lld() -> Option<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = std::env::var("TARGET").ok()?;
    let sysroot = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    let dir = sysroot.join("lib/rustlib").join(target).join("bin/gcc-ld");
    dir.join("ld.lld").exists().then_some(dir)
}

fn web_extension() {
    println!("cargo:rerun-if-changed=webkit-extension/lib.rs");
    println!("cargo:rerun-if-changed=src/pageout.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let mut command = Command::new(rustc);
    // The linker Cargo was told to use for this target, if any.
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        let mut arg = std::ffi::OsString::from("linker=");
        arg.push(linker);
        command.arg("-C").arg(arg);
    }
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let status = command
        .args([
            "--crate-name",
            "mandate_pages",
            "--crate-type",
            "cdylib",
            "--edition",
            "2021",
        ])
        .args([
            "-C",
            "opt-level=2",
            "-C",
            "panic=abort",
            "-C",
            "strip=debuginfo",
        ])
        .args(["--target", &target, "--cap-lints", "warn", "-o"])
        .arg(out.join("libmandate_pages.so"))
        .arg("webkit-extension/lib.rs")
        .status();
    match status {
        Ok(status) if status.success() => {}
        other => {
            eprintln!("building the WebKit web process extension failed: {other:?}");
            std::process::exit(1);
        }
    }
}

/// `MANDATE_VERSION` for `--version`: the package's version, and in release builds the commit
/// and its date (`0.1.0 (32c48f6 2026-11-28)`), or `MANDATE_COMMIT` when the source is not a
/// git checkout (a tarball). Debug builds leave git out: a commit would rebuild the shell
/// every time HEAD moves. Same source, same string: the build stays reproducible.
fn version() {
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    println!("cargo:rerun-if-env-changed=MANDATE_COMMIT");
    let commit = match std::env::var("MANDATE_COMMIT") {
        Ok(commit) if !commit.trim().is_empty() => Some(commit.trim().to_string()),
        _ if std::env::var("PROFILE").as_deref() == Ok("release") => git_commit(),
        _ => None,
    };
    match commit {
        Some(commit) => println!("cargo:rustc-env=MANDATE_VERSION={version} ({commit})"),
        None => println!("cargo:rustc-env=MANDATE_VERSION={version}"),
    }
}

/// `HASH DATE` of HEAD, watching the files that move with it; None outside a checkout.
fn git_commit() -> Option<String> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&manifest)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["log", "-1", "--format=%h %cs"]).filter(|c| !c.is_empty())?;
    let git_dir = PathBuf::from(git(&["rev-parse", "--absolute-git-dir"])?);
    let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map(PathBuf::from)
        .unwrap_or_else(|| git_dir.clone());
    let mut watched = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(common.join(branch));
    }
    // A path that does not exist would rerun this script at every build.
    for path in watched.iter().filter(|p| Path::exists(p)) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    Some(commit)
}
