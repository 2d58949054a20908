use std::collections::HashMap;
use std::time::Instant;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::matching::{QueryError, MAX_QUERY_CHARS};
use super::HistoryIndex;
use crate::agent::{TaskRecord, TaskStore};
use crate::protocol::{HistoryField, HistoryQuery, HistoryResults, HistorySnippet};

/// A task as the store keeps it, built from JSON (fields added later keep their defaults).
pub(super) struct Task {
    summary: serde_json::Value,
    messages: Vec<serde_json::Value>,
    conversation: Vec<serde_json::Value>,
    turns: Vec<serde_json::Value>,
}

impl Task {
    pub(super) fn new(id: &str, title: &str, created: &str, updated: &str) -> Task {
        Task {
            summary: json!({
                "id": id, "title": title, "status": "completed", "intent_id": null,
                "model": "test-model",
                "usage": {"input_tokens": 1200, "output_tokens": 340, "cost_usd": null},
                "created_at": created, "updated_at": updated, "error": null,
            }),
            messages: Vec::new(),
            conversation: Vec::new(),
            turns: Vec::new(),
        }
    }

    pub(super) fn intent(mut self, id: &str) -> Task {
        self.summary["intent_id"] = json!(id);
        self
    }

    pub(super) fn cost(mut self, usd: f64) -> Task {
        self.summary["usage"]["cost_usd"] = json!(usd);
        self
    }

    pub(super) fn set(mut self, key: &str, value: serde_json::Value) -> Task {
        self.summary[key] = value;
        self
    }

    pub(super) fn person(mut self, text: &str) -> Task {
        let id = format!("u{}", self.messages.len());
        self.turns.push(json!({
            "message_id": id, "text": text,
            "conversation_at": self.conversation.len(), "messages_at": self.messages.len(),
        }));
        self.messages
            .push(json!({"kind": "user", "id": id, "text": text}));
        // What the model got: the typed text and what Mandate attached to it.
        self.conversation.push(
            json!({"role": "user", "text": format!("{text}\n\n<attached>file contents</attached>")}),
        );
        self
    }

    pub(super) fn agent(mut self, text: &str) -> Task {
        self.messages.push(
            json!({"kind": "assistant", "id": format!("a{}", self.messages.len()),
            "safe_html": "<p>rendered</p>", "complete": true}),
        );
        self.conversation
            .push(json!({"role": "assistant", "text": text, "tool_calls": []}));
        self
    }

    pub(super) fn tool(mut self, tool: &str, target: &str, summary: &str, output: &str) -> Task {
        let call_id = format!("call-{}", self.messages.len());
        self.conversation
            .push(json!({"role": "assistant", "text": "", "tool_calls": [
            {"id": call_id, "name": tool, "arguments": format!("{{\"path\":\"{target}\"}}")}]}));
        self.conversation.push(
            json!({"role": "tool_result", "call_id": call_id, "name": tool,
            "content": output, "is_error": false}),
        );
        self.messages.push(
            json!({"kind": "tool", "id": format!("t{}", self.messages.len()),
            "call": {"call_id": call_id, "tool": tool, "kind": "read", "target": target,
                     "status": "succeeded", "summary": summary, "output": output}}),
        );
        self
    }

    pub(super) fn record(self) -> TaskRecord {
        let governance =
            serde_json::to_value(crate::hooks::TaskGovernance::default()).expect("governance");
        serde_json::from_value(json!({
            "format": 1, "workspace": "/w", "summary": self.summary,
            "conversation": self.conversation, "messages": self.messages,
            "governance": governance, "objective": "", "turns": self.turns,
        }))
        .expect("a task record")
    }
}

struct History {
    _data: tempfile::TempDir,
    store: TaskStore,
    index: HistoryIndex,
    names: HashMap<String, String>,
}

impl History {
    fn with(tasks: Vec<Task>) -> History {
        let data = tempfile::tempdir().expect("tempdir");
        let store = TaskStore::new(data.path(), std::path::Path::new("/w"));
        for task in tasks {
            store.save(&task.record()).expect("save");
        }
        let names = HashMap::from([
            ("INT-001".to_string(), "Parser rewrite".to_string()),
            ("INT-002".to_string(), "Release notes".to_string()),
        ]);
        History {
            _data: data,
            store,
            index: HistoryIndex::default(),
            names,
        }
    }

