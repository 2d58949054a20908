//! `mandate trace verify` against every way of quietly rewriting the ledger (truncation, a
//! deleted ledger, deleted or rewritten last records, a re-chained rewrite of the tail, a forged
//! append with a correct chain, with or without a forged acceptance), and against what must
//! not count as tampering (other processes appending, switching branches, checking out an
//! older commit, pulling).

use mandate_tests::gitrepo::{Person, Ran, LEDGER};
use serde_json::Value;

const STRESS: &str = env!("CARGO_BIN_EXE_ledger-stress");

/// A repository with three committed records and two more appended since the commit.
fn setup() -> (tempfile::TempDir, Person) {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = Person::init(&tmp.path().join("ws"), STRESS.as_ref());
    p.write("src/lib.rs", "fn a() {}\n");
    for (i, line) in ["fn b() {}", "fn c() {}", "fn d() {}"].iter().enumerate() {
        p.agent_writes("INT-1", "src/lib.rs", i + 2, 0, &[line]);
    }
    p.commit_all("three records");
    p.agent_writes("INT-1", "src/lib.rs", 5, 0, &["fn e() {}"]);
    p.agent_writes("INT-1", "src/lib.rs", 6, 0, &["fn f() {}"]);
    assert_intact(&p.mandate(&["trace", "verify"]));
    (tmp, p)
}

fn assert_intact(r: &Ran) {
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("chain: intact"), "{}", r.stdout);
}

