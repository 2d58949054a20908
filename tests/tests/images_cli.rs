//! `mandate run --image`: the image is re-encoded by the host and goes to a model that reads
//! images, beside the words, and stays with the task; a model that does not read them refuses
//! the run before anything is sent; a file that is not an image is named.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{mandate, task_record};
use mandate_tests::llm_server::{Reply, ScriptedServer};
use mandate_tests::sse::openai;
use serde_json::json;

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn png() -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(PNG)
        .expect("png")
}

fn args<'a>(ws: &'a str, base: &'a str, model: &'a str, image: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--workspace",
        ws,
        "--provider",
        "openai",
        "--base-url",
        base,
        "--model",
        model,
        "--json",
        "--api-key-env",
        "TEST_KEY",
        "--image",
        image,
        "What is wrong in this screenshot?",
    ]
}

#[tokio::test]
async fn an_image_goes_to_a_model_its_server_says_reads_images_and_stays_with_the_task() {
    let ws = workspace(None, &[]);
    let shot = ws.path().join("shot.png");
    std::fs::write(&shot, png()).expect("write");
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![openai::turn()
        .tool_call("d", "attempt_completion", json!({"result": "A red dot."}))
        .reply()])
    .await;
    // The name says nothing; the server's model list says it reads images.
    server.on_get(
        "/v1/models",
        Reply::json(
            200,
            &json!({"data": [{"id": "vision-local", "context_length": 32768,
                "architecture": {"input_modalities": ["text", "image"], "output_modalities": ["text"]}}]}),
        ),
    );
    let base = format!("{}/v1", server.base_url());
    let root = ws.path().display().to_string();
    let shot_arg = shot.display().to_string();
    let out = mandate(
        &args(&root, &base, "vision-local", &shot_arg),
        &dirs,
        &[("TEST_KEY", "sk-test")],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("cannot tell"), "{}", out.stderr);
    let content = server.requests()[0].json()["messages"][1]["content"].clone();
    let parts = content.as_array().expect("text and image parts");
    assert!(parts[0]["text"]
        .as_str()
        .unwrap_or_default()
        .contains("What is wrong in this screenshot?"));
    let url = parts[1]["image_url"]["url"].as_str().expect("image url");
    assert!(url.starts_with("data:image/png;base64,"), "{url}");
    // Re-encoded by the host, not passed on as it came.
    assert_ne!(url, format!("data:image/png;base64,{PNG}"));
    // Kept with the task: the image in its conversation, the preview in its transcript.
    let record = task_record(&dirs, &out.task_id().expect("task"));
    let first = &record["conversation"][0];
    assert_eq!(first["images"][0]["media_type"], "image/png");
    assert_eq!(first["images"][0]["width"], 1);
    let shown = record["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["kind"] == "user")
        .expect("the person's message");
    assert_eq!(shown["images"][0]["name"], "shot.png");
    assert!(shown["images"][0]["preview"]
        .as_str()
        .unwrap_or_default()
        .starts_with("data:image/jpeg;base64,"));
}

#[tokio::test]
async fn a_model_that_does_not_read_images_is_not_sent_them_and_a_non_image_is_named() {
    let ws = workspace(None, &[]);
    let shot = ws.path().join("shot.png");
    std::fs::write(&shot, png()).expect("write");
    let notes = ws.path().join("notes.png");
    std::fs::write(&notes, "not a picture at all").expect("write");
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![]).await;
    let base = format!("{}/v1", server.base_url());
    let root = ws.path().display().to_string();
    let shot_arg = shot.display().to_string();
    let out = mandate(
        &args(&root, &base, "gpt-3.5-turbo", &shot_arg),
        &dirs,
        &[("TEST_KEY", "sk-test")],
    )
    .await;
    assert_eq!(out.code, Some(2), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("gpt-3.5-turbo does not accept images"),
        "{}",
        out.stderr
    );
    let notes_arg = notes.display().to_string();
    let out = mandate(
        &args(&root, &base, "gpt-4.1", &notes_arg),
        &dirs,
        &[("TEST_KEY", "sk-test")],
    )
    .await;
    assert_eq!(out.code, Some(2), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("notes.png is not an image"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty(), "nothing was sent");
}
