use std::io::{Read, Write};

use serde_json::{json, Value};

use super::embed::{rerank, EmbedError, Embedder, Endpoint};
use super::Hit;

/// A loopback `/v1/embeddings` that turns each text into a vector of which topics it is about
/// (a stand-in for a model that knows "authentication" is about logging in). Counts requests.
/// How the endpoint answers a request.
type Answer = fn(&Value) -> (u16, Value);

fn server(answer: Answer) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut data = Vec::new();
            let mut buf = [0u8; 65536];
            // Read the head, then the body by its length.
            let body = loop {
                let n = stream.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break String::new();
                }
                data.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&data).to_string();
                if let Some(at) = text.find("\r\n\r\n") {
                    let len: usize = text
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if data.len() >= at + 4 + len {
                        break text[at + 4..].to_string();
                    }
                }
            };
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let (status, reply) = answer(&request);
            let reply = reply.to_string();
            let _ = stream.write_all(
                format!("HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}", reply.len()).as_bytes(),
            );
        }
    });
    (base, count)
}

fn topics(text: &str) -> Vec<f64> {
    let t = text.to_lowercase();
    let about = |words: &[&str]| f64::from(u8::from(words.iter().any(|w| t.contains(w))));
    vec![
        about(&["login", "password", "authentication", "credential"]),
        about(&["retry", "backoff"]),
        about(&["render", "draw"]),
        0.1,
    ]
}

fn by_topic(request: &Value) -> (u16, Value) {
    let data: Vec<Value> = request["input"]
        .as_array()
        .map(|a| a.to_vec())
        .unwrap_or_default()
        .iter()
        .enumerate()
        .rev() // out of order on purpose: `index` says where each belongs
        .map(|(i, t)| json!({"index": i, "embedding": topics(t.as_str().unwrap_or(""))}))
        .collect();
    (200, json!({"object": "list", "data": data}))
}

fn hit(path: &str, text: &str) -> Hit {
    scored(path, text, 1.0)
}

fn scored(path: &str, text: &str, score: f64) -> Hit {
    Hit {
        path: path.into(),
        start_line: 1,
        end_line: 3,
        score,
        text: text.into(),
    }
}

#[tokio::test]
async fn the_vectors_lift_what_the_query_means_above_what_shares_its_words() {
    let (base, count) = server(by_topic);
    let embedder = Embedder::new(Endpoint {
        base_url: base,
        model: "nomic-embed-text".into(),
    });
    // By words, the user-record helper came first; by meaning, the password check is what
    // "authentication" asks for.
    let words = vec![
        scored(
            "src/user.rs",
            "/// Stores the user record.\npub fn save_user() {}",
            9.0,
        ),
        scored("src/draw.rs", "pub fn render_user_badge() {}", 7.0),
        scored(
            "src/auth.rs",
            "/// Checks the password at login.\npub fn check_user() {}",
            5.0,
        ),
    ];
    let ranked = rerank(&embedder, "user authentication", words.clone())
        .await
        .expect("ranked");
    assert_eq!(ranked[0].path, "src/auth.rs", "{ranked:?}");
    // Among the rest, the words' order stands.
    assert_eq!(ranked[1].path, "src/user.rs", "{ranked:?}");
    assert_eq!(ranked.len(), 3);
    assert!(ranked.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    // Asked again, the vectors come from memory.
    let before = count.load(std::sync::atomic::Ordering::SeqCst);
    rerank(&embedder, "user authentication", words)
        .await
        .expect("ranked");
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), before);
}

#[tokio::test]
async fn a_failing_or_lying_endpoint_is_named_not_trusted() {
    let cases: [(Answer, &str); 5] = [
        (
            |_| (500, json!({"error": {"message": "model not loaded"}})),
            "answered 500: model not loaded",
        ),
        (|_| (200, json!({"nothing": []})), "no `data` list"),
        (
            |_| (200, json!({"data": [{"index": 7, "embedding": [1.0]}]})),
            "out of range",
        ),
        (
            |_| (200, json!({"data": [{"index": 0, "embedding": ["x"]}]})),
            "non-number",
        ),
        (
            |r| {
                let n = r["input"].as_array().map_or(0, Vec::len);
                let data: Vec<Value> = (0..n)
                    .map(|i| json!({"index": i, "embedding": vec![1.0; i + 1]}))
                    .collect();
                (200, json!({"data": data}))
            },
            "different sizes",
        ),
    ];
    for (answer, said) in cases {
        let (base, _) = server(answer);
        let embedder = Embedder::new(Endpoint {
            base_url: base,
            model: "m".into(),
        });
        let e = rerank(&embedder, "q", vec![hit("a.rs", "x"), hit("b.rs", "y")])
            .await
            .expect_err("refused");
        assert!(e.to_string().contains(said), "{e}");
    }
    let embedder = Embedder::new(Endpoint {
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "m".into(),
    });
    assert!(matches!(
        rerank(&embedder, "q", vec![hit("a.rs", "x")]).await,
        Err(EmbedError::Connect { .. })
    ));
}
