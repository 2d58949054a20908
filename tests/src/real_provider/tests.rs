use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::*;

fn refuse_all(_: &Conversation, _: WireFormat) -> Answer {
    Answer::Text("done".to_string())
}

async fn post(p: &RealProvider, wire: WireFormat, body: &Value) -> (u16, String) {
    let path = match wire {
        WireFormat::Anthropic => "/v1/messages",
        WireFormat::OpenAi => "/v1/chat/completions",
    };
    let url = format!("{}{path}", p.base_url());
    let resp = reqwest::Client::new().post(url).json(body).send().await;
    let resp = resp.expect("provider answers");
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("body"))
}

fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).expect("event JSON"))
        .collect()
}

/// The streamed Anthropic message reassembled: its content blocks and final usage.
fn anthropic_message(body: &str) -> (Vec<Value>, Value, Value) {
    let (mut blocks, mut start_usage, mut usage) = (Vec::<Value>::new(), json!(null), json!(null));
    let mut partial = String::new();
    for e in events(body) {
        match e["type"].as_str().unwrap_or_default() {
            "message_start" => start_usage = e["message"]["usage"].clone(),
            "content_block_start" => blocks.push(e["content_block"].clone()),
            "content_block_delta" => {
                let b = blocks.last_mut().expect("a block");
                let d = &e["delta"];
                match d["type"].as_str().unwrap_or_default() {
                    "text_delta" => {
                        b["text"] = json!(format!(
                            "{}{}",
                            b["text"].as_str().unwrap(),
                            d["text"].as_str().unwrap()
                        ))
                    }
                    "thinking_delta" => {
                        b["thinking"] = json!(format!(
                            "{}{}",
                            b["thinking"].as_str().unwrap(),
                            d["thinking"].as_str().unwrap()
                        ))
                    }
                    "signature_delta" => b["signature"] = d["signature"].clone(),
                    _ => partial += d["partial_json"].as_str().unwrap(),
                }
            }
            "content_block_stop" if !partial.is_empty() => {
                let b = blocks.last_mut().expect("a block");
                b["input"] = serde_json::from_str(&std::mem::take(&mut partial)).unwrap();
            }
            "message_delta" => usage = e["usage"].clone(),
            _ => {}
        }
    }
    (blocks, start_usage, usage)
}

fn big(n: usize) -> String {
    "lorem ipsum dolor sit amet\n".repeat(n / 27 + 1)[..n].to_string()
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

#[tokio::test]
async fn over_the_window_both_apis_refuse_with_their_figures() {
    let anthropic = ProviderConfig::new(WireFormat::Anthropic, 1000);
    let p = RealProvider::start(anthropic, refuse_all).await;
    let body = json!({"model": "m", "max_tokens": 100, "messages": [user(&big(5000))]});
    let n = tokens(body.to_string().len());
    let (status, text) = post(&p, WireFormat::Anthropic, &body).await;
    assert_eq!(status, 400);
    let expected = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": format!("prompt is too long: {n} tokens > 1000 maximum")}});
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), expected);
    // Under the window, but not with room for the answer: the other real wording.
    let body = json!({"model": "m", "max_tokens": 900, "messages": [user(&big(2000))]});
    let (status, text) = post(&p, WireFormat::Anthropic, &body).await;
    assert_eq!(status, 400);
    assert!(
        text.contains("input length and `max_tokens` exceed context limit"),
        "{text}"
    );
    let c = p.counters();
    assert_eq!(c.rejected_for(Rejection::ContextLength), 2);
    assert_eq!(c.largest_request_tokens, n);

    let openai = ProviderConfig::new(WireFormat::OpenAi, 1000);
    let p = RealProvider::start(openai, refuse_all).await;
    let body = json!({"model": "m", "max_completion_tokens": 10, "messages": [user(&big(5000))]});
    let n = tokens(body.to_string().len());
    let (status, text) = post(&p, WireFormat::OpenAi, &body).await;
    assert_eq!(status, 400);
    let message = format!("This model's maximum context length is 1000 tokens. However, your messages resulted in {n} tokens. Please reduce the length of the messages.");
    let expected = json!({"error": {"message": message, "type": "invalid_request_error",
        "param": "messages", "code": "context_length_exceeded"}});
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), expected);

    let quiet = ProviderConfig::new(WireFormat::Anthropic, 1000).overflow(Overflow::NoFigure);
    let p = RealProvider::start(quiet, refuse_all).await;
    let body = json!({"model": "m", "max_tokens": 100, "messages": [user(&big(5000))]});
    let (status, text) = post(&p, WireFormat::Anthropic, &body).await;
    assert_eq!(status, 413);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["type"], "request_too_large");
    assert!(
        !text.chars().any(|c| c.is_ascii_digit()),
        "no figure: {text}"
    );
    assert_eq!(p.counters().rejected_for(Rejection::RequestTooLarge), 1);
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "read_file", "input": {"path": "a"}})
}

