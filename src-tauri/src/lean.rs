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
/// window does not use: the app's own code (start-up runs code all over the binary, and the
/// kernel maps 64 KB around each page it reads), GTK's and WebKit's. They are clean copies of
/// files, so nothing is written anywhere; what runs again later is mapped again from the page
/// cache on its first use. Writable mappings are left alone (their pages are private copies,
/// which this would push to swap). Measured: 20 MB less PSS at idle.
///
/// Done once the page has settled after start-up, and again, at most once a minute, when the
/// window loses the focus (the person went back to the editor).
#[cfg(target_os = "linux")]
pub fn give_back_idle_pages() {
    static LAST: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    {
        let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(60)) {
            return;
        }
        *last = Some(std::time::Instant::now());
    }
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    for line in maps.lines() {
        // start-end perms offset device inode path
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(range), Some(perms), Some(path)) = (fields.first(), fields.get(1), fields.get(5))
        else {
            continue;
        };
        if !path.starts_with('/') || perms.as_bytes().get(1) != Some(&b'-') {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        // SAFETY: advice on a read-only file mapping of this process, as listed by the kernel;
        // its contents stay as they are (they are read back from the file when next used). A
        // mapping gone since the listing makes the call fail, which is ignored.
        unsafe {
            libc::madvise(
                start as *mut libc::c_void,
                end.saturating_sub(start),
                libc::MADV_PAGEOUT,
            )
        };
    }
}

#[cfg(not(target_os = "linux"))]
pub fn give_back_idle_pages() {}

#[cfg(target_os = "linux")]
pub fn before_first_webview() {
    use webkit2gtk::{MemoryPressureSettings, WebsiteDataManager};
    // The network process only serves the app's own assets: keep it small.
    let mut settings = MemoryPressureSettings::new();
    settings.set_memory_limit(64);
    settings.set_conservative_threshold(0.5);
    settings.set_strict_threshold(0.75);
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
