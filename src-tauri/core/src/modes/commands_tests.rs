//! Skills and slash commands read as their authors wrote them.

use super::*;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

#[test]
fn commands_load_from_both_folders_with_their_frontmatter_and_expand_their_arguments() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (root, config) = (tmp.path().join("ws"), tmp.path().join("config"));
    write(
        &root.join(".roo/commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: <path>\nmode: ask\n---\nReview $ARGUMENTS for bugs.\nThen say what $ARGUMENTS does.\n",
    );
    write(&root.join(".claude/commands/deploy.md"), "Deploy it.\n");
    write(
        &root.join(".claude/commands/review.md"),
        "overridden by .roo\n",
    );
    write(
        &config.join("commands/deploy.md"),
        "Global deploy, replaced by the workspace's.\n",
    );
    write(
        &config.join("commands/standup.md"),
        "Summarize yesterday.\n",
    );
    write(
        &root.join(".roo/commands/bad.md"),
        "---\ndescription: [unclosed\n---\nx\n",
    );
    write(&root.join(".roo/commands/notes.txt"), "not a command\n");
    let mut problems = Vec::new();
    let commands = load_commands(&root, Some(&config), &mut problems);
    let names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["deploy", "standup", "review"]);
    let review = commands
        .iter()
        .find(|c| c.name == "review")
        .expect("review");
    assert_eq!(review.description, "Review a file");
    assert_eq!(review.argument_hint, "<path>");
    assert_eq!(review.mode.as_deref(), Some("ask"));
    assert_eq!(review.shown, ".roo/commands/review.md");
    assert_eq!(
        review.expand("src/lib.rs"),
        "Review src/lib.rs for bugs.\nThen say what src/lib.rs does."
    );
    assert_eq!(commands[0].body, "Deploy it.");
    assert_eq!(commands[0].expand("now"), "Deploy it.\n\nArguments: now");
    assert!(problems
        .join("\n")
        .contains(".roo/commands/bad.md: its frontmatter is not valid YAML"));

    let (text, command) = expand_message("/review src/a.rs", &commands);
    assert_eq!(command.map(|c| c.name.as_str()), Some("review"));
    assert!(
        text.starts_with(
            "<command name=\"/review\" from=\".roo/commands/review.md\">\nReview src/a.rs"
        ),
        "{text}"
    );
    // Not a command: a path, an unknown name, text.
    for message in [
        "/etc/passwd is odd",
        "/nope do it",
        "review this",
        " / review",
    ] {
        let (text, command) = expand_message(message, &commands);
        assert!(command.is_none(), "{message}");
        assert_eq!(text, message);
    }
}

#[test]
fn skills_load_with_a_name_and_description_and_bad_ones_are_named() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    write(
        &root.join(".claude/skills/release/SKILL.md"),
        "---\nname: release\ndescription: Cut a release. Use when the user asks to release.\n---\n# Release\n\n1. Bump the version.\n",
    );
    write(&root.join(".claude/skills/release/checklist.md"), "- tag\n");
    write(
        &root.join(".agents/skills/pdf/SKILL.md"),
        "---\ndescription: Fill PDF forms.\n---\nUse the form tool.\n",
    );
    write(
        &root.join(".roo/skills/broken/SKILL.md"),
        "no frontmatter\n",
    );
    write(
        &root.join(".roo/skills/nodesc/SKILL.md"),
        "---\nname: nodesc\n---\nx\n",
    );
    let mut problems = Vec::new();
    let skills = load_skills(&root, None, &mut problems);
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["pdf", "release"]);
    assert_eq!(skills[1].shown, ".claude/skills/release/SKILL.md");
    assert_eq!(
        skills[1].description,
        "Cut a release. Use when the user asks to release."
    );
    let problems = problems.join("\n");
    assert!(
        problems.contains(".roo/skills/broken/SKILL.md has no frontmatter"),
        "{problems}"
    );
    assert!(
        problems.contains(".roo/skills/nodesc/SKILL.md: a skill needs"),
        "{problems}"
    );
}
