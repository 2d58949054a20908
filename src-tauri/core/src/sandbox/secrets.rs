//! What no command, user hook or MCP server may read: the person's secrets (keys, tokens,
//! credentials, browser profiles, the keyring's files) and Mandate's own settings and data
//! (task history of every workspace, checkpoints of other workspaces' files). The list lives
//! here, and only here.
//!
//! - Under bubblewrap each existing path is hidden: an empty `tmpfs` over a directory, an empty
//!   read-only file (`/dev/null`) over a file.
//! - Under Landlock alone (which has no deny rules), reading files is granted not on `/` but on
//!   an allow-list that leaves them out ([`readable_around`]): every entry of `/` except the one
//!   leading to a protected path, then, walking down that path, its siblings. Listing names
//!   stays allowed everywhere (tools walk directories). An entry created after the list is made
//!   is not readable by that command.
//!
//! Both lists depend on what the machine holds (the home directory's entries), not on the
//! command: each is made once and kept while the directories it was read from are unchanged
//! (their modification and change times, and inode), so a command's set-up reads a few stamps
//! instead of listing and resolving every entry again.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Paths under the home directory that hold the person's secrets. Tool chains (`~/.cargo`,
/// `~/.rustup`, `~/.npm`, …) stay readable; only the credential files inside them are here.
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".docker/config.json",
    ".kube",
    ".password-store",
    ".local/share/keyrings",
    ".pki",
    ".vault-token",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json",
    // Package registries' tokens, where they have a file of their own. Files that also say
    // where packages come from (`~/.npmrc`, `~/.yarnrc.yml`, Maven's `settings.xml`, Gradle's
    // `gradle.properties`, `NuGet.Config`, `~/.terraformrc`) are not hidden: without them a
    // command would fetch a private package's name from the public registry instead.
    ".gem/credentials",
    ".m2/settings-security.xml",
    ".composer/auth.json",
    ".config/composer/auth.json",
    // Databases, object stores, container registries, other clouds and keys.
    ".pgpass",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".config/rclone",
    ".config/containers/auth.json",
    ".dockercfg",
    ".config/doctl",
    ".config/hcloud",
    ".oci",
    ".fly",
    ".wrangler",
    ".databrickscfg",
    ".config/op",
    ".config/sops",
    ".config/age",
    ".config/glab-cli",
    ".config/ngrok",
    ".ngrok2",
    ".pulumi/credentials.json",
    ".kaggle",
    ".sentryclirc",
    ".cloudflared",
    ".minikube",
    ".docker/machine",
    ".sbt/.credentials",
    ".ivy2/.credentials",
    ".config/pypoetry/auth.toml",
    ".local/share/python_keyring",
    ".config/solana/id.json",
    ".ethereum/keystore",
    // Shell and client histories: tokens typed on a command line stay in them.
    ".bash_history",
    ".zsh_history",
    ".histfile",
    ".local/share/fish/fish_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".rediscli_history",
    // Messengers.
    ".local/share/TelegramDesktop",
    ".config/Signal",
    ".config/Slack",
    ".config/discord",
    ".config/Element",
    // Other AI tools' keys and sessions.
    ".cache/huggingface/token",
    ".claude.json",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".config/github-copilot",
    ".continue/config.json",
    ".continue/config.yaml",
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    ".var/app/org.mozilla.firefox",
    ".var/app/com.google.Chrome",
    ".var/app/org.chromium.Chromium",
    "snap/firefox",
    "snap/chromium",
];

