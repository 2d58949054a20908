//! `mandate-window`: the desktop window. Started by `mandate` (no subcommand), which keeps the
//! command line free of GTK and WebKit so headless use starts fast and runs without them.

mod desktop;
mod ipc;
mod lean;
#[cfg(target_os = "linux")]
mod notifications;
mod pageout;
#[cfg(target_os = "linux")]
mod web_sandbox;

use std::path::PathBuf;
use std::sync::Arc;

use mandate_core::cli::workspace_dir;
use mandate_core::host::Host;
use mandate_core::secrets::KeyringStore;
use mandate_core::settings::AppDirs;
use tauri::{Manager, WebviewUrl, WebviewWindowBuilder};

fn main() {
    // Before GTK or anything else: an installed copy can be asked what it is.
    if std::env::args_os().nth(1).is_some_and(|a| a == "--version") {
        println!("mandate-window {}", env!("MANDATE_VERSION"));
        return;
    }
    // Before any thread: see `mandate`'s main.
    mandate_core::secrets::take_from_environment(&[mandate_core::secrets::API_KEY_ENV]);
    lean::environment();
    #[cfg(target_os = "linux")]
    web_sandbox::request(&AppDirs::from_env().data);
    mandate_core::sandbox::protect_this_process();
    let _logs = match mandate_core::logging::init(
        &AppDirs::from_env().data,
        arg_value("--log-level").as_deref(),
    ) {
        Ok(guard) => Some(guard),
        Err(e) => {
            eprintln!("mandate: {e}; continuing without a log file");
            None
        }
    };
    if let Err(e) = run(arg_value("--workspace").map(PathBuf::from)) {
        eprintln!("mandate: {e:#}");
        std::process::exit(1);
    }
}

/// `--workspace DIR` or `--log-level LEVEL`; anything else (WebKitWebDriver adds
/// `--automation`) is not ours.
fn arg_value(name: &str) -> Option<String> {
    // Not `env::args()`: it panics on a path that is not UTF-8.
    let mut args = std::env::args_os().skip(1);
    let prefixed = format!("{name}=");
    while let Some(arg) = args.next() {
        if arg == name {
            return args.next().and_then(|v| v.into_string().ok());
        }
        if let Some(value) = arg.to_str().and_then(|a| a.strip_prefix(&prefixed)) {
            return Some(value.to_string());
        }
    }
    None
}

/// Only the app's own pages may load in the window.
fn is_app_url(url: &tauri::Url) -> bool {
    match url.scheme() {
        "tauri" => url.host_str() == Some("localhost"),
        "http" | "https" => url.host_str() == Some("tauri.localhost"),
        _ => false,
    }
}

fn run(workspace: Option<PathBuf>) -> anyhow::Result<()> {
    let root = workspace_dir(workspace);
    if !root.is_dir() {
        anyhow::bail!("the workspace {} is not a directory", root.display());
    }
    tauri::Builder::default()
        .invoke_handler(tauri::generate_handler![ipc::request, ipc::subscribe])
        .setup(move |app| {
            let trace = ipc::IpcTrace::from_env().map(Arc::new);
            let sink = Arc::new(ipc::ChannelSink::new(trace.clone()));
            let focus_trace = trace.clone();
            let tauri::async_runtime::RuntimeHandle::Tokio(runtime) =
                tauri::async_runtime::handle();
            let desktop = Arc::new(desktop::WindowDesktop::new(app.handle().clone()));
            let dirs = AppDirs::from_env();
            let web_extension = lean::web_extension_dir(&dirs.data);
            // WebKit's own caches and data, in a directory of their own: WebKit's sandbox lets
            // the page write there (`web_sandbox.rs`), and by default that would be all of
            // `~/.cache`, where other programs keep code they run.
            let webkit_data = dirs.data.join("webkit");
            #[cfg(target_os = "linux")]
            let data = dirs.data.clone();
            let host = Host::new(
                &root,
                dirs,
                Arc::new(KeyringStore),
                sink.clone(),
                desktop,
                runtime,
            )?;
            let dropped = host.clone();
            app.manage(ipc::Shell { host, sink });
            lean::before_first_webview();
            let mut builder =
                WebviewWindowBuilder::new(app, "main", WebviewUrl::App("index.html".into()));
            if let Some(dir) = web_extension {
                #[cfg(target_os = "linux")]
                web_sandbox::show_directory(&dir);
                builder = builder.extensions_path(dir);
            }
            #[cfg(target_os = "linux")]
            web_sandbox::arm(&data);
            let window = builder
                .data_directory(webkit_data)
                .title(desktop::title(&root))
                .inner_size(1280.0, 820.0)
                .min_inner_size(720.0, 480.0)
                .on_navigation(move |url| {
                    let allowed = is_app_url(url);
                    if let (false, Some(trace)) = (allowed, &trace) {
                        trace.refused_navigation(url.as_str());
                    }
                    allowed
                })
                .build()?;
            #[cfg(target_os = "linux")]
            window.with_webview(|webview| lean::tune(&webview.inner()))?;
            let focus = window.clone();
            let trace = focus_trace;
            window.on_window_event(move |event| match event {
                tauri::WindowEvent::Focused(false) => {
                    ipc::give_back_idle_pages(&focus, trace.clone());
                }
                // Files dropped on the window are read by the host, never by the page.
                tauri::WindowEvent::DragDrop(tauri::DragDropEvent::Drop { paths, .. }) => {
                    dropped.drop_files(paths.clone());
                }
                _ => {}
            });
            Ok(())
        })
        .build(tauri::generate_context!())?
        .run(|app, event| {
            // Background processes end with Mandate, their last changes looked at first.
            if let tauri::RunEvent::Exit = event {
                if let Some(shell) = app.try_state::<ipc::Shell>() {
                    shell.host.end_processes();
                }
            }
            // A window closed before its first paint did not fail in WebKit's sandbox.
            #[cfg(target_os = "linux")]
            if let tauri::RunEvent::Exit = event {
                web_sandbox::started(&AppDirs::from_env().data);
            }
        });
    Ok(())
}
