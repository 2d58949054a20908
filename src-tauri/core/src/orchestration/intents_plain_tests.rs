use super::*;
use pretty_assertions::assert_eq;

/// The file as one value, the intents put back in the place the reader left for them.
fn as_value(plain: PlainFile<'_>) -> Value {
    let mut root = plain.root;
    if let Some(list) = plain.intents {
        let key = ["active_intents", "intents"]
            .into_iter()
            .find(|k| root.get(*k) == Some(&Value::Null))
            .expect("the list's place");
        let items = list
            .into_iter()
            .map(|i| Value::Mapping(i.fields.into_extra()))
            .collect();
        root.insert(key.into(), Value::Sequence(items));
    }
    Value::Mapping(root)
}

/// The quick reader either declines or agrees with the general parser.
fn agrees(text: &str) -> bool {
    let Some(plain) = read(text) else {
        return false;
    };
    let general = yaml::from_str::<Value>(text);
    assert_eq!(Ok(as_value(plain)), general, "{text:?}");
    true
}

const HAND_WRITTEN: &str = r#"# Intents for the team.
active_intents:   # the list
  - id: INT-001
    name: JWT auth, with refresh tokens   # why: audits
    status: IN_PROGRESS
    owned_scope: ["src/auth/**", 'src/it''s.rs', docs/, "a # not a comment"]
    constraints:
      - Keep the public API
      - "Quoted: with a colon"
      - 'single'
      - 42
      - -x
      - 1.5
      - ~
      - 0x1F
      - 007
      - true
      - yes
      - "tab\there"
    acceptance_criteria: []
    owner: alice
    review:
    priority: 3
  - id: 7
    title: Numbered
    definition_of_done:
    - compact list
    - src/[a-f]*.{png,svg}
schema_version: 3
note: "kept"
"#;

#[test]
fn reads_the_plain_style_as_the_general_parser_does() {
    assert!(agrees(HAND_WRITTEN));
    let plain = read(HAND_WRITTEN).expect("plain");
    let lines: Vec<usize> = plain.intents.iter().flatten().map(|i| i.line).collect();
    assert_eq!(lines, vec![3, 24]);
    let doc = super::super::intents::IntentsDoc::parse(CANONICAL_OUT, "f").expect("parses");
    let written = doc.to_yaml().expect("yaml");
    assert!(agrees(&written), "Mandate's own output is read quickly");
}

/// What Mandate writes, for the round trip.
const CANONICAL_OUT: &str = "active_intents:\n- id: A\n  name: 'a: b # c'\n  owned_scope:\n  - '*.md'\n  - src/**\n  constraints: []\n  acceptance_criteria:\n  - it's\n  - '007'\n  owner: bob\nschema_version: 3\n";

#[test]
fn declines_what_it_does_not_read() {
    for text in [
        "",
        "# only a comment\n",
        "---\nactive_intents: []\n",
        "active_intents:\n\t- id: A\n",
        "active_intents:\r\n  - id: A\r\n",
        "active_intents:\n  - &a id: A\n",
        "active_intents:\n  - id: *a\n",
        "active_intents:\n  - id: !tag A\n",
        "active_intents:\n  - id: A\n    name: |\n      two\n      lines\n",
        "active_intents:\n  - id: A\n    name: one\n      more\n",
        "active_intents:\n  - id: A\n    name: \"open\n      quote\"\n",
        "active_intents:\n  - {id: A}\n",
        "active_intents:\n  - id: A\n    scope:\n      paths: [a]\n",
        "active_intents:\n  - id: A\n    id: B\n",
        "active_intents:\n  - id: A\nactive_intents: []\n",
        "active_intents:\n  - id: A\n    name: x: y\n",
        "active_intents:\n  - id: A\n    owned_scope: [a, [b]]\n",
        "active_intents:\n  - id: A\n    owned_scope: [a,]\n",
        "active_intents:\n  - id: A\n    owned_scope:\n      - - a\n",
        "active_intents:\n  - id: A\n    name: ---\n",
        "active_intents:\n  - id: A\n    name: \"x\"y\n",
        "active_intents:\n  - id: A\n   name: misaligned\n",
        "- id: A\n",
        "\"quoted key\": 1\n",
        "active_intents:\n  - id: A\n    name: a\u{85}b\n",
        "active_intents:\n  - id: A\n    name: a\u{2028}b\n",
        "\u{feff}active_intents: []\n",
    ] {
        assert!(read(text).is_none(), "{text:?}");
    }
}

/// xorshift: the same mutations on every run.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn thousands_of_mutated_files_are_declined_or_read_as_the_general_parser_does() {
    const PIECES: &[&str] = &[
        ":",
        ": ",
        " #",
        "#",
        "-",
        "- ",
        " ",
        "  ",
        "\n",
        "\n  ",
        "\n    ",
        "\"",
        "'",
        "''",
        "[",
        "]",
        ",",
        "{",
        "*",
        "&",
        "!",
        "|",
        ">",
        "~",
        "0",
        "1.5",
        "true",
        "null",
        "x",
        "é",
        "\\",
        "\\\"",
        "---",
        "?",
        "%",
        "@",
        "`",
        "id: ",
        "- id: Z\n",
        "\n- ",
        ".inf",
        "0o7",
    ];
    let mut state = 0x5eed_u64;
    let mut read_quickly = 0;
    for n in 0..6000 {
        let base = if n % 2 == 0 {
            HAND_WRITTEN
        } else {
            CANONICAL_OUT
        };
        let mut text = base.to_string();
        for _ in 0..=next(&mut state) % 3 {
            let mut at = (next(&mut state) as usize) % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let piece = PIECES[(next(&mut state) as usize) % PIECES.len()];
            if next(&mut state).is_multiple_of(4) {
                let mut end = (at + 1 + (next(&mut state) as usize) % 4).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(at..end, "");
            } else {
                text.insert_str(at, piece);
            }
        }
        if agrees(&text) {
            read_quickly += 1;
        }
    }
    // Most mutations stay in the plain style; the check above is what matters.
    assert!(read_quickly > 1000, "{read_quickly}");
}