fn tool_result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "text"})
}

#[tokio::test]
async fn anthropic_refuses_malformed_histories_in_its_words() {
    let p = RealProvider::start(
        ProviderConfig::new(WireFormat::Anthropic, 100_000),
        refuse_all,
    )
    .await;
    let cases = [
        (
            json!([user("go"), {"role": "assistant", "content": [tool_use("toolu_a")]},
                {"role": "user", "content": [tool_result("toolu_a")]},
                {"role": "user", "content": [tool_result("toolu_x")]}]),
            "messages.3.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
        ),
        (
            json!([user("go"), {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                {"role": "assistant", "content": [tool_use("toolu_x")]}, user("next")]),
            "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_x. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        ),
        (
            json!([{"role": "assistant", "content": "hi"}, user("go")]),
            "messages: first message must use the \"user\" role",
        ),
        (
            json!([user("go"), {"role": "assistant", "content": []}, user("again")]),
            "messages.1: all messages must have non-empty content except for the optional final assistant message",
        ),
    ];
    for (messages, message) in cases {
        let body = json!({"model": "m", "max_tokens": 10, "messages": messages});
        let (status, text) = post(&p, WireFormat::Anthropic, &body).await;
        assert_eq!(status, 400);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert_eq!(v["error"]["message"], message);
    }
    assert_eq!(p.counters().rejected_for(Rejection::MalformedHistory), 4);
}

#[tokio::test]
async fn anthropic_refuses_an_image_that_is_not_what_it_claims() {
    let p = RealProvider::start(
        ProviderConfig::new(WireFormat::Anthropic, 100_000),
        refuse_all,
    )
    .await;
    let image = |media: &str, data: &str| {
        json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}},
            {"type": "text", "text": "what is this?"}]}])
    };
    // "iVBORw0K" is the start of a PNG; "R0lGOD" of a GIF.
    let cases = [
        (
            image("image/svg+xml", "PHN2Zz4="),
            "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
        ),
        (
            image("image/png", "R0lGODlhAQABAAAAACw="),
            "messages.0.content.0.image.source.base64: Image does not match the provided media type image/png",
        ),
        (
            image("image/png", "not base64!"),
            "messages.0.content.0.image.source.base64.data: Invalid base64 data",
        ),
    ];
    for (messages, message) in cases {
        let body = json!({"model": "m", "max_tokens": 10, "messages": messages});
        let (status, text) = post(&p, WireFormat::Anthropic, &body).await;
        assert_eq!(status, 400, "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"]["message"], message);
    }
    let ok =
        json!({"model": "m", "max_tokens": 10, "messages": image("image/png", "iVBORw0KGgo=")});
    assert_eq!(post(&p, WireFormat::Anthropic, &ok).await.0, 200);
}

#[tokio::test]
async fn openai_refuses_malformed_histories_in_its_words() {
    let p = RealProvider::start(ProviderConfig::new(WireFormat::OpenAi, 100_000), refuse_all).await;
    let call = |id: &str| {
        json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]})
    };
    let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "x"});
    let cases = [
        (
            json!([user("go"), result("call_x")]),
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        ),
        (
            json!([user("go"), call("call_x"), user("next")]),
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_x",
        ),
    ];
    for (messages, message) in cases {
        let body = json!({"model": "m", "messages": messages});
        let (status, text) = post(&p, WireFormat::OpenAi, &body).await;
        assert_eq!(status, 400);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"]["message"], message);
        assert_eq!(v["error"]["type"], "invalid_request_error");
    }
    let ok = json!({"model": "m", "messages": [user("go"), call("call_a"), result("call_a")]});
    assert_eq!(post(&p, WireFormat::OpenAi, &ok).await.0, 200);
}

