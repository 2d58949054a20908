//! WebKitGTK set up for what the window is: one local page of text and forms. No back/forward
//! cache, the document-viewer cache model, no WebGL, media, WebAudio or WebRTC (the page uses
//! none, and each brings its own buffers and threads), no GPU compositing, and memory-pressure
//! limits for the network process (the web process's are fixed when wry creates its context).

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
