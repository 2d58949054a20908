//! WebKitGTK set up for what the window is: one local page of text and forms. No back/forward
//! cache, the document-viewer cache model, no WebGL, media, WebAudio or WebRTC (the page uses
//! none, and each brings its own buffers and threads), no GPU compositing, and memory-pressure
//! limits for the network process (the web process's are fixed when wry creates its context).
//! GL and JavaScript JIT settings that must be made before any thread: [`environment`].

/// Process-wide settings for GTK, WebKit and JavaScriptCore. Call it before any thread starts
/// (they are environment variables, read by the web process too). A value the user set is kept.
///
/// OpenGL: the window draws nothing with GL (the page is painted by the web process without GPU
/// compositing, see [`tune`]), yet GTK opens GLX when it opens the display and WebKit checks
/// DMA-BUF rendering. Both are turned off here. WebKit still opens EGL once in this process to
/// find the GPU's render node, which loads Mesa and with it LLVM (about 20 MB of relocated data,
/// private to each process). Naming the node (`WEBKIT_WEB_RENDER_DEVICE_FILE`) would skip that,
/// but WebKit starts forwarding the system's settings (dark theme, fonts) to the page on that
/// same path, so the page would stop following them: not done.
#[cfg(target_os = "linux")]
pub fn environment() {
    let set = |name: &str, value: &str| {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, value);
        }
    };
    // GTK 3 then skips GLX when it opens the display (only GL widgets need it; there are none).
    set("GDK_GL", "disable");
    // The DMA-BUF renderer is for GPU compositing, which `tune` turns off.
    set("WEBKIT_DISABLE_DMABUF_RENDERER", "1");
    // JavaScriptCore without its JIT compilers, in the web process and the window (Tauri's
    // messages to the page make a JavaScript context there too). The page is forms and text;
    // its scripts run in the interpreter. Measured: 8 MB less PSS at idle (the compilers' code
    // and their executable memory, mostly in the web process); the busiest script, the code
    // highlighter, takes 2.3× as long (190 KB of code: 340 ms instead of 150 ms).
    set("JSC_useJIT", "0");
}

/// Gives the kernel back the pages of code and read-only data that start-up mapped and an idle
/// window does not use (`pageout.rs`), in this process and, through the web process extension
/// ([`web_extension_dir`]), in WebKit's web process: the app's own code (start-up runs code all
/// over the binary, and the kernel maps 64 KB around each page it reads), GTK's and WebKit's.
/// Measured: 20 MB less PSS in this process and 35 MB less in the web process at idle.
///
/// Done once the page has settled after start-up, and again, at most once a minute, when the
/// window loses the focus (the person went back to the editor).
#[cfg(target_os = "linux")]
pub fn give_back_idle_pages(
    window: &tauri::WebviewWindow,
    report: impl Fn(&str, u32) + Send + 'static,
) {
    static LAST: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    {
        let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(60)) {
            return;
        }
        *last = Some(std::time::Instant::now());
    }
    let advised = crate::pageout::give_back_clean_file_pages();
    report("window", u32::try_from(advised).unwrap_or(u32::MAX));
    // The web process's own pages: asked of its extension (GTK's main thread only). Its reply
    // carries its count; without the extension the message goes unhandled and is not reported.
    let _ = window.with_webview(move |webview| {
        use webkit2gtk::{UserMessage, UserMessageExt, WebViewExt};
        let message = UserMessage::new(&crate::pageout::MESSAGE.to_string_lossy(), None);
        webview.inner().send_message_to_page(
            &message,
            None::<&webkit2gtk::gio::Cancellable>,
            move |reply| {
                let count = reply
                    .ok()
                    .and_then(|reply| reply.parameters())
                    .and_then(|value| value.get::<u32>());
                if let Some(count) = count {
                    report("web", count);
                }
            },
        );
    });
}

/// The embedded web process extension (`webkit-extension/lib.rs`, built by `build.rs`).
#[cfg(target_os = "linux")]
const WEB_EXTENSION: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmandate_pages.so"));