/// Verify says TAMPERED, exits 1, and names `what`; the JSON form says so too.
fn assert_tampered(p: &Person, what: &str) {
    let r = p.mandate(&["trace", "verify"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("TAMPERED") && r.stdout.contains(what),
        "expected TAMPERED naming {what:?}:\n{}",
        r.stdout
    );
    let j = p.mandate(&["trace", "verify", "--json"]).json();
    assert_eq!(
        (
            j["status"].as_str(),
            j["exit_code"].as_i64(),
            j["chain_ok"].as_bool()
        ),
        (Some("tampered"), Some(1), Some(false))
    );
    assert!(j["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .any(|f| f["kind"] == "tampered"));
}

fn ledger_lines(p: &Person) -> Vec<String> {
    p.read(LEDGER).lines().map(str::to_string).collect()
}

fn keep_lines(p: &Person, n: usize) {
    let lines = ledger_lines(p);
    p.write(LEDGER, &(lines[..n].join("\n") + "\n"));
}

#[test]
fn truncation_is_tampering() {
    let (_tmp, p) = setup();
    let len = p.read(LEDGER).len();
    // Cut in the middle of the last record: a torn line, and the last record is gone.
    let bytes = std::fs::read(p.dir.join(LEDGER)).expect("read");
    std::fs::write(p.dir.join(LEDGER), &bytes[..len - 40]).expect("truncate");
    assert_tampered(&p, "not a Mandate trace record");
    // Cut at a line boundary: the chain is intact, but the head names what is gone.
    keep_lines(&p, 3);
    assert_tampered(&p, "is no longer in the ledger");
}

#[test]
fn a_deleted_ledger_is_tampering_not_an_empty_one() {
    let (_tmp, p) = setup();
    std::fs::remove_file(p.dir.join(LEDGER)).expect("rm");
    assert_tampered(
        &p,
        "the ledger is missing or empty, but Mandate wrote 5 records to it",
    );
    std::fs::write(p.dir.join(LEDGER), "").expect("empty");
    assert_tampered(&p, "missing or empty");
}

#[test]
fn deleted_or_rewritten_last_records_are_tampering() {
    let (_tmp, p) = setup();
    let original = p.read(LEDGER);
    keep_lines(&p, 4);
    assert_tampered(&p, "the last record Mandate wrote on branch main (line 5");
    // The last record edited in place (its digest no longer matches).
    p.write(
        LEDGER,
        &original.replace("\"by\":\"user\"", "\"by\":\"policy\""),
    );
    assert_tampered(&p, "edited after it was written");
}

#[test]
fn a_re_chained_rewrite_of_the_tail_is_tampering() {
    let (_tmp, p) = setup();
    // Drop the last two records and write two others with a correct chain and digests, as a
    // forger with the code (but not Mandate's heads) could.
    keep_lines(&p, 3);
    let forger = tempfile::tempdir().expect("tmp");
    for line in [5, 6] {
        let mut cmd = std::process::Command::new(STRESS);
        cmd.args([
            "record",
            &p.dir.display().to_string(),
            "INT-9",
            "src/lib.rs",
        ])
        .args([line.to_string(), line.to_string()])
        .env("MANDATE_DATA_DIR", forger.path());
        assert!(cmd.output().expect("forge").status.success());
    }
    let lines = ledger_lines(&p);
    assert_eq!(lines.len(), 5);
    for l in &lines {
        let _: Value = serde_json::from_str(l).expect("every line is a record");
    }
    assert_tampered(&p, "is no longer in the ledger");
}

#[test]
fn a_forged_append_with_a_correct_chain_is_tampering() {
    let (_tmp, p) = setup();
    let forger = tempfile::tempdir().expect("tmp");
    let mut cmd = std::process::Command::new(STRESS);
    cmd.args([
        "record",
        &p.dir.display().to_string(),
        "INT-1",
        "src/lib.rs",
        "1",
        "1",
    ])
    .env("MANDATE_DATA_DIR", forger.path());
    assert!(cmd.output().expect("forge").status.success());
    assert_tampered(
        &p,
        "line 6: TAMPERED: this line was not written by Mandate here",
    );
    // And Mandate refuses to bury it under new records.
    let r = p.helper("record", &["INT-1", "src/lib.rs", "1", "1"]);
    assert_ne!(r.code, Some(0));
    assert!(r.stderr.contains("Broken { line: 6"), "{}", r.stderr);
}

#[test]
fn a_forged_acceptance_after_a_forged_append_is_tampering() {
    let (_tmp, p) = setup();
    let forger = tempfile::tempdir().expect("tmp");
    for args in [
        &["record", "INT-1", "src/lib.rs", "1", "1"][..],
        &["forge-acceptance"][..],
    ] {
        let mut cmd = std::process::Command::new(STRESS);
        cmd.arg(args[0])
            .arg(&p.dir)
            .args(&args[1..])
            .env("MANDATE_DATA_DIR", forger.path());
        let out = cmd.output().expect("forge");
        assert!(out.status.success(), "{out:?}");
    }
    let lines = ledger_lines(&p);
    assert_eq!(lines.len(), 7);
    assert!(lines[6].contains("accepted_break"), "{}", lines[6]);
    let forged = "line 6: TAMPERED: this line was not written by Mandate here";
    assert_tampered(&p, forged);
    // Mandate's next append is refused, so no head of its own ever vouches for the forgery.
    let r = p.helper("record", &["INT-1", "src/lib.rs", "1", "1"]);
    assert_ne!(r.code, Some(0));
    assert!(r.stderr.contains("Broken { line: 6"), "{}", r.stderr);
    assert_eq!(ledger_lines(&p).len(), 7);
    assert_tampered(&p, forged);
}

#[test]
fn other_processes_branches_older_commits_and_pulls_are_not_tampering() {
    let (tmp, p) = setup();
    // Two other processes appending at once.
    let ws = p.dir.display().to_string();
    let children: Vec<_> = ["x", "y"]
        .iter()
        .map(|tag| {
            std::process::Command::new(STRESS)
                .args(["append", &ws, tag, "50"])
                .env("MANDATE_DATA_DIR", p.data())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("wait").success());
    }
    assert_intact(&p.mandate(&["trace", "verify"]));
    p.commit_all("more records");

    // A branch with its own records, then back; an older commit, detached.
    p.git(&["checkout", "-q", "-b", "feature"]);
    p.agent_writes("INT-2", "src/other.rs", 1, 0, &["// feature"]);
    p.commit_all("feature");
    p.git(&["checkout", "-q", "main"]);
    assert_intact(&p.mandate(&["trace", "verify"]));
    p.git(&["checkout", "-q", "HEAD~1"]);
    assert_intact(&p.mandate(&["trace", "verify"]));
    p.git(&["checkout", "-q", "feature"]);
    assert_intact(&p.mandate(&["trace", "verify"]));

    // Someone else clones, appends and pushes; this person pulls.
    p.git(&["checkout", "-q", "main"]);
    let other = Person::clone_of(&p.dir, &tmp.path().join("other"), STRESS.as_ref());
    other.agent_writes("INT-1", "src/lib.rs", 1, 1, &["fn a() { /* theirs */ }"]);
    other.commit_all("their change");
    p.git(&[
        "pull",
        "-q",
        "--no-rebase",
        &other.dir.display().to_string(),
        "main",
    ]);
    assert_intact(&p.mandate(&["trace", "verify"]));
    // A branch reset by a person drops records Mandate wrote since: a note, not tampering.
    p.agent_writes("INT-1", "src/lib.rs", 2, 0, &["fn g() {}"]);
    p.commit_all("g");
    p.git(&["reset", "-q", "--hard", "HEAD~1"]);
    let r = p.mandate(&["trace", "verify"]);
    assert_intact(&r);
    assert!(
        r.stdout.contains("note: branch main has moved since"),
        "{}",
        r.stdout
    );
}
