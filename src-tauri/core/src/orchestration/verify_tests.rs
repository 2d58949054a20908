use super::scan::Recorded;
use super::*;
use crate::orchestration::ledger::content_hash_bytes;
use crate::orchestration::ledger::{canonical_json, Ledger};

/// A range as read: start, end, content hash, path.
type Read = (u32, u32, Option<[u8; 32]>, String);

/// The link and the ranges of one line, as a core reads them.
fn scanned(line: &[u8]) -> (Link, Vec<Read>) {
    let mut bytes = line.to_vec();
    bytes.push(b'\n');
    let run = scan_run(&bytes, 1);
    let ranges = run.ranges[0]
        .iter()
        .map(|r| (r.start, r.end, r.hash, r.path.to_string()))
        .collect();
    (run.links[0].clone(), ranges)
}

#[test]
fn the_byte_level_checks_agree_with_a_full_parse() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = Ledger::new(tmp.path());
    let record = ledger
        .append(&crate::orchestration::ledger::tests::entry(
            "a.rs",
            &[(1, 2, &["x", "y"])],
        ))
        .expect("append");
    let line = canonical_json(&record);
    let (fast, fast_ranges) = scanned(line.as_bytes());
    assert!(fast.digest_ok && fast.prev.is_some());
    let hash = content_hash_bytes(&crate::orchestration::ledger::content_hash(&["x", "y"]));
    assert_eq!(fast_ranges, vec![(1, 2, hash, "a.rs".to_string())]);
    // The line's hash shares its prefix with the digest's: still the hash of the line.
    assert_eq!(fast.hash, chain::link_hash(line.as_bytes()));
    // The same record, not canonical (spaces, other key order): judged by the full parse.
    let pretty = serde_json::to_string_pretty(&record)
        .expect("json")
        .replace('\n', "");
    let (slow, slow_ranges) = scanned(pretty.as_bytes());
    assert_eq!(slow.hash, chain::link_hash(pretty.as_bytes()));
    assert!(
        slow.digest_ok,
        "a valid record in another layout still verifies"
    );
    assert_eq!(slow.prev, fast.prev);
    assert_eq!(slow_ranges, fast_ranges);
    // One changed byte anywhere breaks the digest.
    let tampered = line.replace("\"ai\"", "\"human\"");
    assert!(!scanned(tampered.as_bytes()).0.digest_ok);
    assert!(
        scanned(b"{\"version\":\"0.1\"").0.prev.is_none(),
        "torn line"
    );
}

#[test]
fn files_read_in_place_say_what_a_full_parse_says() {
    let record = |files: &str| {
        format!(
            "{{\"files\":{files},\"metadata\":{{\"dev.mandate\":{{\"digest\":\"{z}\",\"prev\":\"{z}\"}}}}}}",
            z = "0".repeat(64)
        )
    };
    let range = |s: u32, e: u32| {
        format!(
            "{{\"content_hash\":\"sha256:{}\",\"end_line\":{e},\"start_line\":{s}}}",
            "ab".repeat(32)
        )
    };
    let cases = [
        // Canonical: two files, two conversations, unknown fields skipped.
        format!(
            "[{{\"conversations\":[{{\"contributor\":{{\"type\":\"ai\"}},\"ranges\":[{},{}],\"url\":\"u\"}},{{\"ranges\":[{}]}}],\"path\":\"a.rs\"}},{{\"conversations\":[],\"path\":\"b\\u0041.rs\"}}]",
            range(1, 2), range(4, 4), range(9, 12)
        ),
        // A file without a path (skipped by the full parse), one without conversations.
        format!("[{{\"conversations\":[{{\"ranges\":[{}]}}]}},{{\"path\":\"c.rs\"}}]", range(1, 1)),
        // A range without its lines, a range with a bad hash, a duplicate field.
"[{\"conversations\":[{\"ranges\":[{\"end_line\":3},{\"end_line\":3,\"start_line\":2,\"content_hash\":\"md5:x\"}]}],\"path\":\"d.rs\",\"path\":\"e.rs\"}]".to_string(),
        "[]".to_string(),
        "{}".to_string(),
    ];
    for files in &cases {
        let line = record(files);
        let (_, fast) = scanned(line.as_bytes());
        // The same record with a space in front: not canonical, so fully parsed.
        let (_, slow) = scanned(format!(" {line}").as_bytes());
        assert_eq!(fast, slow, "{files}");
    }
    // The canonical case was read in place, in order, its escaped path decoded.
    let (_, first) = scanned(record(&cases[0]).as_bytes());
    let paths: Vec<&str> = first.iter().map(|r| r.3.as_str()).collect();
    assert_eq!(paths, ["a.rs", "a.rs", "a.rs"]);
    assert_eq!((first[1].0, first[2].1), (4, 12));
}