    fn search(&self, query: HistoryQuery) -> Result<HistoryResults, QueryError> {
        self.index
            .search(&self.store, &query, &self.names, &|_| None)
    }

    fn ids(&self, query: HistoryQuery) -> Vec<String> {
        let results = self.search(query).expect("a valid query");
        results.hits.into_iter().map(|h| h.task.id).collect()
    }
}

fn words(text: &str) -> HistoryQuery {
    HistoryQuery {
        text: text.into(),
        ..HistoryQuery::default()
    }
}

fn three_tasks() -> History {
    History::with(vec![
        Task::new(
            "t-parser",
            "Fix the parser",
            "2026-11-01T09:00:00Z",
            "2026-11-01T10:00:00Z",
        )
        .intent("INT-001")
        .cost(0.42)
        .person("The tokenizer chokes on nested brackets")
        .agent("I found the bug in `lex_bracket`: the depth counter never goes down.")
        .tool(
            "read_file",
            "src/lexer.rs",
            "120 lines",
            "fn lex_bracket() { secret_body }",
        ),
        Task::new(
            "t-notes",
            "Write release notes",
            "2026-11-10T09:00:00Z",
            "2026-11-12T18:00:00Z",
        )
        .intent("INT-002")
        .cost(1.5)
        .person("Summarise what changed since 0.3")
        .agent("Here are the notes: the parser handles nested brackets now."),
        Task::new(
            "t-local",
            "Ask a local model",
            "2026-11-20T09:00:00Z",
            "2026-11-20T09:30:00Z",
        )
        .person("Which files mention Ünïcode café?")
        .tool(
            "execute_command",
            "rg -n 'café' docs/",
            "exit 0",
            "docs/a.md:1:café",
        ),
    ])
}

#[test]
fn words_are_found_in_the_persons_messages_the_agents_answers_and_the_tools_targets() {
    let h = three_tasks();
    assert_eq!(
        h.ids(words("tokenizer")),
        ["t-parser"],
        "the person's words"
    );
    assert_eq!(
        h.ids(words("DEPTH counter")),
        ["t-parser"],
        "the agent's, any case"
    );
    assert_eq!(h.ids(words("src/lexer.rs")), ["t-parser"], "a tool's path");
    assert_eq!(h.ids(words("rg -n")), ["t-local"], "a command");
    assert_eq!(
        h.ids(words("release")),
        ["t-notes"],
        "the title and the intent"
    );
    assert_eq!(
        h.ids(words("nested brackets")),
        ["t-notes", "t-parser"],
        "newest first"
    );
    assert_eq!(
        h.ids(words("ÜNÏCODE CAFÉ")),
        ["t-local"],
        "any case, not only ASCII"
    );
    assert_eq!(
        h.ids(words("parser rewrite")),
        ["t-parser"],
        "the intent's name"
    );
    assert_eq!(h.ids(words("")).len(), 3, "no words: every task");
}

#[test]
fn every_word_must_be_there_and_what_tools_returned_is_not_searched() {
    let h = three_tasks();
    assert_eq!(h.ids(words("tokenizer notes")), Vec::<String>::new());
    assert_eq!(
        h.ids(words("secret_body")),
        Vec::<String>::new(),
        "a file the agent read is not the conversation"
    );
    assert_eq!(
        h.ids(words("attached")),
        Vec::<String>::new(),
        "what Mandate attached to a message is not the person's words"
    );
    let results = h.search(words("nothing-like-this")).expect("search");
    assert_eq!(
        (results.hits.len(), results.total, results.searched),
        (0, 0, 3)
    );
}

