//! Model servers already running on this machine, so a first run can use one without a key:
//! Ollama, LM Studio and llama.cpp's server, each asked for its model list on its usual
//! localhost port, all at once and with a short timeout (an absent server refuses at once, a
//! stuck one costs at most the timeout).
//!
//! `MANDATE_LOCAL_SERVERS=ollama=PORT,lmstudio=PORT,llamacpp=PORT` replaces the ports, and then
//! only the servers it names are asked (tests point it at a scripted server). It is read only
//! here, for discovery.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use crate::protocol::LocalServer;

/// How long one server may take to list its models.
const TIMEOUT: Duration = Duration::from_millis(1500);
/// A model list larger than this is not a model list.
const MAX_BODY: usize = 1 << 20;
const MAX_MODELS: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub preset: &'static str,
    pub label: &'static str,
    pub port: u16,
}

const KNOWN: [(&str, &str, u16); 3] = [
    ("ollama", "Ollama", 11434),
    ("lmstudio", "LM Studio", 1234),
    ("llamacpp", "llama.cpp server", 8080),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probes(pub Vec<Probe>);

impl Probes {
    pub fn from_env() -> Self {
        Self::parse(std::env::var("MANDATE_LOCAL_SERVERS").ok().as_deref())
    }

    /// The usual ports, or the ones `spec` (`kind=port,…`) names; malformed entries are skipped.
    pub fn parse(spec: Option<&str>) -> Self {
        let Some(spec) = spec else {
            return Probes(
                KNOWN
                    .iter()
                    .map(|&(preset, label, port)| Probe {
                        preset,
                        label,
                        port,
                    })
                    .collect(),
            );
        };
        let probes = spec
            .split(',')
            .filter_map(|entry| {
                let (kind, port) = entry.trim().split_once('=')?;
                let port: u16 = port.trim().parse().ok().filter(|p| *p != 0)?;
                let &(preset, label, _) = KNOWN.iter().find(|(k, _, _)| *k == kind.trim())?;
                Some(Probe {
                    preset,
                    label,
                    port,
                })
            })
            .collect();
        Probes(probes)
    }
}

/// Every server that answered with a model list, in the order of `probes`.
///
/// Plain HTTP to 127.0.0.1 only, so the client has no TLS: building the providers' client
/// (native TLS) would initialise OpenSSL and read the system's CA certificates, about 4 MB of
/// the window's memory on a first run that may never use a remote provider.
pub async fn discover(probes: &Probes) -> Vec<LocalServer> {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(TIMEOUT));
    let client: Client<HttpConnector, Empty<Bytes>> =
        Client::builder(TokioExecutor::new()).build(connector);
    let asks = probes.0.iter().map(|probe| async {
        tokio::time::timeout(TIMEOUT, ask(&client, probe))
            .await
            .ok()
            .flatten()
    });
    futures_util::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

async fn ask(client: &Client<HttpConnector, Empty<Bytes>>, probe: &Probe) -> Option<LocalServer> {
    let base_url = format!("http://127.0.0.1:{}/v1", probe.port);
    let uri: http::Uri = format!("{base_url}/models").parse().ok()?;
    let request = http::Request::get(uri).body(Empty::new()).ok()?;
    let response = client.request(request).await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = Limited::new(response.into_body(), MAX_BODY)
        .collect()
        .await
        .ok()?
        .to_bytes();
    Some(LocalServer {
        preset: probe.preset.to_string(),
        label: probe.label.to_string(),
        base_url,
        models: model_ids(&body)?,
    })
}

/// The ids of an OpenAI-style model list (`{"data": [{"id": …}]}`); None when it is not one.
fn model_ids(body: &[u8]) -> Option<Vec<String>> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let list = value.get("data")?.as_array()?;
    let mut ids: Vec<String> = list
        .iter()
        .filter_map(|m| m.get("id")?.as_str())
        .filter(|id| !id.is_empty() && id.len() <= 200 && !id.chars().any(char::is_control))
        .map(str::to_string)
        .take(MAX_MODELS)
        .collect();
    ids.sort();
    ids.dedup();
    Some(ids)
}

