use super::*;
use crate::llm::ToolCall;

fn user(t: &str) -> ChatMessage {
    ChatMessage::user(t)
}

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

fn asks(calls: Vec<ToolCall>) -> ChatMessage {
    ChatMessage::Assistant {
        text: String::new(),
        tool_calls: calls,
        thinking: vec![],
    }
}

fn result(id: &str, content: &str) -> ChatMessage {
    ChatMessage::ToolResult {
        call_id: id.into(),
        name: "read_file".into(),
        content: content.into(),
        is_error: false,
    }
}

fn read(id: &str, path: &str) -> ToolCall {
    call(id, "read_file", &format!("{{\"path\":\"{path}\"}}"))
}

#[test]
fn a_result_without_its_call_goes_and_a_call_without_its_result_is_answered() {
    let messages = vec![
        result("orphan", "x"),
        user("go"),
        asks(vec![read("a", "a.rs"), read("b", "b.rs")]),
        result("b", "B"),
        user("next"),
        result("a", "late"),
    ];
    let fixed = well_formed(messages);
    assert_eq!(fixed[0], user("go"));
    assert_eq!(fixed[2], result("b", "B"));
    assert!(
        matches!(&fixed[3], ChatMessage::ToolResult { call_id, is_error: true, .. } if call_id == "a")
    );
    assert_eq!(fixed[4], user("next"));
    assert_eq!(fixed.len(), 5, "{fixed:?}");
    assert!(is_well_formed(&fixed));
}

#[test]
fn an_assistant_message_first_gets_a_user_message_before_it() {
    let fixed = well_formed(vec![asks(vec![read("a", "x")]), result("a", "1")]);
    assert!(matches!(&fixed[0], ChatMessage::User { .. }));
    assert_eq!(fixed.len(), 3);
}

#[test]
fn an_earlier_whole_read_of_a_file_read_again_is_left_out() {
    let mut messages = vec![
        user("go"),
        asks(vec![read("1", "src/a.rs")]),
        result("1", "old content"),
        asks(vec![call(
            "2",
            "read_file",
            r#"{"path":"src/a.rs","start_line":1,"end_line":2}"#,
        )]),
        result("2", "a range"),
        asks(vec![read("3", "./src/a.rs")]),
        result("3", "new content"),
    ];
    supersede_reads(&mut messages);
    assert!(
        matches!(&messages[2], ChatMessage::ToolResult { content, .. } if content.contains("left out"))
    );
    assert_eq!(messages[4], result("2", "a range"));
    assert_eq!(messages[6], result("3", "new content"));
}

#[test]
fn the_cut_never_separates_a_result_from_its_call_and_keeps_the_newest_exchange() {
    let big = "x".repeat(4_000);
    let conversation = vec![
        user("go"),
        asks(vec![read("1", "a")]),
        result("1", &big),
        asks(vec![read("2", "b")]),
        result("2", &big),
        asks(vec![read("3", "c"), read("4", "d")]),
        result("3", &big),
        result("4", &big),
    ];
    let cut = choose_cut(&conversation, 0, 1_500);
    assert_eq!(
        cut, 5,
        "the newest exchange alone is over budget, and is kept whole"
    );
    let cut = choose_cut(&conversation, 0, 3_200);
    assert_eq!(cut, 3);
    for from in 0..conversation.len() {
        for budget in [0, 100, 1_000, 3_000, 100_000] {
            let cut = choose_cut(&conversation, from, budget);
            assert!(cut > from || cut == conversation.len());
            if cut < conversation.len() {
                assert!(!matches!(conversation[cut], ChatMessage::ToolResult { .. }));
            }
            let dropped = drop_oldest(&conversation, from, budget);
            if dropped < conversation.len() {
                assert!(!matches!(
                    conversation[dropped],
                    ChatMessage::ToolResult { .. }
                ));
            }
        }
    }
}

#[test]
fn the_request_starts_with_the_summary_the_persons_messages_and_the_intent() {
    let conversation = vec![
        user("Objective: port the parser"),
        asks(vec![read("1", "a")]),
        result("1", "A"),
        user("also keep the old API"),
        asks(vec![read("2", "b")]),
        result("2", "B"),
    ];
    let c = Condensation {
        at: 4,
        summary: "Read a. The person wants the old API kept.".into(),
        tokens_before: 100,
        tokens_after: 40,
        cost_usd: None,
        created_at: String::new(),
        message_id: "m".into(),
        summarized: true,
    };
    let persons = vec![
        "Objective: port the parser".to_string(),
        "also keep the old API".to_string(),
    ];
    let carried = Carried {
        persons_messages: &persons,
        intent_context: Some("<intent_context>INT-1</intent_context>"),
        persons_budget: 1_000,
    };
    let sent = for_request(&conversation, Some(&c), &carried);
    assert_eq!(sent.len(), 3);
    let ChatMessage::User { text, .. } = &sent[0] else {
        panic!("a user message first: {sent:?}");
    };
    for part in [
        "<summary>\nRead a.",
        "[1] Objective: port the parser",
        "[2] also keep the old API",
        "<intent_context>INT-1</intent_context>",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    assert!(is_well_formed(&sent));
}

#[test]
fn the_persons_messages_beyond_their_budget_are_the_oldest_ones_left_out() {
    let all: Vec<String> = (0..10)
        .map(|i| format!("message {i} {}", "w".repeat(40)))
        .collect();
    let (kept, left_out) = persons_within(&all, 60);
    assert_eq!(kept[0].0, 1, "the task's request is always kept");
    assert!(left_out > 0);
    assert_eq!(kept.last().map(|k| k.0), Some(10), "the newest is kept");
}
