use super::map::{MapRequest, RepoMap};
use super::*;

fn names(lang: Lang, source: &str) -> Vec<String> {
    symbols(lang, source.as_bytes())
        .unwrap_or_else(|| panic!("{lang:?} has no tags"))
        .definitions
        .into_iter()
        .map(|d| d.name)
        .collect()
}

#[test]
fn each_language_names_its_definitions() {
    let cases: [(Lang, &str, &[&str]); 9] = [
        (
            Lang::Rust,
            "pub struct Parser { pos: usize }\nimpl Parser {\n    pub fn parse(&mut self) -> u32 { 1 }\n}\nfn helper() {}\n",
            &["Parser", "parse", "helper"],
        ),
        (
            Lang::Python,
            "class Lexer:\n    def tokenize(self, text):\n        return []\n\ndef main():\n    pass\n",
            &["Lexer", "tokenize", "main"],
        ),
        (
            Lang::TypeScript,
            "export interface Shape { area(): number }\nexport class Circle implements Shape { area() { return 1 } }\nexport function draw(s: Shape) {}\n",
            &["Shape", "Circle", "draw"],
        ),
        (
            Lang::Tsx,
            "export function App() { return <div/> }\n",
            &["App"],
        ),
        (
            Lang::JavaScript,
            "function render(x) { return x }\nclass View { show() {} }\n",
            &["render", "View", "show"],
        ),
        (
            Lang::Go,
            "package main\ntype Server struct{}\nfunc (s *Server) Serve() {}\nfunc main() {}\n",
            &["Server", "Serve", "main"],
        ),
        (
            Lang::Java,
            "class Account {\n  void deposit(int n) {}\n}\n",
            &["Account", "deposit"],
        ),
        (
            Lang::C,
            "struct point { int x; };\nint add(int a, int b) { return a + b; }\n",
            &["point", "add"],
        ),
        (
            Lang::Cpp,
            "class Widget { public: void draw(); };\nint area(int w) { return w; }\n",
            &["Widget", "area"],
        ),
    ];
    for (lang, source, expected) in cases {
        let found = names(lang, source);
        for name in expected {
            assert!(
                found.iter().any(|f| f == name),
                "{lang:?}: {name} not in {found:?}"
            );
        }
    }
}

#[test]
fn a_definition_carries_its_lines_and_signature() {
    let s = symbols(
        Lang::Rust,
        b"// a comment\n/// Parses.\npub fn parse(input: &str) -> Result<u32, Error> {\n    Ok(1)\n}\n",
    )
    .expect("rust");
    let d = s
        .definitions
        .iter()
        .find(|d| d.name == "parse")
        .expect("parse");
    assert_eq!((d.start_line, d.end_line), (3, 5));
    assert_eq!(d.line, "pub fn parse(input: &str) -> Result<u32, Error> {");
    assert_eq!(d.kind, "function");
}

#[test]
fn syntax_errors_are_found_with_their_place_and_valid_code_has_none() {
    assert!(syntax_problems("src/ok.rs", "fn main() { let x = 1; }\n").is_empty());
    let broken = syntax_problems("src/bad.rs", "fn main() {\n    let x = ;\n}\n");
    assert!(!broken.is_empty());
    assert_eq!(broken[0].line, 2, "{broken:?}");
    let unclosed = syntax_problems("src/open.rs", "fn main() {\n    call(1, 2\n");
    assert!(!unclosed.is_empty(), "an unclosed call is an error");
    assert!(!syntax_problems("app.py", "def f(:\n    pass\n").is_empty());
    assert!(!syntax_problems("app.ts", "const x: = 3;\n").is_empty());
    // Files of no parsed language are never judged.
    assert!(syntax_problems("notes.md", "fn main( {").is_empty());
    assert!(syntax_problems("Makefile", "fn main( {").is_empty());
    let said = describe_problems(&broken);
    assert!(said.starts_with("line 2, column "), "{said}");
}

fn repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tmp");
    let files = [
        ("src/main.rs", "mod parser;\nfn main() { let ast = parser::parse(\"1\"); }\n"),
        ("src/parser.rs", "use crate::lexer::tokenize;\npub fn parse(s: &str) -> Ast { let t = tokenize(s); Ast }\npub struct Ast;\n"),
        ("src/lexer.rs", "pub fn tokenize(s: &str) -> Vec<Token> { Vec::new() }\npub struct Token;\n"),
        ("src/unrelated.rs", "pub fn other() {}\npub fn another() {}\n"),
        ("web/app.ts", "export function start(): void {}\n"),
        ("README.md", "# Demo\n"),
    ];
    for (path, text) in files {
        let abs = tmp.path().join(path);
        std::fs::create_dir_all(abs.parent().expect("parent")).expect("mkdir");
        std::fs::write(abs, text).expect("write");
    }
    tmp
}

fn order(map: &str) -> Vec<&str> {
    map.lines()
        .filter(|l| l.ends_with(':') && !l.starts_with(' '))
        .collect()
}

