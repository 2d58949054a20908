//! The real Mandate app in a real window, driven through tauri-driver and WebKitWebDriver under
//! the test run's X display, with its own config, data and workspace directories.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::{json, Value};

use crate::webdriver::{Element, Session, TauriDriver};

/// The `mandate` binary built next to the test executables.
pub fn mandate_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("MANDATE_BIN") {
        return p.into();
    }
    let exe = std::env::current_exe().unwrap_or_default();
    // target/debug/deps/test-xxxx -> target/debug/mandate
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    dir.join("mandate")
}

/// Waits until `condition` holds (checked every 50 ms, for up to 20 s: a busy machine is slow,
/// never wrong), for conditions outside the page such as files the app writes.
pub async fn until(what: &str, mut condition: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !condition() {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "waited 20 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Waits until the file at `path` exists and its text contains `needle`; returns the text.
pub async fn until_file_contains(path: &Path, needle: &str) -> anyhow::Result<String> {
    until(&format!("{} to contain {needle:?}", path.display()), || {
        std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle))
    })
    .await?;
    Ok(std::fs::read_to_string(path)?)
}

/// `<repo>/test-artifacts/<sub>`: screenshots and logs of the run.
pub fn artifacts(sub: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-artifacts")
        .join(sub);
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// A temporary workspace with an intents file (if given) and `files`.
pub fn workspace(intents_yaml: Option<&str>, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("mandate-ws-")
        .tempdir()
        .expect("tempdir");
    if let Some(yaml) = intents_yaml {
        let orch = dir.path().join(".orchestration");
        std::fs::create_dir_all(&orch).expect("mkdir");
        std::fs::write(orch.join("active_intents.yaml"), yaml).expect("write intents");
    }
    for (path, content) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, content).expect("write file");
    }
    dir
}

/// Stand-ins for desktop programs (editors, terminals): each records its name and arguments, one
/// line per call, in a file the test reads. Put their directory first on the app's PATH.
pub struct FakePrograms {
    dir: tempfile::TempDir,
    record: PathBuf,
}

impl FakePrograms {
    pub fn new(names: &[&str]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("mandate-bin-")
            .tempdir()
            .expect("tempdir");
        let record = dir.path().join("calls.txt");
        for name in names {
            let path = dir.path().join(name);
            // One argument per line after the name, so paths with spaces stay whole.
            let script = format!(
                "#!/bin/sh\n{{ printf '%s' \"{name}\"; for a in \"$@\"; do printf ' [%s]' \"$a\"; done; echo; }} >> '{}'\n",
                record.display()
            );
            std::fs::write(&path, script).expect("write program");
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .expect("chmod");
        }
        Self { dir, record }
    }

    /// A PATH with these programs first.
    pub fn path_env(&self) -> String {
        format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// Every call so far: `name [arg] [arg]…`.
    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Waits for call number `n` (1-based) and returns it.
    pub async fn wait_for_call(&self, n: usize) -> anyhow::Result<String> {
        until(&format!("call {n} of a fake program"), || {
            self.calls().len() >= n
        })
        .await?;
        Ok(self.calls()[n - 1].clone())
    }
}

/// Per-app user directories (config for settings, data for task history).
pub struct UserDirs {
    pub home: tempfile::TempDir,
}

impl UserDirs {
    pub fn new() -> Self {
        Self {
            home: tempfile::Builder::new()
                .prefix("mandate-home-")
                .tempdir()
                .expect("tempdir"),
        }
    }
    pub fn config(&self) -> PathBuf {
        self.home.path().join("config")
    }
    pub fn data(&self) -> PathBuf {
        self.home.path().join("data")
    }
    /// Where MCP servers keep their caches (`<cache>/mcp/<name>-<hash>/`).
    pub fn cache(&self) -> PathBuf {
        self.home.path().join("cache")
    }
    /// Writes settings pointing the app at an OpenAI-compatible server.
    pub fn settings_openai(&self, base_url: &str, ask_before_writes: bool) {
        self.write_settings(json!({
            "provider": "openai", "preset": "custom", "base_url": base_url, "model": "test-model",
            "custom_instructions": "",
            "approval": {"ask_before_writes": ask_before_writes, "ask_before_safe_commands": false},
        }));
    }

