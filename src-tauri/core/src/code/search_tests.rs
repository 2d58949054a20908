use super::search::{terms, SearchIndex};

fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tmp");
    for (path, text) in files {
        let abs = tmp.path().join(path);
        std::fs::create_dir_all(abs.parent().expect("parent")).expect("mkdir");
        std::fs::write(abs, text).expect("write");
    }
    tmp
}

const NET: &str = "use std::time::Duration;\n\n/// Sends the request again with exponential backoff until the server answers.\npub fn fetch_again(url: &str) -> Result<(), Error> {\n    Ok(())\n}\n\npub fn unrelated_helper() {}\n";

fn nothing(_: &str) -> bool {
    false
}

#[test]
fn identifiers_are_split_into_their_words() {
    let t = terms("parseExpr HTTPServer snake_case_name x");
    for w in [
        "parseexpr",
        "parse",
        "expr",
        "snake_case_name",
        "snake",
        "case",
        "name",
        "httpserver",
    ] {
        assert!(t.contains(&w.to_string()), "{w}: {t:?}");
    }
    assert!(!t.contains(&"x".to_string()));
}

#[test]
fn a_function_is_found_by_a_word_of_its_doc_comment() {
    let tmp = repo(&[
        ("src/net.rs", NET),
        (
            "src/math.py",
            "def add(a, b):\n    \"\"\"Adds two numbers.\"\"\"\n    return a + b\n",
        ),
        ("docs/guide.md", "# Guide\nNothing about retries here.\n"),
    ]);
    let index = SearchIndex::default();
    let hits = index.search(tmp.path(), "exponential backoff", "", 5, &nothing);
    assert!(!hits.is_empty());
    assert_eq!(hits[0].path, "src/net.rs");
    assert_eq!(
        hits[0].start_line, 3,
        "the doc comment starts the chunk: {hits:?}"
    );
    assert!(
        hits[0].text.contains("pub fn fetch_again"),
        "{}",
        hits[0].text
    );
    assert!(hits[0].score > 0.0);
    // By a part of a name, and only under a folder when asked.
    let hits = index.search(tmp.path(), "add numbers", "src", 5, &nothing);
    assert_eq!(hits[0].path, "src/math.py");
    assert!(index
        .search(tmp.path(), "add numbers", "docs", 5, &nothing)
        .is_empty());
}

#[test]
fn an_edit_mandate_made_is_found_at_once_and_the_old_text_no_more() {
    let tmp = repo(&[("src/net.rs", NET)]);
    let index = SearchIndex::default();
    assert!(!index
        .search(tmp.path(), "backoff", "", 5, &nothing)
        .is_empty());
    std::fs::write(
        tmp.path().join("src/net.rs"),
        "/// Opens a circuit breaker after repeated failures.\npub fn trip() {}\n",
    )
    .expect("edit");
    index.touched("src/net.rs");
    assert!(index
        .search(tmp.path(), "backoff", "", 5, &nothing)
        .is_empty());
    let hits = index.search(tmp.path(), "circuit breaker", "", 5, &nothing);
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].start_line, hits[0].end_line), (1, 2));
}

#[test]
fn what_is_left_out_is_never_found() {
    let tmp = repo(&[
        ("src/net.rs", NET),
        (
            "secrets/keys.rs",
            "/// exponential backoff secret\npub fn key() {}\n",
        ),
    ]);
    let index = SearchIndex::default();
    let skip = |rel: &str| rel.starts_with("secrets/");
    let hits = index.search(tmp.path(), "exponential backoff", "", 5, &skip);
    assert!(
        hits.iter().all(|h| !h.path.starts_with("secrets/")),
        "{hits:?}"
    );
    assert_eq!(hits.len(), 1);
}

#[test]
fn a_link_to_a_file_outside_the_workspace_is_never_searched() {
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(
        outside.path().join("id_key"),
        "/// exponential backoff private key\n",
    )
    .expect("key");
    let tmp = repo(&[("src/net.rs", NET)]);
    std::os::unix::fs::symlink(outside.path().join("id_key"), tmp.path().join("src/key.rs"))
        .expect("link");
    let hits = SearchIndex::default().search(tmp.path(), "private key", "", 5, &nothing);
    assert!(hits.iter().all(|h| h.path != "src/key.rs"), "{hits:?}");
}

