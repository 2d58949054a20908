//! The ledger in git, across a team, with real git and the real `mandate` binary: `mandate
//! init`, two branches with agents' records merged in both orders through the merge driver,
//! rebase and cherry-pick, blame where both branches changed the same file, anchors checked by
//! `trace verify --git`, and the report a reviewer reads.

use mandate_tests::gitrepo::{Person, LEDGER};
use mandate_tests::trace_schema;
use serde_json::Value;

const STRESS: &str = env!("CARGO_BIN_EXE_ledger-stress");

fn person(tmp: &tempfile::TempDir, name: &str) -> Person {
    let p = Person::init(&tmp.path().join(name), STRESS.as_ref());
    let r = p.mandate(&["init"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    p
}

const SHARED: &str = "fn one() {}\nfn two() {}\nfn three() {}\nfn four() {}\nfn five() {}\nfn six() {}\nfn seven() {}\nfn eight() {}\n";

/// main: a shared file with a base record; feature (from it): an agent under INT-A changes the
/// top of the shared file and adds a file; main then: an agent under INT-B changes its bottom.
fn two_branches(p: &Person) {
    p.write("src/shared.rs", SHARED);
    p.helper("record", &["INT-BASE", "src/shared.rs", "1", "2"]);
    p.commit_all("base");
    p.git(&["checkout", "-q", "-b", "feature"]);
    p.agent_writes(
        "INT-A",
        "src/shared.rs",
        3,
        1,
        &["fn three() { /* by A */ }"],
    );
    p.agent_writes(
        "INT-A",
        "src/a.rs",
        1,
        0,
        &["pub fn a() {}", "pub fn aa() {}"],
    );
    p.commit_all("feature: A's work");
    p.agent_writes("INT-A", "src/a.rs", 3, 0, &["pub fn aaa() {}"]);
    p.commit_all("feature: more of A's work");
    p.git(&["checkout", "-q", "main"]);
    p.agent_writes(
        "INT-B",
        "src/shared.rs",
        7,
        1,
        &["fn seven() { /* by B */ }"],
    );
    p.agent_writes("INT-B", "src/b.rs", 1, 0, &["pub fn b() {}"]);
    p.commit_all("main: B's work");
}

fn assert_verified(p: &Person) {
    for args in [&["trace", "verify"][..], &["trace", "verify", "--git"][..]] {
        let r = p.mandate(args);
        assert_eq!(r.code, Some(0), "{args:?}:\n{}\n{}", r.stdout, r.stderr);
    }
}

/// The intent that blame gives each line of `path`.
fn blame(p: &Person, path: &str) -> Vec<Option<String>> {
    let r = p.mandate(&["trace", "blame", path, "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    r.json()["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| l["origin"]["intent_id"].as_str().map(str::to_string))
        .collect()
}

fn some(s: &str) -> Option<String> {
    Some(s.to_string())
}

#[test]
fn two_branches_merge_in_either_order_into_the_same_verified_ledger() {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = person(&tmp, "ws");
    two_branches(&p);
    // Every commit carries its anchor.
    let log = p.git(&[
        "log",
        "--all",
        "--format=%s|%(trailers:key=Mandate-Ledger,valueonly)",
    ]);
    assert!(
        log.lines()
            .filter(|l| !l.is_empty())
            .all(|l| l.split('|').nth(1).is_some_and(|a| !a.is_empty())),
        "{log}"
    );

    p.git(&["checkout", "-q", "-b", "m1", "main"]);
    let merged = p.git_may_fail(&["merge", "--no-edit", "feature"]);
    assert_eq!(merged.code, Some(0), "{}\n{}", merged.stdout, merged.stderr);
    assert!(
        merged.stderr.contains("merged the trace ledger"),
        "{}",
        merged.stderr
    );
    assert_verified(&p);
    let one = p.read(LEDGER);
    let expected = vec![
        some("INT-BASE"),
        some("INT-BASE"),
        some("INT-A"),
        None,
        None,
        None,
        some("INT-B"),
        None,
    ];
    assert_eq!(
        blame(&p, "src/shared.rs"),
        expected,
        "both sides' lines in the same file"
    );
    assert_eq!(blame(&p, "src/a.rs"), vec![some("INT-A"); 3]);

    p.git(&["checkout", "-q", "-b", "m2", "feature"]);
    let merged = p.git_may_fail(&["merge", "--no-edit", "main"]);
    assert_eq!(merged.code, Some(0), "{}", merged.stderr);
    assert_verified(&p);
    assert_eq!(
        p.read(LEDGER),
        one,
        "merging in the other order gives the same ledger"
    );
    assert_eq!(blame(&p, "src/shared.rs"), expected);

    // Each side's records are intact in the result, and the two merges merge cleanly.
    let r = p.mandate(&["trace", "verify", "--json"]).json();
    assert_eq!(
        (r["tampered"].as_u64(), r["malformed"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(
        r["records"], 7,
        "base, 3 of A, 2 of B, and the merge record"
    );
    let merged = p.git_may_fail(&["merge", "--no-edit", "m1"]);
    assert_eq!(merged.code, Some(0), "{}", merged.stderr);
    assert_eq!(p.read(LEDGER), one);
    assert_verified(&p);
}

#[test]
fn rebase_and_cherry_pick_keep_the_ledger_verifiable() {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = person(&tmp, "ws");
    two_branches(&p);
    let first_feature_commit = p.git(&["rev-parse", "feature~1"]);

    // Cherry-pick the first feature commit onto main (both changed src/shared.rs).
    p.git(&["checkout", "-q", "-b", "picked", "main"]);
    let r = p.git_may_fail(&["cherry-pick", &first_feature_commit]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_verified(&p);
    assert_eq!(blame(&p, "src/a.rs"), vec![some("INT-A"), some("INT-A")]);
    assert_eq!(
        blame(&p, "src/shared.rs")[2..7],
        [some("INT-A"), None, None, None, some("INT-B")]
    );

    // Rebase the feature onto main.
    p.git(&["checkout", "-q", "feature"]);
    let r = p.git_may_fail(&["rebase", "main"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_verified(&p);
    assert_eq!(
        blame(&p, "src/shared.rs"),
        vec![
            some("INT-BASE"),
            some("INT-BASE"),
            some("INT-A"),
            None,
            None,
            None,
            some("INT-B"),
            None
        ]
    );
    assert_eq!(blame(&p, "src/a.rs"), vec![some("INT-A"); 3]);
}

/// A pull request from a teammate's clone, checked the way CI checks it: a fresh clone with
/// no heads, `verify --git origin/main..HEAD` and the report.
#[test]
fn ci_proves_a_pull_request_intact_reports_it_and_catches_a_rewritten_anchor() {
    let tmp = tempfile::tempdir().expect("tmp");
    let lead = person(&tmp, "origin");
    lead.write("src/lib.rs", "pub fn base() {}\n");
    lead.agent_writes("INT-1", "src/lib.rs", 2, 0, &["pub fn base2() {}"]);
    lead.commit_all("base");

    let dev = Person::clone_of(&lead.dir, &tmp.path().join("dev"), STRESS.as_ref());
    assert_eq!(dev.mandate(&["init"]).code, Some(0));
    dev.git(&["checkout", "-q", "-b", "pr"]);
    dev.agent_writes("INT-1", "src/lib.rs", 3, 0, &["pub fn parse() {}"]);
    let lex = dev.agent_writes("INT-1", "src/lib.rs", 4, 0, &["pub fn lex() {}"]);
    dev.agent_writes("INT-2", "docs/guide.md", 1, 0, &["# Guide", "Read me."]);
    dev.commit_all("agents' work");
    // A person adds two lines with no record; an agent undoes one of its own changes.
    let mut text = dev.read("src/lib.rs");
    text.push_str("// reviewed by a person\n// and another line\n");
    dev.write("src/lib.rs", &text);
    dev.agent_writes("INT-1", "src/lib.rs", 4, 1, &["pub fn lex_v2() {}"]);
    dev.helper(
        "record",
        &[
            "INT-1",
            "src/lib.rs",
            "4",
            "4",
            "anthropic/other-model",
            &lex,
        ],
    );
    dev.commit_all("a person's lines and an undo");

    let ci = Person::clone_of(&dev.dir, &tmp.path().join("ci"), STRESS.as_ref());
    ci.git(&["checkout", "-q", "pr"]);
    ci.git(&[
        "fetch",
        "-q",
        &lead.dir.display().to_string(),
        "main:refs/remotes/upstream/main",
    ]);
    let r = ci.mandate(&["trace", "verify", "--git", "upstream/main..HEAD", "--json"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let out = r.json();
    trace_schema::assert_matches(&trace_schema::verify_output_schema(), &out);
    assert_eq!(out["status"], "intact");
    assert_eq!(out["git"]["commits"], 2);
    assert_eq!(out["git"]["anchors"], 3, "2 in the range and the base's");
    assert!(out["notes"][0].as_str().unwrap_or("").contains("no head"));

    let r = ci.mandate(&["trace", "report", "upstream/main..HEAD", "--format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let report = r.json();
    trace_schema::assert_matches(&trace_schema::report_schema(), &report);
    assert_eq!(report["commits"], 2);
    assert_eq!(report["records"], 5, "{report:#}");
    // Added lines: parse, lex_v2, the two people's lines in lib.rs, two lines of the guide.
    assert_eq!(report["coverage"]["added_lines"], 6);
    assert_eq!(report["coverage"]["agent_lines"], 4);
    assert_eq!(report["coverage"]["unrecorded_lines"], 2);
    assert_eq!(
        report["unrecorded"],
        serde_json::json!([{"path": "src/lib.rs", "lines": 2}])
    );
    let int1 = &report["intents"][0];
    assert_eq!(int1["intent_id"], "INT-1");
    assert_eq!(int1["records"], 4);
    assert_eq!(int1["undos"], serde_json::json!([lex]));
    assert_eq!(int1["files"][0]["agent_lines"], 2);
    let models: Vec<&str> = int1["models"]
        .as_array()
        .expect("models")
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(models, vec!["openai/test-model", "anthropic/other-model"]);
    assert_eq!(report["intents"][1]["files"][0]["path"], "docs/guide.md");
    let md = ci
        .mandate(&["trace", "report", "upstream/main..HEAD"])
        .stdout;
    assert!(
        md.contains("| INT-1 | 4 | 1 | 2 | openai/test-model (3), anthropic/other-model (1) | user (4) | 1 |")
            && md.contains("**Coverage:** 4 of 6 added lines (66.7%)"),
        "{md}"
    );

    // The developer rewrites an anchored record, re-chains the tail and commits: CI says so.
    let lines: Vec<String> = dev.read(LEDGER).lines().map(str::to_string).collect();
    dev.write(LEDGER, &(lines[..lines.len() - 1].join("\n") + "\n"));
    let forger = tempfile::tempdir().expect("tmp");
    let mut cmd = std::process::Command::new(STRESS);
    cmd.args([
        "record",
        &dev.dir.display().to_string(),
        "INT-1",
        "src/lib.rs",
        "1",
        "1",
    ])
    .env("MANDATE_DATA_DIR", forger.path());
    assert!(cmd.output().expect("forge").status.success());
    dev.commit_all("tidy the ledger");
    ci.git(&[
        "pull",
        "-q",
        "--no-rebase",
        &dev.dir.display().to_string(),
        "pr",
    ]);
    let r = ci.mandate(&["trace", "verify", "--git", "upstream/main..HEAD"]);
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("(a person's lines and an undo): TAMPERED: the ledger at")
            && r.stdout.contains("git: TAMPERED"),
        "{}",
        r.stdout
    );
    let out = ci
        .mandate(&["trace", "verify", "--git", "upstream/main..HEAD", "--json"])
        .json();
    trace_schema::assert_matches(&trace_schema::verify_output_schema(), &out);
    assert_eq!(
        (out["status"].as_str(), out["exit_code"].as_i64()),
        (Some("tampered"), Some(1))
    );
    // Usage errors have their own exit code.
    assert_eq!(
        ci.mandate(&["trace", "verify", "--git", "nosuch..HEAD"])
            .code,
        Some(2)
    );
    assert_eq!(
        ci.mandate(&["trace", "report", "nosuch..HEAD"]).code,
        Some(2)
    );
}

#[test]
fn init_is_idempotent_and_leaves_a_repositorys_own_hook_alone() {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = person(&tmp, "ws");
    let again = p.mandate(&["init", "--json"]).json();
    let outcomes: Vec<&str> = again["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["outcome"].as_str())
        .collect();
    assert_eq!(outcomes, vec!["unchanged"; 9]);
    assert_eq!(p.mandate(&["intents", "validate"]).code, Some(0));

    let other = Person::init(&tmp.path().join("own-hook"), STRESS.as_ref());
    let hook = other.dir.join(".git/hooks/prepare-commit-msg");
    std::fs::write(&hook, "#!/bin/sh\necho mine\n").expect("hook");
    let r = other.mandate(&["init"]);
    assert_eq!(r.code, Some(0));
    assert!(
        r.stdout.contains("is your own hook: add this line"),
        "{}",
        r.stdout
    );
    assert_eq!(
        std::fs::read_to_string(&hook).expect("hook"),
        "#!/bin/sh\necho mine\n"
    );
    assert!(other
        .read(".gitattributes")
        .contains(".orchestration/agent_trace.jsonl merge=mandate-trace"));

    let plain = tempfile::tempdir().expect("tmp");
    let r = std::process::Command::new(mandate_tests::app::mandate_bin())
        .args(["init", "--workspace"])
        .arg(plain.path())
        .output()
        .expect("run");
    assert_eq!(r.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&r.stdout).contains("not a git repository"));
}

#[test]
fn validate_checks_any_agent_trace_file_and_export_writes_the_reference_location() {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = person(&tmp, "ws");
    p.write("src/lib.rs", "fn a() {}\n");
    p.agent_writes("INT-1", "src/lib.rs", 2, 0, &["fn b() {}"]);
    // Another tool's records, in the specification's own example form.
    p.write(
        "other.jsonl",
        concat!(
            r#"{"version":"0.1.0","id":"550e8400-e29b-41d4-a716-446655440000","timestamp":"2026-01-25T10:00:00Z","files":[{"path":"src/app.ts","conversations":[{"contributor":{"type":"ai"},"ranges":[{"start_line":1,"end_line":50}]}]}]}"#,
            "\n",
            r#"{"version":"1.0","id":"550e8400-e29b-41d4-a716-446655440001","timestamp":"2026-01-25T10:00:00Z","files":[],"vendor":true}"#,
            "\n"
        ),
    );
    let r = p.mandate(&["trace", "validate", "other.jsonl"]);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("2 records, 2 valid; 0 errors, 2 warnings"),
        "{}",
        r.stdout
    );
    let r = p.mandate(&["trace", "validate", "other.jsonl", "--strict", "--json"]);
    assert_eq!(r.code, Some(1));
    let v = r.json();
    trace_schema::assert_matches(&trace_schema::validate_output_schema(), &v);
    assert_eq!(v["issues"][0]["line"], 2);
    p.write(
        "bad.jsonl",
        "{\"version\":\"0.1\",\"id\":\"x\",\"files\":[]}\nnot json\n",
    );
    let r = p.mandate(&["trace", "validate", "bad.jsonl"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stdout.contains("line 1: error: `timestamp` is required"),
        "{}",
        r.stdout
    );
    assert_eq!(
        p.mandate(&["trace", "validate", "missing.jsonl"]).code,
        Some(2)
    );

    let r = p.mandate(&["trace", "export"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let exported = p.read(".agent-trace/traces.jsonl");
    assert_eq!(exported.lines().count(), 1);
    let record: Value = serde_json::from_str(exported.lines().next().unwrap_or("")).expect("json");
    assert_eq!(record["version"], "0.1.0");
    let r = p.mandate(&["trace", "validate", ".agent-trace/traces.jsonl", "--strict"]);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    let r = p.mandate(&["trace", "validate", LEDGER, "--strict"]);
    assert_eq!(
        r.code,
        Some(0),
        "Mandate's own ledger is valid Agent Trace: {}",
        r.stdout
    );
}

#[test]
fn a_merge_stopped_by_a_conflict_and_then_aborted_or_resolved_is_not_tampering() {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = person(&tmp, "ws");
    two_branches(&p);
    // Both branches change line 5 of the shared file: git stops on that file; the ledger merges.
    p.git(&["checkout", "-q", "feature"]);
    p.agent_writes("INT-A", "src/shared.rs", 5, 1, &["fn five() { /* A */ }"]);
    p.commit_all("A: five");
    p.git(&["checkout", "-q", "main"]);
    p.agent_writes("INT-B", "src/shared.rs", 5, 1, &["fn five() { /* B */ }"]);
    p.commit_all("B: five");
    let before = p.read(LEDGER);
    let r = p.git_may_fail(&["merge", "--no-edit", "feature"]);
    assert_eq!(r.code, Some(1), "a conflict in src/shared.rs: {}", r.stdout);
    assert!(
        r.stdout
            .contains("CONFLICT (content): Merge conflict in src/shared.rs"),
        "{}",
        r.stdout
    );
    assert_ne!(p.read(LEDGER), before, "the ledger itself merged");
    let v = p.mandate(&["trace", "verify"]);
    assert_eq!(v.code, Some(0), "a merge in progress: {}", v.stdout);
    p.git(&["merge", "--abort"]);
    assert_eq!(p.read(LEDGER), before);
    assert_verified(&p);

    // Again, resolved by a person in favour of A's line.
    assert_eq!(
        p.git_may_fail(&["merge", "--no-edit", "feature"]).code,
        Some(1)
    );
    let resolved = p.read("src/shared.rs");
    let resolved: String = resolved
        .lines()
        .filter(|l| {
            !l.starts_with("<<<<<<<") && !l.starts_with(">>>>>>>") && !l.contains("/* B */")
        })
        .filter(|l| *l != "=======")
        .map(|l| format!("{l}\n"))
        .collect();
    p.write("src/shared.rs", &resolved);
    p.commit_all("merge feature");
    assert_verified(&p);
    let intents = blame(&p, "src/shared.rs");
    assert_eq!(
        intents[4],
        some("INT-A"),
        "the line the person kept is A's: {intents:?}"
    );
    assert_eq!(intents[6], some("INT-B"));
}

const TEAM_INTENTS: &str = r#"active_intents:
  - id: INT-A
    name: Parser
    status: IN_PROGRESS
    owned_scope: ["src/a.rs"]
  - id: INT-B
    name: Lexer
    status: IN_PROGRESS
    owned_scope: ["src/b.rs"]
"#;

/// A headless `mandate run` in `p`'s clone in which the agent, under `intent`, writes `path`.
async fn agent_run(p: &Person, intent: &str, path: &str, content: &str) {
    use mandate_tests::llm_server::ScriptedServer;
    use mandate_tests::script;
    let server = ScriptedServer::start(vec![
        script::call(
            "s",
            "select_active_intent",
            serde_json::json!({"intent_id": intent}),
        ),
        script::call(
            "w",
            "write_to_file",
            serde_json::json!({"path": path, "content": content, "intent_id": intent, "mutation_class": "INTENT_EVOLUTION"}),
        ),
        script::done(),
    ])
    .await;
    let url = format!("{}/v1", server.base_url());
    let args = [
        "run",
        "--provider",
        "openai",
        "--base-url",
        &url,
        "--model",
        "test-model",
        "--approve",
        "allow",
        "go",
    ];
    let r = p.mandate(&args);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
}

/// The intent map names both branches' files under their intents.
fn assert_map_has_both(p: &Person, after: &str) {
    let map = p.read(".orchestration/intent_map.md");
    let section = |id: &str| {
        map.split("\n## ")
            .find(|s| s.starts_with(id))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        section("INT-A").contains("`src/a.rs`: lines 1-2")
            && section("INT-B").contains("`src/b.rs`: lines 1"),
        "after {after}, the map holds both branches' changes:\n{map}"
    );
}

/// Two branches that each changed files through Mandate (so each has its records and a
/// regenerated intent map) merge, rebase and cherry-pick without a conflict; the ledger
/// verifies and the intent map holds both branches' changes afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_branches_worked_through_mandate_merge_rebase_and_cherry_pick_without_conflict() {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = person(&tmp, "ws");
    p.write(".orchestration/active_intents.yaml", TEAM_INTENTS);
    p.write("README.md", "team\n");
    p.commit_all("intents");
    p.git(&["checkout", "-q", "-b", "feature"]);
    agent_run(&p, "INT-A", "src/a.rs", "pub fn a() {}\npub fn aa() {}\n").await;
    assert!(p
        .read(".orchestration/intent_map.md")
        .contains("`src/a.rs`"));
    p.commit_all("feature: the parser");
    p.git(&["checkout", "-q", "main"]);
    agent_run(&p, "INT-B", "src/b.rs", "pub fn b() {}\n").await;
    assert!(p
        .read(".orchestration/intent_map.md")
        .contains("`src/b.rs`"));
    p.commit_all("main: the lexer");

    let check = |what: &str, r: mandate_tests::gitrepo::Ran| {
        assert_eq!(r.code, Some(0), "{what}:\n{}\n{}", r.stdout, r.stderr);
        let status = p.git(&["status", "--porcelain"]);
        assert!(
            !status
                .lines()
                .any(|l| l.starts_with("UU") || l.starts_with("AA")),
            "{what} left a conflict:\n{status}"
        );
        assert_verified(&p);
        assert_map_has_both(&p, what);
    };
    p.git(&["checkout", "-q", "-b", "merged", "main"]);
    check(
        "a merge",
        p.git_may_fail(&["merge", "--no-edit", "feature"]),
    );
    p.git(&["checkout", "-q", "-b", "rebased", "feature"]);
    check("a rebase", p.git_may_fail(&["rebase", "main"]));
    p.git(&["checkout", "-q", "-b", "picked", "main"]);
    check("a cherry-pick", p.git_may_fail(&["cherry-pick", "feature"]));
}
