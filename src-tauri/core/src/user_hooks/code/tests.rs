//! A hook's code is found the way its interpreter finds it, and is then the person's: no
//! intent may change it, and a change to it asks the person again.

use std::path::Path;

use crate::hooks::ignore_list::IntentIgnore;
use crate::user_hooks::{config, trust};

/// A workspace with `.claude/settings.json` running `command` as the PreToolUse hook `check`,
/// and `files`.
fn workspace(command: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tmp");
    let settings = serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "*",
        "hooks": [{"type": "command", "command": command, "name": "check"}]}]}});
    let mut all = vec![(".claude/settings.json".to_string(), settings.to_string())];
    all.extend(files.iter().map(|(p, t)| (p.to_string(), t.to_string())));
    for (path, text) in all {
        let at = tmp.path().join(path);
        std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
        std::fs::write(at, text).expect("write");
    }
    tmp
}

fn protected(root: &Path, rel: &str) -> Option<String> {
    IntentIgnore::load(root).expect("loads").why(rel)
}

fn assert_protected(root: &Path, paths: &[&str]) {
    for rel in paths {
        let why = protected(root, rel);
        assert!(
            why.as_deref().is_some_and(|w| w.contains("hook `check`")),
            "{rel} should be the hook's code: {why:?}"
        );
    }
}

fn assert_free(root: &Path, paths: &[&str]) {
    for rel in paths {
        assert_eq!(protected(root, rel), None, "{rel} is not the hook's code");
    }
}

fn fingerprint(root: &Path) -> String {
    trust::fingerprint(root, &config::load(root).expect("hooks load"))
}

const CHECK_PY: &str = r#"import json, os, sys
sys.path.insert(0, os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "scripts"))
import policy  # the rules
from helpers.paths import (
    is_secret,
    is_vendored,
)
event = json.load(sys.stdin)
sys.exit(2 if policy.denied(event) else 0)
"#;

#[test]
fn a_python_hook_s_imported_modules_are_the_person_s_and_nothing_can_shadow_them() {
    let ws = workspace(
        "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.py",
        &[
            (".claude/hooks/check.py", CHECK_PY),
            (
                "scripts/policy.py",
                "def denied(e):\n    return 'secret' in str(e)\n",
            ),
            ("scripts/helpers/__init__.py", ""),
            ("scripts/helpers/paths.py", "from .globs import match\n"),
            ("scripts/helpers/globs.py", "def match(p): return False\n"),
            ("scripts/notes.txt", "not code\n"),
            ("src/main.py", "print('hi')\n"),
        ],
    );
    let root = ws.path();
    assert_protected(
        root,
        &[
            ".claude/hooks/check.py",
            "scripts/policy.py",
            "scripts/helpers/paths.py",
            "scripts/helpers/globs.py",
            // New files an import would find before the standard library's or the module's.
            "scripts/json.py",
            "scripts/os/__init__.py",
            "scripts/policy.pth",
            "scripts/helpers/new.py",
        ],
    );
    assert_free(root, &["scripts/notes.txt", "src/main.py", "src/json.py"]);

    // The person changes the module (or plants a shadow): the hook asks again.
    let before = fingerprint(root);
    std::fs::write(
        root.join("scripts/policy.py"),
        "def denied(e):\n    return False\n",
    )
    .expect("write");
    let changed = fingerprint(root);
    assert_ne!(
        before, changed,
        "a changed module must ask the person again"
    );
    std::fs::write(root.join("scripts/json.py"), "load = lambda f: {}\n").expect("write");
    assert_ne!(
        changed,
        fingerprint(root),
        "a planted shadow must ask again"
    );
}

#[test]
fn the_usual_spellings_of_a_search_path_are_followed() {
    for line in [
        "sys.path.append('scripts')",
        "sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'scripts'))",
        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'scripts'))",
    ] {
        let hook = format!("import os, sys\nfrom pathlib import Path\n{line}\nimport policy\n");
        let ws = workspace(
            "python3 .claude/hooks/check.py",
            &[
                (".claude/hooks/check.py", &hook),
                ("scripts/policy.py", "X = 1\n"),
            ],
        );
        assert_protected(ws.path(), &["scripts/policy.py"]);
    }
    // PYTHONPATH on the command line, and `python -m`.
    let ws = workspace(
        "PYTHONPATH=tools python3 -m hooks.check",
        &[
            ("hooks/__init__.py", ""),
            ("hooks/check.py", "import rules\n"),
            ("tools/rules.py", "X = 1\n"),
            ("tools/other.txt", ""),
        ],
    );
    assert_protected(ws.path(), &["hooks/check.py", "tools/rules.py", "json.py"]);
    assert_free(ws.path(), &["tools/other.txt"]);
}

#[test]
fn a_node_hook_s_requires_and_packages_are_the_person_s() {
    let ws = workspace(
        "node .claude/hooks/check.js",
        &[
            (
                ".claude/hooks/check.js",
                "const policy = require('../../lib/policy');\nconst pad = require('leftpad');\nimport fs from 'node:fs';\n",
            ),
            (
                "lib/policy.js",
                "const rules = require('./rules.json');\nexport { x } from \"./more\";\n",
            ),
            ("lib/rules.json", "{}"),
            ("lib/more.mjs", "export const x = 1;\n"),
            ("lib/unrelated.js", ""),
            ("node_modules/leftpad/index.js", "module.exports = s => s;\n"),
            ("node_modules/other/index.js", ""),
        ],
    );
    assert_protected(
        ws.path(),
        &[
            "lib/policy.js",
            "lib/rules.json",
            "lib/more.mjs",
            // What Node would try before: `lib/policy` itself, `lib/policy.ts`, a package
            // planted in a closer `node_modules`.
            "lib/policy.ts",
            "node_modules/leftpad/index.js",
            ".claude/hooks/node_modules/leftpad/index.js",
        ],
    );
    assert_free(
        ws.path(),
        &["lib/unrelated.js", "node_modules/other/index.js"],
    );
}