#[tokio::test]
async fn anthropic_cache_reads_a_repeated_prefix_and_misses_a_changed_one() {
    let p = RealProvider::start(
        ProviderConfig::new(WireFormat::Anthropic, 100_000),
        refuse_all,
    )
    .await;
    let request = |system: &str| {
        let system =
            [json!({"type": "text", "text": system, "cache_control": {"type": "ephemeral"}})];
        json!({"model": "m", "max_tokens": 100, "system": system, "messages": [user("go")]})
    };
    let system = big(8000);
    let (_, first) = post(&p, WireFormat::Anthropic, &request(&system)).await;
    let (_, start, _) = anthropic_message(&first);
    let written = start["cache_creation_input_tokens"].as_u64().unwrap();
    assert!(written >= 2000, "{start}");
    assert_eq!(start["cache_read_input_tokens"], 0);

    let (_, second) = post(&p, WireFormat::Anthropic, &request(&system)).await;
    let (_, start, end) = anthropic_message(&second);
    assert_eq!(start["cache_read_input_tokens"], written);
    assert_eq!(start["cache_creation_input_tokens"], 0);
    assert_eq!(
        end["cache_read_input_tokens"], written,
        "message_delta repeats it"
    );
    let total = tokens(request(&system).to_string().len());
    assert_eq!(start["input_tokens"].as_u64().unwrap() + written, total);

    let (_, third) = post(&p, WireFormat::Anthropic, &request(&format!("x{system}"))).await;
    let (_, start, _) = anthropic_message(&third);
    assert_eq!(start["cache_read_input_tokens"], 0);
    assert!(start["cache_creation_input_tokens"].as_u64().unwrap() > 0);

    // Expired after five minutes.
    p.advance_clock(Duration::from_secs(301));
    let (_, fourth) = post(&p, WireFormat::Anthropic, &request(&system)).await;
    assert_eq!(anthropic_message(&fourth).1["cache_read_input_tokens"], 0);
    let c = p.counters();
    assert_eq!(c.cache_read_tokens, written);

    // Small prefixes are not cached; five breakpoints are refused.
    let (_, small) = post(&p, WireFormat::Anthropic, &request("short")).await;
    assert_eq!(
        anthropic_message(&small).1["cache_creation_input_tokens"],
        0
    );
    let mark = json!({"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}});
    let body =
        json!({"model": "m", "max_tokens": 10, "system": vec![mark; 5], "messages": [user("go")]});
    let (status, text) = post(&p, WireFormat::Anthropic, &body).await;
    assert_eq!(status, 400);
    assert!(text.contains("A maximum of 4 blocks with cache_control may be provided. Found 5."));
}

#[tokio::test]
async fn openai_caches_shared_prefixes_in_steps_of_128() {
    let p = RealProvider::start(ProviderConfig::new(WireFormat::OpenAi, 100_000), refuse_all).await;
    let system = big(8000);
    let request = |question: &str| {
        json!({"model": "m", "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "system", "content": system}, user(question)]})
    };
    let usage = |body: &str| events(body).last().unwrap()["usage"].clone();
    let (_, first) = post(&p, WireFormat::OpenAi, &request("one")).await;
    assert_eq!(usage(&first)["prompt_tokens_details"]["cached_tokens"], 0);
    let (_, second) = post(&p, WireFormat::OpenAi, &request("two")).await;
    let u = usage(&second);
    let cached = u["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(cached >= 1024 && cached % 128 == 0, "{u}");
    assert_eq!(u["prompt_tokens"], tokens(request("two").to_string().len()));
    assert_eq!(p.counters().cache_read_tokens, cached);
}

#[tokio::test]
async fn a_summary_request_keeps_exactly_the_facts_it_was_sent() {
    let p = RealProvider::start(
        ProviderConfig::new(WireFormat::Anthropic, 100_000),
        refuse_all,
    )
    .await;
    let body = json!({"model": "m", "max_tokens": 1000,
        "system": "You condense a coding agent's conversation into a summary.",
        "messages": [user("Objective: port the parser\nnoise"),
            {"role": "assistant", "content": [tool_use("toolu_a")]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a",
                "content": "fn main() {}\n// FACT-ALPHA: the build uses cargo\nmore"}]}]});
    let (status, text) = post(&p, WireFormat::Anthropic, &body).await;
    assert_eq!(status, 200);
    let (blocks, _, _) = anthropic_message(&text);
    let summary = blocks[0]["text"].as_str().unwrap();
    assert!(
        summary.contains("Objective: port the parser\n"),
        "{summary}"
    );
    assert!(
        summary.contains("FACT-ALPHA: the build uses cargo\n"),
        "{summary}"
    );
    assert!(!summary.contains("FACT-BETA") && !summary.contains("noise"));
    assert_eq!(p.counters().summaries, 1);
}

#[tokio::test]
async fn thinking_blocks_must_come_back_unchanged_in_a_tool_loop() {
    let plan = LongTaskPlan::new("INT-1", &["a.rs"], "Objective:", &[]);
    let p = RealProvider::start(ProviderConfig::new(WireFormat::Anthropic, 100_000), plan).await;
    let thinking = json!({"type": "enabled", "budget_tokens": 1024});
    let first = json!({"model": "m", "max_tokens": 2000, "thinking": thinking,
        "tools": [{"name": "read_file", "input_schema": {}}], "messages": [user("Objective: x")]});
    let (_, text) = post(&p, WireFormat::Anthropic, &first).await;
    assert!(text.contains("signature_delta"));
    let (blocks, _, _) = anthropic_message(&text);
    assert_eq!(blocks[0]["type"], "thinking");
    let id = blocks[2]["id"].as_str().unwrap().to_string();
    let id = id.as_str();
    let next = |assistant: Vec<Value>| {
        json!({"model": "m", "max_tokens": 2000,
        "thinking": thinking, "tools": first["tools"], "messages": [user("Objective: x"),
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": [tool_result(id)]}]})
    };

    let (status, text) = post(&p, WireFormat::Anthropic, &next(blocks[1..].to_vec())).await;
    assert_eq!(status, 400);
    assert!(text.contains("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`."), "{text}");
    let mut forged = blocks.clone();
    forged[0]["thinking"] = json!("something else");
    let (status, text) = post(&p, WireFormat::Anthropic, &next(forged)).await;
    assert_eq!(status, 400);
    assert!(text.contains("messages.1.content.0: Invalid `signature` in `thinking` block"));
    let (status, _) = post(&p, WireFormat::Anthropic, &next(blocks)).await;
    assert_eq!(status, 200);
    assert_eq!(p.counters().rejected_for(Rejection::Thinking), 2);
}

/// The tool call an OpenAI stream carried: (id, name, arguments).
fn openai_call(body: &str) -> (String, String, Value) {
    let (mut id, mut name, mut args) = (String::new(), String::new(), String::new());
    for e in events(body) {
        for tc in e["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(i) = tc["id"].as_str() {
                id = i.to_string();
                name = tc["function"]["name"].as_str().unwrap().to_string();
            }
            args += tc["function"]["arguments"].as_str().unwrap_or_default();
        }
    }
    (
        id,
        name,
        serde_json::from_str(&args).expect("arguments JSON"),
    )
}

/// Runs a LongTaskPlan as a client would, answering each call; `condense` may rewrite the
/// history before each request. Returns the tool names called and the final result.
async fn run_long_task(condense: fn(&mut Vec<Value>)) -> (Vec<String>, String, Counters) {
    let plan = LongTaskPlan::new(
        "INT-7",
        &["src/a.rs", "src/b.rs", "src/c.rs", "src/d.rs"],
        "Objective: port the parser",
        &["FACT-ALPHA: the build uses cargo"],
    )
    .writing_every(2, "src/notes");
    let p = RealProvider::start(ProviderConfig::new(WireFormat::OpenAi, 100_000), plan).await;
    let tools = json!([{"type": "function", "function": {"name": "read_file"}}]);
    let mut messages = vec![user("Objective: port the parser")];
    let mut names = Vec::new();
    loop {
        condense(&mut messages);
        let body = json!({"model": "m", "messages": messages, "tools": tools,
            "stream_options": {"include_usage": true}});
        let (status, text) = post(&p, WireFormat::OpenAi, &body).await;
        assert_eq!(status, 200, "{text}");
        let (id, name, args) = openai_call(&text);
        assert!(id.starts_with("call_"), "{id}");
        if names.len() == 2 {
            // Re-sent as after a context error: the same step comes back, with a new id.
            let (_, again, again_args) = openai_call(&post(&p, WireFormat::OpenAi, &body).await.1);
            assert_eq!((again, again_args), (name.clone(), args.clone()));
        }
        names.push(name.clone());
        if name == "attempt_completion" {
            let result = args["result"].as_str().unwrap().to_string();
            return (names, result, p.counters());
        }
        let content = match args["path"].as_str() {
            Some("src/a.rs") => format!("// FACT-ALPHA: the build uses cargo\n{}", big(3000)),
            _ => "ok".to_string(),
        };
        messages.push(
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": id,
            "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}),
        );
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
    }
}

#[tokio::test]
async fn a_long_task_reads_writes_and_completes_knowing_what_it_kept() {
    let (names, result, counters) = run_long_task(|_| {}).await;
    let expected = "select_active_intent read_file read_file write_to_file read_file read_file \
        write_to_file attempt_completion";
    assert_eq!(names, expected.split_whitespace().collect::<Vec<_>>());
    assert_eq!(result, "FACTS KEPT: FACT-ALPHA");
    assert!(counters.facts.unwrap().all_kept());
    assert_eq!(counters.requests, 9);
    assert!(
        counters.cache_read_tokens > 0,
        "a growing history shares its prefix"
    );
}

#[tokio::test]
async fn a_long_task_whose_history_lost_a_fact_says_so() {
    // Keep only the task and the newest call with its result, as a careless cut would.
    let (_, result, counters) = run_long_task(|m| {
        if m.len() > 3 {
            let tail = m.split_off(m.len() - 2);
            m.truncate(1);
            m.extend(tail);
        }
    })
    .await;
    assert_eq!(result, "FACTS LOST: FACT-ALPHA");
    assert_eq!(
        counters.facts.unwrap().lost,
        vec!["FACT-ALPHA: the build uses cargo"]
    );
}
