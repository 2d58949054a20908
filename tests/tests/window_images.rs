//! An image pasted into the message box: the host re-encodes it and the box shows it as a chip
//! (sized, with a button to take it off); sent, it reaches the model beside the words and the
//! transcript shows it under the person's message.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::llm_server::{Reply, ScriptedServer};
use mandate_tests::sse::openai;
use serde_json::json;

/// Draws a small "screenshot" on a canvas and pastes it into the message box as the
/// clipboard would: a paste event whose data holds a PNG file.
const PASTE: &str = r#"
const canvas = document.createElement('canvas');
canvas.width = 640; canvas.height = 360;
const g = canvas.getContext('2d');
g.fillStyle = '#f4f4f8'; g.fillRect(0, 0, 640, 360);
g.fillStyle = '#c0392b'; g.fillRect(40, 40, 240, 120);
g.fillStyle = '#1f2d3d'; g.font = '28px sans-serif'; g.fillText('Error: 42', 320, 220); g.fillText('NAME', 320, 300);
canvas.toBlob((blob) => {
  const file = new File([blob], 'NAME', { type: 'image/png' });
  const data = new DataTransfer();
  data.items.add(file);
  const input = document.querySelector('#composer-input');
  input.focus();
  input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
}, 'image/png');
return true;
"#;

#[tokio::test]
async fn a_pasted_image_shows_as_a_chip_and_then_in_the_transcript_and_reaches_the_model() {
    let server = ScriptedServer::start(vec![openai::turn()
        .text("The red box is the error banner.")
        .reply()])
    .await;
    server.on_get(
        "/v1/models",
        Reply::json(
            200,
            &json!({"data": [{"id": "test-model", "context_length": 128000,
                "architecture": {"input_modalities": ["text", "image"]}}]}),
        ),
    );
    let ws = workspace(None, &[("README.md", "# Demo\n")]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch("images", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.type_into("#composer-input", "What is the red box?")
        .await
        .expect("type");
    // Two images pasted; one is taken off again.
    for name in ["first.png", "second.png"] {
        app.eval(&PASTE.replace("NAME", name)).await.expect("paste");
        if let Err(e) = app.wait_until(&format!(
            "[...document.querySelectorAll('#image-chips .image-chip img')].some(i => i.alt === '{name}' && i.complete && i.naturalWidth > 0)"
        ))
        .await
        {
            let seen = app
                .eval("return [document.querySelector('#composer-error').textContent, document.querySelector('#image-chips').innerHTML.slice(0, 300)]")
                .await;
            panic!("the chip shows the host's preview: {e}; {seen:?}");
        }
    }
    assert_eq!(
        app.eval("return document.querySelector('#image-chips .image-chip .image-chip-size').textContent")
            .await
            .expect("size"),
        json!("640×360 · 308 tokens")
    );
    app.click("#image-chips .image-chip:last-child .image-chip-remove")
        .await
        .expect("remove");
    app.wait_until("document.querySelectorAll('#image-chips .image-chip').length === 1")
        .await
        .expect("one image left");
    app.screenshot("image-chip").await.expect("screenshot");
    // The text typed stays text: pasting an image adds nothing to the box.
    assert_eq!(
        app.eval("return document.querySelector('#composer-input').value")
            .await
            .expect("value"),
        json!("What is the red box?")
    );
    app.click("#composer-send").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('error banner'))")
        .await
        .expect("answer");
    if let Err(e) = app.wait_until("document.querySelector('.task-panel:not([hidden]) .message[data-role=\"user\"] .message-image img')?.naturalWidth > 0")
        .await
    {
        let seen = app
            .eval("return document.querySelector('.task-panel:not([hidden]) .message[data-role=\"user\"]')?.outerHTML.slice(0, 600) ?? 'no user message'")
            .await;
        panic!("the image shows in the transcript: {e}; {seen:?}");
    }
    assert_eq!(
        app.eval("return document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"user\"] .message-image').length")
            .await
            .expect("count"),
        json!(1)
    );
    app.wait_until("document.querySelector('#image-chips').hidden")
        .await
        .expect("the chips go with the message");
    app.screenshot("image-in-transcript")
        .await
        .expect("screenshot");
    let content = server.requests()[0].json()["messages"][1]["content"].clone();
    let parts = content.as_array().expect("parts");
    assert_eq!(parts.len(), 2, "{content}");
    assert!(parts[1]["image_url"]["url"]
        .as_str()
        .unwrap_or_default()
        .starts_with("data:image/png;base64,"));
}
