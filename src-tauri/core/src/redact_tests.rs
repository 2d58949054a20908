use super::*;

const KEY: &str = "sk-proj-Zq8vN3xT5bL0wK7mR2cY9dF4hJ6gP1sA";

fn redactor() -> Redactor {
    let r = Redactor::new();
    assert!(r.add(KEY));
    r
}

#[test]
fn the_key_and_its_usual_encodings_are_replaced() {
    let r = redactor();
    let b64 = base64::engine::general_purpose::STANDARD;
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let texts = [
        format!("OPENAI_API_KEY={KEY}\n"),
        format!("Authorization: Bearer {KEY}"),
        b64.encode(KEY),
        b64.encode(format!("x{KEY}")),
        b64.encode(format!("xy{KEY}\n")),
        b64.encode(format!("MANDATE_API_KEY={KEY}\0PATH=/usr/bin\0")),
        url.encode(format!("..{KEY}..")),
        hex::encode(KEY),
        hex::encode_upper(format!("k={KEY}")),
        KEY.chars().rev().collect(),
        KEY.bytes().map(|b| format!("%{b:02X}")).collect(),
    ];
    for text in texts {
        let out = r.redact(&text);
        assert!(out.contains(REDACTED), "not redacted: {text}");
        assert!(!out.contains(KEY), "{out}");
        assert!(
            !r.contains_secret(&out),
            "a form of the key is left in {out}"
        );
    }
}

#[test]
fn text_without_a_secret_is_borrowed_unchanged() {
    let r = redactor();
    assert!(matches!(
        r.redact("cargo test: 12 passed"),
        Cow::Borrowed(_)
    ));
    let empty = Redactor::new();
    assert!(matches!(empty.redact(KEY), Cow::Borrowed(_)));
    assert!(
        !empty.add("short"),
        "a value shorter than 8 bytes is refused"
    );
}

#[test]
fn around_multibyte_text_the_result_stays_valid() {
    let r = redactor();
    let text = format!("é{KEY}ü — ok");
    assert_eq!(r.redact(&text), format!("é{REDACTED}ü — ok"));
}

#[test]
fn a_stream_holds_back_only_what_could_start_a_key() {
    let r = redactor();
    let mut stream = r.stream();
    // A line that cannot begin a key shows at once (a server's "ready"), however long keys are.
    assert_eq!(stream.push(b"listening on :3000\n"), "listening on :3000\n");
    // The start of a key waits for what follows it.
    let (head, tail) = KEY.split_at(5);
    assert_eq!(stream.push(format!("key={head}").as_bytes()), "key=");
    assert_eq!(
        stream.push(format!("{tail} ok\n").as_bytes()),
        format!("{REDACTED} ok\n")
    );
    assert_eq!(stream.finish(), "");
}

#[test]
fn a_key_split_across_chunks_is_still_replaced() {
    let r = redactor();
    let text = format!("line one\nkey: {KEY}\nlast line ünïcode\n{}", KEY);
    let bytes = text.as_bytes();
    for size in [1, 2, 3, 7, 16, 41, 4096] {
        let mut stream = r.stream();
        let mut out = String::new();
        for chunk in bytes.chunks(size) {
            out.push_str(&stream.push(chunk));
        }
        out.push_str(&stream.finish());
        assert!(!out.contains(KEY), "chunks of {size}: {out}");
        assert_eq!(out.matches(REDACTED).count(), 2, "chunks of {size}: {out}");
        assert!(out.contains("last line ünïcode"), "chunks of {size}: {out}");
    }
}

#[test]
fn scrubbed_variables_leave_proc_self_environ() {
    // The initial environment block can only be set by starting a process: run this test
    // binary again with the key in its environment and the child test below selected.
    let exe = std::env::current_exe().expect("exe");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "redact::tests::scrub_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MANDATE_SCRUB_CHILD", "1")
        .env("MANDATE_SCRUB_TEST_KEY", KEY)
        .output()
        .expect("run child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("scrubbed: ok"), "{stdout}");
}

#[test]
fn scrub_child() {
    if std::env::var_os("MANDATE_SCRUB_CHILD").is_none() {
        return;
    }
    let before = std::fs::read("/proc/self/environ").expect("environ");
    assert!(String::from_utf8_lossy(&before).contains(KEY));
    let found = scrub_environment(&["MANDATE_SCRUB_TEST_KEY"]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1.expose(), KEY);
    assert!(std::env::var_os("MANDATE_SCRUB_TEST_KEY").is_none());
    let after = std::fs::read("/proc/self/environ").expect("environ");
    assert!(!String::from_utf8_lossy(&after).contains(KEY));
    assert!(Redactor::global().contains_secret(KEY));
    println!("scrubbed: ok");
}