/// Writes the web process extension into `DATA/webkit-extension/` (only WebKit loads from
/// there: every shared library in the directory is loaded into the web process), unless the
/// same bytes are already there, and returns the directory. The file is replaced atomically, so
/// a web process starting meanwhile loads the old copy or the new one, never half of one. Data
/// directories are among what commands, hooks and servers can neither read nor write
/// (`sandbox/secrets.rs`). `None` (the window runs without it) when it cannot be written.
#[cfg(target_os = "linux")]
pub fn web_extension_dir(data: &std::path::Path) -> Option<std::path::PathBuf> {
    // WebKit takes only an absolute directory (`MANDATE_DATA_DIR` may be relative).
    let dir = std::path::absolute(data).ok()?.join("webkit-extension");
    let file = dir.join("libmandate_pages.so");
    if std::fs::read(&file).is_ok_and(|bytes| bytes == WEB_EXTENSION) {
        return Some(dir);
    }
    let written = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(&dir)?;
        // A name WebKit does not load (it loads `*.so`) until it is renamed.
        let mut temp = tempfile::Builder::new()
            .prefix(".libmandate_pages-")
            .suffix(".partial")
            .tempfile_in(&dir)?;
        std::io::Write::write_all(&mut temp, WEB_EXTENSION)?;
        temp.as_file().sync_all()?;
        temp.persist(&file).map_err(|e| e.error)?;
        Ok(())
    })();
    match written {
        Ok(()) => Some(dir),
        Err(error) => {
            eprintln!(
                "mandate: the web process extension could not be written to {}: {error}; the \
                 window runs without it (its web process keeps its start-up pages)",
                dir.display()
            );
            None
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn give_back_idle_pages(
    _window: &tauri::WebviewWindow,
    _report: impl Fn(&str, u32) + Send + 'static,
) {
}

#[cfg(not(target_os = "linux"))]
pub fn web_extension_dir(_data: &std::path::Path) -> Option<std::path::PathBuf> {
    None
}

#[cfg(target_os = "linux")]
pub fn before_first_webview() {
    use webkit2gtk::{MemoryPressureSettings, WebsiteDataManager};
    // The network process only serves the app's own assets: keep it small.
    let mut settings = MemoryPressureSettings::new();
    settings.set_memory_limit(64);
    // Strict first: WebKit refuses a conservative threshold that is not below the strict one
    // (whose default, 0.5, would refuse 0.5).
    settings.set_strict_threshold(0.75);
    settings.set_conservative_threshold(0.5);
    settings.set_poll_interval(10.0);
    WebsiteDataManager::set_memory_pressure_settings(&mut settings);
}

#[cfg(target_os = "linux")]
pub fn tune(webview: &webkit2gtk::WebView) {
    use webkit2gtk::{
        CacheModel, HardwareAccelerationPolicy, SettingsExt, WebContextExt, WebViewExt,
    };
    if let Some(context) = webview.context() {
        context.set_cache_model(CacheModel::DocumentViewer);
    }
    let Some(settings) = WebViewExt::settings(webview) else {
        return;
    };
    settings.set_enable_page_cache(false);
    settings.set_enable_webgl(false);
    settings.set_enable_webaudio(false);
    settings.set_enable_media(false);
    settings.set_enable_media_stream(false);
    settings.set_enable_mediasource(false);
    settings.set_enable_encrypted_media(false);
    settings.set_enable_media_capabilities(false);
    settings.set_enable_webrtc(false);
    settings.set_hardware_acceleration_policy(HardwareAccelerationPolicy::Never);
    settings.set_enable_dns_prefetching(false);
    settings.set_enable_html5_database(false);
    settings.set_enable_html5_local_storage(false);
    settings.set_enable_offline_web_application_cache(false);
    settings.set_enable_back_forward_navigation_gestures(false);
    settings.set_enable_site_specific_quirks(false);
    settings.set_enable_hyperlink_auditing(false);
}

#[cfg(not(target_os = "linux"))]
pub fn before_first_webview() {}

#[cfg(not(target_os = "linux"))]
pub fn environment() {}
