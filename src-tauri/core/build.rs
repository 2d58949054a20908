//! The grammars Mandate parses code with (`code::grammar`): each one compiled from its crate's
//! C sources into a shared object of its own, compressed, and embedded in the binary, where it
//! is loaded on first use. A grammar is mostly parse tables that xz shrinks to a fifteenth of
//! their size (C++: 3.6 MB -> 0.16 MB), and a session that opens no C++ file never maps C++'s.
//! The grammar crates are build dependencies: their sources are found with `cargo metadata`
//! and their tags queries copied from their constants.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One grammar: the crate that carries it, its name (the parser's entry point is
/// `tree_sitter_<name>`) and the folder of its C sources in the crate.
struct Grammar {
    krate: &'static str,
    name: &'static str,
    dir: &'static str,
}

const GRAMMARS: [Grammar; 9] = [
    Grammar {
        krate: "tree-sitter-cpp",
        name: "cpp",
        dir: "src",
    },
    Grammar {
        krate: "tree-sitter-rust",
        name: "rust",
        dir: "src",
    },
    Grammar {
        krate: "tree-sitter-typescript",
        name: "typescript",
        dir: "typescript/src",
    },
    Grammar {
        krate: "tree-sitter-typescript",
        name: "tsx",
        dir: "tsx/src",
    },
    Grammar {
        krate: "tree-sitter-c",
        name: "c",
        dir: "src",
    },
    Grammar {
        krate: "tree-sitter-python",
        name: "python",
        dir: "src",
    },
    Grammar {
        krate: "tree-sitter-javascript",
        name: "javascript",
        dir: "src",
    },
    Grammar {
        krate: "tree-sitter-java",
        name: "java",
        dir: "src",
    },
    Grammar {
        krate: "tree-sitter-go",
        name: "go",
        dir: "src",
    },
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    tags_queries(&out);
    let roots = crate_roots();
    let failed: Vec<BuildError> = std::thread::scope(|scope| {
        let builds: Vec<_> = GRAMMARS
            .iter()
            .map(|grammar| {
                let out = &out;
                let roots = &roots;
                scope.spawn(move || build(grammar, roots, out))
            })
            .collect();
        builds
            .into_iter()
            .filter_map(|b| match b.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some(BuildError::Panicked),
            })
            .collect()
    });
    if !failed.is_empty() {
        for e in failed {
            eprintln!("{e}");
        }
        std::process::exit(1);
    }
}

/// The grammars' own tags queries, as files the code includes.
fn tags_queries(out: &Path) {
    let queries = [
        ("rust", tree_sitter_rust::TAGS_QUERY),
        ("typescript", tree_sitter_typescript::TAGS_QUERY),
        ("javascript", tree_sitter_javascript::TAGS_QUERY),
        ("python", tree_sitter_python::TAGS_QUERY),
        ("go", tree_sitter_go::TAGS_QUERY),
        ("java", tree_sitter_java::TAGS_QUERY),
        ("c", tree_sitter_c::TAGS_QUERY),
        ("cpp", tree_sitter_cpp::TAGS_QUERY),
    ];
    for (name, query) in queries {
        let path = out.join(format!("tags-{name}.scm"));
        if let Err(e) = std::fs::write(&path, query) {
            eprintln!("cannot write {}: {e}", path.display());
            std::process::exit(1);
        }
    }
}

/// Where each grammar crate's sources are, from `cargo metadata` (registry, vendored or git
/// sources alike). Offline first: everything this build needs is already there; only a build
/// that fetched no dev-dependency (a release build on a fresh machine) lets cargo fetch the
/// manifests the workspace's metadata lists.
fn crate_roots() -> Vec<(String, PathBuf)> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("Cargo.toml");
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let metadata = |offline: bool| {
        let mut command = Command::new(&cargo);
        command
            .args([
                "metadata",
                "--format-version",
                "1",
                "--filter-platform",
                &target,
            ])
            .arg("--manifest-path")
            .arg(&manifest);
        if offline {
            command.arg("--offline");
        }
        command.output()
    };
    let output = match metadata(true) {
        Ok(o) if o.status.success() => o.stdout,
        _ => match metadata(false) {
            Ok(o) if o.status.success() => o.stdout,
            Ok(o) => fail(&format!(
                "cargo metadata failed (it finds the grammars' sources): {}",
                String::from_utf8_lossy(&o.stderr)
            )),
            Err(e) => fail(&format!("cannot run cargo metadata: {e}")),
        },
    };
    let metadata: serde_json::Value = match serde_json::from_slice(&output) {
        Ok(v) => v,
        Err(e) => fail(&format!("cargo metadata printed what is not JSON: {e}")),
    };
    let mut roots = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let (Some(name), Some(manifest)) =
            (package["name"].as_str(), package["manifest_path"].as_str())
        else {
            continue;
        };
        if GRAMMARS.iter().any(|g| g.krate == name) {
            if let Some(root) = Path::new(manifest).parent() {
                roots.push((name.to_string(), root.to_path_buf()));
            }
        }
    }
    roots
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(1);
}