/// A line number past `u32` is not a line: serde refuses it in place, and the full parse must
/// not wrap it round to a small line that would then be checked.
#[test]
fn line_numbers_past_u32_are_not_wrapped_round() {
    let hash = format!("sha256:{}", "ab".repeat(32));
    for (start, end) in [(4_294_967_297u64, 4_294_967_298u64), (1, 4_294_967_296)] {
        let line = format!(
            "{{\"files\":[{{\"conversations\":[{{\"ranges\":[{{\"content_hash\":\"{hash}\",\"end_line\":{end},\"start_line\":{start}}},{{\"content_hash\":\"{hash}\",\"end_line\":3,\"start_line\":2}}]}}],\"path\":\"a.rs\"}}],\"metadata\":{{\"dev.mandate\":{{\"digest\":\"{z}\",\"prev\":\"{z}\"}}}}}}",
            z = "0".repeat(64)
        );
        let (_, read) = scanned(line.as_bytes());
        let lines: Vec<(u32, u32)> = read.iter().map(|r| (r.0, r.1)).collect();
        assert_eq!(lines, [(2, 3)], "{start}..{end}");
    }
}

#[test]
fn every_split_over_cores_finds_the_same() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = Ledger::new(tmp.path());
    let entry = crate::orchestration::ledger::tests::entry;
    for n in 0..40u32 {
        let path = format!("f{}.rs", n % 7);
        let at = 1 + n % 3;
        ledger
            .append(&entry(&path, &[(at, at, &["x"]), (5, 6, &["y", "z"])]))
            .expect("append");
    }
    for f in 0..7 {
        std::fs::write(tmp.path().join(format!("f{f}.rs")), "a\nx\nb\nc\ny\nz\n").expect("w");
    }
    // Findings of every kind, on lines that fall in different runs and shares.
    std::fs::remove_file(tmp.path().join("f3.rs")).expect("rm");
    std::fs::write(tmp.path().join("f5.rs"), "x\nq\nq\nq\nq\nq\n").expect("w");
    let mut bytes = std::fs::read(tmp.path().join(LEDGER_FILE)).expect("read");
    let lines = chain::split_lines(&bytes);
    let at = lines[..17].iter().map(|l| l.len() + 1).sum::<usize>() + 40;
    bytes[at] = if bytes[at] == b'a' { b'b' } else { b'a' };
    bytes.extend_from_slice(b"{\"version\":\"0.1\"");
    let one = judge_ledger(tmp.path(), &bytes, Ok(Heads::default()), 1).report;
    assert!(one.tampered > 0 && one.malformed == 1 && one.missing > 0);
    assert!(one.changed + one.moved > 0 && one.intact > 0);
    for cores in [2, 3, 5, 64] {
        let many = judge_ledger(tmp.path(), &bytes, Ok(Heads::default()), cores).report;
        assert_eq!(many, one, "on {cores} cores");
    }
}

