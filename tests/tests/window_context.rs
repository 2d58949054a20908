//! The context window in the real window: the gauge in the task header, condensing by hand
//! (the header's button and `/compact`) and at the threshold, the condensed card, the model's
//! thinking folded, and a request sent again smaller.

use std::sync::Arc;

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::llm_server::{Chunk, RecordedRequest, Reply, ScriptedServer};
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str =
    "active_intents:\n  - id: INT-1\n    name: Docs\n    owned_scope: [\"docs/**\"]\n";

/// What the host's summary request gets back (Markdown, rendered and sanitized by the host).
const SUMMARY: &str = "## Goal\n\nRead the two files under docs/.\n\n## Progress\n\n- **one.txt** and two.txt were read in full\n- nothing was changed";

/// A file big enough that reading it fills a good share of a small window.
fn bulky(name: &str) -> String {
    (1..=600)
        .map(|n| format!("{name} line {n:04}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

/// The app on a workspace with two bulky files; `window` sets the test model's context window
/// and the condensing threshold (percent), else the window is the host's assumption.
async fn launch(
    name: &str,
    server: &ScriptedServer,
    window: Option<(u64, u8)>,
) -> (App, tempfile::TempDir, UserDirs) {
    let (one, two) = (bulky("one"), bulky("two"));
    let ws = workspace(
        Some(INTENTS),
        &[
            ("docs/one.txt", one.as_str()),
            ("docs/two.txt", two.as_str()),
        ],
    );
    let dirs = UserDirs::new();
    let base_url = format!("{}/v1", server.base_url());
    match window {
        Some((tokens, percent)) => dirs.settings_openai_window(&base_url, tokens, percent),
        None => dirs.settings_openai(&base_url, false),
    }
    let app = App::launch(name, ws.path(), &dirs, &[])
        .await
        .expect("launch the app");
    (app, ws, dirs)
}

/// A turn that reads both files at once, then a short answer after their results.
fn read_both() -> Vec<Reply> {
    vec![
        openai::turn()
            .tool_call("r1", "read_file", json!({"path": "docs/one.txt"}))
            .tool_call("r2", "read_file", json!({"path": "docs/two.txt"}))
            .reply(),
        openai::turn().text("I read both files.").reply(),
    ]
}

/// The model requests (the GETs asking the provider about the model left out).
fn posts(server: &ScriptedServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect()
}

/// The host's summary request: its instruction to condense (in the system prompt, or in the
/// last message when the request keeps the task's prefix for the prompt cache).
fn is_summary_request(r: &RecordedRequest) -> bool {
    let body = r.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let asks = |m: &serde_json::Value| {
        m["content"]
            .as_str()
            .is_some_and(|t| t.contains("You condense a coding agent's conversation"))
    };
    let first = messages.first().is_some_and(asks);
    let last = messages.last().is_some_and(asks);
    first || last
}

const ANSWERED: &str =
    "document.querySelector('.task-panel .task-status')?.dataset.status === 'idle'";

/// Reads the task's answer, then waits until the task takes a condense.
async fn read_the_files(app: &App) {
    app.send("Read the two files under docs/")
        .await
        .expect("send");
    app.wait_until("(document.querySelector('.message[data-role=\"assistant\"] .content')?.textContent ?? '').includes('I read both files.')")
        .await
        .expect("the answer after the reads");
    app.wait_until(ANSWERED).await.expect("the task is done");
    app.wait_until(
        "document.querySelector('.task-panel [data-action=\"condense\"]')?.disabled === false",
    )
    .await
    .expect("Condense is offered once the task waits");
}

/// The card's facts: its head, who asked, whether the summary is folded, the summary's HTML.
async fn card(app: &App) -> serde_json::Value {
    app.wait_until("document.querySelector('.task-panel .condensed-card') !== null")
        .await
        .expect("the condensed card");
    app.eval(
        "const c = document.querySelector('.task-panel .condensed-card');\
         const d = c.querySelector('details');\
         return {head: c.querySelector('.condensed-head').textContent, open: d.open,\
                 summary: d.querySelector('summary').textContent,\
                 heading: d.querySelector('.content h2')?.textContent ?? null,\
                 strong: d.querySelector('.content strong')?.textContent ?? null};",
    )
    .await
    .expect("eval")
}

/// "Context condensed: 12.3k → 1.2k tokens …": the figures before and after, as numbers.
fn before_after(head: &str) -> (f64, f64) {
    let figures = head
        .split_once(": ")
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let number = |s: &str| {
        let s = s.trim();
        let (digits, scale) = match s.strip_suffix('k') {
            Some(d) => (d, 1000.0),
            None => (s, 1.0),
        };
        digits.parse::<f64>().map(|n| n * scale).unwrap_or(-1.0)
    };
    let (before, rest) = figures.split_once(" → ").unwrap_or_default();
    let after = rest
        .split_once(" tokens")
        .map(|(a, _)| a)
        .unwrap_or_default();
    (number(before), number(after))
}

async fn gauge(app: &App) -> serde_json::Value {
    app.eval(
        "const g = document.querySelector('.task-panel .context-gauge');\
         const bar = g.querySelector('[role=\"meter\"]');\
         return {hidden: g.hidden, text: g.querySelector('.gauge-text').textContent, level: g.dataset.level,\
                 title: g.title, name: bar.getAttribute('aria-label'), now: Number(bar.getAttribute('aria-valuenow')),\
                 max: Number(bar.getAttribute('aria-valuemax')), valuetext: bar.getAttribute('aria-valuetext')};",
    )
    .await
    .expect("eval")
}

#[tokio::test]
async fn the_gauge_shows_used_of_window_and_warns_near_and_over_the_threshold() {
    // The provider's counts drive the gauge: 41k, then near the threshold, then over it.
    let server = ScriptedServer::start(vec![
        openai::turn().text("First.").usage(41_000, 200).reply(),
        openai::turn().text("Second.").usage(88_000, 100).reply(),
        openai::turn().text("Third.").usage(95_000, 100).reply(),
        openai::turn().text("Fourth.").reply(),
    ])
    .await;
    let (app, _ws, _dirs) = launch("context-gauge", &server, None).await;
    let answered = |n: usize, text: &str| {
        format!("(document.querySelectorAll('.message[data-role=\"assistant\"]')[{n}]?.textContent ?? '').includes('{text}') && {ANSWERED}")
    };
    app.send("one").await.expect("send");
    app.wait_until(&answered(0, "First."))
        .await
        .expect("first answer");
    // Before the first request the gauge holds the host's estimate of the request.
    let first = gauge(&app).await;
    assert_eq!(first["hidden"], false, "{first}");
    assert_eq!(first["name"], "Context window", "{first}");

    app.send("two").await.expect("send");
    app.wait_until(&answered(1, "Second."))
        .await
        .expect("second answer");
    let g = gauge(&app).await;
    let text = g["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("41") && text.ends_with("k / 128k"),
        "used of window after a turn that used 41k: {g}"
    );
    assert!(g["now"].as_f64().unwrap_or(0.0) >= 41_200.0, "{g}");
    assert_eq!(g["max"], 128_000.0, "{g}");
    assert_eq!(g["level"], "ok", "{g}");
    let title = g["title"].as_str().unwrap_or_default();
    // Figures are grouped as the person's locale says (none under the test's C locale).
    let title = title.replace(',', "");
    for part in [
        "of 128000 tokens in use",
        "Usable for input:",
        "Condenses on its own at",
        "Window: assumed",
        "Not condensed yet.",
    ] {
        assert!(
            title.contains(part),
            "{part:?} in the gauge's title: {title}"
        );
    }
    assert!(
        g["valuetext"]
            .as_str()
            .unwrap_or_default()
            .contains("of 128k tokens"),
        "{g}"
    );
    assert_eq!(
        app.unnamed_controls(".task-header").await.expect("names"),
        json!([]),
        "every control in the header has a name"
    );
    app.screenshot("context-gauge").await.expect("screenshot");

    app.send("three").await.expect("send");
    app.wait_until(&answered(2, "Third."))
        .await
        .expect("third answer");
    let g = gauge(&app).await;
    assert_eq!(g["level"], "near", "88k of a 90.7k threshold: {g}");
    assert!(
        g["title"]
            .as_str()
            .unwrap_or_default()
            .contains("Close to the condensing threshold"),
        "{g}"
    );
    app.screenshot("context-gauge-near")
        .await
        .expect("screenshot");

    app.send("four").await.expect("send");
    app.wait_until(&answered(3, "Fourth."))
        .await
        .expect("fourth answer");
    let g = gauge(&app).await;
    assert_eq!(g["level"], "over", "95k over a 90.7k threshold: {g}");
    app.screenshot("context-gauge-over")
        .await
        .expect("screenshot");
    app.close().await.expect("close");
}

#[tokio::test]
async fn condensing_by_hand_shows_the_card_with_the_summary_folded() {
    let mut replies = read_both();
    replies.push(openai::turn().text(SUMMARY).reply());
    let server = ScriptedServer::start(replies).await;
    let (app, _ws, _dirs) = launch("context-condense", &server, Some((32_768, 95))).await;
    read_the_files(&app).await;

    app.click(".task-panel [data-action=\"condense\"]")
        .await
        .expect("Condense");
    let c = card(&app).await;
    let head = c["head"].as_str().unwrap_or_default();
    assert!(
        head.starts_with("Context condensed: ") && head.ends_with("by hand"),
        "{c}"
    );
    let (before, after) = before_after(head);
    assert!(
        before > 0.0 && after > 0.0 && after < before,
        "tokens before → after: {head}"
    );
    assert_eq!(c["open"], false, "the summary starts folded: {c}");
    assert_eq!(
        c["heading"], "Goal",
        "the summary is the host's Markdown: {c}"
    );
    assert_eq!(c["strong"], "one.txt", "{c}");

    let sent = posts(&server);
    assert_eq!(sent.len(), 3, "two turns and the summary request");
    assert!(is_summary_request(&sent[2]), "{}", sent[2].body);

    // The gauge counts the condensation once the host has measured again.
    app.wait_until("(document.querySelector('.task-panel .context-gauge')?.title ?? '').includes('Condensed once so far.')")
        .await
        .expect("the gauge counts the condensation");
    app.click(".task-panel .condensed-card summary")
        .await
        .expect("open the summary");
    app.wait_until("document.querySelector('.task-panel .condensed-card details').open")
        .await
        .expect("the summary unfolds");
    app.screenshot("context-condensed")
        .await
        .expect("screenshot");

    // Reopened from the task list, the stored message shows the same card.
    app.click(".task-tab [data-action=\"close-tab\"]")
        .await
        .expect("close the tab");
    app.wait_until("document.querySelector('.task-panel') === null")
        .await
        .expect("no panel");
    app.click(".task-item .task-open").await.expect("reopen");
    let again = card(&app).await;
    assert_eq!(again["head"], c["head"], "{again}");
    assert_eq!(again["open"], false, "{again}");
    app.close().await.expect("close");
}

#[tokio::test]
async fn compact_in_the_message_box_condenses_instead_of_sending() {
    let mut replies = read_both();
    replies.push(openai::turn().text(SUMMARY).reply());
    let server = ScriptedServer::start(replies).await;
    let (app, _ws, _dirs) = launch("context-compact", &server, Some((32_768, 95))).await;
    read_the_files(&app).await;

    app.send("/compact").await.expect("send /compact");
    let c = card(&app).await;
    let head = c["head"].as_str().unwrap_or_default();
    assert!(head.ends_with("by hand"), "{c}");
    let (before, after) = before_after(head);
    assert!(after < before, "{head}");
    app.wait_until("document.querySelector('#composer-input').value === ''")
        .await
        .expect("the composer is cleared");
    let users = app
        .eval("return [...document.querySelectorAll('.message[data-role=\"user\"]')].map(m => m.querySelector('.content').textContent);")
        .await
        .expect("eval");
    assert_eq!(
        users,
        json!(["Read the two files under docs/"]),
        "/compact is not a message"
    );
    let sent = posts(&server);
    assert_eq!(sent.len(), 3, "two turns and the summary request");
    assert!(is_summary_request(&sent[2]), "{}", sent[2].body);
    assert!(
        sent.iter().all(|r| !r.body.contains("/compact")),
        "the model never sees /compact"
    );
    app.screenshot("context-compact").await.expect("screenshot");

    // With nothing new to condense, the host says why in the conversation.
    app.send("/compact").await.expect("send /compact again");
    app.wait_until("[...document.querySelectorAll('.message[data-role=\"notice\"]')].some(m => m.textContent.startsWith('Not condensed:'))")
        .await
        .expect("the host's refusal is shown");
    assert_eq!(posts(&server).len(), 3, "no second summary request");
    app.close().await.expect("close");
}

#[tokio::test]
async fn condensing_at_the_threshold_shows_the_row_then_the_card() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let mut replies = read_both();
    replies.push(Reply::After {
        gate: gate.clone(),
        then: Box::new(openai::turn().text(SUMMARY).reply()),
    });
    replies.push(openai::turn().text("Going on from the summary.").reply());
    let server = ScriptedServer::start(replies).await;
    let (app, _ws, _dirs) = launch("context-auto", &server, Some((WINDOW, 50))).await;
    read_the_files(&app).await;

    // Results are cut small enough that several fit between condensings; what takes the
    // conversation over the threshold here is the person pasting a long build log.
    let log = "build log: compiling the parser and its tests, all green so far\n".repeat(400);
    app.session
        .execute(
            "const t = document.querySelector('#composer-input'); t.value = arguments[0]; \
             t.dispatchEvent(new Event('input', {bubbles: true}));",
            vec![serde_json::Value::String(format!(
                "Go on. The build log:\n{log}"
            ))],
        )
        .await
        .expect("paste the log");
    app.wait_until("!document.querySelector('#composer-send').hasAttribute('aria-disabled')")
        .await
        .expect("the composer takes it");
    app.click("#composer-send").await.expect("send");
    app.wait_until("(document.querySelector('.task-panel .message.condensing')?.textContent ?? '').includes('Condensing the conversation')")
        .await
        .expect("the condensing row");
    app.screenshot("context-condensing")
        .await
        .expect("screenshot");
    gate.notify_one();
    let c = card(&app).await;
    let head = c["head"].as_str().unwrap_or_default();
    assert!(head.ends_with("automatic"), "{c}");
    let (before, after) = before_after(head);
    assert!(after < before, "{head}");
    app.wait_until("(document.querySelector('.task-panel .transcript')?.textContent ?? '').includes('Going on from the summary.')")
        .await
        .expect("the turn goes on after the summary");
    app.wait_until("document.querySelector('.task-panel .message.condensing') === null")
        .await
        .expect("the row made way for the card");
    let sent = posts(&server);
    assert!(is_summary_request(&sent[2]), "{}", sent[2].body);
    assert!(!is_summary_request(&sent[3]), "{}", sent[3].body);
    app.screenshot("context-condensed-automatic")
        .await
        .expect("screenshot");
    app.close().await.expect("close");
}

/// The test model's window for condensing at the threshold: the two files' results fill more
/// than half of what input may use, and less than all of it.
const WINDOW: u64 = 32_768;

/// One `chat.completion.chunk` event with this delta (and finish reason).
fn chunk(delta: serde_json::Value, finish: Option<&str>) -> Chunk {
    let event = json!({
        "id": "chatcmpl-thinking", "object": "chat.completion.chunk", "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    Chunk::new(format!("data: {event}\n\n"))
}

#[tokio::test]
async fn thinking_is_shown_folded_and_cache_reads_beside_the_cost() {
    let reasoning = [
        "The person wants",
        " a greeting.\nSecond line",
        " of thought.",
    ];
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": "", "reasoning_content": reasoning[0]}),
        None,
    )];
    for piece in &reasoning[1..] {
        chunks.push(chunk(json!({"reasoning_content": piece}), None));
    }
    chunks.push(chunk(json!({"content": "Hello!"}), None));
    chunks.push(chunk(json!({}), Some("stop")));
    let usage = json!({
        "id": "chatcmpl-thinking", "object": "chat.completion.chunk", "created": 0,
        "model": "test-model", "choices": [],
        "usage": {"prompt_tokens": 3000, "completion_tokens": 40, "total_tokens": 3040,
                  "prompt_tokens_details": {"cached_tokens": 2048}},
    });
    chunks.push(Chunk::new(format!("data: {usage}\n\n")));
    chunks.push(Chunk::new("data: [DONE]\n\n"));
    let server = ScriptedServer::start(vec![Reply::sse(chunks)]).await;
    let (app, _ws, _dirs) = launch("context-thinking", &server, None).await;
    app.send("Say hello").await.expect("send");
    app.wait_until("(document.querySelector('.message[data-role=\"assistant\"] .content')?.textContent ?? '').includes('Hello!')")
        .await
        .expect("the answer");
    app.wait_until("document.querySelector('.task-panel details.thinking') !== null")
        .await
        .expect("the thinking block (OpenAI-compatible `reasoning_content`)");
    let t = app
        .eval(
            "const d = document.querySelector('.task-panel details.thinking');\
             const c = d.querySelector('.content');\
             return {open: d.open, summary: d.querySelector('summary').textContent, text: c.textContent,\
                     elements: c.children.length, whiteSpace: getComputedStyle(c).whiteSpace,\
                     next: d.nextElementSibling?.dataset.role ?? null};",
        )
        .await
        .expect("eval");
    assert_eq!(t["open"], false, "{t}");
    assert_eq!(t["summary"], "Thinking", "{t}");
    assert_eq!(
        t["text"], "The person wants a greeting.\nSecond line of thought.",
        "{t}"
    );
    assert_eq!(t["elements"], 0, "the reasoning is plain text: {t}");
    assert_eq!(t["whiteSpace"], "pre-wrap", "line breaks kept: {t}");
    assert_eq!(
        t["next"], "assistant",
        "the reasoning comes before its answer: {t}"
    );
    app.click(".task-panel details.thinking summary")
        .await
        .expect("unfold");
    app.screenshot("context-thinking")
        .await
        .expect("screenshot");
    app.wait_until("/2(\\.0)?k cached/.test(document.querySelector('.task-panel .task-usage')?.textContent ?? '')")
        .await
        .expect("cache reads beside the cost");
    app.close().await.expect("close");
}

#[tokio::test]
async fn a_request_too_long_for_the_window_is_sent_again_smaller_and_said() {
    let server = ScriptedServer::start(vec![
        openai::error_json(
            400,
            "This model's maximum context length is 16384 tokens. However, your messages resulted in 19000 tokens.",
        ),
        openai::turn().text("Fitted.").reply(),
    ])
    .await;
    let (app, _ws, _dirs) = launch("context-retry", &server, None).await;
    app.send("Hello").await.expect("send");
    app.wait_until("(document.querySelector('.task-panel .transcript')?.textContent ?? '').includes('Fitted.')")
        .await
        .expect("the answer after the retry");
    let notes = app
        .eval("return [...document.querySelectorAll('.task-panel .message[data-role=\"notice\"]')].map(n => n.textContent);")
        .await
        .expect("eval");
    let said = notes
        .as_array()
        .map(|n| {
            n.iter()
                .filter(|t| {
                    t.as_str().unwrap_or_default().replace(',', "").starts_with(
                        "The request did not fit the model's window (limit 16384 tokens); sending less (try 1 of 3).",
                    )
                })
                .count()
        })
        .unwrap_or(0);
    assert_eq!(said, 1, "said once: {notes}");
    app.close().await.expect("close");
}
