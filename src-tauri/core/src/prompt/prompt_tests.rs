use super::*;
use crate::orchestration::intents::IntentsDoc;
use crate::protocol::{LineRange, TraceChange};
use std::sync::Arc;

const INTENTS: &str = r#"
active_intents:
  - id: INT-001
    name: JWT authentication
    status: IN_PROGRESS
    owned_scope: ["src/auth/**", "tests/auth/**"]
    constraints: ["Keep the public login() signature", "No new dependencies"]
    acceptance_criteria: ["Expired tokens are rejected", "cargo test passes"]
  - id: INT-002
    name: Billing
    status: NOT_STARTED
    owned_scope: ["src/billing/**"]
  - id: INT-003
    name: Old work
    status: DONE
"#;

fn snapshot() -> String {
    let doc = IntentsDoc::parse(INTENTS, "f").expect("intents");
    let intents = IntentsSnapshot {
        doc: Arc::new(doc),
        exists: true,
        error: None,
    };
    let history = vec![TraceChange {
        record_id: "r1".into(),
        timestamp: "2026-11-20T10:00:00Z".into(),
        path: "src/auth/jwt.rs".into(),
        ranges: vec![LineRange {
            start_line: 3,
            end_line: 9,
        }],
        model: "openai/gpt-test".into(),
        contributor: crate::protocol::Contributor::Ai,
        tool: "write_to_file".into(),
        task_id: "t1".into(),
        mutation_class: crate::protocol::MutationClass::IntentEvolution,
        approved_by: crate::protocol::Approver::User,
        approval: "user".into(),
    }];
    let rules = vec![(
        "AGENTS.md".to_string(),
        "Run `cargo test` before finishing.".to_string(),
    )];
    let tools = ["select_active_intent", "read_file", "write_to_file"];
    build(&PromptContext {
        root: Path::new("/home/dev/project"),
        intents: &intents,
        active_intent: intents.doc.get("INT-001"),
        recent_history: &history,
        rules: &rules,
        lessons: Some("## 2026-11-19 (command failed)\n\n`npm test` needs `--runInBand` here."),
        os: "linux",
        shell: "sh",
        date: "2026-11-21",
        objective: "Reject expired JWTs in the login flow.",
        custom_instructions: "Answer in British English.",
        tool_names: &tools,
        mode: None,
        modes: &[],
        mode_rules: &[],
        skills: &[],
        commands: &[],
    })
}

#[test]
fn the_assembled_prompt_matches_its_snapshot() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/prompt/snapshots/system_prompt.txt");
    let prompt = snapshot();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &prompt).expect("write snapshot");
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    pretty_assertions::assert_eq!(
        prompt,
        expected,
        "run with UPDATE_SNAPSHOTS=1 after an intended change"
    );
}