/// A real ledger, long enough to be hashed in several batches of lanes, with a line edited, a
/// digest edited, and a record chained after an edited last line: each is reported at its
/// line, whether the ledger is read on one core or split over several.
#[test]
fn an_edited_line_an_edited_digest_and_a_record_after_an_edited_tail_are_each_reported() {
    use crate::orchestration::ledger::record_digest;
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = Ledger::new(tmp.path());
    let entry = crate::orchestration::ledger::tests::entry;
    for n in 0..150u32 {
        // Records of very different lengths side by side in the lanes.
        let text = "x".repeat((n as usize * 37) % 300);
        let path = format!("f{}.rs", n % 5);
        ledger
            .append(&entry(&path, &[(1, 1, &[text.as_str()])]))
            .expect("append");
    }
    let intact = std::fs::read(tmp.path().join(LEDGER_FILE)).expect("read");
    let judge = |bytes: &[u8]| {
        let reports: Vec<VerifyReport> = [1, 2, 3]
            .iter()
            .map(|&cores| judge_ledger(tmp.path(), bytes, Ok(Heads::default()), cores).report)
            .collect();
        assert!(reports.iter().all(|r| *r == reports[0]));
        reports[0].clone()
    };
    // 1-based lines of the findings that say the ledger was tampered with.
    let tampered_at = |r: &VerifyReport| -> Vec<u64> {
        r.findings
            .iter()
            .filter(|f| f.kind == FindingKind::Tampered)
            .map(|f| u64::from(f.ledger_line))
            .collect()
    };
    let clean = judge(&intact);
    assert!(
        clean.chain_ok && tampered_at(&clean).is_empty(),
        "{clean:?}"
    );
    let lines: Vec<&[u8]> = chain::split_lines(&intact);
    let offset = |n: usize| lines[..n].iter().map(|l| l.len() + 1).sum::<usize>();

    // A byte of line 41's content: its digest no longer matches, and line 42 names a line
    // that is gone.
    // Where the digit of line `n`'s file name is (`"path":"f<digit>.rs"`).
    let path_digit = |n: usize| {
        let key = b"\"path\":\"f";
        offset(n)
            + lines[n]
                .windows(key.len())
                .position(|w| w == key)
                .expect("path")
            + key.len()
    };
    let mut edited = intact.clone();
    edited[path_digit(40)] = b'9';
    assert_eq!(tampered_at(&judge(&edited)), [41, 42]);

    // One hex digit of the digest of line 140 (in the second batch), and of the last line.
    let digest_at = |n: usize| {
        let key = b"\"digest\":\"";
        offset(n)
            + lines[n]
                .windows(key.len())
                .position(|w| w == key)
                .expect("digest")
            + key.len()
    };
    let mut edited = intact.clone();
    for n in [139, 149] {
        let at = digest_at(n);
        edited[at] = if edited[at] == b'0' { b'1' } else { b'0' };
    }
    assert_eq!(tampered_at(&judge(&edited)), [140, 141, 150]);

    // The last record edited, then a record appended whose chain and digest are right.
    let mut edited = intact.clone();
    edited[path_digit(149)] = b'7';
    let tail = chain::split_lines(&edited)[149];
    let mut next: Value = serde_json::from_slice(lines[3]).expect("record");
    let vendor = next["metadata"][VENDOR_KEY]
        .as_object_mut()
        .expect("vendor");
    vendor.remove("digest");
    vendor.insert("prev".into(), hex::encode(chain::link_hash(tail)).into());
    next["id"] = "appended".into();
    let digest = record_digest(&next);
    next["metadata"][VENDOR_KEY]["digest"] = digest.into();
    edited.extend_from_slice(canonical_json(&next).as_bytes());
    edited.push(b'\n');
    let report = judge(&edited);
    assert_eq!(report.records, 151);
    assert_eq!(tampered_at(&report), [150], "{:?}", report.findings);
}

#[test]
fn runs_of_lines_cover_the_ledger_and_end_at_line_ends() {
    let bytes = b"aaa\nbb\n\ncccc\nd";
    for n in 1..8 {
        let runs = chain::line_runs(bytes, n);
        assert!(!runs.is_empty() && runs.len() <= n);
        assert_eq!(runs.concat(), bytes.to_vec());
        for r in &runs[..runs.len() - 1] {
            assert_eq!(r.last(), Some(&b'\n'));
        }
    }
    assert_eq!(chain::line_runs(b"", 4), vec![b"".as_slice()]);
}

