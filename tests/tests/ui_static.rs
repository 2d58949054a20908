//! The webview's lock-down, checked on the files themselves: Tauri hashes every script present
//! in `ui/` at build time into the CSP, so an inline script or handler attribute there would run.
//! These checks keep `ui/` free of them, and the CSP and capabilities exactly as designed.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn ui_files(ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![repo().join("ui")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("ui dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().and_then(|e| e.to_str()) == Some(ext) {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn html_has_no_inline_script_handler_or_style() {
    let handler = regex::Regex::new(r#"(?i)\son[a-z]+\s*="#).expect("regex");
    let script = regex::Regex::new(r#"(?is)<script\b([^>]*)>(.*?)</script>"#).expect("regex");
    for file in ui_files("html") {
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(
            !handler.is_match(&text),
            "{}: inline event handler",
            file.display()
        );
        assert!(
            !text.contains(" style="),
            "{}: inline style attribute",
            file.display()
        );
        assert!(
            !text.to_lowercase().contains("javascript:"),
            "{}: javascript: URL",
            file.display()
        );
        for caps in script.captures_iter(&text) {
            assert!(
                caps[1].contains("src="),
                "{}: inline <script>",
                file.display()
            );
            assert!(
                caps[2].trim().is_empty(),
                "{}: inline <script> body",
                file.display()
            );
        }
        for remote in ["http://", "https://", "//cdn"] {
            assert!(
                !text.contains(remote),
                "{}: remote reference {remote}",
                file.display()
            );
        }
    }
}

#[test]
fn javascript_never_builds_html_from_strings_except_safe_html() {
    let sinks = [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "setAttribute('style'",
        "setAttribute(\"style\"",
    ];
    let mut inner_html_uses = Vec::new();
    for file in ui_files("js") {
        let text = std::fs::read_to_string(&file).expect("read");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for sink in sinks {
                if code.contains(sink) {
                    inner_html_uses.push(format!(
                        "{}:{}: {}",
                        file.file_name().and_then(|f| f.to_str()).unwrap_or(""),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert_eq!(
        inner_html_uses.len(),
        1,
        "only dom.js's setSafeHtml may set HTML: {inner_html_uses:#?}"
    );
    assert!(
        inner_html_uses[0].starts_with("dom.js:") && inner_html_uses[0].contains("innerHTML"),
        "{inner_html_uses:?}"
    );
}

#[test]
fn the_csp_is_strict_and_the_prototype_frozen() {
    let conf: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("src-tauri/tauri.conf.json")).expect("read"),
    )
    .expect("json");
    let security = &conf["app"]["security"];
    assert_eq!(security["freezePrototype"], true);
    assert!(security
        .get("dangerousDisableAssetCspModification")
        .is_none());
    let csp = security["csp"].as_object().expect("csp map");
    let expect = [
        ("default-src", "'none'"),
        ("script-src", "'self'"),
        ("style-src", "'self'"),
        // `data:` for images only: the previews of attached images, made by the host. Markdown
        // from the model never yields an `<img>` (the sanitizer drops it), so no one else's
        // image reaches the page this way.
        ("img-src", "'self' data:"),
        ("connect-src", "ipc: http://ipc.localhost"),
        ("object-src", "'none'"),
        ("base-uri", "'none'"),
        ("form-action", "'none'"),
        ("frame-src", "'none'"),
    ];
    for (directive, value) in expect {
        assert_eq!(
            csp.get(directive).and_then(Value::as_str),
            Some(value),
            "{directive}"
        );
    }
    let all = serde_json::to_string(csp).expect("csp");
    for banned in ["unsafe-inline", "unsafe-eval", "blob:", "*"] {
        assert!(!all.contains(banned), "the CSP allows {banned}");
    }
    for (directive, value) in csp {
        if directive != "img-src" {
            assert!(
                !value.as_str().unwrap_or("").contains("data:"),
                "{directive} allows data:"
            );
        }
    }
    assert!(
        conf["build"].get("devUrl").is_none(),
        "no remote or dev URL is loaded"
    );
    assert_eq!(conf["app"]["withGlobalTauri"], true);
}

#[test]
fn the_window_is_granted_exactly_the_two_mandate_commands() {
    let caps_dir = repo().join("src-tauri/capabilities");
    let files: Vec<_> = std::fs::read_dir(&caps_dir)
        .expect("dir")
        .flatten()
        .collect();
    assert_eq!(files.len(), 1, "one capability file");
    let cap: Value = serde_json::from_str(&std::fs::read_to_string(files[0].path()).expect("read"))
        .expect("json");
    assert_eq!(cap["windows"], serde_json::json!(["main"]));
    assert_eq!(
        cap["permissions"],
        serde_json::json!(["allow-request", "allow-subscribe"])
    );
    let build = std::fs::read_to_string(repo().join("src-tauri/build.rs")).expect("build.rs");
    assert!(
        build.contains("app_manifest") && build.contains("\"request\", \"subscribe\""),
        "the app manifest makes the ACL apply"
    );
    let main = std::fs::read_to_string(repo().join("src-tauri/src/window.rs")).expect("window.rs");
    assert!(
        main.contains("generate_handler![ipc::request, ipc::subscribe]"),
        "exactly one request command and one subscription"
    );
}

/// Every module is preloaded with the page (a missing one costs a round trip at start-up).
#[test]
fn every_module_is_preloaded() {
    let html = std::fs::read_to_string(repo().join("ui/index.html")).expect("index.html");
    let mut missing = Vec::new();
    for file in ui_files("js") {
        let name = file.file_name().and_then(|f| f.to_str()).unwrap_or("");
        if name == "main.js" {
            continue;
        }
        if !html.contains(&format!("<link rel=\"modulepreload\" href=\"js/{name}\">")) {
            missing.push(name.to_string());
        }
    }
    assert!(missing.is_empty(), "not preloaded: {missing:?}");
}
