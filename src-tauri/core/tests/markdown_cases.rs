//! Data-driven tests for `markdown::render`.
//!
//! Each folder in `tests/markdown_cases/` holds `input.md` and the exact
//! `expected.html`. Set `UPDATE_EXPECT=1` to rewrite the expected files from
//! the current output; review the diff before keeping it, since these files
//! are the record of what is considered safe.
//!
//! Independently of the expected files, every output is checked against the
//! allow-list (tags, attributes, URL schemes), so a wrong expectation cannot
//! hide an unsafe output.

use std::fs;
use std::path::Path;

use mandate_core::markdown::render;

#[test]
fn markdown_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/markdown_cases");
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    let mut dirs: Vec<_> = fs::read_dir(&root)
        .expect("read tests/markdown_cases")
        .map(|entry| entry.expect("read case folder").path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 30, "expected at least 30 cases in {root:?}");

    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        let input = fs::read_to_string(dir.join("input.md")).expect("read input.md");
        let actual = render(&input);
        if let Err(problem) = check_allow_list(&actual) {
            failures.push(format!("{name}: unsafe output ({problem}):\n{actual}"));
        }
        let expected_path = dir.join("expected.html");
        if update {
            fs::write(&expected_path, &actual).expect("write expected.html");
            continue;
        }
        let expected = fs::read_to_string(&expected_path).unwrap_or_default();
        if actual != expected {
            failures.push(format!(
                "{name}: mismatch\n--- expected ---\n{expected}\n--- actual ---\n{actual}\n---"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n\n")
    );
}

/// Walks every tag of ammonia's serialized output. Text never contains a raw
/// `<` (it is serialized as `&lt;`), so outside attribute values each `<`
/// starts a tag; attribute values are always double-quoted.
fn check_allow_list(html: &str) -> Result<(), String> {
    const TAGS: &[&str] = &[
        "a",
        "blockquote",
        "br",
        "code",
        "del",
        "em",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "input",
        "li",
        "ol",
        "p",
        "pre",
        "strong",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "tr",
        "ul",
    ];
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        let tag = &rest[start + 1..];
        let tag = tag.strip_prefix('/').unwrap_or(tag);
        let name_end = tag.find([' ', '>']).ok_or("unterminated tag")?;
        let name = &tag[..name_end];
        if !TAGS.contains(&name) {
            return Err(format!("tag <{name}>"));
        }
        let mut attrs = &tag[name_end..];
        loop {
            attrs = attrs.trim_start();
            if let Some(after) = attrs.strip_prefix('>') {
                rest = after;
                break;
            }
            let (attr, after) = attrs.split_once("=\"").ok_or("attribute without value")?;
            let (value, after) = after.split_once('"').ok_or("unterminated attribute")?;
            let ok = match (name, attr) {
                ("a", "href") => ["http:", "https:", "mailto:"]
                    .iter()
                    .any(|scheme| value.to_ascii_lowercase().starts_with(scheme)),
                ("a", "rel") => value == "noopener noreferrer",
                ("a", "title") | ("ol", "start") => true,
                ("code", "class") => value.starts_with("language-") && !value.contains(' '),
                ("input", "type") => value == "checkbox",
                ("input", "checked" | "disabled") => value.is_empty(),
                _ => false,
            };
            if !ok {
                return Err(format!("attribute {attr}=\"{value}\" on <{name}>"));
            }
            attrs = after;
        }
    }
    Ok(())
}