#[test]
fn the_snippet_shows_the_first_word_in_its_context_on_one_line() {
    let long = format!(
        "{}\nThe failing call is parse_expr when\nthe input ends early. {}",
        "words ".repeat(30),
        "more ".repeat(30)
    );
    let h = History::with(vec![Task::new(
        "t",
        "Title",
        "2026-11-01T09:00:00Z",
        "2026-11-01T09:00:00Z",
    )
    .person(&long)]);
    let hit = &h.search(words("PARSE_EXPR")).expect("search").hits[0];
    assert_eq!(
        hit.snippet,
        Some(HistorySnippet {
            field: HistoryField::Person,
            before: "…words words words words words words The failing call is ".into(),
            matched: "parse_expr".into(),
            after: " when the input ends early. more more more more more more…".into(),
        })
    );
    let hit = &h.search(words("title")).expect("search").hits[0];
    let snippet = hit.snippet.as_ref().expect("snippet");
    assert_eq!(
        (
            snippet.field,
            snippet.before.as_str(),
            snippet.matched.as_str()
        ),
        (HistoryField::Title, "", "Title")
    );
    assert_eq!(
        h.search(HistoryQuery::default()).expect("all").hits[0].snippet,
        None
    );
}

#[test]
fn filters_by_intent_dates_and_cost() {
    let h = three_tasks();
    let q = |f: &dyn Fn(&mut HistoryQuery)| {
        let mut query = HistoryQuery::default();
        f(&mut query);
        h.ids(query)
    };
    assert_eq!(q(&|q| q.intent = Some("int-001".into())), ["t-parser"]);
    assert_eq!(q(&|q| q.intent = Some("release".into())), ["t-notes"]);
    assert_eq!(
        q(&|q| q.intent = Some("INT-404".into())),
        Vec::<String>::new()
    );
    assert_eq!(
        q(&|q| q.intent = Some("  ".into())).len(),
        3,
        "blank: no filter"
    );
    // A task counts on every day from its start to its last activity.
    assert_eq!(
        q(&|q| q.since = Some("2026-11-11".into())),
        ["t-local", "t-notes"]
    );
    assert_eq!(
        q(&|q| q.until = Some("2026-11-10".into())),
        ["t-notes", "t-parser"]
    );
    assert_eq!(
        q(&|q| {
            q.since = Some("2026-11-02T00:00:00Z".into());
            q.until = Some("2026-11-19T23:00:00+01:00".into());
        }),
        ["t-notes"]
    );
    assert_eq!(q(&|q| q.min_cost_usd = Some(0.5)), ["t-notes"]);
    assert_eq!(
        q(&|q| q.max_cost_usd = Some(1.0)),
        ["t-parser"],
        "a task of unknown cost is not under a bound"
    );
    assert_eq!(
        q(&|q| {
            q.text = "brackets".into();
            q.intent = Some("INT-002".into());
            q.max_cost_usd = Some(2.0);
        }),
        ["t-notes"]
    );
}

#[test]
fn hostile_queries_are_taken_literally_or_refused() {
    let soup = r".*[(?<\\^$|+{}])\d\w\s\bx(?i)";
    let h = History::with(vec![
        Task::new(
            "t-soup",
            "Soup",
            "2026-11-01T09:00:00Z",
            "2026-11-01T09:00:00Z",
        )
        .person(&format!("the pattern was {soup} indeed")),
        Task::new(
            "t-plain",
            "Plain",
            "2026-11-01T09:00:00Z",
            "2026-11-02T09:00:00Z",
        )
        .person("nothing special at all, dwsb"),
    ]);
    assert_eq!(h.ids(words(soup)), ["t-soup"], "only where it is written");
    assert_eq!(h.ids(words(".*")), ["t-soup"]);
    assert_eq!(h.ids(words("(")), ["t-soup"]);
    assert_eq!(h.ids(words("\\d")), ["t-soup"]);
    let started = Instant::now();
    let huge = "a".repeat(10_000_000);
    assert_eq!(h.search(words(&huge)), Err(QueryError::TooLong));
    assert!(started.elapsed().as_millis() < 2_000, "refused at once");
    let just_fits = "(".repeat(MAX_QUERY_CHARS);
    assert_eq!(h.ids(words(&just_fits)), Vec::<String>::new());
    assert_eq!(
        h.search(words(&"a ".repeat(40))),
        Err(QueryError::TooManyWords)
    );
    let bad = |f: &dyn Fn(&mut HistoryQuery)| {
        let mut query = HistoryQuery::default();
        f(&mut query);
        h.search(query).expect_err("refused")
    };
    assert!(matches!(
        bad(&|q| q.since = Some("yesterday".into())),
        QueryError::BadMoment(_)
    ));
    assert!(matches!(
        bad(&|q| q.until = Some("2026-02-30".into())),
        QueryError::BadMoment(_)
    ));
    assert_eq!(bad(&|q| q.min_cost_usd = Some(-1.0)), QueryError::BadCost);
    assert_eq!(
        bad(&|q| q.max_cost_usd = Some(f64::NAN)),
        QueryError::BadCost
    );
}