#[test]
fn files_whose_paths_hash_alike_are_each_checked_against_their_own_ranges() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::write(tmp.path().join("a.txt"), "one\ntwo\n").expect("a");
    std::fs::write(tmp.path().join("b.txt"), "three\nfour\n").expect("b");
    let hash =
        |lines: &[&str]| content_hash_bytes(&crate::orchestration::ledger::content_hash(lines));
    let range = |line, path: &'static str, start, text: &str| Recorded {
        line,
        start,
        end: start,
        hash: hash(&[text]),
        path: path.into(),
        // As if the two paths collided.
        path_hash: 7,
        dir_hash: 0,
    };
    let run = Run {
        lines: Vec::new(),
        links: Vec::new(),
        ranges: vec![vec![
            range(0, "b.txt", 2, "four"),
            range(1, "a.txt", 1, "one"),
            range(2, "b.txt", 1, "three"),
            range(3, "a.txt", 2, "changed"),
        ]],
    };
    let (counts, findings) = check_share(tmp.path(), &[run], &[0], 0);
    assert_eq!(counts, [4, 3, 0, 0, 1, 0], "{findings:?}");
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].path.as_deref(), Some("a.txt"));
    assert_eq!(findings[0].ledger_line, 4);
}

/// A file that is gone, one that is no longer text and one that cannot be read are each
/// reported as what they are.
#[test]
fn a_file_gone_one_no_longer_text_and_one_unreadable_are_told_apart() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::write(tmp.path().join("bin.txt"), [0xff, 0xfe, b'\n']).expect("bin");
    std::fs::create_dir(tmp.path().join("now-a-dir")).expect("dir");
    let hash =
        |lines: &[&str]| content_hash_bytes(&crate::orchestration::ledger::content_hash(lines));
    let range = |line, path: &'static str| Recorded {
        line,
        start: 1,
        end: 1,
        hash: hash(&["one"]),
        path: path.into(),
        path_hash: line as u64,
        dir_hash: 0,
    };
    let run = Run {
        lines: Vec::new(),
        links: Vec::new(),
        ranges: vec![vec![
            range(0, "gone.txt"),
            range(1, "bin.txt"),
            range(2, "now-a-dir"),
        ]],
    };
    let (counts, findings) = check_share(tmp.path(), &[run], &[0], 0);
    assert_eq!(counts, [3, 0, 0, 0, 1, 2], "{findings:?}");
    let detail = |path: &str| {
        let f = findings
            .iter()
            .find(|f| f.path.as_deref() == Some(path))
            .expect(path);
        (f.kind, f.detail.clone())
    };
    assert_eq!(
        detail("gone.txt"),
        (FindingKind::Missing, "gone.txt no longer exists".into())
    );
    let (kind, text) = detail("bin.txt");
    assert_eq!(kind, FindingKind::Changed);
    assert!(text.contains("no longer UTF-8 text"), "{text}");
    let (kind, text) = detail("now-a-dir");
    assert_eq!(kind, FindingKind::Missing);
    assert!(text.contains("cannot be read"), "{text}");
}

#[test]
fn files_are_read_relative_to_their_directory_as_the_whole_path_would_read_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("ws");
    for (path, text) in [
        ("a.rs", "top"),
        ("src/b.rs", "b"),
        ("src/c.rs", "c"),
        ("src/d/e.rs", "e"),
    ] {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().expect("dir")).expect("mkdir");
        std::fs::write(p, text).expect("w");
    }
    std::fs::write(tmp.path().join("outside.txt"), "out").expect("w");
    std::fs::write(root.join("src/bad.rs"), [0xff, 0xfe]).expect("w");
    let mut reader = Reader::new(&root);
    let cases = [
        "src/b.rs",
        "src/c.rs",
        "a.rs",
        "src/d/e.rs",
        "src/b.rs",
        "../outside.txt",
        "src/../a.rs",
        "src//c.rs",
        "missing.rs",
        "src/missing.rs",
        "src/",
        "src/..",
        "src/bad.rs",
        "nul\0.rs",
        "src/d/e.rs",
    ];
    for path in cases {
        let expected = std::fs::read_to_string(root.join(path)).ok();
        assert_eq!(reader.read(path).map(str::to_string), expected, "{path}");
    }
}

