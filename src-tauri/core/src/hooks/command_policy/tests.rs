use super::*;

use CommandClass::{Destructive as D, Safe as S};

mod cases;
use cases::CASES;

#[test]
fn classifies_the_table() {
    assert!(CASES.len() >= 80, "only {} cases", CASES.len());
    let policy = CommandPolicy::builtin();
    let mut failures = Vec::new();
    for &(line, expected, reason) in CASES {
        let found = policy.classify(line);
        let reason_ok = if expected == S {
            found.reasons.is_empty()
        } else {
            found.reasons.iter().any(|r| r.contains(reason))
        };
        if found.class != expected || !reason_ok {
            failures.push(format!(
                "{line:?}: expected {expected:?} with {reason:?}, got {found:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn builtin_policy_loads_and_its_examples_pass() {
    let policy = CommandPolicy::from_yaml(DEFAULT_POLICY, BUILTIN_PATH);
    assert!(policy.is_ok(), "{:?}", policy.err());
    // The fallback of `builtin()` has no rules; the real one knows `ls`.
    assert_eq!(CommandPolicy::builtin().classify("ls").class, S);
}

#[test]
fn reports_segments_in_order() {
    let found = CommandPolicy::builtin().classify("ls | grep x; echo $(pwd) && cat <<EOF\nEOF");
    assert_eq!(
        found.segments,
        ["ls", "grep x", "echo $(pwd)", "pwd", "cat <<EOF"]
    );
    assert_eq!(found.class, S);
    assert!(found.reasons.is_empty());

    let empty = CommandPolicy::builtin().classify("");
    assert!(empty.segments.is_empty() && empty.reasons.is_empty());

    let nested = CommandPolicy::builtin().classify("bash -c 'git push --force'");
    assert_eq!(
        nested.segments,
        ["bash -c 'git push --force'", "git push --force"]
    );
}

#[test]
fn reports_every_finding() {
    let found = CommandPolicy::builtin().classify("rm a; sudo mv b c > d");
    assert_eq!(found.class, D);
    assert_eq!(
        found.reasons,
        [
            "`rm a` deletes files",
            "`sudo mv b c > d` writes to file `d`",
            "`sudo mv b c` runs as root",
            "`mv b c` moves or renames files",
        ]
    );
}

#[test]
fn hostile_nesting_fails_closed() {
    for line in [
        "$(".repeat(200),
        "(".repeat(200) + &")".repeat(200),
        "`echo \\`".repeat(50),
    ] {
        let found = CommandPolicy::builtin().classify(&line);
        assert_eq!(found.class, D, "{line}");
    }
    // Long hostile lines are parsed in bounded time, or refused unparsed.
    for line in [
        "ls | ".repeat(3000) + "ls",
        "ls && ".repeat(3000) + "ls",
        "echo \"$x\" ".repeat(2000),
        "a".repeat(20_000),
        "{ ".repeat(60) + "ls; " + &"} ".repeat(60),
        "x=${x:-".repeat(30) + &"}".repeat(30),
    ] {
        let started = std::time::Instant::now();
        let found = CommandPolicy::builtin().classify(&line);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{}… took {:?}",
            &line[..40],
            started.elapsed()
        );
        let _ = found;
    }
    // Each `eval` parses its arguments again, one level deeper.
    let evals = format!("{}ls", "eval ".repeat(40));
    let found = CommandPolicy::builtin().classify(&evals);
    assert_eq!(found.class, D);
    assert!(
        found
            .reasons
            .iter()
            .any(|r| r.contains("nested too deeply")),
        "{found:?}"
    );
    assert_eq!(
        CommandPolicy::builtin()
            .classify(&format!("{}ls", "eval ".repeat(8)))
            .class,
        S
    );
}

const MINIMAL: &str = "version: 1\nsafe:\n  - command: ls\n";

#[test]
fn accepts_a_command_as_string_or_list() {
    let text = "version: 1\nsafe:\n  - command: ls\n  - command: [cat, head]\n\
                destructive:\n  - command: [rm, unlink]\n    reason: deletes files\n";
    let policy = CommandPolicy::from_yaml(text, "test.yaml").map_err(|e| e.to_string());
    let policy = policy.unwrap();
    assert_eq!(policy.classify("ls && cat x | head").class, S);
    assert_eq!(
        policy.classify("unlink x").reasons,
        ["`unlink x` deletes files"]
    );
    assert_eq!(
        policy.classify("grep x").reasons,
        ["`grep` is not a known read-only command"]
    );
}

#[test]
fn a_wrong_example_stops_the_policy_from_loading() {
    let text = format!("{MINIMAL}examples:\n  - {{ command: \"rm -rf build\", class: safe }}\n");
    let error = CommandPolicy::from_yaml(&text, "ws/policy.yaml").err();
    match &error {
        Some(PolicyError::ExampleMismatch {
            path,
            command,
            expected,
            actual,
            detail,
        }) => {
            assert_eq!(path, "ws/policy.yaml");
            assert_eq!(command, "rm -rf build");
            assert_eq!((*expected, *actual), (S, D));
            assert!(
                detail.contains("`rm` is not a known read-only command"),
                "{detail}"
            );
        }
        other => panic!("expected ExampleMismatch, got {other:?}"),
    }
    let message = error.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.starts_with(
        "command policy ws/policy.yaml: example `rm -rf build` is classified Destructive but the policy says Safe"
    ), "{message}");
}

#[test]
fn a_bad_regex_is_a_bad_rule() {
    let text =
        "version: 1\nsafe:\n  - command: ls\n  - command: find\n    unless_args: ['^-delete(']\n";
    match CommandPolicy::from_yaml(text, "p.yaml") {
        Err(PolicyError::BadRule {
            path,
            rule,
            message,
        }) => {
            assert_eq!(path, "p.yaml");
            assert_eq!(rule, "safe #2 (find)");
            assert!(message.contains("bad regex `^-delete(`"), "{message}");
        }
        other => panic!("expected BadRule, got {:?}", other.err()),
    }
    let bad_variable = "version: 1\nprotected_variables: ['PATH[']\n";
    assert!(matches!(
        CommandPolicy::from_yaml(bad_variable, "p.yaml"),
        Err(PolicyError::BadRule { rule, .. }) if rule == "protected_variables #1"
    ));
}

#[test]
fn malformed_rules_are_bad_rules() {
    for (text, expected) in [
        (
            "version: 1\ndestructive:\n  - command: rm\n    reason: '  '\n",
            "`reason` is empty",
        ),
        (
            "version: 1\nsafe:\n  - command: /bin/ls\n",
            "not a command name",
        ),
        (
            "version: 1\nsafe:\n  - command: 'l*s'\n",
            "only allowed at the end",
        ),
        ("version: 1\nsafe:\n  - command: []\n", "lists no command"),
        (
            "version: 1\nsafe:\n  - command: git\n    subcommands: ['']\n",
            "subcommand is empty",
        ),
        (
            "version: 1\nsafe:\n  - command: git\n    value_options: [C]\n",
            "must start with `-`",
        ),
    ] {
        match CommandPolicy::from_yaml(text, "p.yaml") {
            Err(PolicyError::BadRule { message, .. }) => {
                assert!(message.contains(expected), "{message}")
            }
            other => panic!("{text}: expected BadRule, got {:?}", other.err()),
        }
    }
}

#[test]
fn bad_yaml_is_a_parse_error_with_its_position() {
    let text = "version: 1\nsafe:\n  - command: [ls\n  - command: cat\n";
    match CommandPolicy::from_yaml(text, "p.yaml") {
        Err(e @ PolicyError::Parse { .. }) => {
            let message = e.to_string();
            assert!(
                message.starts_with("command policy p.yaml: line "),
                "{message}"
            );
            assert!(message.contains(", column "), "{message}");
        }
        other => panic!("expected Parse, got {:?}", other.err()),
    }
}

#[test]
fn unknown_keys_are_rejected() {
    for (text, key) in [
        ("version: 1\nsafe_commands: []\n", "safe_commands"),
        (
            "version: 1\nsafe:\n  - command: git\n    subcommand: [status]\n",
            "subcommand",
        ),
        (
            "version: 1\ndestructive:\n  - command: rm\n    reason: x\n    max_operands: 1\n",
            "max_operands",
        ),
        (
            "version: 1\nexamples:\n  - { command: ls, class: safe, why: x }\n",
            "why",
        ),
    ] {
        match CommandPolicy::from_yaml(text, "p.yaml") {
            Err(PolicyError::Parse { message, .. }) => {
                assert!(
                    message.contains(&format!("unknown field `{key}`")),
                    "{message}"
                );
                assert!(message.starts_with("line "), "{message}");
            }
            other => panic!("{text}: expected Parse, got {:?}", other.err()),
        }
    }
    let wrong_class = "version: 1\nexamples:\n  - { command: ls, class: harmless }\n";
    assert!(matches!(
        CommandPolicy::from_yaml(wrong_class, "p"),
        Err(PolicyError::Parse { .. })
    ));
}

#[test]
fn only_version_1_is_read() {
    match CommandPolicy::from_yaml("version: 2\n", "p.yaml") {
        Err(PolicyError::Parse { message, .. }) => {
            assert!(message.contains("version: 2"), "{message}")
        }
        other => panic!("expected Parse, got {:?}", other.err()),
    }
    assert!(matches!(
        CommandPolicy::from_yaml("safe: []\n", "p"),
        Err(PolicyError::Parse { .. })
    ));
}

#[test]
fn an_empty_policy_makes_everything_destructive() {
    let policy = CommandPolicy::from_yaml("version: 1\n", "p").map_err(|e| e.to_string());
    let found = policy.unwrap().classify("ls");
    assert_eq!(found.class, D);
    assert_eq!(found.reasons, ["`ls` is not a known read-only command"]);
}

#[test]
fn loads_the_workspace_policy_or_the_builtin_one() {
    let root = std::env::temp_dir().join(format!("command-policy-test-{}", std::process::id()));
    let dir = root.join(".orchestration");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(CommandPolicy::FILE_NAME);
    let _ = std::fs::remove_file(&file);

    let builtin = CommandPolicy::load(&root).unwrap();
    assert_eq!(builtin.classify("cat x").class, S);

    std::fs::write(&file, MINIMAL).unwrap();
    let custom = CommandPolicy::load(&root).unwrap();
    assert_eq!(custom.classify("ls").class, S);
    assert_eq!(custom.classify("cat x").class, D);

    std::fs::write(&file, "version: 1\nsafe: [\n").unwrap();
    let error = CommandPolicy::load(&root)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains(&file.display().to_string()), "{error}");

    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn class_serializes_in_snake_case() {
    assert_eq!(
        crate::orchestration::yaml::to_string(&S).unwrap().trim(),
        "safe"
    );
    assert_eq!(
        crate::orchestration::yaml::to_string(&D).unwrap().trim(),
        "destructive"
    );
}

/// Lines judged before give the same class as a policy that never saw them; the policy keeps
/// a bounded number of them.
#[test]
fn lines_judged_again_are_judged_the_same_and_the_memory_of_them_is_bounded() {
    let lines = [
        "ls -la src",
        "rm -rf target",
        "git status && git diff",
        "npm install left-pad",
        "cat <<EOF > x\nhi\nEOF",
        "echo $(rm -rf /)",
        "unterminated 'quote",
    ];
    let policy = CommandPolicy::builtin();
    for line in lines {
        let first = policy.classify(line);
        assert_eq!(policy.classify(line), first, "{line}");
        let fresh = CommandPolicy::from_yaml(DEFAULT_POLICY, BUILTIN_PATH).expect("policy");
        assert_eq!(fresh.classify(line), first, "{line}");
    }
    for n in 0..super::SEEN_LINES * 2 + 1 {
        policy.classify(&format!("ls dir{n}"));
    }
    let kept = policy.seen.lock().expect("seen").len();
    assert!((1..=super::SEEN_LINES).contains(&kept), "{kept}");
    let long = format!("ls {}", "x".repeat(super::SEEN_LINE_BYTES));
    assert_eq!(policy.classify(&long).class, CommandClass::Safe);
    assert!(policy.seen(&long).is_none());
}
