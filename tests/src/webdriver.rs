//! A small W3C WebDriver client and a handle on a running `tauri-driver`,
//! enough to drive the real app window under Xvfb.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use base64::Engine as _;
use serde_json::{json, Value};

/// The W3C key under which an element reference travels.
pub const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A running `tauri-driver`; dropping it kills its whole process group, so
/// WebKitWebDriver and the app it launched go too.
pub struct TauriDriver {
    child: tokio::process::Child,
    port: u16,
}

/// What WebKitWebDriver says when its port was taken meanwhile.
const PORT_TAKEN: &str = "Unable to listen for HTTP server";

/// What `path` gained after its first `start` bytes (at most 64 KB of it).
fn log_since(path: &Path, start: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut text = Vec::new();
    if let Ok(mut file) = std::fs::File::open(path) {
        if file.seek(SeekFrom::Start(start)).is_ok() {
            let _ = file.take(64 * 1024).read_to_end(&mut text);
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// Two free ports, distinct: both are held until both are chosen (one after the other, the
/// kernel could hand out the same port twice).
fn free_ports() -> anyhow::Result<(u16, u16)> {
    let a = std::net::TcpListener::bind("127.0.0.1:0")?;
    let b = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok((a.local_addr()?.port(), b.local_addr()?.port()))
}

/// `$TAURI_DRIVER` if set, else `tauri-driver` from `PATH`, else Cargo's bin dir
/// (where `cargo install` puts it, often missing from a test's `PATH`).
fn driver_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("TAURI_DRIVER") {
        return p.into();
    }
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|d| d.join("tauri-driver").is_file()))
        .unwrap_or(false);
    if !on_path {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
        if let Some(candidate) = cargo_home.map(|h| h.join("bin/tauri-driver")) {
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    PathBuf::from("tauri-driver")
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let start = text.len().saturating_sub(2000);
    let start = (start..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    text[start..].to_string()
}

impl TauriDriver {
    /// Spawns `tauri-driver --port P --native-port Q` on free ports with `env`
    /// added (the app inherits it through WebKitWebDriver), appending its
    /// output to `log_path`, and waits up to 20 s for `GET /status` to answer.
    ///
    /// A port taken by another process between choosing and listening (the native driver then
    /// says it cannot listen) is not the app's failure: up to three tries, on new ports.
    pub async fn start(env: &[(String, String)], log_path: &Path) -> anyhow::Result<TauriDriver> {
        let mut tries = 0;
        loop {
            tries += 1;
            match Self::start_once(env, log_path).await {
                Err(e) if tries < 3 && e.to_string().contains(PORT_TAKEN) => continue,
                other => return other,
            }
        }
    }

    async fn start_once(env: &[(String, String)], log_path: &Path) -> anyhow::Result<TauriDriver> {
        let (port, native_port) = free_ports()?;
        let log_start = std::fs::metadata(log_path).map(|m| m.len()).unwrap_or(0);
        if let Some(dir) = log_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .with_context(|| format!("open driver log {}", log_path.display()))?;
        let binary = driver_binary();
        let mut cmd = tokio::process::Command::new(&binary);
        cmd.arg("--port")
            .arg(port.to_string())
            .arg("--native-port")
            .arg(native_port.to_string())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own group, so Drop can end the driver and everything it started.
            .process_group(0)
            .kill_on_drop(true);
        let child = cmd
            .spawn()
            .with_context(|| format!("spawn {} (cargo install tauri-driver)", binary.display()))?;
        let mut driver = TauriDriver { child, port };

        let client = http_client(Duration::from_secs(2))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(resp) = client.get(format!("{}/status", driver.url())).send().await {
                if resp.status().is_success() {
                    return Ok(driver);
                }
            }
            if log_since(log_path, log_start).contains(PORT_TAKEN) {
                bail!("{PORT_TAKEN} (port {native_port})");
            }
            if let Some(status) = driver.child.try_wait()? {
                bail!(
                    "tauri-driver exited ({status}) before answering /status; log:\n{}",
                    log_tail(log_path)
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "tauri-driver did not answer /status within 20 s; log:\n{}",
                    log_tail(log_path)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `http://127.0.0.1:PORT` of the intermediary (tauri-driver forwards to the
    /// native driver on the host it was addressed by, so keep the IPv4 literal).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for TauriDriver {
    fn drop(&mut self) {
        let Some(pid) = self.child.id() else { return };
        let group = format!("-{pid}");
        // TERM first so the app may flush its files; KILL for whatever lingers.
        group_signal("-TERM", &group);
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline && !matches!(self.child.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.start_kill();
        // Orphans linger until init reaps them; wait so the next test starts clean.
        let deadline = Instant::now() + Duration::from_secs(2);
        while group_signal("-KILL", &group) && Instant::now() < deadline {
            let _ = self.child.try_wait();
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Sends `signal` to a process group; false once no process is left in it.
fn group_signal(signal: &str, group: &str) -> bool {
    std::process::Command::new("kill")
        .args([signal, "--", group])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn http_client(timeout: Duration) -> anyhow::Result<reqwest::Client> {
    // Loopback only: a proxy from the environment must not intercept it.
    Ok(reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()?)
}

/// A web element reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub id: String,
}

impl Element {
    /// Reads an element reference (`{"element-6066-…": id}`).
    pub fn from_value(v: &Value) -> Option<Element> {
        v.get(ELEMENT_KEY)
            .and_then(Value::as_str)
            .map(|id| Element { id: id.to_string() })
    }

    /// The JSON form, to pass this element to `execute` as an argument.
    pub fn to_value(&self) -> Value {
        json!({ ELEMENT_KEY: self.id })
    }
}

/// One WebDriver session (one app instance).
pub struct Session {
    client: reqwest::Client,
    base: String,
    id: String,
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

impl Session {
    /// Creates a session that launches `application` with `args`.
    pub async fn new(
        driver_url: &str,
        application: &Path,
        args: &[String],
    ) -> anyhow::Result<Session> {
        // Generous: a session start includes launching the app and its first page load.
        let client = http_client(Duration::from_secs(60))?;
        let base = driver_url.trim_end_matches('/').to_string();
        let caps = json!({"capabilities": {"alwaysMatch": {"tauri:options": {
            "application": application, "args": args,
        }}}});
        let value = send(
            &client,
            reqwest::Method::POST,
            &format!("{base}/session"),
            Some(caps),
        )
        .await
        .with_context(|| format!("new session for {}", application.display()))?;
        let id = value["sessionId"]
            .as_str()
            .with_context(|| format!("new session: no sessionId in {value}"))?
            .to_string();
        Ok(Session { client, base, id })
    }

    /// The session id the driver assigned.
    pub fn id(&self) -> &str {
        &self.id
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let url = format!("{}/session/{}{path}", self.base, self.id);
        send(&self.client, method, &url, body).await
    }

    async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// The first element matching a CSS selector.
    pub async fn find(&self, css: &str) -> anyhow::Result<Element> {
        let v = self
            .post("/element", json!({"using": "css selector", "value": css}))
            .await
            .with_context(|| format!("find {css:?}"))?;
        Element::from_value(&v).with_context(|| format!("find {css:?}: no element in {v}"))
    }

    /// Every element matching a CSS selector (possibly none).
    pub async fn find_all(&self, css: &str) -> anyhow::Result<Vec<Element>> {
        let v = self
            .post("/elements", json!({"using": "css selector", "value": css}))
            .await
            .with_context(|| format!("find all {css:?}"))?;
        let items = v
            .as_array()
            .with_context(|| format!("find all {css:?}: not a list: {v}"))?;
        Ok(items.iter().filter_map(Element::from_value).collect())
    }

    /// Polls `find` every 50 ms until it succeeds or `timeout` passes.
    pub async fn wait_for(&self, css: &str, timeout: Duration) -> anyhow::Result<Element> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.find(css).await {
                Ok(el) => return Ok(el),
                Err(e) if Instant::now() >= deadline => {
                    return Err(e.context(format!("waited {timeout:?} for {css:?}")))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Polls a JavaScript condition every 50 ms until it is truthy. A single
    /// expression is wrapped in `return (…)`; a script with `;`, a newline or a
    /// leading `return` is used as the function body as is. Script errors count
    /// as "not yet" (the page may still be loading).
    pub async fn wait_until(
        &self,
        js_returning_bool: &str,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let js = js_returning_bool.trim();
        let script = if js.starts_with("return") || js.contains(';') || js.contains('\n') {
            js.to_string()
        } else {
            format!("return ({js});")
        };
        let deadline = Instant::now() + timeout;
        loop {
            let last = match self.execute(&script, vec![]).await {
                Ok(v) if truthy(&v) => return Ok(()),
                Ok(v) => format!("last value {v}"),
                Err(e) => format!("last error: {e:#}"),
            };
            if Instant::now() >= deadline {
                bail!("waited {timeout:?} for `{js}` to be true; {last}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Runs a synchronous script (a function body; `arguments` holds `args`).
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> anyhow::Result<Value> {
        self.post("/execute/sync", json!({"script": script, "args": args}))
            .await
            .with_context(|| format!("execute `{}`", abbreviate(script)))
    }

    /// Runs an asynchronous script; it finishes by calling its last argument.
    pub async fn execute_async(&self, script: &str, args: Vec<Value>) -> anyhow::Result<Value> {
        self.post("/execute/async", json!({"script": script, "args": args}))
            .await
            .with_context(|| format!("execute async `{}`", abbreviate(script)))
    }

    pub async fn click(&self, el: &Element) -> anyhow::Result<()> {
        self.post(&format!("/element/{}/click", el.id), json!({}))
            .await
            .map(drop)
    }

    /// Types `text`; WebDriver key codes such as `"\u{E007}"` (Enter) work too.
    pub async fn send_keys(&self, el: &Element, text: &str) -> anyhow::Result<()> {
        self.post(&format!("/element/{}/value", el.id), json!({"text": text}))
            .await
            .map(drop)
    }

    pub async fn clear(&self, el: &Element) -> anyhow::Result<()> {
        self.post(&format!("/element/{}/clear", el.id), json!({}))
            .await
            .map(drop)
    }

    /// The element's rendered text.
    pub async fn text(&self, el: &Element) -> anyhow::Result<String> {
        let v = self.get(&format!("/element/{}/text", el.id)).await?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    /// A DOM property, e.g. `value` or `checked`.
    pub async fn property(&self, el: &Element, name: &str) -> anyhow::Result<Value> {
        self.get(&format!("/element/{}/property/{name}", el.id))
            .await
    }

    /// An HTML attribute; `None` when absent.
    pub async fn attribute(&self, el: &Element, name: &str) -> anyhow::Result<Option<String>> {
        let v = self
            .get(&format!("/element/{}/attribute/{name}", el.id))
            .await?;
        Ok(match v {
            Value::Null => None,
            Value::String(s) => Some(s),
            other => Some(other.to_string()),
        })
    }

    /// A PNG of the current window.
    pub async fn screenshot_png(&self) -> anyhow::Result<Vec<u8>> {
        // WebKitGTK never answers this under Xvfb when WEBKIT_DISABLE_COMPOSITING_MODE
        // is set, so fail in bounded time with the likely cause.
        let v = tokio::time::timeout(Duration::from_secs(30), self.get("/screenshot"))
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "screenshot: no answer in 30 s (is WEBKIT_DISABLE_COMPOSITING_MODE set?)"
                )
            })??;
        let b64 = v
            .as_str()
            .with_context(|| format!("screenshot: not a string: {v}"))?;
        Ok(base64::engine::general_purpose::STANDARD.decode(b64)?)
    }

    /// Writes a screenshot to `path`, creating its parent directories.
    pub async fn save_screenshot(&self, path: &Path) -> anyhow::Result<()> {
        let png = self.screenshot_png().await?;
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir).await?;
        }
        tokio::fs::write(path, png)
            .await
            .with_context(|| format!("write {}", path.display()))
    }

    /// Ends the session, which closes the app.
    pub async fn close(self) -> anyhow::Result<()> {
        self.call(reqwest::Method::DELETE, "", None).await.map(drop)
    }
}

fn abbreviate(s: &str) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// Sends one command and unwraps `value`; a driver error becomes an error
/// naming both its `error` code and its `message`.
async fn send(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> anyhow::Result<Value> {
    let mut req = client.request(method.clone(), url);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req
        .send()
        .await
        .with_context(|| format!("webdriver {method} {url}"))?;
    let status = resp.status();
    let text = resp.text().await?;
    let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let value = parsed.get("value").cloned().unwrap_or(Value::Null);
    // Only the status marks an error: a script may well return `{error: …}`.
    if !status.is_success() {
        match value.get("error").and_then(Value::as_str) {
            Some(error) => {
                let message = value["message"].as_str().unwrap_or_default();
                bail!("webdriver {method} {url}: {error}: {message}")
            }
            None => bail!("webdriver {method} {url}: HTTP {status}: {text}"),
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm_server::{Reply, ScriptedServer};

    fn ok(value: Value) -> Reply {
        Reply::json(200, &json!({ "value": value }))
    }

    #[tokio::test]
    async fn speaks_w3c_json_over_http() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake");
        let server = ScriptedServer::start(vec![
            ok(json!({"sessionId": "s1", "capabilities": {}})),
            ok(json!({ ELEMENT_KEY: "e1" })),
            Reply::json(404, &json!({"value": {"error": "no such element", "message": "nothing", "stacktrace": ""}})),
            ok(json!([{ ELEMENT_KEY: "e1" }, { ELEMENT_KEY: "e2" }])),
            ok(json!({"error": "a script may return this"})),
            ok(Value::Null),
            ok(Value::Null),
        ])
        .await;
        server.on_get("/session/s1/element/e1/text", ok(json!("Hello")));
        server.on_get("/session/s1/element/e1/attribute/title", ok(Value::Null));
        server.on_get("/session/s1/screenshot", ok(json!(png)));

        let app = Path::new("/opt/app/mandate");
        let (base, args) = (server.base_url(), ["--x".to_string()]);
        let s = Session::new(&base, app, &args).await.unwrap();
        assert_eq!(s.id(), "s1");
        let el = s.find("#composer").await.unwrap();
        assert_eq!(el.id, "e1");
        let err = format!("{:#}", s.find(".missing").await.unwrap_err());
        for part in ["\".missing\"", "no such element", "nothing"] {
            assert!(err.contains(part), "{err}");
        }
        assert_eq!(s.find_all("li").await.unwrap().len(), 2);
        let v = s.execute("return arguments[0];", vec![el.to_value()]);
        let v = v.await.unwrap();
        assert_eq!(v["error"], "a script may return this");
        s.send_keys(&el, "hi\u{E007}").await.unwrap();
        assert_eq!(s.text(&el).await.unwrap(), "Hello");
        assert_eq!(s.attribute(&el, "title").await.unwrap(), None);
        let shot = tempfile::tempdir().unwrap();
        let file = shot.path().join("a/b/shot.png");
        s.save_screenshot(&file).await.unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"\x89PNG fake");
        s.close().await.unwrap();

        let reqs = server.requests();
        let caps = reqs[0].json();
        let opts = &caps["capabilities"]["alwaysMatch"]["tauri:options"];
        assert_eq!(opts["application"], "/opt/app/mandate");
        assert_eq!(opts["args"], json!(["--x"]));
        let by = json!({"using": "css selector", "value": "#composer"});
        assert_eq!(reqs[1].json(), by);
        assert_eq!(reqs[4].path, "/session/s1/execute/sync");
        assert_eq!(reqs[4].json()["args"][0][ELEMENT_KEY], "e1");
        assert_eq!(reqs[5].path, "/session/s1/element/e1/value");
        assert_eq!(reqs[5].json()["text"], "hi\u{E007}");
        let last = reqs.last().unwrap();
        assert_eq!(
            format!("{} {}", last.method, last.path),
            "DELETE /session/s1"
        );
    }

    #[tokio::test]
    async fn waits_poll_until_true_and_name_what_they_waited_for() {
        let server = ScriptedServer::start(vec![
            ok(json!({"sessionId": "s1"})),
            Reply::json(500, &json!({"value": {"error": "javascript error"}})),
            ok(json!(false)),
            ok(json!(true)),
        ])
        .await;
        let base = server.base_url();
        let s = Session::new(&base, Path::new("app"), &[]).await.unwrap();
        let ready = s.wait_until("window.x.ready", Duration::from_secs(2)).await;
        assert!(ready.is_ok());
        let script = &server.requests()[3].json()["script"];
        assert_eq!(script, "return (window.x.ready);");
        let err = s
            .wait_until("document.title === 'never'", Duration::from_millis(120))
            .await
            .unwrap_err();
        let err = format!("{err:#}");
        assert!(err.contains("document.title === 'never'"), "{err}");
        let err = s.wait_for("#late", Duration::from_millis(120)).await;
        assert!(format!("{:#}", err.unwrap_err()).contains("#late"));
        // Polling every 50 ms, not spinning.
        assert!(server.requests().len() < 20);
    }

    fn driver_available() -> bool {
        let help = std::process::Command::new(driver_binary())
            .arg("--help")
            .output();
        help.is_ok() && Path::new("/usr/bin/WebKitWebDriver").exists()
    }

    #[tokio::test]
    async fn tauri_driver_starts_answers_status_and_dies_with_its_group() {
        if !driver_available() {
            eprintln!("skipped: tauri-driver or WebKitWebDriver not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs/driver.log");
        let driver = TauriDriver::start(&[("X_TEST".into(), "1".into())], &log)
            .await
            .unwrap();
        let status = reqwest::get(format!("{}/status", driver.url())).await;
        let status: Value = status.unwrap().json().await.unwrap();
        assert!(status["value"]["ready"].is_boolean(), "{status}");
        let pid = driver.child.id().unwrap();
        drop(driver);
        assert!(
            !group_signal("-0", &format!("-{pid}")),
            "process group {pid} survived"
        );
    }

    /// End to end in a real WebKit window under X: the app named by `MANDATE_APP`,
    /// or else WebKitGTK's MiniBrowser, which speaks the same automation protocol.
    #[tokio::test]
    async fn real_window_session() {
        const MINI: &str = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";
        let (app, args) = match std::env::var_os("MANDATE_APP") {
            Some(app) => (PathBuf::from(app), vec![]),
            None => (PathBuf::from(MINI), vec!["--automation".to_string()]),
        };
        if std::env::var_os("DISPLAY").is_none() || !app.exists() || !driver_available() {
            eprintln!("skipped: needs DISPLAY, tauri-driver and {}", app.display());
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let data_home = dir.path().display().to_string();
        let env = [("XDG_DATA_HOME".to_string(), data_home)];
        let driver = TauriDriver::start(&env, &dir.path().join("driver.log"))
            .await
            .unwrap();
        let s = Session::new(&driver.url(), &app, &args).await.unwrap();
        s.wait_until(
            "document.readyState === 'complete'",
            Duration::from_secs(20),
        )
        .await
        .unwrap();
        let page = "const d = document.createElement('div');
            d.innerHTML = '<input id=q title=t><button id=b>go</button><p id=out></p><i>1</i><i>2</i>';
            document.body.appendChild(d);
            const q = d.querySelector('#q');
            q.addEventListener('keydown', e => { if (e.key === 'Enter') window.entered = q.value; });
            d.querySelector('#b').addEventListener('click', () => { out.textContent = 'got ' + q.value; });
            setTimeout(() => d.insertAdjacentHTML('beforeend', '<b id=late>late</b>'), 300);
            return true;";
        assert_eq!(s.execute(page, vec![]).await.unwrap(), json!(true));
        let q = s.find("#q").await.unwrap();
        s.send_keys(&q, "draft").await.unwrap();
        s.clear(&q).await.unwrap();
        s.send_keys(&q, "héllo\u{E007}").await.unwrap();
        s.wait_until("window.entered === 'héllo'", Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(s.property(&q, "value").await.unwrap(), "héllo");
        assert_eq!(
            s.attribute(&q, "title").await.unwrap().as_deref(),
            Some("t")
        );
        assert_eq!(s.attribute(&q, "nope").await.unwrap(), None);
        s.click(&s.find("#b").await.unwrap()).await.unwrap();
        assert_eq!(
            s.text(&s.find("#out").await.unwrap()).await.unwrap(),
            "got héllo"
        );
        assert_eq!(s.find_all("i").await.unwrap().len(), 2);
        assert!(s.find_all(".none").await.unwrap().is_empty());
        let err = format!("{:#}", s.find("#absent").await.unwrap_err());
        assert!(
            err.contains("#absent") && err.contains("no such element"),
            "{err}"
        );
        let late = s.wait_for("#late", Duration::from_secs(5)).await.unwrap();
        let same = s.execute("return arguments[0].id;", vec![late.to_value()]);
        assert_eq!(same.await.unwrap(), "late");
        let add = "const done = arguments[arguments.length - 1];
            setTimeout(() => done(arguments[0] + 1), 10);";
        assert_eq!(s.execute_async(add, vec![json!(41)]).await.unwrap(), 42);
        if std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_some() {
            eprintln!("screenshot skipped: WEBKIT_DISABLE_COMPOSITING_MODE makes it hang");
        } else {
            let png = s.screenshot_png().await.unwrap();
            assert_eq!(&png[..4], b"\x89PNG");
            if let Some(out) = std::env::var_os("MANDATE_SCREENSHOT") {
                s.save_screenshot(Path::new(&out)).await.unwrap();
            }
        }
        s.close().await.unwrap();
    }
}