#[test]
fn the_map_ranks_a_focused_files_neighbours_first_and_a_mentioned_name_s_file() {
    let tmp = repo();
    let map = RepoMap::default();
    let text = map.render(
        tmp.path(),
        &MapRequest {
            focus: vec!["src/main.rs".into()],
            mentioned: Vec::new(),
            budget_tokens: 2000,
        },
    );
    let files = order(&text);
    let at = |f: &str| files.iter().position(|l| *l == format!("{f}:")).expect(f);
    assert!(at("src/parser.rs") < at("src/unrelated.rs"), "{text}");
    assert!(at("src/lexer.rs") < at("src/unrelated.rs"), "{text}");
    assert!(text.contains("pub fn parse(s: &str) -> Ast {"), "{text}");
    assert!(text.contains("Other files:\nREADME.md"), "{text}");

    let text = map.render(
        tmp.path(),
        &MapRequest {
            focus: Vec::new(),
            mentioned: vec!["other".into()],
            budget_tokens: 2000,
        },
    );
    assert_eq!(order(&text)[0], "src/unrelated.rs:", "{text}");
}

#[test]
fn the_map_follows_an_edit_and_keeps_to_its_budget() {
    let tmp = repo();
    let map = RepoMap::default();
    let request = MapRequest {
        budget_tokens: 2000,
        ..MapRequest::default()
    };
    assert!(!map.render(tmp.path(), &request).contains("fn renamed"));
    std::fs::write(
        tmp.path().join("src/unrelated.rs"),
        "pub fn renamed_function() {}\n",
    )
    .expect("edit");
    let text = map.render(tmp.path(), &request);
    assert!(text.contains("pub fn renamed_function() {}"), "{text}");
    assert!(!text.contains("pub fn other"), "{text}");
    std::fs::remove_file(tmp.path().join("src/lexer.rs")).expect("rm");
    assert!(!map.render(tmp.path(), &request).contains("lexer"));

    let small = map.render(
        tmp.path(),
        &MapRequest {
            budget_tokens: 64,
            ..MapRequest::default()
        },
    );
    assert!(small.len() <= 64 * 4 + 200, "{small}");
    assert!(small.contains("more files left out for space"), "{small}");
}

#[test]
fn a_map_of_many_files_is_parsed_on_every_core_and_each_file_once() {
    let tmp = tempfile::tempdir().expect("tmp");
    for k in 0..60 {
        let abs = tmp.path().join(format!("src/m{}/f{k}.rs", k % 7));
        std::fs::create_dir_all(abs.parent().expect("parent")).expect("mkdir");
        // Each file defines its own function and calls the next one's.
        let text = format!("pub fn defined_{k}() {{ defined_{}(); }}\n", (k + 1) % 60);
        std::fs::write(abs, text).expect("write");
    }
    let map = RepoMap::default();
    let scanned = map.scan(tmp.path());
    assert_eq!(scanned.len(), 60);
    let mut paths: Vec<&str> = scanned.iter().map(|(p, _)| p.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        scanned.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>()
    );
    for (path, symbols) in &scanned {
        let k: usize = path
            .rsplit_once("/f")
            .expect("name")
            .1
            .trim_end_matches(".rs")
            .parse()
            .expect("k");
        let symbols = symbols.as_ref().expect("parsed");
        assert_eq!(
            symbols.definitions[0].name,
            format!("defined_{k}"),
            "{path}"
        );
    }
    // Scanned again unchanged: the same parses, shared, not made again.
    let again = map.scan(tmp.path());
    for ((_, a), (_, b)) in scanned.iter().zip(&again) {
        assert!(std::sync::Arc::ptr_eq(
            a.as_ref().expect("a"),
            b.as_ref().expect("b")
        ));
    }
    // One file removed, one added, one edited: only those change.
    std::fs::remove_file(tmp.path().join("src/m0/f0.rs")).expect("rm");
    std::fs::write(tmp.path().join("src/m1/new.rs"), "pub fn brand_new() {}\n").expect("add");
    std::fs::write(tmp.path().join("src/m1/f1.rs"), "pub fn edited() {}\n").expect("edit");
    let third = map.scan(tmp.path());
    assert_eq!(third.len(), 60);
    let find = |p: &str| {
        third
            .iter()
            .find(|(q, _)| q == p)
            .and_then(|(_, s)| s.clone())
    };
    assert!(third.iter().all(|(p, _)| p != "src/m0/f0.rs"));
    assert_eq!(
        find("src/m1/new.rs").expect("new").definitions[0].name,
        "brand_new"
    );
    assert_eq!(
        find("src/m1/f1.rs").expect("edited").definitions[0].name,
        "edited"
    );
    let untouched = scanned
        .iter()
        .find(|(p, _)| p == "src/m2/f2.rs")
        .and_then(|(_, s)| s.clone());
    assert!(std::sync::Arc::ptr_eq(
        &untouched.expect("2"),
        &find("src/m2/f2.rs").expect("2")
    ));
}

