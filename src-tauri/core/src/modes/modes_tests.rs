//! Modes read as their authors wrote them, and what each offers.

use super::*;

const ROOMODES_YAML: &str = r#"customModes:
  - slug: docs-writer
    name: 📝 Documentation Writer
    description: Writes and edits documentation
    roleDefinition: |-
      You are a technical writer who keeps the docs exact.
    whenToUse: Use this mode for README files and guides.
    customInstructions: Keep sentences short.
    groups:
      - read
      - - edit
        - fileRegex: \.(md|mdx)$
          description: Markdown files only
      - browser
    source: project
  - slug: code
    name: Code (ours)
    roleDefinition: You are our house engineer.
    groups: [read, edit]
  - slug: Bad Slug
    name: Broken
    roleDefinition: x
    groups: [read]
  - slug: no-role
    name: No role
    groups: [read]
  - slug: weird-group
    name: Weird
    roleDefinition: x
    groups: [read, teleport]
"#;

const ROOMODES_JSON: &str = r#"{
  "customModes": [
    {
      "slug": "reviewer",
      "name": "Reviewer",
      "roleDefinition": "You review changes.",
      "groups": ["read", ["edit", {"fileRegex": "\\.review\\.md$", "description": "Review notes"}], "command"]
    }
  ]
}"#;

fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    let config = tmp.path().join("config");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::create_dir_all(&config).expect("mkdir");
    (tmp, root, config)
}

#[test]
fn roomodes_in_yaml_load_as_written_and_bad_entries_are_named_and_left_out() {
    let (_tmp, root, config) = dirs();
    std::fs::write(root.join(".roomodes"), ROOMODES_YAML).expect("write");
    let loaded = load_modes(&root, Some(&config));
    let docs = loaded.get("docs-writer").expect("docs-writer");
    assert_eq!(docs.name, "📝 Documentation Writer");
    assert_eq!(docs.groups, vec![Group::Read, Group::Edit]);
    assert_eq!(docs.edit_regex.as_deref(), Some(r"\.(md|mdx)$"));
    assert_eq!(docs.custom_instructions, "Keep sentences short.");
    assert_eq!(
        docs.when_to_use,
        "Use this mode for README files and guides."
    );
    assert_eq!(
        docs.source,
        ModeSource::Project {
            file: ".roomodes".into()
        }
    );
    // A project mode with a built-in's slug replaces it.
    let code = loaded.get("code").expect("code");
    assert_eq!(code.name, "Code (ours)");
    assert_eq!(code.groups, vec![Group::Read, Group::Edit]);
    // The others are still there, once each.
    for slug in ["architect", "ask", "debug", "orchestrator"] {
        assert_eq!(loaded.modes.iter().filter(|m| m.slug == slug).count(), 1);
    }
    assert!(loaded.get("Bad Slug").is_none());
    assert!(loaded.get("no-role").is_none());
    assert!(loaded.get("weird-group").is_none());
    let problems = loaded.problems.join("\n");
    assert!(problems.contains("mode 3 (Bad Slug)"), "{problems}");
    assert!(
        problems.contains("no-role") && problems.contains("roleDefinition"),
        "{problems}"
    );
    assert!(problems.contains("unknown group `teleport`"), "{problems}");
}

#[test]
fn roomodes_in_json_and_the_global_file_load_and_the_project_wins() {
    let (_tmp, root, config) = dirs();
    std::fs::write(root.join(".roomodes"), ROOMODES_JSON).expect("write");
    std::fs::write(
        config.join(GLOBAL_MODES_FILE),
        "customModes:\n  - slug: reviewer\n    name: Global reviewer\n    roleDefinition: g\n    groups: [read]\n  - slug: translator\n    name: Translator\n    roleDefinition: You translate.\n    groups: [read]\n",
    )
    .expect("write");
    let loaded = load_modes(&root, Some(&config));
    let reviewer = loaded.get("reviewer").expect("reviewer");
    assert_eq!(reviewer.name, "Reviewer");
    assert_eq!(
        reviewer.groups,
        vec![Group::Read, Group::Edit, Group::Command]
    );
    assert_eq!(reviewer.edit_regex.as_deref(), Some(r"\.review\.md$"));
    let translator = loaded.get("translator").expect("global mode");
    assert_eq!(translator.source, ModeSource::Global);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
}

#[test]
fn unreadable_mode_files_are_named_and_change_nothing() {
    let (_tmp, root, config) = dirs();
    std::fs::write(root.join(".roomodes"), "customModes: [ {slug: x").expect("write");
    std::fs::write(config.join(GLOBAL_MODES_FILE), "modes: []\n").expect("write");
    let loaded = load_modes(&root, Some(&config));
    assert_eq!(loaded.modes, built_in_modes());
    let problems = loaded.problems.join("\n");
    assert!(
        problems.contains(".roomodes is not valid YAML or JSON"),
        "{problems}"
    );
    assert!(
        problems.contains("has no `customModes:` list"),
        "{problems}"
    );
    // An invalid fileRegex keeps the mode (it can then edit nothing) and says so.
    std::fs::write(
        root.join(".roomodes"),
        "customModes:\n  - slug: md\n    name: Md\n    roleDefinition: r\n    groups: [read, [edit, {fileRegex: '(unclosed'}]]\n",
    )
    .expect("write");
    let loaded = load_modes(&root, None);
    assert_eq!(
        loaded.get("md").and_then(|m| m.edit_regex.as_deref()),
        Some("(unclosed")
    );
    assert!(loaded
        .problems
        .join("\n")
        .contains("not a valid regular expression"));
}

