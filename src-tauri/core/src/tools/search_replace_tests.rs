use super::*;
use std::time::{Duration, Instant};

/// Builds a block; `start` becomes `:start_line:` and `rule` adds the `-------` line.
fn block(start: Option<usize>, rule: bool, search: &str, replace: &str) -> String {
    let mut out = String::from("<<<<<<< SEARCH\n");
    if let Some(n) = start {
        out.push_str(&format!(":start_line:{n}\n"));
    }
    if rule {
        out.push_str("-------\n");
    }
    for part in [search, "=======\n", replace, ">>>>>>> REPLACE\n"] {
        out.push_str(part);
    }
    out
}

fn b(search: &str, replace: &str) -> String {
    block(None, true, search, replace)
}

fn parse_error(diff: &str) -> (usize, String) {
    match parse_blocks(diff) {
        Err(SearchReplaceError::Parse { line, message }) => (line, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

fn no_match(original: &str, diff: &str) -> (usize, String, Option<ClosestMatch>) {
    match apply(original, diff) {
        Err(SearchReplaceError::NoMatch {
            block,
            message,
            closest,
        }) => (block, message, closest),
        other => panic!("expected NoMatch, got {other:?}"),
    }
}

#[test]
fn table_of_successful_edits() {
    let two = format!("{}{}", b("a\n", "A\n"), b("c\n", "C\n"));
    let sequential = format!("{}{}", b("a\n", "x\n"), b("x\nb\n", "y\n"));
    let crlf_diff = b("b\n", "B\n").replace('\n', "\r\n");
    let ambiguous_hinted = block(Some(3), true, "x\n", "X\n");
    let nearest = block(Some(6), false, "x\n", "X\n");
    let escaped = b("\\=======\n", "\\<<<<<<< SEARCH\n\\>>>>>>> REPLACE\n");
    let trailing_marker_ws =
        "<<<<<<< SEARCH  \n-------\t\nb\n=======   \nB\n>>>>>>> REPLACE \n".to_owned();
    let fenced = format!(
        "Here is the change:\n```diff\n{}```\nDone.\n",
        b("b\n", "B\n")
    );
    let end_line =
        "<<<<<<< SEARCH\n:start_line:2\n:end_line:2\n-------\nb\n=======\nB\n>>>>>>> REPLACE\n";
    // The hint says line 5 of the original file; block 1 inserted two lines above it, so
    // the nearest `x` is the one now at line 7, not the one at line 5.
    let shifted_hint = format!(
        "{}{}",
        b("a\n", "a\nnew1\nnew2\n"),
        block(Some(5), true, "x\n", "X\n")
    );
    let cases: Vec<(&str, &str, String, &str)> = vec![
        ("single block", "a\nb\nc\n", b("b\n", "B\n"), "a\nB\nc\n"),
        ("two blocks", "a\nb\nc\n", two, "A\nb\nC\n"),
        ("blocks apply sequentially", "a\nb\n", sequential, "y\n"),
        (
            "crlf file",
            "a\r\nb\r\nc\r\n",
            b("b\n", "B1\nB2\n"),
            "a\r\nB1\r\nB2\r\nc\r\n",
        ),
        ("crlf diff", "a\nb\nc\n", crlf_diff, "a\nB\nc\n"),
        (
            "no optional lines",
            "a\nb\n",
            block(None, false, "a\n", "z\n"),
            "z\nb\n",
        ),
        (
            "start_line without rule",
            "a\nb\n",
            block(Some(2), false, "b\n", "z\n"),
            "a\nz\n",
        ),
        (
            "start_line picks occurrence",
            "x\ny\nx\ny\n",
            ambiguous_hinted,
            "x\ny\nX\ny\n",
        ),
        (
            "start_line picks nearest",
            "x\n1\n2\n3\n4\n5\nx\n",
            nearest,
            "x\n1\n2\n3\n4\n5\nX\n",
        ),
        (
            "trailing whitespace in file",
            "a  \nb\t\nc\n",
            b("a\nb\n", "A\n"),
            "A\nc\n",
        ),
        (
            "trailing whitespace in search",
            "a\nb\n",
            b("a \n", "A\n"),
            "A\nb\n",
        ),
        ("deletion", "a\nb\nc\n", b("b\n", ""), "a\nc\n"),
        (
            "blank line replacement",
            "a\nb\nc\n",
            b("b\n", "\n"),
            "a\n\nc\n",
        ),
        (
            "replace first line",
            "a\nb\nc\n",
            b("a\n", "A\n"),
            "A\nb\nc\n",
        ),
        (
            "replace last line",
            "a\nb\nc\n",
            b("c\n", "C\n"),
            "a\nb\nC\n",
        ),
        ("no trailing newline kept", "a\nb", b("b\n", "B\n"), "a\nB"),
        (
            "append after last line",
            "a\nb",
            b("b\n", "b\nc\n"),
            "a\nb\nc",
        ),
        (
            "delete last line keeps no newline",
            "a\nb",
            b("b\n", ""),
            "a",
        ),
        ("delete everything", "a\n", b("a\n", ""), ""),
        (
            "insertion after anchor",
            "fn a() {\n}\n",
            b("fn a() {\n", "fn a() {\n    x();\n"),
            "fn a() {\n    x();\n}\n",
        ),
        (
            "escaped markers",
            "a\n=======\nb\n",
            escaped,
            "a\n<<<<<<< SEARCH\n>>>>>>> REPLACE\nb\n",
        ),
        (
            "markers with trailing whitespace",
            "a\nb\n",
            trailing_marker_ws,
            "a\nB\n",
        ),
        ("prose around blocks", "a\nb\n", fenced, "a\nB\n"),
        ("end_line ignored", "a\nb\n", end_line.to_owned(), "a\nB\n"),
        (
            "hint follows earlier edits",
            "a\n1\n2\nx\nx\n",
            shifted_hint,
            "a\nnew1\nnew2\n1\n2\nx\nX\n",
        ),
        (
            "mixed endings preserved",
            "a\r\nb\nc\r\n",
            b("b\n", "B\n"),
            "a\r\nB\nc\r\n",
        ),
        (
            "unicode",
            "naïve café\n日本語テキスト\n🦀 crab\n",
            b("日本語テキスト\n", "中文文本 ✓\n"),
            "naïve café\n中文文本 ✓\n🦀 crab\n",
        ),
        (
            "search marker with stray >",
            "a\n",
            "<<<<<<< SEARCH>\na\n=======\nb\n>>>>>>> REPLACE".to_owned(),
            "b\n",
        ),
    ];
    for (name, original, diff, expected) in cases {
        match apply(original, &diff) {
            Ok(applied) => assert_eq!(applied.content, expected, "case `{name}`"),
            Err(error) => panic!("case `{name}` failed: {error}"),
        }
    }
}

#[test]
fn parses_fields_and_diff_lines() {
    let diff = format!(
        "intro\n{}\n{}",
        block(Some(12), true, "old\n", "new\n"),
        b("x\n", "")
    );
    let blocks = parse_blocks(&diff).unwrap();
    assert_eq!(
        blocks,
        vec![
            SearchReplaceBlock {
                search: "old\n".into(),
                replace: "new\n".into(),
                start_line: Some(12),
                diff_line: 2,
            },
            SearchReplaceBlock {
                search: "x\n".into(),
                replace: String::new(),
                start_line: None,
                diff_line: 10,
            },
        ]
    );
}

#[test]
fn applied_block_ranges() {
    let diff = format!("{}{}", b("b\n", "B1\nB2\nB3\n"), b("d\n", ""));
    let applied = apply("a\nb\nc\nd\ne\n", &diff).unwrap();
    assert_eq!(applied.content, "a\nB1\nB2\nB3\nc\ne\n");
    assert_eq!(
        applied.blocks,
        vec![
            AppliedBlock {
                block: 1,
                kind: MatchKind::Exact,
                start_line: 2,
                end_line: 2,
                new_start_line: 2,
                new_end_line: 4,
            },
            AppliedBlock {
                block: 2,
                kind: MatchKind::Exact,
                start_line: 6,
                end_line: 6,
                new_start_line: 6,
                new_end_line: 5,
            },
        ]
    );
}

#[test]
fn crlf_file_and_crlf_diff_together() {
    let diff = b("b\nc\n", "X\n").replace('\n', "\r\n");
    let applied = apply("a\r\nb\r\nc\r\n", &diff).unwrap();
    assert_eq!(applied.content, "a\r\nX\r\n");
    assert_eq!(applied.blocks[0].kind, MatchKind::Exact);
}

#[test]
fn trailing_whitespace_kind_reported() {
    let applied = apply("a  \nb\n", &b("a\n", "A\n")).unwrap();
    assert_eq!(applied.blocks[0].kind, MatchKind::TrailingWhitespace);
}

#[test]
fn indentation_shift_reindents_replacement() {
    let file = "impl S {\n    fn f() {\n        one();\n    }\n}\n";
    let diff = b(
        "fn f() {\n    one();\n}\n",
        "fn f() {\n    one();\n    two();\n}\n",
    );
    let applied = apply(file, &diff).unwrap();
    assert_eq!(applied.blocks[0].kind, MatchKind::Indentation);
    assert_eq!(
        applied.content,
        "impl S {\n    fn f() {\n        one();\n        two();\n    }\n}\n"
    );
}

#[test]
fn indentation_removed_when_search_is_over_indented() {
    let file = "if x {\n  y();\n}\n";
    let diff = b(
        "    if x {\n      y();\n    }\n",
        "    if x {\n      z();\n\n    }\n  w();\n",
    );
    let applied = apply(file, &diff).unwrap();
    assert_eq!(applied.content, "if x {\n  z();\n\n}\nw();\n");
}

#[test]
fn tabs_in_file_spaces_in_search() {
    let file = "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n";
    let diff = b(
        "    if x {\n        y()\n    }\n",
        "    if x {\n        y()\n        z()\n    }\n",
    );
    let applied = apply(file, &diff).unwrap();
    assert_eq!(applied.blocks[0].kind, MatchKind::Indentation);
    assert_eq!(
        applied.content,
        "func f() {\n\tif x {\n\t\ty()\n\t\tz()\n\t}\n}\n"
    );
}

#[test]
fn escaped_rule_and_header_lines_are_content() {
    let diff = "<<<<<<< SEARCH\n\\-------\n\\:start_line:3\n=======\nx\n>>>>>>> REPLACE\n";
    let blocks = parse_blocks(diff).unwrap();
    assert_eq!(blocks[0].search, "-------\n:start_line:3\n");
    assert_eq!(blocks[0].start_line, None);
}

#[test]
fn ambiguity_lists_occurrences() {
    let error = apply("x\na\nx\nb\nx\n", &b("x\n", "y\n")).unwrap_err();
    assert_eq!(
        error,
        SearchReplaceError::Ambiguous {
            block: 1,
            lines: vec![1, 3, 5]
        }
    );
    assert!(error
        .to_string()
        .starts_with("block 1: the SEARCH text occurs 3 times (lines 1, 3, 5); add :start_line:"));
}

#[test]
fn ambiguity_in_whitespace_tolerant_pass() {
    let error = apply("  x\ny\n    x\n", &b("x\n", "z\n")).unwrap_err();
    assert_eq!(
        error,
        SearchReplaceError::Ambiguous {
            block: 1,
            lines: vec![1, 3]
        }
    );
}

#[test]
fn ambiguity_display_is_bounded() {
    let file = "x\n".repeat(30);
    let message = apply(&file, &b("x\n", "y\n")).unwrap_err().to_string();
    assert!(message.contains("occurs 30 times"));
    assert!(message.contains("20, and 10 more"));
}

#[test]
fn empty_diff_and_prose_only() {
    assert_eq!(parse_blocks(""), Err(SearchReplaceError::Empty));
    assert_eq!(
        apply("a\n", "just some text\n```\n"),
        Err(SearchReplaceError::Empty)
    );
}

#[test]
fn empty_search_points_to_write_to_file() {
    let (line, message) = parse_error(&format!("{}{}", b("a\n", "b\n"), b("", "new\n")));
    assert_eq!(line, 7);
    assert!(message.starts_with("block 2: the SEARCH section is empty"));
    assert!(message.contains("write_to_file"));
    let (line, _) = parse_error(&b("  \n\n", "new\n"));
    assert_eq!(line, 1);
}

#[test]
fn parse_error_missing_separator_before_replace() {
    let (line, message) = parse_error("<<<<<<< SEARCH\na\nb\n>>>>>>> REPLACE\n");
    assert_eq!(line, 4);
    assert!(message.starts_with("block 1 (opened at diff line 1) reaches `>>>>>>> REPLACE`"));
}

#[test]
fn parse_error_missing_separator_at_end() {
    let diff = format!("{}<<<<<<< SEARCH\na\n", b("x\n", "y\n"));
    let (line, message) = parse_error(&diff);
    assert_eq!(line, 7);
    assert_eq!(
        message,
        "block 2 is missing `=======`; the diff ended at line 8"
    );
}

#[test]
fn parse_error_missing_replace_at_end() {
    let (line, message) = parse_error("text\n<<<<<<< SEARCH\na\n=======\nb\n");
    assert_eq!(line, 2);
    assert_eq!(
        message,
        "block 1 is missing `>>>>>>> REPLACE`; the diff ended at line 5"
    );
}

#[test]
fn parse_error_missing_replace_before_next_block() {
    let (line, message) = parse_error(
        "<<<<<<< SEARCH\na\n=======\nb\n<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n",
    );
    assert_eq!(line, 5);
    assert!(message.contains("block 1 (opened at diff line 1) is missing `>>>>>>> REPLACE`"));
}

#[test]
fn parse_error_nested_search() {
    let (line, message) =
        parse_error("<<<<<<< SEARCH\na\n<<<<<<< SEARCH\nb\n=======\nc\n>>>>>>> REPLACE\n");
    assert_eq!(line, 3);
    assert!(message.contains("nested `<<<<<<< SEARCH`"));
    assert!(message.contains("\\<<<<<<< SEARCH"));
}

#[test]
fn parse_error_second_separator() {
    let (line, message) =
        parse_error("<<<<<<< SEARCH\na\n=======\nb\n=======\nc\n>>>>>>> REPLACE\n");
    assert_eq!(line, 5);
    assert!(message.contains("second `=======`"));
}

#[test]
fn parse_error_stray_markers() {
    let diff = format!("{}=======\n", b("a\n", "b\n"));
    let (line, message) = parse_error(&diff);
    assert_eq!(line, 7);
    assert!(message.starts_with("block 2: `=======` without"));
    let (line, _) = parse_error("a\n>>>>>>> REPLACE\n");
    assert_eq!(line, 2);
}

#[test]
fn parse_error_bad_start_line() {
    let (line, message) =
        parse_error("<<<<<<< SEARCH\n:start_line:abc\n-------\na\n=======\nb\n>>>>>>> REPLACE\n");
    assert_eq!(line, 2);
    assert!(message.contains("positive line number"));
    let (line, _) = parse_error("<<<<<<< SEARCH\n:start_line:0\na\n=======\nb\n>>>>>>> REPLACE\n");
    assert_eq!(line, 2);
}

#[test]
fn parse_error_display_names_diff_line() {
    let error = parse_blocks("<<<<<<< SEARCH\na\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "diff line 1: block 1 is missing `=======`; the diff ended at line 2"
    );
}

#[test]
fn no_match_reports_closest_candidate() {
    let mut file: Vec<String> = (1..=60).map(|i| format!("line number {i} here")).collect();
    file[39] = "fn a() {".into();
    file[40] = "    let x = 2;".into();
    file[41] = "}".into();
    let file = file.join("\n") + "\n";
    let (block, message, closest) =
        no_match(&file, &b("fn a() {\n    let x = 1;\n}\n", "fn a() {}\n"));
    assert_eq!(block, 1);
    let closest = closest.unwrap();
    assert_eq!((closest.start_line, closest.end_line), (40, 42));
    // Trimmed lengths 8 + 10 + 1 = 19 characters, one edit.
    assert!((closest.similarity - 18.0 / 19.0).abs() < 1e-9);
    assert_eq!(
        closest.first_difference,
        Some((41, "    let x = 1;".into(), "    let x = 2;".into()))
    );
    assert_eq!(
        message,
        "no match for the SEARCH text (3 lines), not even ignoring whitespace; the closest candidate is lines 40-42 (94% similar); line 41 differs: expected `    let x = 1;`, found `    let x = 2;`. Re-read the file and retry with the exact current text."
    );
}

#[test]
fn no_match_prefers_candidate_near_start_line() {
    let mut file: Vec<String> = (1..=300).map(|i| format!("filler {i}")).collect();
    file[9] = "let total = compute(a, b);".into();
    file[249] = "let total = compute(a, c);".into();
    let file = file.join("\n");
    let diff = block(Some(248), true, "let total = compute(a, d);\n", "x\n");
    let closest = no_match(&file, &diff).2.unwrap();
    assert_eq!(closest.start_line, 250);
    let closest = no_match(&file, &b("let total = compute(a, d);\n", "x\n"))
        .2
        .unwrap();
    assert_eq!(closest.start_line, 10);
}

#[test]
fn no_match_when_file_is_shorter_than_search() {
    let (_, message, closest) = no_match("a\nb\n", &b("a\nb\nc\n", "x\n"));
    let closest = closest.unwrap();
    assert_eq!((closest.start_line, closest.end_line), (1, 2));
    assert_eq!(
        closest.first_difference,
        Some((3, "c".into(), String::new()))
    );
    assert!(message.contains("the file ends at line 2, before the expected `c`"));
}

#[test]
fn no_match_in_empty_file() {
    let (_, message, closest) = no_match("", &b("a\n", "b\n"));
    assert_eq!(closest, None);
    assert!(message.contains("the file is empty"));
}

#[test]
fn no_match_when_change_already_applied() {
    let (_, message, _) = no_match("a\nnew\nc\n", &b("old\n", "new\n"));
    assert!(message.contains("The REPLACE text is already present at line 2"));
}

#[test]
fn no_match_in_later_block_changes_nothing() {
    let diff = format!("{}{}", b("a\n", "A\n"), b("zzz\n", "y\n"));
    let (block, message, _) = no_match("a\nb\n", &diff);
    assert_eq!(block, 2);
    assert!(message.contains("Earlier blocks of this diff are applied first"));
    assert!(SearchReplaceError::NoMatch {
        block,
        message,
        closest: None
    }
    .to_string()
    .starts_with("block 2: no match"));
}

#[test]
fn no_match_truncates_long_lines() {
    let long = "x".repeat(500);
    let file = format!("{long}\n");
    let (_, message, closest) = no_match(&file, &b(&format!("{long}y\n"), "z\n"));
    let (_, expected, found) = closest.unwrap().first_difference.unwrap();
    assert_eq!(expected.chars().count(), 121);
    assert!(found.ends_with('…'));
    assert!(message.len() < 600);
}

#[test]
fn low_similarity_is_worded_as_such() {
    let (_, message, _) = no_match("completely different\n", &b("qqq zzz\n", "x\n"));
    assert!(message.contains("nothing similar was found"));
}

#[test]
fn large_file_is_fast() {
    let lines: Vec<String> = (0..5000)
        .map(|i| format!("    let value_{i} = compute({i}, \"text {}\");", i * 7))
        .collect();
    let file = lines.join("\n") + "\n";
    let start = Instant::now();
    let target = lines[4990..4995].join("\n") + "\n";
    let applied = apply(&file, &b(&target, "    done();\n")).unwrap();
    assert_eq!(applied.blocks[0].start_line, 4991);
    let mut wrong: Vec<String> = lines[2000..2050].to_vec();
    wrong[25] = "    let value_2025 = compute(2025, \"changed\");".into();
    let (_, _, closest) = no_match(&file, &b(&(wrong.join("\n") + "\n"), "x\n"));
    let closest = closest.unwrap();
    assert_eq!((closest.start_line, closest.end_line), (2001, 2050));
    assert_eq!(closest.first_difference.map(|d| d.0), Some(2026));
    assert!(
        start.elapsed() < Duration::from_millis(800),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn large_search_against_large_file_is_bounded() {
    let file: String = (0..10_000)
        .map(|i| format!("{} {i}\n", "word ".repeat(i % 17)))
        .collect();
    let search: String = (0..200)
        .map(|i| format!("other text {i} {}\n", "y".repeat(i % 90)))
        .collect();
    let start = Instant::now();
    let closest = no_match(&file, &b(&search, "x\n")).2.unwrap();
    assert!(closest.similarity < 0.5);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn long_differing_lines_stay_within_budget() {
    // Every line pair differs along its whole length: the edit-distance budget is what bounds this.
    let file: String = (0..10_000)
        .map(|i| format!("{}{i}\n", "ab".repeat(150)))
        .collect();
    let search: String = (0..200)
        .map(|i| format!("{}{i}\n", "ba".repeat(150)))
        .collect();
    let start = Instant::now();
    let closest = no_match(&file, &b(&search, "x\n")).2.unwrap();
    assert!(closest.similarity > 0.9);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn byte_order_mark_is_kept_and_ignored_for_matching() {
    let applied = apply("\u{feff}first\nsecond\n", &b("first\n", "FIRST\n")).unwrap();
    assert_eq!(applied.content, "\u{feff}FIRST\nsecond\n");
    assert_eq!(applied.blocks[0].kind, MatchKind::Exact);
}

#[test]
fn start_line_tie_picks_earlier_and_accepts_spaces() {
    let diff = "<<<<<<< SEARCH\n:start_line: 3 \n-------\nx\n=======\nX\n>>>>>>> REPLACE\n";
    assert_eq!(parse_blocks(diff).unwrap()[0].start_line, Some(3));
    // Occurrences at lines 1 and 5 are both two lines from the hint.
    let applied = apply("x\na\nb\nc\nx\n", diff).unwrap();
    assert_eq!(applied.content, "X\na\nb\nc\nx\n");
}

#[test]
fn crlf_file_without_final_newline() {
    let applied = apply("a\r\nb\r\nc", &b("c\n", "C1\nC2\n")).unwrap();
    assert_eq!(applied.content, "a\r\nb\r\nC1\r\nC2");
    let applied = apply("a\r\nb\r\nc", &b("c\n", "")).unwrap();
    assert_eq!(applied.content, "a\r\nb");
}

#[test]
fn multibyte_indentation_is_handled_on_char_boundaries() {
    // Ideographic spaces as indentation: the file drops one of the SEARCH's two.
    let file = "\u{3000}x\n\u{3000}\u{3000}y\n";
    let diff = b(
        "\u{3000}\u{3000}x\n\u{3000}\u{3000}\u{3000}y\n",
        "\u{3000}\u{3000}x\n\u{3000}w\n z\n",
    );
    let applied = apply(file, &diff).unwrap();
    assert_eq!(applied.blocks[0].kind, MatchKind::Indentation);
    // `w` loses its one ideographic space; ` z` shares no indentation with the shift and stays.
    assert_eq!(applied.content, "\u{3000}x\nw\n z\n");
}

#[test]
fn difference_past_compared_prefix_is_not_full_similarity() {
    let long = "a".repeat(300);
    let (_, message, closest) = no_match(&format!("{long}b\n"), &b(&format!("{long}c\n"), "x\n"));
    let closest = closest.unwrap();
    assert!(closest.similarity < 1.0);
    assert!(message.contains("99% similar"));
}

#[test]
fn block_applied_at_file_end_reports_ranges() {
    let applied = apply("a\nb\n", &b("b\n", "b\nc\nd\n")).unwrap();
    let block = &applied.blocks[0];
    assert_eq!((block.start_line, block.end_line), (2, 2));
    assert_eq!((block.new_start_line, block.new_end_line), (2, 4));
}

#[test]
fn arbitrary_input_never_panics() {
    // Deterministic pseudo-random files and diffs built from marker-like and awkward lines;
    // half the diffs are well formed and quote (possibly re-indented) file lines.
    let pieces = [
        "<<<<<<< SEARCH",
        "=======",
        ">>>>>>> REPLACE",
        "-------",
        ":start_line:2",
        ":start_line:x",
        "\\=======",
        "a",
        "  a",
        "\ta",
        "b ",
        "",
        " ",
        "\u{3000}é",
        "🦀",
        "x\r",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut applied = 0;
    for round in 0..3000 {
        let file: Vec<String> = (0..next(10))
            .map(|_| pieces[7 + next(pieces.len() - 7)].to_owned())
            .collect();
        let diff = if round % 2 == 0 {
            (0..next(12))
                .map(|_| pieces[next(pieces.len())])
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            let from = next(file.len() + 1);
            let quoted: String = (file.iter().skip(from).take(1 + next(3)))
                .map(|l| format!("{}{l}\n", ["", " ", "\t"][next(3)]))
                .collect();
            let replace: String = (0..next(3))
                .map(|_| format!("{}\n", pieces[7 + next(9)]))
                .collect();
            block(
                (next(2) == 0).then(|| 1 + next(12)),
                next(2) == 0,
                &quoted,
                &replace,
            )
        };
        let eol = if next(2) == 0 { "\n" } else { "\r\n" };
        let text = file.join(eol) + if next(2) == 0 { eol } else { "" };
        if let Ok(result) = apply(&text, &diff.replace('\n', eol)) {
            applied += 1;
            let block = &result.blocks[0];
            assert!(block.new_end_line + 1 >= block.new_start_line);
        }
    }
    assert!(applied > 300, "only {applied} diffs applied");
}