/// Why a grammar could not be built.
#[derive(Debug, thiserror::Error)]
enum BuildError {
    #[error("{0}: not exactly one copy of its sources in cargo metadata")]
    Sources(&'static str),
    #[error("{krate}: compiling: {error}")]
    Compile {
        krate: &'static str,
        error: cc::Error,
    },
    #[error("{krate}: cannot run the C compiler to link: {error}")]
    Spawn {
        krate: &'static str,
        error: std::io::Error,
    },
    #[error("{krate}: linking its shared object failed: {stderr}")]
    Link { krate: &'static str, stderr: String },
    #[error("{path}: {error}")]
    File {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("a grammar's build panicked")]
    Panicked,
}

fn file_error(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError + '_ {
    move |error| BuildError::File {
        path: path.to_path_buf(),
        error,
    }
}

/// Compiles one grammar into `OUT_DIR/grammar-<name>.so.xz`.
fn build(grammar: &Grammar, roots: &[(String, PathBuf)], out: &Path) -> Result<(), BuildError> {
    let krate = grammar.krate;
    let mut candidates = roots.iter().filter(|(name, _)| name == krate);
    let (Some((_, root)), None) = (candidates.next(), candidates.next()) else {
        return Err(BuildError::Sources(krate));
    };
    let src = root.join(grammar.dir);
    let parser = src.join("parser.c");
    let scanner = src.join("scanner.c");
    println!("cargo:rerun-if-changed={}", parser.display());
    let work = out.join(format!("grammar-{}", grammar.name));
    std::fs::create_dir_all(&work).map_err(file_error(&work))?;
    let mut cc = cc::Build::new();
    // The same optimisation whatever the core's profile asks for (parsing speed is the
    // grammar's own, and the tables dominate its size either way).
    cc.std("c11")
        .opt_level(3)
        .include(&src)
        .file(&parser)
        .pic(true)
        .warnings(false)
        .cargo_metadata(false)
        // Only the entry point is exported (the parser marks it visible).
        .flag("-fvisibility=hidden")
        .out_dir(&work);
    if scanner.exists() {
        cc.file(&scanner);
        println!("cargo:rerun-if-changed={}", scanner.display());
    }
    let objects = cc
        .try_compile_intermediates()
        .map_err(|error| BuildError::Compile { krate, error })?;
    let shared = work.join(format!("libtree-sitter-{}.so", grammar.name));
    let linked = cc
        .get_compiler()
        .to_command()
        .arg("-shared")
        .arg("-o")
        .arg(&shared)
        .args(&objects)
        .args(["-Wl,--gc-sections", "-Wl,-z,relro", "-Wl,-z,now", "-Wl,-s"])
        .arg(format!("-Wl,-soname,libtree-sitter-{}.so", grammar.name))
        .output()
        .map_err(|error| BuildError::Spawn { krate, error })?;
    if !linked.status.success() {
        let stderr = String::from_utf8_lossy(&linked.stderr).into_owned();
        return Err(BuildError::Link { krate, stderr });
    }
    let bytes = std::fs::read(&shared).map_err(file_error(&shared))?;
    let target = out.join(format!("grammar-{}.so.xz", grammar.name));
    let packed = compress(&bytes).map_err(file_error(&target))?;
    std::fs::write(&target, packed).map_err(file_error(&target))
}

/// `bytes` as an xz stream at the strongest preset, its dictionary no larger than the object
/// (so that decoding one allocates no more than the object's size).
fn compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    // liblzma's LZMA_PRESET_EXTREME (not re-exported by xz2).
    const EXTREME: u32 = 1 << 31;
    let mut options = xz2::stream::LzmaOptions::new_preset(9 | EXTREME)?;
    let dictionary = u32::try_from(bytes.len().next_power_of_two())
        .unwrap_or(u32::MAX)
        .clamp(4096, 64 << 20);
    options.dict_size(dictionary);
    let mut filters = xz2::stream::Filters::new();
    filters.lzma2(&options);
    let stream = xz2::stream::Stream::new_stream_encoder(&filters, xz2::stream::Check::Crc64)?;
    let mut encoder = xz2::write::XzEncoder::new_stream(Vec::new(), stream);
    encoder.write_all(bytes)?;
    encoder.finish()
}