#[test]
fn claude_agents_are_modes_with_the_groups_their_tools_name() {
    let (_tmp, root, _config) = dirs();
    std::fs::create_dir_all(root.join(".claude/agents")).expect("mkdir");
    std::fs::write(
        root.join(".claude/agents/code-reviewer.md"),
        "---\nname: code-reviewer\ndescription: Reviews code after changes. Use proactively.\ntools: Read, Grep, Glob, Bash\nmodel: sonnet\n---\nYou are a senior reviewer.\n\nCheck every change.\n",
    )
    .expect("write");
    std::fs::write(
        root.join(".claude/agents/helper.md"),
        "---\nname: helper\ndescription: Does anything.\n---\nHelp.\n",
    )
    .expect("write");
    std::fs::write(root.join(".claude/agents/broken.md"), "no frontmatter").expect("write");
    let loaded = load_modes(&root, None);
    let reviewer = loaded.get("code-reviewer").expect("reviewer");
    assert_eq!(reviewer.groups, vec![Group::Read, Group::Command]);
    assert_eq!(reviewer.model.as_deref(), Some("sonnet"));
    assert_eq!(
        reviewer.role_definition,
        "You are a senior reviewer.\n\nCheck every change."
    );
    assert_eq!(
        reviewer.when_to_use,
        "Reviews code after changes. Use proactively."
    );
    let helper = loaded.get("helper").expect("helper");
    assert_eq!(
        helper.groups,
        vec![Group::Read, Group::Edit, Group::Command, Group::Mcp]
    );
    assert!(loaded
        .problems
        .join("\n")
        .contains(".claude/agents/broken.md has no frontmatter"));
}

#[test]
fn rules_of_a_mode_load_only_for_that_mode() {
    let (_tmp, root, config) = dirs();
    std::fs::create_dir_all(root.join(".roo/rules-docs-writer/style")).expect("mkdir");
    std::fs::create_dir_all(root.join(".roo/rules")).expect("mkdir");
    std::fs::create_dir_all(config.join("rules-docs-writer")).expect("mkdir");
    std::fs::write(root.join(".roo/rules-docs-writer/1-tone.md"), "Be plain.").expect("w");
    std::fs::write(
        root.join(".roo/rules-docs-writer/style/2-lists.md"),
        "Short lists.",
    )
    .expect("w");
    std::fs::write(root.join(".roorules-docs-writer"), "No jargon.").expect("w");
    std::fs::write(
        config.join("rules-docs-writer/global.md"),
        "Global docs rule.",
    )
    .expect("w");
    std::fs::write(root.join(".roo/rules/general.md"), "General rule.").expect("w");
    let rules = mode_rules(&root, Some(&config), "docs-writer");
    let names: Vec<&str> = rules.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "~config/rules-docs-writer/global.md",
            ".roo/rules-docs-writer/1-tone.md",
            ".roo/rules-docs-writer/style/2-lists.md",
            ".roorules-docs-writer",
        ]
    );
    assert!(mode_rules(&root, Some(&config), "code").is_empty());
    assert!(mode_rules(&root, Some(&config), "../x").is_empty());
    // The general rules hold for every mode; a mode's rules are not among them.
    let general = crate::prompt::load_rules(&root, None, &[]);
    let general: Vec<&str> = general.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(general, [".roo/rules/general.md"]);
}

#[test]
fn each_built_in_mode_offers_exactly_its_tools() {
    let names: Vec<String> = crate::tools::registry()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    let offered = |slug: &str| -> Vec<String> {
        let mode = built_in_modes()
            .into_iter()
            .find(|m| m.slug == slug)
            .expect("mode");
        let policy = mode.policy();
        let mut v: Vec<String> = names
            .iter()
            .filter(|n| offers(Some(&policy), n))
            .cloned()
            .collect();
        if offers(Some(&policy), "mcp__server__tool") {
            v.push("mcp__*".into());
        }
        v.sort();
        v
    };
    let always = [
        "ask_followup_question",
        "attempt_completion",
        "propose_intent",
        "record_lesson",
        "select_active_intent",
        "switch_mode",
        "update_todo_list",
        "new_task",
        "skill",
        "run_slash_command",
    ];
    let read = [
        "codebase_search",
        "list_code_definitions",
        "list_files",
        "read_file",
        "read_tool_output",
        "search_files",
    ];
    let edit = ["apply_diff", "request_scope_expansion", "write_to_file"];
    let expect = |groups: &[&[&str]]| {
        let mut v: Vec<String> = always.iter().map(|s| s.to_string()).collect();
        for g in groups {
            v.extend(g.iter().map(|s| s.to_string()));
        }
        v.sort();
        v
    };
    let command = [
        "execute_command",
        "read_process_output",
        "stop_process",
        "mcp__*",
    ];
    let all = expect(&[&read, &edit, &command]);
    assert_eq!(offered("code"), all);
    assert_eq!(offered("debug"), all);
    assert_eq!(offered("architect"), expect(&[&read, &edit]));
    assert_eq!(offered("ask"), expect(&[&read]));
    assert_eq!(offered("orchestrator"), expect(&[]));
    // Every tool of the registry is placed: a new one must say which group it needs.
    for n in &names {
        assert!(
            tool_group(n).is_some() || always.contains(&n.as_str()),
            "{n} has no group"
        );
    }
}