/// Variables that move a secret out of the home directory (the tool then reads it there):
/// each names a file or directory, `KUBECONFIG` a `:`-separated list; and the person's own
/// list, `MANDATE_PROTECTED_PATHS`.
pub const ENV_SECRETS: &[&str] = &[
    "GNUPGHOME",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AZURE_CONFIG_DIR",
    "CLOUDSDK_CONFIG",
    "KUBECONFIG",
    "DOCKER_CONFIG",
    "GH_CONFIG_DIR",
    "PASSWORD_STORE_DIR",
    "VAULT_CONFIG_PATH",
    "NETRC",
    "PGPASSFILE",
    "REGISTRY_AUTH_FILE",
    "BOTO_CONFIG",
    "RCLONE_CONFIG",
    "SOPS_AGE_KEY_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "HF_TOKEN_PATH",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    // The person's own additions: files and directories no command, hook or server may read,
    // `:`-separated (set where Mandate is started: a shell profile, a desktop file).
    "MANDATE_PROTECTED_PATHS",
];

/// Variables that move a whole tree of [`HOME_SECRETS`] elsewhere: the entries under the
/// home-relative prefix are then also looked for under the variable's directory.
const MOVED_TREES: &[(&str, &str)] = &[
    ("XDG_CONFIG_HOME", ".config/"),
    ("XDG_DATA_HOME", ".local/share/"),
    ("XDG_CACHE_HOME", ".cache/"),
    ("CARGO_HOME", ".cargo/"),
];

/// The secrets the environment `var` names ([`ENV_SECRETS`]), and those of [`HOME_SECRETS`]
/// in trees it moves out of the home directory ([`MOVED_TREES`]); absolute paths only (a
/// relative one depends on where a tool runs, and could name anything).
pub fn named_by_environment(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (name, prefix) in MOVED_TREES {
        let Some(base) = var(name).map(PathBuf::from).filter(|p| p.is_absolute()) else {
            continue;
        };
        out.extend(
            HOME_SECRETS
                .iter()
                .filter_map(|rel| rel.strip_prefix(prefix))
                .map(|rest| base.join(rest)),
        );
    }
    for name in ENV_SECRETS {
        let Some(value) = var(name) else {
            continue;
        };
        let paths: Vec<PathBuf> = if matches!(*name, "KUBECONFIG" | "MANDATE_PROTECTED_PATHS") {
            std::env::split_paths(&value).collect()
        } else {
            vec![PathBuf::from(value)]
        };
        out.extend(paths.into_iter().filter(|p| p.is_absolute()));
    }
    out
}

/// The person's home directory (`HOME`), when it is absolute.
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// The protected paths that exist, symlinks resolved (what the kernel checks is where a file
/// really is), top-most only: [`HOME_SECRETS`] under `home`, then `own` (Mandate's settings
/// and data directories, and what the person added).
pub fn protected_paths(home: Option<&Path>, own: &[PathBuf]) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(home) = home {
        candidates.extend(HOME_SECRETS.iter().map(|rel| home.join(rel)));
    }
    candidates.extend(own.iter().cloned());
    static KEPT: Mutex<Option<Kept>> = Mutex::new(None);
    // A candidate appears, vanishes or is replaced by a link: its directory's stamp changes.
    let dirs: BTreeSet<PathBuf> = candidates
        .iter()
        .filter_map(|c| c.parent().map(Path::to_path_buf))
        .collect();
    kept(&KEPT, candidates.clone(), dirs, || {
        resolve_protected(candidates)
    })
}

fn resolve_protected(candidates: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = candidates
        .into_iter()
        .filter_map(|path| match path.canonicalize() {
            Ok(real) => Some(real),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // Unreadable to Mandate: to commands too, but keep it, absolute, to be sure.
            Err(_) => std::path::absolute(&path).ok(),
        })
        .collect();
    found.sort();
    let mut top: Vec<PathBuf> = Vec::new();
    for path in found {
        if !top.iter().any(|t| path.starts_with(t)) {
            top.push(path);
        }
    }
    top
}

/// What a directory's entries were when a list was made from them.
type Stamp = Option<(i64, i64, i64, i64, u64)>;

fn stamp(dir: &Path) -> Stamp {
    let m = std::fs::symlink_metadata(dir).ok()?;
    Some((
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        m.ino(),
    ))
}

