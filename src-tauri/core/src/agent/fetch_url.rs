//! `@https://…` in the person's message: the page is fetched by the host, as text, and goes to
//! the model with the message. Nothing is fetched while the person types (the chip says it will
//! be) and nothing the model asks for is fetched this way: the network is reached only because
//! the person wrote the address, as a command reaches it only when the person grants it. No
//! cookies, no credentials (an address that carries a user or password is refused), http and
//! https only, a few redirects, a size and a time limit; what is not text is refused by name.

use std::time::Duration;

use futures_util::StreamExt;

use super::mentions::Refused;

/// The most read from the network for one address.
const MAX_BYTES: usize = 2 * 1024 * 1024;
/// The most attached, as text.
const MAX_TEXT: usize = 100 * 1024;
const TIMEOUT: Duration = Duration::from_secs(20);

/// An `@` mention that is a web address.
pub fn is_url(mention: &str) -> bool {
    let lower = mention.to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

/// The page at `address`, as text.
pub async fn fetch_text(address: &str) -> Result<String, Refused> {
    let url = reqwest::Url::parse(address)
        .map_err(|e| Refused(format!("{address} is not a web address: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refused(format!(
            "only http and https addresses are fetched, not {}",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refused(
            "an address with a user name or password in it is not fetched".into(),
        ));
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let web = matches!(attempt.url().scheme(), "http" | "https");
            match attempt.previous().len() {
                n if n >= 5 => attempt.error("more than 5 redirects"),
                _ if !web => attempt.error("a redirect away from http(s)"),
                _ => attempt.follow(),
            }
        }))
        .timeout(TIMEOUT)
        .user_agent(concat!("Mandate/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Refused(format!("could not fetch {address}: {e}")))?;
    let response = client
        .get(url)
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/plain, text/markdown, application/json;q=0.9, */*;q=0.1",
        )
        .send()
        .await
        .map_err(|e| Refused(format!("could not fetch {address}: {}", without_url(&e))))?;
    let status = response.status();
    if !status.is_success() {
        return Err(Refused(format!("{address} answered {status}")));
    }
    let kind = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("text/plain")
        .to_ascii_lowercase();
    let html = kind.contains("html");
    let textual = kind.starts_with("text/")
        || ["json", "xml", "javascript", "yaml", "toml"]
            .iter()
            .any(|k| kind.contains(k));
    if !textual {
        let kind = kind.split(';').next().unwrap_or("").trim().to_string();
        return Err(Refused(format!(
            "{address} is {kind}, not text; only text is attached"
        )));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    let mut cut = false;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| Refused(format!("could not fetch {address}: {}", without_url(&e))))?;
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_BYTES {
            body.truncate(MAX_BYTES);
            cut = true;
            break;
        }
    }
    let raw = String::from_utf8_lossy(&body);
    let mut text = match html {
        true => html_to_text(&raw),
        false => raw.into_owned(),
    };
    if text.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        cut = true;
    }
    if cut {
        text.push_str("\n…(the page was cut here: it is longer than Mandate attaches)");
    }
    Ok(text)
}

fn without_url(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(u) = e.url() {
        s = s.replace(&format!(" for url ({u})"), "");
    }
    s
}

/// A page's readable text: scripts, styles and markup gone, blocks on their own lines, the
/// common entities decoded, blank runs collapsed.
pub fn html_to_text(html: &str) -> String {
    use std::sync::OnceLock;
    static HIDDEN: OnceLock<regex::Regex> = OnceLock::new();
    static BREAKS: OnceLock<regex::Regex> = OnceLock::new();
    static ITEMS: OnceLock<regex::Regex> = OnceLock::new();
    static TAGS: OnceLock<regex::Regex> = OnceLock::new();
    static NUMERIC: OnceLock<regex::Regex> = OnceLock::new();
    let re = |cell: &'static OnceLock<regex::Regex>, pattern: &str| {
        cell.get_or_init(|| regex::Regex::new(pattern).expect("a valid pattern"))
    };
    let hidden = re(
        &HIDDEN,
        r"(?is)<!--.*?-->|<(script|style|noscript|svg|template|head)\b.*?</(script|style|noscript|svg|template|head)\s*>",
    );
    let breaks = re(
        &BREAKS,
        r"(?i)<br\s*/?>|</(p|div|section|article|header|footer|h[1-6]|tr|pre|blockquote|table|ul|ol|dd|dt)\s*>",
    );
    let items = re(&ITEMS, r"(?i)<li\b[^>]*>");
    let tags = re(&TAGS, r"(?s)<[^>]*>");
    let numeric = re(&NUMERIC, r"&#(x[0-9a-fA-F]+|[0-9]+);");
    let text = hidden.replace_all(html, "");
    let text = breaks.replace_all(&text, "\n");
    let text = items.replace_all(&text, "\n- ");
    let text = tags.replace_all(&text, "");
    let text = numeric.replace_all(&text, |c: &regex::Captures| {
        let n = &c[1];
        let code = match n.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => n.parse().ok(),
        };
        code.and_then(char::from_u32)
            .map(String::from)
            .unwrap_or_default()
    });
    let text = text
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&amp;", "&");
    let mut out = String::new();
    let mut blank = 0;
    for line in text.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(&line);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// A loopback server answering each path with a fixed response, until the test ends.
    fn serve(routes: Vec<(&'static str, String)>) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                let n = stream.read(&mut buf).unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let reply = routes
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map(|(_, r)| r.clone())
                    .unwrap_or_else(|| {
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".into()
                    });
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        base
    }

    fn ok(kind: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    #[tokio::test]
    async fn a_page_is_attached_as_its_readable_text() {
        let page = "<html><head><title>T</title><style>p{}</style></head><body><h1>Retry policy</h1>\
            <script>steal()</script><p>Back off &amp; retry <b>3</b>&nbsp;times.</p><ul><li>one</li><li>two&#8230;</li></ul></body></html>";
        let base = serve(vec![
            ("/doc", ok("text/html; charset=utf-8", page)),
            ("/data.json", ok("application/json", "{\"a\": 1}")),
            (
                "/moved",
                "HTTP/1.1 302 Found\r\nLocation: /doc\r\nContent-Length: 0\r\n\r\n".into(),
            ),
            (
                "/away",
                "HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n"
                    .into(),
            ),
            ("/shot.png", ok("image/png", "\u{89}PNG")),
        ]);
        let text = fetch_text(&format!("{base}/doc")).await.expect("fetched");
        assert_eq!(
            text,
            "Retry policy\nBack off & retry 3 times.\n\n- one\n- two…"
        );
        assert_eq!(
            fetch_text(&format!("{base}/moved"))
                .await
                .expect("followed"),
            text
        );
        assert_eq!(
            fetch_text(&format!("{base}/data.json"))
                .await
                .expect("json"),
            "{\"a\": 1}"
        );
        let refused = |r: Result<String, Refused>| r.expect_err("refused").0;
        assert!(refused(fetch_text(&format!("{base}/shot.png")).await)
            .contains("is image/png, not text"));
        assert!(refused(fetch_text(&format!("{base}/missing")).await).contains("answered 404"));
        // A redirect away from the web is not followed.
        let why = refused(fetch_text(&format!("{base}/away")).await);
        assert!(
            why.contains("302") || why.contains("could not fetch"),
            "{why}"
        );
        let with_user = base.replace("http://", "http://me:secret@");
        assert!(refused(fetch_text(&format!("{with_user}/doc")).await)
            .contains("user name or password"));
    }

    #[tokio::test]
    async fn a_long_page_is_cut_and_says_so() {
        let body = "word ".repeat(60_000);
        let base = serve(vec![("/long", ok("text/plain", &body))]);
        let text = fetch_text(&format!("{base}/long")).await.expect("fetched");
        assert!(text.len() < MAX_TEXT + 200);
        assert!(text.ends_with("longer than Mandate attaches)"));
    }

    #[test]
    fn only_web_addresses_are_urls() {
        assert!(is_url("https://example.com/a"));
        assert!(is_url("HTTP://x"));
        assert!(!is_url("src/http.rs"));
        assert!(!is_url("git-changes"));
    }
}