    /// Like `settings_openai` (writes not asked), with the test model's context window set to
    /// `context_window` tokens and automatic condensing at `threshold_percent` of its usable input.
    pub fn settings_openai_window(
        &self,
        base_url: &str,
        context_window: u64,
        threshold_percent: u8,
    ) {
        self.write_settings(json!({
            "provider": "openai", "preset": "custom", "base_url": base_url, "model": "test-model",
            "custom_instructions": "",
            "approval": {"ask_before_writes": false, "ask_before_safe_commands": false},
            "context": {
                "threshold_percent": threshold_percent,
                "models": [{"model": "openai/test-model", "context_window": context_window}],
            },
        }));
    }

    fn write_settings(&self, settings: Value) {
        std::fs::create_dir_all(self.config()).expect("mkdir");
        std::fs::write(self.config().join("settings.json"), settings.to_string())
            .expect("write settings");
    }
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "MANDATE_CONFIG_DIR".into(),
                self.config().display().to_string(),
            ),
            ("MANDATE_DATA_DIR".into(), self.data().display().to_string()),
            (
                "MANDATE_CACHE_DIR".into(),
                self.cache().display().to_string(),
            ),
        ]
    }
}

impl Default for UserDirs {
    fn default() -> Self {
        Self::new()
    }
}

/// A private X display per app, so parallel tests neither share nor cover each other's window.
pub struct Display {
    child: std::process::Child,
    pub name: String,
}

