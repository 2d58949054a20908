//! Settings' "Context window" section in the real window: the condensing threshold and a model's
//! figures saved to the settings file, shown again when the app is opened again, and a figure the
//! host refuses said next to it.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::llm_server::ScriptedServer;
use serde_json::{json, Value};

const INTENTS: &str =
    "active_intents:\n  - id: INT-1\n    name: Docs\n    owned_scope: [\"docs/**\"]\n";

const ROW: &str = "#context-models-rows tr:first-child";

/// The value of the input `css` finds.
async fn value(app: &App, css: &str) -> String {
    let css = serde_json::to_string(css).expect("css");
    app.eval(&format!(
        "return document.querySelector({css})?.value ?? null"
    ))
    .await
    .expect("eval")
    .as_str()
    .unwrap_or_else(|| panic!("no input {css}"))
    .to_string()
}

async fn row_count(app: &App) -> Value {
    app.eval("return document.querySelectorAll('#context-models-rows tr').length")
        .await
        .expect("rows")
}

async fn open_settings(app: &App) {
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    app.find("#context-settings").await.expect("the section");
}

async fn save(app: &App) {
    app.click("#settings-save").await.expect("save");
}

fn saved_context(dirs: &UserDirs) -> Value {
    let text = std::fs::read_to_string(dirs.config().join("settings.json")).expect("settings");
    let saved: Value = serde_json::from_str(&text).expect("json");
    saved["context"].clone()
}

#[tokio::test]
async fn the_context_window_section_saves_shows_again_and_says_what_the_host_refuses() {
    let server = ScriptedServer::start(vec![]).await;
    let ws = workspace(Some(INTENTS), &[("docs/a.txt", "a\n")]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);

    let app = App::launch("settings-context", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    open_settings(&app).await;
    // Nothing set yet: the default threshold and no model listed.
    assert_eq!(value(&app, "#settings-context-threshold").await, "80");
    assert_eq!(row_count(&app).await, json!(0));
    app.wait_until(
        "!document.querySelector('#context-models-empty').hidden && document.querySelector('#context-models').hidden",
    )
    .await
    .expect("the empty list is said");

    app.type_into("#settings-context-threshold", "60")
        .await
        .expect("threshold");
    app.click("#context-add-current")
        .await
        .expect("add current");
    assert_eq!(
        value(&app, &format!("{ROW} input[data-field=\"model\"]")).await,
        "openai/test-model"
    );
    app.wait_until("document.activeElement?.dataset.field === 'context_window'")
        .await
        .expect("the new row's window is next to fill");
    app.type_into(
        &format!("{ROW} input[data-field=\"context_window\"]"),
        "16384",
    )
    .await
    .expect("window");
    app.type_into(&format!("{ROW} input[data-field=\"max_output\"]"), "2048")
        .await
        .expect("max output");
    // The person's prices for the model (the cache prices left to the table or the input's).
    app.type_into(&format!("{ROW} input[data-price=\"input\"]"), "1.5")
        .await
        .expect("input price");
    app.type_into(&format!("{ROW} input[data-price=\"output\"]"), "6")
        .await
        .expect("output price");
    // A second, empty row is added and removed again.
    app.click("#context-add-model").await.expect("add a model");
    assert_eq!(row_count(&app).await, json!(2));
    app.click("#context-models-rows tr:nth-child(2) [data-action=\"remove\"]")
        .await
        .expect("remove");
    assert_eq!(row_count(&app).await, json!(1));
    assert_eq!(
        app.unnamed_controls("#context-settings")
            .await
            .expect("a11y"),
        json!([]),
        "every control of the section has a name"
    );
    save(&app).await;
    app.wait_until("(document.querySelector('#settings-saved')?.textContent ?? '') === 'Saved.'")
        .await
        .expect("saved");
    assert_eq!(
        saved_context(&dirs),
        json!({
            "threshold_percent": 60,
            "models": [{
                "model": "openai/test-model",
                "context_window": 16384,
                "max_output": 2048,
                "thinking_budget": null,
                "prices": {"input": 1.5, "output": 6.0, "cache_read": null, "cache_write": null},
            }],
        })
    );
    app.close().await.expect("close");

    // Opened again, Settings show what the file holds.
    let app = App::launch("settings-context-again", ws.path(), &dirs, &[])
        .await
        .expect("launch again");
    open_settings(&app).await;
    assert_eq!(value(&app, "#settings-context-threshold").await, "60");
    assert_eq!(row_count(&app).await, json!(1));
    assert_eq!(
        value(&app, &format!("{ROW} input[data-field=\"model\"]")).await,
        "openai/test-model"
    );
    assert_eq!(
        value(&app, &format!("{ROW} input[data-field=\"context_window\"]")).await,
        "16384"
    );
    assert_eq!(
        value(&app, &format!("{ROW} input[data-field=\"max_output\"]")).await,
        "2048"
    );
    assert_eq!(
        value(
            &app,
            &format!("{ROW} input[data-field=\"thinking_budget\"]")
        )
        .await,
        ""
    );
    // The current model is listed already: no second row.
    app.click("#context-add-current")
        .await
        .expect("add current");
    assert_eq!(row_count(&app).await, json!(1));

    // A thinking budget of 500 is refused by the host, and said next to the field.
    app.type_into(
        &format!("{ROW} input[data-field=\"thinking_budget\"]"),
        "500",
    )
    .await
    .expect("thinking budget");
    save(&app).await;
    app.wait_until(
        "return !document.querySelector('#settings-error').hidden && document.querySelector('#settings-error').textContent.includes('thinking budget')",
    )
    .await
    .expect("the refusal is shown");
    let said = app.text("#settings-error").await.expect("error");
    assert!(
        said.contains("openai/test-model") && said.contains("500") && said.contains("1,024"),
        "{said}"
    );
    assert_eq!(
        app.eval(&format!(
            "return document.querySelector('{ROW} input[data-field=\"thinking_budget\"]').getAttribute('aria-invalid')"
        ))
        .await
        .expect("eval"),
        json!("true"),
        "the refused field is marked"
    );
    assert_eq!(
        app.eval("return !!document.querySelector('#settings-error').closest('#context-settings')")
            .await
            .expect("eval"),
        json!(true),
        "the refusal is said in the section"
    );
    assert_eq!(
        saved_context(&dirs)["models"][0]["thinking_budget"],
        Value::Null,
        "nothing refused reaches the file"
    );
    app.eval("document.querySelector('#context-settings').scrollIntoView({block: 'center'}); return null")
        .await
        .expect("scroll");
    let shot = app
        .screenshot("settings-context")
        .await
        .expect("screenshot");
    assert!(shot.is_file());
    app.close().await.expect("close");
}