#[test]
fn a_file_swapped_for_a_link_after_it_was_indexed_is_not_read_through_it() {
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(
        outside.path().join("secret"),
        "/// exponential backoff SECRET-LINE\n",
    )
    .expect("secret");
    let tmp = repo(&[("src/net.rs", NET)]);
    let index = SearchIndex::default();
    assert!(!index
        .search(tmp.path(), "exponential backoff", "", 5, &nothing)
        .is_empty());
    // Within the time the listing is trusted, the file becomes a link out.
    std::fs::remove_file(tmp.path().join("src/net.rs")).expect("rm");
    std::os::unix::fs::symlink(outside.path().join("secret"), tmp.path().join("src/net.rs"))
        .expect("link");
    let hits = index.search(tmp.path(), "exponential backoff", "", 5, &nothing);
    assert!(
        hits.iter().all(|h| !h.text.contains("SECRET-LINE")),
        "{hits:?}"
    );
}

/// Waits for the background save of the index.
fn saved(path: &std::path::Path) -> Vec<u8> {
    for _ in 0..200 {
        if let Ok(bytes) = std::fs::read(path) {
            return bytes;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("the index was not saved at {}", path.display());
}

#[test]
fn the_index_is_kept_in_the_data_directory_and_only_what_changed_is_read_again() {
    let tmp = repo(&[("src/net.rs", NET), ("src/other.rs", "pub fn zebra() {}\n")]);
    let data = tempfile::tempdir().expect("data");
    let at = super::search::index_path(data.path(), tmp.path());
    assert!(at.starts_with(data.path()));
    let first = SearchIndex::stored_at(at.clone());
    assert_eq!(
        first.search(tmp.path(), "backoff", "", 5, &nothing)[0].path,
        "src/net.rs"
    );
    saved(&at);
    // Nothing was written into the workspace.
    let mut inside: Vec<String> = crate::tools::walk::files_stamped(tmp.path(), 100)
        .into_iter()
        .map(|(rel, _)| rel)
        .collect();
    inside.sort();
    assert_eq!(inside, ["src/net.rs", "src/other.rs"]);

    // The file changes behind the index's back, keeping its size and time: an index read
    // from disk trusts its stamp (it was not read again), a new one reads it.
    let path = tmp.path().join("src/net.rs");
    let when = std::fs::metadata(&path)
        .expect("meta")
        .modified()
        .expect("mtime");
    std::fs::write(
        &path,
        NET.replace("exponential backoff", "geometrical waiting"),
    )
    .expect("write");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .expect("open")
        .set_modified(when)
        .expect("touch");
    let again = SearchIndex::stored_at(at.clone());
    assert_eq!(
        again.search(tmp.path(), "backoff", "", 5, &nothing)[0].path,
        "src/net.rs"
    );
    assert!(SearchIndex::default()
        .search(tmp.path(), "backoff", "", 5, &nothing)
        .is_empty());
    // A file that really changed is read again.
    std::fs::write(tmp.path().join("src/other.rs"), "pub fn giraffe() {}\n").expect("write");
    let third = SearchIndex::stored_at(at.clone());
    assert_eq!(
        third.search(tmp.path(), "giraffe", "", 5, &nothing)[0].path,
        "src/other.rs"
    );
    assert!(third
        .search(tmp.path(), "zebra", "", 5, &nothing)
        .is_empty());
}

#[test]
fn a_damaged_index_on_disk_is_ignored_and_built_again() {
    let tmp = repo(&[("src/net.rs", NET)]);
    let data = tempfile::tempdir().expect("data");
    let at = super::search::index_path(data.path(), tmp.path());
    SearchIndex::stored_at(at.clone()).search(tmp.path(), "backoff", "", 5, &nothing);
    let good = saved(&at);
    for damaged in [
        good[..good.len() / 2].to_vec(),
        b"MNDIDX01\xff\xff\xff\xff".to_vec(),
        b"not an index".to_vec(),
        [good.clone(), b"trailing".to_vec()].concat(),
    ] {
        std::fs::write(&at, &damaged).expect("damage");
        let hits =
            SearchIndex::stored_at(at.clone()).search(tmp.path(), "backoff", "", 5, &nothing);
        assert_eq!(hits[0].path, "src/net.rs");
        // The index built again replaces the damaged copy.
        for _ in 0..200 {
            if std::fs::read(&at).is_ok_and(|b| b != damaged) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        assert!(super::search::store_decodes(
            &std::fs::read(&at).expect("saved")
        ));
    }
}