#[test]
fn links_out_of_the_workspace_are_never_parsed_into_the_map_on_any_core() {
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(
        outside.path().join("secret.rs"),
        "pub fn stolen_secret_key() {}\n",
    )
    .expect("secret");
    std::fs::create_dir(outside.path().join("lib")).expect("dir");
    std::fs::write(
        outside.path().join("lib/inner.rs"),
        "pub fn stolen_inner_fn() {}\n",
    )
    .expect("inner");
    let tmp = tempfile::tempdir().expect("tmp");
    // Enough files that they are parsed on every core.
    for k in 0..40 {
        let abs = tmp.path().join(format!("src/f{k}.rs"));
        std::fs::create_dir_all(abs.parent().expect("parent")).expect("mkdir");
        std::fs::write(abs, format!("pub fn own_{k}() {{}}\n")).expect("write");
    }
    std::os::unix::fs::symlink(
        outside.path().join("secret.rs"),
        tmp.path().join("src/key.rs"),
    )
    .expect("file link");
    std::os::unix::fs::symlink(outside.path().join("lib"), tmp.path().join("src/lib"))
        .expect("folder link");
    let map = RepoMap::default();
    let text = map.render(
        tmp.path(),
        &MapRequest {
            budget_tokens: 100_000,
            ..MapRequest::default()
        },
    );
    assert!(text.contains("pub fn own_39() {}"), "{text}");
    assert!(!text.contains("stolen_"), "{text}");
    let scanned = map.scan(tmp.path());
    assert!(scanned.iter().all(|(_, s)| s
        .as_ref()
        .is_none_or(|s| s.definitions.iter().all(|d| !d.name.starts_with("stolen_")))));
    // A file listed as a regular file and swapped for a link before it is read (what a command
    // running meanwhile could do): the readers on every core refuse it.
    let mut files: Vec<(String, (u64, i128))> =
        (0..40).map(|k| (format!("src/f{k}.rs"), (1, 1))).collect();
    files.push(("src/key.rs".into(), (1, 1)));
    files.push(("src/lib/inner.rs".into(), (1, 1)));
    let todo: Vec<usize> = (0..files.len()).collect();
    let real_root = tmp.path().canonicalize().expect("real");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let parsed = super::map::parse_all(tmp.path(), &real_root, &files, &todo, until);
    assert_eq!(parsed.len(), files.len());
    for (i, symbols) in parsed {
        let rel = &files[i].0;
        if rel == "src/key.rs" || rel == "src/lib/inner.rs" {
            assert!(symbols.is_none(), "{rel} was read through its link");
        } else {
            assert!(symbols.is_some(), "{rel}");
        }
    }
}

#[test]
fn every_embedded_grammar_loads_and_parses_from_a_sealed_memory_file() {
    for lang in ALL {
        let name = lang.grammar_name();
        let packed = grammar::embedded(name).expect("embedded");
        let language = grammar::load(name, packed).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&language).expect("ABI version");
        assert!(parser.parse("x", None).is_some(), "{name} parses");
    }
}

#[test]
fn a_grammar_that_is_damaged_too_large_foreign_or_misnamed_is_refused_with_its_reason() {
    use std::io::Write;
    let xz = |bytes: &[u8]| {
        let mut encoder = xz2::write::XzEncoder::new(Vec::new(), 1);
        encoder.write_all(bytes).expect("xz");
        encoder.finish().expect("xz")
    };
    let damaged = grammar::load("rust", b"\xff\xfe not xz at all").unwrap_err();
    assert!(
        matches!(damaged, grammar::GrammarError::Inflate(_)),
        "{damaged}"
    );
    let bomb = grammar::load("rust", &xz(&vec![0u8; (64 << 20) + 1])).unwrap_err();
    assert!(matches!(bomb, grammar::GrammarError::TooLarge), "{bomb}");
    let foreign = grammar::load("rust", &xz(b"#!/bin/sh\necho not a shared object\n"));
    let foreign = foreign.unwrap_err();
    assert!(
        matches!(foreign, grammar::GrammarError::Open(_)),
        "{foreign}"
    );
    // Go's shared object asked for Rust's entry point.
    let packed = grammar::embedded("go").expect("embedded");
    let misnamed = grammar::load("rust", packed).unwrap_err();
    assert!(
        misnamed.to_string().contains("tree_sitter_rust"),
        "{misnamed}"
    );
    assert!(grammar::embedded("cobol").is_none());
}

#[test]
fn the_memory_file_a_grammar_is_loaded_from_cannot_be_changed_once_written() {
    use std::io::{Seek, Write};
    let fd = grammar::sealed_memory_file("test", b"\x7fELF and the rest").expect("memfd");
    let mut file = std::fs::File::from(fd);
    let seals = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&file), libc::F_GET_SEALS) };
    let all = libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
    assert_eq!(seals & all, all, "seals {seals:#x}");
    file.rewind().expect("seek");
    assert!(
        file.write_all(b"\x7fELF and other code").is_err(),
        "overwritten"
    );
    assert!(file.set_len(4).is_err(), "shrunk");
    assert!(file.set_len(1 << 20).is_err(), "grown");
    let mut path = std::path::PathBuf::from("/proc/self/fd");
    path.push(std::os::fd::AsRawFd::as_raw_fd(&file).to_string());
    assert!(
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"x"))
            .is_err(),
        "written through /proc"
    );
}
