//! Declares the app manifest so that Mandate's own commands are ACL-checked:
//! the window may call only what `capabilities/main.json` grants.
fn main() {
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(&["request", "subscribe"]));
    if let Err(error) = tauri_build::try_build(attributes) {
        eprintln!("tauri-build failed: {error:#}");
        std::process::exit(1);
    }
}