#[test]
fn a_shell_hook_s_sourced_files_and_the_programs_it_runs_are_the_person_s() {
    let ws = workspace(
        "bash .claude/hooks/guard.sh",
        &[
            (
                ".claude/hooks/guard.sh",
                "#!/bin/bash\nsource \"$(dirname \"$0\")/../../tools/lib.sh\"\npython3 tools/check.py < /dev/null\n",
            ),
            ("tools/lib.sh", ". \"$CLAUDE_PROJECT_DIR/tools/more.sh\"\n"),
            ("tools/more.sh", "deny() { exit 2; }\n"),
            ("tools/check.py", "import sys\n"),
            ("tools/other.sh", "echo other\n"),
        ],
    );
    assert_protected(
        ws.path(),
        &["tools/lib.sh", "tools/more.sh", "tools/check.py"],
    );
    assert_free(ws.path(), &["tools/other.sh"]);
}

#[test]
fn where_the_loads_cannot_be_known_the_script_s_directory_is_the_person_s() {
    let dynamic = "import importlib, os\nimportlib.import_module(os.environ['RULES'])\n";
    let ws = workspace(
        "python3 scripts/hook.py",
        &[("scripts/hook.py", dynamic), ("scripts/data/x.txt", "")],
    );
    assert_protected(
        ws.path(),
        &["scripts/hook.py", "scripts/data/x.txt", "scripts/new.rb"],
    );
    assert_free(ws.path(), &["src/main.rs"]);

    let ws = workspace(
        "ruby tools/hooks/check.rb --strict",
        &[
            ("tools/hooks/check.rb", "require_relative 'lib'\n"),
            ("tools/hooks/lib.rb", ""),
        ],
    );
    assert_protected(ws.path(), &["tools/hooks/lib.rb", "tools/hooks/anything"]);
    assert_free(ws.path(), &["tools/other.rb"]);

    // A sourced file named through a variable Mandate cannot resolve.
    let ws = workspace(
        "bash hooks/guard.sh",
        &[
            ("hooks/guard.sh", "source \"$RULES_DIR/lib.sh\"\n"),
            ("hooks/x.sh", ""),
        ],
    );
    assert_protected(ws.path(), &["hooks/x.sh"]);
}

#[test]
fn a_hook_that_names_paths_to_guard_them_does_not_lock_the_workspace() {
    let ws = workspace(
        "jq -r .tool_input.file_path | grep -q '^src/' && exit 2 || exit 0",
        &[("src/main.rs", "fn main() {}\n"), ("docs/a.md", "")],
    );
    assert_free(ws.path(), &["src/main.rs", "docs/a.md", "src"]);
}

#[test]
fn outside_the_workspace_nothing_is_listed_and_a_broken_configuration_lists_nothing() {
    let outside = tempfile::tempdir().expect("tmp");
    std::fs::write(outside.path().join("hook.py"), "import policy\n").expect("write");
    let ws = workspace(
        &format!("python3 {}/hook.py", outside.path().display()),
        &[],
    );
    let code = crate::user_hooks::code::of_workspace(ws.path());
    assert!(code.rules.is_empty(), "{:?}", code.rules);

    let ws = workspace("true", &[]);
    std::fs::write(ws.path().join(".claude/settings.json"), "{").expect("write");
    assert!(crate::user_hooks::code::of_workspace(ws.path())
        .rules
        .is_empty());
}

#[test]
fn the_state_is_kept_while_nothing_changes_and_follows_every_change_of_the_code() {
    let ws = workspace(
        "python3 .claude/hooks/check.py",
        &[
            (".claude/hooks/check.py", CHECK_PY),
            ("scripts/policy.py", "X = 1\n"),
            ("scripts/helpers/__init__.py", ""),
            ("scripts/helpers/paths.py", ""),
            ("scripts/helpers/deep/data.txt", ""),
        ],
    );
    let data = tempfile::tempdir().expect("tmp");
    let hooks = crate::user_hooks::UserHooks::new(ws.path(), data.path());
    let print = |hooks: &crate::user_hooks::UserHooks| match hooks.state() {
        crate::user_hooks::HooksState::Ready { fingerprint, .. } => fingerprint,
        other => panic!("{other:?}"),
    };
    let first = print(&hooks);
    assert_eq!(print(&hooks), first, "nothing changed");
    assert_eq!(first, fingerprint(ws.path()));
    let mut seen = vec![first];
    let mut changed = |what: &str, change: &dyn Fn(&Path)| {
        change(ws.path());
        let now = print(&hooks);
        assert!(!seen.contains(&now), "{what} must change the fingerprint");
        assert_eq!(now, fingerprint(ws.path()), "{what}: kept state is stale");
        seen.push(now);
    };
    changed("the imported module", &|r| {
        std::fs::write(r.join("scripts/policy.py"), "X = 2\n").expect("write")
    });
    changed("a file deep in an imported package", &|r| {
        std::fs::write(r.join("scripts/helpers/deep/new.py"), "").expect("write")
    });
    changed("a shadow beside the module", &|r| {
        std::fs::write(r.join("scripts/json.py"), "").expect("write")
    });
    changed("the settings", &|r| {
        let text = std::fs::read_to_string(r.join(".claude/settings.json")).expect("read");
        std::fs::write(
            r.join(".claude/settings.json"),
            text.replace("check", "checker"),
        )
        .expect("write")
    });
}