#[test]
fn compact_reads_what_serde_reads() {
    use super::scan::both_readings;
    let tmp = tempfile::tempdir().expect("tmp");
    let ledger = Ledger::new(tmp.path());
    let entry = crate::orchestration::ledger::tests::entry;
    let mut lines: Vec<String> = [
        (
            "src/a.rs",
            vec![(1, 2, &["x", "y"][..]), (10, 10, &["z"][..])],
        ),
        ("dir/ünï côdé.rs", vec![(7, 9, &["a", "b", "c"][..])]),
        ("q\"uote\\.rs", vec![(1, 1, &["w"][..])]),
    ]
    .iter()
    .map(|(path, ranges)| canonical_json(&ledger.append(&entry(path, ranges)).expect("append")))
    .collect();
    // A record as other writers lay it out: two conversations, skipped members of every kind.
    let hash = format!("sha256:{}", "ab".repeat(32));
    lines.push(format!(
        "{{\"files\":[{{\"conversations\":[{{\"contributor\":{{\"model_id\":\"m\\u00e9/\\n\",\"type\":\"ai\"}},\"ranges\":[{{\"content_hash\":\"{hash}\",\"end_line\":4,\"start_line\":2}}],\"related\":[{{\"n\":-1.5e+3,\"t\":true,\"f\":false,\"z\":null,\"e\":[]}}],\"url\":\"u\"}},{{\"ranges\":[]}},{{}}],\"path\":\"b.rs\"}},{{\"conversations\":[],\"path\":\"c.rs\"}}]}}"
    ));
    let (mut read, mut fell_back) = (0, 0);
    for line in &lines {
        let [compact, serde] = both_readings(line.as_bytes());
        // An escaped path is decoded by serde; every other line is read by hand.
        let escaped_path = line.contains("q\\\"uote");
        assert_eq!(compact.is_none(), escaped_path, "{line}");
        assert!(serde.is_some(), "{line}");
        if !escaped_path {
            assert_eq!(compact, serde, "{line}");
        }
        // Every one-byte change, deletion and insertion in the files array: whatever the
        // compact reader accepts, serde reads the same way.
        let end = line.find("]}],").map_or(line.len(), |i| i + 4);
        let bytes = line.as_bytes();
        let swaps: &[u8] = b" \"\\{}[],:09-.eEu+a/\x01\x7f\xff\xc3";
        for at in 9..end {
            let mut variants: Vec<Vec<u8>> = Vec::new();
            for &b in swaps {
                let mut v = bytes.to_vec();
                v[at] = b;
                variants.push(v);
                let mut v = bytes.to_vec();
                v.insert(at, b);
                variants.push(v);
            }
            let mut v = bytes.to_vec();
            v.remove(at);
            variants.push(v);
            for v in variants {
                let [compact, serde] = both_readings(&v);
                match compact {
                    Some(c) => {
                        read += 1;
                        assert_eq!(Some(c), serde, "{}", String::from_utf8_lossy(&v));
                    }
                    None => fell_back += 1,
                }
            }
        }
    }
    assert!(
        read > 1000 && fell_back > 1000,
        "{read} read by hand, {fell_back} by serde"
    );
}

#[test]
fn deep_nesting_is_left_to_serde() {
    let deep = format!(
        "{{\"files\":[{{\"conversations\":[{{\"x\":{}1{}}}],\"path\":\"p\"}}]}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    // Not read by hand (no recursion a hostile line can exhaust); serde skips it without
    // recursing, and finds a file with no ranges.
    let [compact, serde] = super::scan::both_readings(deep.as_bytes());
    assert_eq!((compact, serde), (None, Some(Vec::new())));
}

#[path = "verify_compact_tests.rs"]
mod compact;