impl Display {
    pub fn start() -> anyhow::Result<Display> {
        use std::io::BufRead;
        let mut child = std::process::Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1280x820x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("start Xvfb (Debian package xvfb)")?;
        let stdout = child.stdout.take().context("Xvfb stdout")?;
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .context("read the display number")?;
        let number = line.trim();
        anyhow::ensure!(
            !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()),
            "Xvfb printed no display number"
        );
        Ok(Display {
            child,
            name: format!(":{number}"),
        })
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct App {
    pub session: Session,
    pub ipc_trace: PathBuf,
    pub log: PathBuf,
    _driver: TauriDriver,
    display: Display,
}

impl App {
    /// Starts the app on `workspace` and waits until the page has loaded its state.
    pub async fn launch(
        name: &str,
        workspace: &Path,
        dirs: &UserDirs,
        extra_env: &[(&str, &str)],
    ) -> anyhow::Result<App> {
        let logs = artifacts("logs");
        let log = logs.join(format!("{name}.log"));
        let ipc_trace = logs.join(format!("{name}.ipc.jsonl"));
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_file(&ipc_trace);
        let display = Display::start()?;
        let mut env = dirs.env();
        env.push(("DISPLAY".into(), display.name.clone()));
        env.push(("MANDATE_IPC_TRACE".into(), ipc_trace.display().to_string()));
        env.push(("MANDATE_RETRY_BASE_MS".into(), "10".into()));
        env.push(("TAURI_WEBVIEW_AUTOMATION".into(), "true".into()));
        env.push(("WEBKIT_DISABLE_COMPOSITING_MODE".into(), "1".into()));
        for (k, v) in extra_env {
            env.push((k.to_string(), v.to_string()));
        }
        let driver = TauriDriver::start(&env, &log)
            .await
            .context("start tauri-driver")?;
        let bin = mandate_bin();
        anyhow::ensure!(
            bin.is_file(),
            "{} is missing: build it with `cargo build -p mandate`",
            bin.display()
        );
        let args = vec!["--workspace".to_string(), workspace.display().to_string()];
        let session = Session::new(&driver.url(), &bin, &args)
            .await
            .context("open a session on the app")?;
        session
            .wait_until(
                "document.body && document.body.dataset.ready === 'true'",
                Duration::from_secs(30),
            )
            .await
            .with_context(|| {
                format!(
                    "the app did not become ready; log:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            })?;
        Ok(App {
            session,
            ipc_trace,
            log,
            _driver: driver,
            display,
        })
    }

    /// The app's own X display (`:N`), for tools that look at it from outside (the clipboard).
    pub fn display_name(&self) -> &str {
        &self.display.name
    }

    pub async fn find(&self, css: &str) -> anyhow::Result<Element> {
        self.session.wait_for(css, Duration::from_secs(15)).await
    }

    /// Clicks the element `css` finds. A view that renders again between finding and clicking
    /// (a status pushed by the host) replaces the element: it is found again, as a person's
    /// click lands on what is shown.
    pub async fn click(&self, css: &str) -> anyhow::Result<()> {
        let mut tries = 0;
        loop {
            let el = self.find(css).await?;
            match self.session.click(&el).await {
                Err(e) if tries < 5 && e.to_string().contains("stale element reference") => {
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    pub async fn type_into(&self, css: &str, text: &str) -> anyhow::Result<()> {
        let el = self.find(css).await?;
        self.session.clear(&el).await?;
        self.session.send_keys(&el, text).await
    }

    /// Sends keys to the element at `css` without clearing it first (WebDriver key codes
    /// such as `\u{E004}` for Tab work).
    pub async fn keys(&self, css: &str, text: &str) -> anyhow::Result<()> {
        let el = self.find(css).await?;
        self.session.send_keys(&el, text).await
    }

    /// Types a message into the composer and sends it, as a user does: once the composer takes
    /// messages (not while the agent is still busy with the task, or a message is being sent).
    pub async fn send(&self, text: &str) -> anyhow::Result<()> {
        self.type_into("#composer-input", text).await?;
        self.wait_until("!document.querySelector('#composer-send').hasAttribute('aria-disabled')")
            .await
            .context("the composer takes messages")?;
        self.click("#composer-send").await
    }

    /// Picks `value` in the `<select>` at `css` (WebDriver cannot drive native pop-ups).
    pub async fn choose(&self, css: &str, value: &str) -> anyhow::Result<()> {
        let select = self.find(css).await?;
        self.session
            .execute(
                "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change', {bubbles: true}));",
                vec![select.to_value(), Value::String(value.to_string())],
            )
            .await
            .map(|_| ())
    }

    pub async fn text(&self, css: &str) -> anyhow::Result<String> {
        let el = self.find(css).await?;
        self.session.text(&el).await
    }

    pub async fn wait_until(&self, js: &str) -> anyhow::Result<()> {
        self.session.wait_until(js, Duration::from_secs(20)).await
    }

    pub async fn eval(&self, script: &str) -> anyhow::Result<Value> {
        self.session.execute(script, Vec::new()).await
    }

    /// Calls the host through the page's IPC, as the UI does; returns `{ok}` or `{err}`.
    pub async fn ipc(&self, request: Value) -> anyhow::Result<Value> {
        self.session
            .execute_async(
                "const done = arguments[arguments.length - 1];\
                 window.__TAURI__.core.invoke('request', arguments[0])\
                   .then(ok => done({ok}), err => done({err}));",
                vec![request],
            )
            .await
    }

    /// Controls under `root_css` that a screen reader could not name (no label, no aria-label,
    /// no title, no text), as the start of their HTML; empty when every one has a name.
    pub async fn unnamed_controls(&self, root_css: &str) -> anyhow::Result<Value> {
        self.session
            .execute(
                "const unnamed = [];                 for (const el of document.querySelectorAll(arguments[0] + ' :is(button, input, select, textarea, [role=\"tab\"])')) {                   if (el.closest('[hidden]') || el.type === 'hidden') continue;                   const labelled = (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || el.getAttribute('title') || (el.textContent || '').trim();                   if (!labelled) unnamed.push(el.outerHTML.slice(0, 120));                 }                 return unnamed;",
                vec![Value::String(root_css.to_string())],
            )
            .await
    }

    /// Saves a screenshot of the app's own X display under test-artifacts/screenshots.
    /// (WebDriver's screenshot never answers with compositing disabled, so the display is
    /// captured instead.)
    pub async fn screenshot(&self, name: &str) -> anyhow::Result<PathBuf> {
        let path = artifacts("screenshots").join(format!("{name}.png"));
        // The frame after next has painted everything changed before this call.
        self.session
            .execute_async(
                "const done = arguments[arguments.length - 1];\
                 requestAnimationFrame(() => requestAnimationFrame(() => done(null)));",
                vec![],
            )
            .await
            .context("wait for the page to paint")?;
        let status = tokio::process::Command::new("import")
            .args(["-display", &self.display.name, "-window", "root"])
            .arg(&path)
            .status()
            .await
            .context("run `import` (imagemagick)")?;
        anyhow::ensure!(status.success(), "import failed: {status}");
        Ok(path)
    }

    pub async fn close(self) -> anyhow::Result<()> {
        self.session.close().await
    }
}
