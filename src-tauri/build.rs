//! Declares the app manifest so that Mandate's own commands are ACL-checked: the window may
//! call only what `capabilities/main.json` grants. On Linux, also builds the WebKit web process
//! extension (`webkit-extension/lib.rs`, `no_std`, no crates) with `rustc` alone into
//! `OUT_DIR`, where the window embeds it (`lean::web_extension_dir`).
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(&["request", "subscribe"]));
    if let Err(error) = tauri_build::try_build(attributes) {
        eprintln!("tauri-build failed: {error:#}");
        std::process::exit(1);
    }
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        web_extension();
        pack_relocations();
    }
}

/// The binaries' relative relocations packed (`DT_RELR`, glibc 2.36 and binutils 2.38 on):
/// about 0.9 MB less in the window binary, which is position-independent like every binary
/// here, and less work for the loader at start-up. Only where the linker takes the flag.
fn pack_relocations() {
    const FLAG: &str = "-Wl,-z,pack-relative-relocs";
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let probe = out.join("relr-probe.c");
    if std::fs::write(&probe, "int main(void) { return 0; }\n").is_err() {
        return;
    }
    let cc = std::env::var_os("RUSTC_LINKER").unwrap_or_else(|| "cc".into());
    let linked = Command::new(cc)
        .arg(FLAG)
        .arg(&probe)
        .arg("-o")
        .arg(out.join("relr-probe"))
        .output()
        .is_ok_and(|o| o.status.success() && o.stderr.is_empty());
    if linked {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    }
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
