//! What the command policy file says about confinement (its `confinement:` section): the
//! build-output directories every command may write although no intent owns them, and the
//! environment commands get. The kernel enforces it (`crate::sandbox`); this is only data.

use regex::Regex;
use serde::Deserialize;

/// A directory name commands may write wherever it appears in the workspace (outside the
/// protected paths), so that builds and tests work: `target`, `node_modules`, `__pycache__`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildOutput {
    /// One directory name, no `/`.
    pub dir: String,
    /// Marker files: where one of them is (in the workspace root or the command's working
    /// directory) and the directory is missing, it is created before the command runs, so
    /// that the first build can write it. Empty: only existing directories are granted.
    pub when: Vec<String>,
}

/// The policy's confinement settings, checked at load.
#[derive(Debug, Clone, Default)]
pub struct ConfinementSettings {
    pub build_outputs: Vec<BuildOutput>,
    /// Variable names (or `PREFIX*` patterns) passed to commands from Mandate's own
    /// environment, in addition to the built-in list (`crate::sandbox::env`).
    pub pass_environment: Vec<String>,
    /// Variables set for every command. `{tmp}` in a value is the command's private
    /// temporary directory.
    pub set_environment: Vec<(String, String)>,
    /// Variables set when the command has no network, so tools fail fast and say why.
    pub offline_environment: Vec<(String, String)>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct ConfinementSpec {
    #[serde(default)]
    build_outputs: Vec<BuildOutputSpec>,
    #[serde(default)]
    environment: EnvironmentSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BuildOutputSpec {
    dir: String,
    #[serde(default)]
    when: Markers,
}

#[derive(Deserialize, Default)]
#[serde(untagged)]
enum Markers {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct EnvironmentSpec {
    #[serde(default)]
    pass: Vec<String>,
    #[serde(default)]
    set: Vec<VariableSpec>,
    #[serde(default)]
    offline: Vec<VariableSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VariableSpec {
    name: String,
    value: String,
}

/// Names that hold secrets by convention; the policy cannot pass them to commands.
fn looks_secret(name: &str) -> bool {
    static SECRET: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    SECRET
        .get_or_init(|| {
            Regex::new("(?i)(key|token|secret|passw|credential|auth|cookie|session)").ok()
        })
        .as_ref()
        .is_none_or(|r| r.is_match(name))
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ConfinementSettings {
    pub(super) fn compile(spec: ConfinementSpec) -> Result<ConfinementSettings, String> {
        let mut build_outputs = Vec::new();
        for output in spec.build_outputs {
            let dir = output.dir.trim().trim_end_matches('/').to_string();
            let protected = crate::workspace::protected_reason(&dir).is_some();
            if dir.is_empty() || dir.contains('/') || dir == "." || dir == ".." || protected {
                return Err(format!(
                    "build output `{}` must be one directory name (not `.git`, `.orchestration`, …)",
                    output.dir
                ));
            }
            let when = match output.when {
                Markers::None => Vec::new(),
                Markers::One(m) => vec![m],
                Markers::Many(m) => m,
            };
            if let Some(bad) = when.iter().find(|m| m.is_empty() || m.contains('/')) {
                return Err(format!(
                    "build output `{dir}`: marker `{bad}` must be a file name"
                ));
            }
            build_outputs.push(BuildOutput { dir, when });
        }
        for name in &spec.environment.pass {
            let bare = name.strip_suffix('*').unwrap_or(name);
            if !is_variable_name(bare) {
                return Err(format!(
                    "environment: `{name}` is not a variable name (or `PREFIX*`)"
                ));
            }
            if looks_secret(bare) {
                return Err(format!(
                    "environment: `{name}` looks like it holds a secret; commands never get secrets"
                ));
            }
        }
        let variables = |specs: Vec<VariableSpec>| {
            specs
                .into_iter()
                .map(|v| {
                    if is_variable_name(&v.name) {
                        Ok((v.name, v.value))
                    } else {
                        Err(format!("environment: `{}` is not a variable name", v.name))
                    }
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(ConfinementSettings {
            build_outputs,
            pass_environment: spec.environment.pass,
            set_environment: variables(spec.environment.set)?,
            offline_environment: variables(spec.environment.offline)?,
        })
    }

    /// The build-output directory names, for finding them in the workspace.
    pub fn build_output_names(&self) -> Vec<&str> {
        self.build_outputs.iter().map(|b| b.dir.as_str()).collect()
    }
}