#[test]
fn sections_come_in_order_and_the_protocol_depends_on_the_intents_file() {
    let prompt = snapshot();
    let order = [
        "ROLE",
        "TOOL USE",
        "CAPABILITIES",
        "INTENT PROTOCOL",
        "ACTIVE INTENT",
        "WORKSPACE RULES",
        "SHARED LESSONS",
        "SYSTEM INFORMATION",
        "OBJECTIVE",
        "USER'S CUSTOM INSTRUCTIONS",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|s| {
            prompt
                .find(&format!("\n{s}\n"))
                .unwrap_or_else(|| panic!("{s}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
    assert!(prompt
        .contains("You cannot write code or run commands before you call select_active_intent"));
    assert!(
        !prompt.contains("INT-003: Old work"),
        "DONE intents are not offered"
    );
    assert!(
        !prompt.contains("\"name\": \"read_file\""),
        "tool schemas go to the API, not the prompt"
    );

    let none = IntentsSnapshot {
        doc: Arc::new(IntentsDoc::default()),
        exists: false,
        error: None,
    };
    let text = build(&PromptContext {
        root: Path::new("/p"),
        intents: &none,
        active_intent: None,
        recent_history: &[],
        rules: &[],
        lessons: None,
        os: "linux",
        shell: "sh",
        date: "2026-11-21",
        objective: "",
        custom_instructions: "",
        tool_names: &[],
        mode: None,
        modes: &[],
        mode_rules: &[],
        skills: &[],
        commands: &[],
    });
    assert!(text.contains("has no `.orchestration/active_intents.yaml`"));
    assert!(!text.contains("ACTIVE INTENT"));
}

#[test]
fn a_mode_gives_the_role_its_limits_the_other_modes_and_its_own_rules() {
    let none = IntentsSnapshot {
        doc: Arc::new(IntentsDoc::default()),
        exists: false,
        error: None,
    };
    let modes = crate::modes::built_in_modes();
    let architect = modes
        .iter()
        .find(|m| m.slug == "architect")
        .expect("architect");
    let rules = [(
        ".roo/rules-architect/plans.md".to_string(),
        "Plans go in docs/plans/.".to_string(),
    )];
    let text = build(&PromptContext {
        root: Path::new("/p"),
        intents: &none,
        active_intent: None,
        recent_history: &[],
        rules: &[],
        lessons: None,
        os: "linux",
        shell: "sh",
        date: "2026-11-21",
        objective: "",
        custom_instructions: "",
        tool_names: &["read_file"],
        mode: Some(architect),
        modes: &modes,
        mode_rules: &rules,
        skills: &[],
        commands: &[],
    });
    assert!(
        text.starts_with("====\n\nROLE\n\nYou are Mandate, an experienced technical leader"),
        "{text}"
    );
    assert!(text.contains("You work under governance"));
    assert!(text.contains("You are in Architect mode (`architect`). It allows read, edit actions, and edits only of files whose path matches `\\.md$`"));
    assert!(text.contains("- `code` (Code): Writing, changing or refactoring code."));
    assert!(!text.contains("- `architect`"));
    assert!(text.contains("MODE-SPECIFIC INSTRUCTIONS"));
    assert!(text.contains("# Rules from .roo/rules-architect/plans.md\n\nPlans go in docs/plans/."));
}

#[test]
fn rules_are_read_where_people_keep_them_and_only_as_regular_files() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (root, config) = (tmp.path().join("ws"), tmp.path().join("config"));
    let write = |p: &Path, text: &str| {
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write(&config.join("rules/team.md"), "Global rule.");
    write(&root.join("AGENTS.md"), "Root agents.");
    write(&root.join("CLAUDE.md"), "Root claude.");
    write(&root.join(".clinerules/01-style.md"), "Cline style.");
    write(&root.join(".roorules"), "Roo rules file.");
    write(&root.join(".roo/rules/general.md"), "Roo general.");
    write(
        &root.join(".roo/rules-code/only-code.md"),
        "Only in code mode.",
    );
    write(&root.join("src/parser/AGENTS.md"), "Parser agents.");
    write(&root.join("src/CLAUDE.md"), "Src claude.");
    write(&root.join("docs/AGENTS.md"), "Docs agents (not worked on).");
    write(&tmp.path().join("secret.txt"), "outside");
    std::os::unix::fs::symlink(
        tmp.path().join("secret.txt"),
        root.join("src/parser/CLAUDE.md"),
    )
    .expect("link");
    let rules = load_rules(&root, Some(&config), &["src/parser/lexer.rs".to_string()]);
    let names: Vec<&str> = rules.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "~config/rules/team.md",
            "AGENTS.md",
            "CLAUDE.md",
            ".roorules",
            ".clinerules/01-style.md",
            ".roo/rules/general.md",
            "src/CLAUDE.md",
            "src/parser/AGENTS.md",
        ]
    );
    assert!(!rules
        .iter()
        .any(|(_, t)| t.contains("outside") || t.contains("Only in code")));
    let text = build(&PromptContext {
        root: &root,
        intents: &IntentsSnapshot {
            doc: Arc::new(IntentsDoc::default()),
            exists: false,
            error: None,
        },
        active_intent: None,
        recent_history: &[],
        rules: &rules,
        lessons: None,
        os: "linux",
        shell: "sh",
        date: "2026-11-21",
        objective: "",
        custom_instructions: "",
        tool_names: &[],
        mode: None,
        modes: &[],
        mode_rules: &[],
        skills: &[],
        commands: &[],
    });
    assert!(text.contains("The user's rules, loaded from: ~config/rules/team.md, AGENTS.md, CLAUDE.md, .roorules,"), "{text}");
}
