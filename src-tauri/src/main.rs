//! The `mandate` binary: no subcommand opens the window; `run`, `intents` and `trace` are headless.

mod ipc;

use std::sync::Arc;

use clap::Parser;
use mandate_core::cli::{run_command, workspace_dir, Cli};
use mandate_core::host::Host;
use mandate_core::secrets::KeyringStore;
use mandate_core::settings::AppDirs;
use tauri::{Manager, WebviewUrl, WebviewWindowBuilder};

fn main() {
    // WebKitWebDriver starts the app with `--automation` (for the window tests); it is not ours.
    let cli = Cli::parse_from(std::env::args_os().filter(|a| a != "--automation"));
    if let Some(command) = cli.command {
        std::process::exit(run_command(command, cli.workspace));
    }
    if let Err(e) = run_gui(cli.workspace) {
        eprintln!("mandate: {e:#}");
        std::process::exit(1);
    }
}

/// Only the app's own pages may load in the window.
fn is_app_url(url: &tauri::Url) -> bool {
    match url.scheme() {
        "tauri" => url.host_str() == Some("localhost"),
        "http" | "https" => url.host_str() == Some("tauri.localhost"),
        _ => false,
    }
}

fn run_gui(workspace: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    let root = workspace_dir(workspace);
    if !root.is_dir() {
        anyhow::bail!("the workspace {} is not a directory", root.display());
    }
    tauri::Builder::default()
        .invoke_handler(tauri::generate_handler![ipc::request, ipc::subscribe])
        .setup(move |app| {
            let sink = Arc::new(ipc::ChannelSink::new(ipc::IpcTrace::from_env()));
            let runtime = match tauri::async_runtime::handle() {
                tauri::async_runtime::RuntimeHandle::Tokio(h) => h,
            };
            let host = Host::new(
                &root,
                AppDirs::from_env(),
                Arc::new(KeyringStore),
                sink.clone(),
                runtime,
            )
            .map_err(anyhow::Error::msg)?;
            app.manage(ipc::Shell { host, sink });
            WebviewWindowBuilder::new(app, "main", WebviewUrl::App("index.html".into()))
                .title(format!("Mandate — {}", root.display()))
                .inner_size(1280.0, 820.0)
                .min_inner_size(720.0, 480.0)
                .on_navigation(is_app_url)
                .build()?;
            Ok(())
        })
        .run(tauri::generate_context!())?;
    Ok(())
}