/// A list made from `key`, and the stamps of the directories it was read from.
struct Kept {
    key: Vec<PathBuf>,
    stamps: Vec<(PathBuf, Stamp)>,
    value: Vec<PathBuf>,
}

/// The list for `key`: the one kept if made from the same key and `dirs` are unchanged, else
/// made now (`make`) and kept. The stamps are taken before making it: a change during the
/// making is seen next time.
fn kept(
    cell: &Mutex<Option<Kept>>,
    key: Vec<PathBuf>,
    dirs: BTreeSet<PathBuf>,
    make: impl FnOnce() -> Vec<PathBuf>,
) -> Vec<PathBuf> {
    let stamps: Vec<(PathBuf, Stamp)> = dirs
        .into_iter()
        .map(|d| {
            let s = stamp(&d);
            (d, s)
        })
        .collect();
    let mut slot = cell.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(k) = slot.as_ref().filter(|k| k.key == key && k.stamps == stamps) {
        return k.value.clone();
    }
    let value = make();
    *slot = Some(Kept {
        key,
        stamps,
        value: value.clone(),
    });
    value
}

/// Whether `path` is inside one of `protected` or contains one.
pub fn overlaps(path: &Path, protected: &[PathBuf]) -> bool {
    protected
        .iter()
        .any(|p| path.starts_with(p) || p.starts_with(path))
}

/// The paths whose whole trees may be read when `protected` may not: `/` when nothing is
/// protected; otherwise every entry of each directory leading to a protected path, except
/// those leading to or being one, each resolved (a symlink is granted where it points, and
/// left out when that is or holds a protected path). A directory that cannot be listed gives
/// nothing: what cannot be seen is not granted.
pub fn readable_around(protected: &[PathBuf]) -> Vec<PathBuf> {
    if protected.is_empty() {
        return vec![PathBuf::from("/")];
    }
    let leading: BTreeSet<PathBuf> = protected
        .iter()
        .flat_map(|p| p.ancestors().skip(1))
        .map(Path::to_path_buf)
        .collect();
    static KEPT: Mutex<Option<Kept>> = Mutex::new(None);
    let dirs = leading.clone();
    kept(&KEPT, protected.to_vec(), dirs, || {
        list_around(protected, &leading)
    })
}

fn list_around(protected: &[PathBuf], leading: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let mut out: BTreeSet<PathBuf> = BTreeSet::new();
    for dir in leading {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(real) = entry.path().canonicalize() else {
                continue;
            };
            if !overlaps(&real, protected) {
                out.insert(real);
            }
        }
    }
    out.into_iter().collect()
}

/// The protected paths a command line or its output speaks of, as the model would write them
/// (absolute, `~/…`, `$HOME/…`, or relative to the home directory), for a note saying why it
/// could not read them.
pub fn mentioned(texts: &[&str], protected: &[PathBuf], home: Option<&Path>) -> Vec<String> {
    let mut out = Vec::new();
    for path in protected {
        let mut spellings = vec![path.display().to_string()];
        if let Some(rel) = home.and_then(|h| path.strip_prefix(h).ok()) {
            let rel = rel.display().to_string();
            spellings.push(format!("~/{rel}"));
            spellings.push(format!("$HOME/{rel}"));
            spellings.push(format!("${{HOME}}/{rel}"));
            if rel.len() >= 4 {
                spellings.push(rel);
            }
        }
        if spellings
            .iter()
            .any(|s| texts.iter().any(|t| t.contains(s.as_str())))
        {
            out.push(path.display().to_string());
        }
    }
    out
}

/// What the model is told when a command touched protected paths.
pub fn note(paths: &[String]) -> String {
    format!(
        "\n[Mandate: `{}` is protected: commands, hooks and MCP servers cannot read the person's secrets (keys, tokens, credentials, browser profiles, the keyring) or Mandate's own settings and data. Do not try to reach them another way.]\n",
        paths.join("`, `")
    )
}