/// Whether a base URL points at this machine (such a server needs no API key).
pub fn is_on_this_machine(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ports_come_from_the_environment_only_for_the_kinds_it_names() {
        assert_eq!(Probes::parse(None).0.len(), 3);
        let probes = Probes::parse(Some("ollama=4000, nope=1, lmstudio=x, llamacpp=0, =5"));
        assert_eq!(
            probes.0,
            [Probe {
                preset: "ollama",
                label: "Ollama",
                port: 4000
            }]
        );
        assert!(Probes::parse(Some("")).0.is_empty());
    }

    #[test]
    fn model_lists_are_checked() {
        assert_eq!(
            model_ids(br#"{"data":[{"id":"b"},{"id":"a"},{"id":"a"},{"id":""},{"id":"x\ny"},{"id":3},{}]}"#),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(model_ids(b"<html>"), None);
        assert_eq!(model_ids(br#"{"models":[]}"#), None);
        let many = format!(
            r#"{{"data":[{}]}}"#,
            (0..500)
                .map(|n| format!(r#"{{"id":"m{n:03}"}}"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(
            model_ids(many.as_bytes()).map(|m| m.len()),
            Some(MAX_MODELS)
        );
    }

    #[test]
    fn only_loopback_is_this_machine() {
        for yes in [
            "http://localhost:11434/v1",
            "http://127.0.0.1:1234/v1",
            "http://127.9.9.9/v1",
            "http://[::1]:8080/v1",
            "http://LOCALHOST/v1",
        ] {
            assert!(is_on_this_machine(yes), "{yes}");
        }
        for no in [
            "https://api.openai.com/v1",
            "http://localhost.evil.com/v1",
            "http://10.0.0.1/v1",
            "http://127.0.0.1.nip.io/v1",
            "not a url",
        ] {
            assert!(!is_on_this_machine(no), "{no}");
        }
    }

    /// A server on 127.0.0.1 that answers every connection with `reply` (None: never answers)
    /// and then, when `endless`, keeps sending chunks until the client hangs up.
    async fn raw_server(reply: Option<&'static str>, endless: bool) -> u16 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 2048];
                    let _ = s.read(&mut buf).await;
                    let Some(reply) = reply else {
                        // Holds the connection open, silent, until the client gives up.
                        let _ = s.read(&mut buf).await;
                        return;
                    };
                    if s.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                    let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
                    while endless && s.write_all(chunk.as_bytes()).await.is_ok() {}
                });
            }
        });
        port
    }

    #[tokio::test]
    async fn chunked_lists_are_read_and_endless_or_silent_servers_are_given_up() {
        let chunked = raw_server(
            Some("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n16\r\n{\"data\":[{\"id\":\"m1\"}]}\r\n0\r\n\r\n"),
            false,
        )
        .await;
        let endless = raw_server(
            Some("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\n{\r\n"),
            true,
        )
        .await;
        let silent = raw_server(None, false).await;
        let probes = Probes::parse(Some(&format!(
            "ollama={chunked},lmstudio={endless},llamacpp={silent}"
        )));
        let started = std::time::Instant::now();
        let found = discover(&probes).await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].models, ["m1"]);
        // The silent one costs the timeout, not more.
        assert!(started.elapsed() < TIMEOUT * 3, "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_server_that_lists_models_is_found_and_one_that_does_not_is_not() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let serve = |body: &'static str| async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let port = listener.local_addr().expect("addr").port();
            tokio::spawn(async move {
                while let Ok((mut s, _)) = listener.accept().await {
                    let mut buf = [0u8; 2048];
                    let _ = s.read(&mut buf).await;
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = s.write_all(reply.as_bytes()).await;
                }
            });
            port
        };
        let good = serve(r#"{"object":"list","data":[{"id":"qwen2.5-coder:7b"}]}"#).await;
        let bad = serve("not json").await;
        // A port nothing listens on: bind, read the port, close.
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("port");
        let probes = Probes::parse(Some(&format!(
            "ollama={good},lmstudio={bad},llamacpp={closed}"
        )));
        let found = discover(&probes).await;
        assert_eq!(
            found,
            [LocalServer {
                preset: "ollama".into(),
                label: "Ollama".into(),
                base_url: format!("http://127.0.0.1:{good}/v1"),
                models: vec!["qwen2.5-coder:7b".into()],
            }]
        );
    }
}
