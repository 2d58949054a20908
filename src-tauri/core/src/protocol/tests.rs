use super::*;
use pretty_assertions::assert_eq;

#[test]
fn requests_parse_from_tagged_json() {
    let req: Request =
        serde_json::from_str(r#"{"type":"start_task","text":"hi"}"#).expect("valid request");
    assert_eq!(
        req,
        Request::StartTask {
            text: "hi".into(),
            mode: None,
            images: Vec::new(),
            profile: None,
        }
    );
    let req: Request = serde_json::from_str(r#"{"type":"get_state"}"#).expect("unit variant");
    assert_eq!(req, Request::GetState);
}

#[test]
fn unknown_fields_and_types_are_rejected() {
    for bad in [
        r#"{"type":"start_task","text":"hi","extra":1}"#,
        r#"{"type":"launch_missiles"}"#,
        r#"{"text":"hi"}"#,
        r#"{"type":"save_settings","settings":{"provider":"openai","preset":"x","base_url":"u","model":"m","custom_instructions":"","approval":{"ask_before_writes":true,"ask_before_safe_commands":false},"editor":"auto","api_key":"k"}}"#,
        r#"{"type":"open_in_editor","path":"a.rs","line":-1}"#,
        r#"{"type":"open_in_editor","path":"a.rs","line":1,"program":"sh"}"#,
        r#"{"type":"decide_approval","task_id":"t","approval_id":"a","decision":{"decision":"reject","reason":"no","x":1}}"#,
    ] {
        assert!(
            serde_json::from_str::<Request>(bad).is_err(),
            "accepted: {bad}"
        );
    }
}

#[test]
fn typescript_declarations_are_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/js/protocol.d.ts");
    let generated = typescript_declarations();
    if std::env::var_os("UPDATE_TS").is_some() {
        std::fs::write(&path, &generated).expect("write protocol.d.ts");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "ui/js/protocol.d.ts is out of date: run `make ts`"
    );
}