#[test]
fn files_are_read_again_only_when_they_change_and_gone_ones_leave_the_results() {
    let h = three_tasks();
    assert_eq!(h.ids(words("tokenizer")), ["t-parser"]);
    // The same bytes' length, the same inode and time: the kept copy is used, not the file.
    let path = h
        .store
        .files()
        .into_iter()
        .find(|(id, _)| id == "t-parser")
        .map(|(_, p)| p)
        .expect("file");
    let modified = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .expect("mtime");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replace("tokenizer", "TOKENIZER")
            .replace("chokes", "CHOKED"),
    )
    .expect("write in place");
    let file = std::fs::File::options()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_modified(modified).expect("set mtime");
    assert_eq!(h.ids(words("chokes")), ["t-parser"], "not read again");
    // A save (a new file renamed over the old) is read again.
    let changed = Task::new(
        "t-parser",
        "Fix the parser",
        "2026-11-01T09:00:00Z",
        "2026-11-21T10:00:00Z",
    )
    .person("now about the formatter");
    h.store.save(&changed.record()).expect("save");
    assert_eq!(h.ids(words("chokes")), Vec::<String>::new());
    assert_eq!(h.ids(words("formatter")), ["t-parser"]);
    h.store.delete("t-notes").expect("delete");
    assert_eq!(h.ids(words("")), ["t-parser", "t-local"]);
    // A file that is not a task is skipped, and the others are still found.
    std::fs::write(path.with_file_name("broken.json"), "{not json").expect("write");
    assert_eq!(h.ids(words("")).len(), 2);
}

#[test]
fn live_tasks_show_their_summary_as_it_is_now() {
    let h = three_tasks();
    let results = h
        .index
        .search(&h.store, &words("tokenizer"), &h.names, &|id| {
            (id == "t-parser").then(|| {
                let mut s = Task::new("t-parser", "Fix the parser", "x", "y")
                    .record()
                    .summary;
                s.status = crate::protocol::TaskStatus::Running;
                s
            })
        })
        .expect("search");
    assert_eq!(
        results.hits[0].task.status,
        crate::protocol::TaskStatus::Running
    );
    assert_eq!(
        results.hits[0].intent_name.as_deref(),
        Some("Parser rewrite")
    );
}

#[test]
fn hundreds_of_tasks_are_searched_again_without_reading_them() {
    let tasks = (0..400)
        .map(|n| {
            let mut t = Task::new(
                &format!("t-{n:04}"),
                &format!("Task number {n}"),
                "2026-11-01T09:00:00Z",
                &format!("2026-11-01T09:{:02}:{:02}Z", n / 60, n % 60),
            );
            for m in 0..20 {
                t = t
                    .person(&format!(
                        "message {m} of task {n}: please look at module_{m}"
                    ))
                    .agent(&"A long answer that goes on about the code. ".repeat(40))
                    .tool(
                        "read_file",
                        &format!("src/module_{m}.rs"),
                        "ok",
                        &"x".repeat(2000),
                    );
            }
            t
        })
        .collect();
    let h = History::with(tasks);
    // Words found in each title: the time is the reading, not the matching.
    let started = Instant::now();
    let first = h.search(words("number")).expect("search");
    let first_took = started.elapsed();
    let started = Instant::now();
    let again = h.search(words("NUMBER")).expect("search");
    let again_took = started.elapsed();
    assert_eq!((first.total, first.hits.len()), (400, super::MAX_HITS));
    assert_eq!(first, again);
    let started = Instant::now();
    let deep = h.search(words("module_19.rs task 399:")).expect("search");
    let deep_took = started.elapsed();
    assert_eq!(deep.total, 1);
    eprintln!(
        "400 tasks: first search {first_took:?} (reads every file), again {again_took:?}, \
         words deep in every task {deep_took:?}"
    );
    assert!(
        again_took * 3 < first_took,
        "a search over unchanged files reads none of them ({again_took:?} vs {first_took:?})"
    );
}
