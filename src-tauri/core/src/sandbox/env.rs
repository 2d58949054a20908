//! The environment of a command: an allow-list, never "everything minus a few names". Only
//! variables that say where tools live and how to talk to the user pass; API keys, tokens,
//! session addresses (D-Bus, the SSH agent, the display) and everything else stay behind.

use std::path::Path;

use crate::hooks::command_policy::ConfinementSettings;

/// Passed from Mandate's environment to every command (the policy file adds to it).
pub const BUILTIN_PASS: [&str; 9] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ",
];

fn allowed(name: &str, patterns: &[&str]) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == *p,
    })
}

/// The whole environment for a command: the allowed variables of `source` (Mandate's own
/// environment, e.g. `std::env::vars()`), `SHELL=/bin/bash`, `TMPDIR` (and `TMP`, `TEMP`)
/// pointing at the private temporary directory, then the policy's `set` variables, and its
/// `offline` ones when the command has no network. A value in `secrets` is never passed,
/// whatever its name.
pub fn command_environment(
    source: impl IntoIterator<Item = (String, String)>,
    settings: &ConfinementSettings,
    temp_dir: &Path,
    network: bool,
    secrets: &crate::redact::Redactor,
) -> Vec<(String, String)> {
    let policy: Vec<&str> = settings
        .pass_environment
        .iter()
        .map(String::as_str)
        .collect();
    let mut env: Vec<(String, String)> = source
        .into_iter()
        .filter(|(name, value)| {
            (allowed(name, &BUILTIN_PASS) || allowed(name, &policy))
                && !secrets.contains_secret(value)
        })
        .collect();
    let tmp = temp_dir.to_string_lossy().into_owned();
    if !env.iter().any(|(n, _)| n == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    let mut set = |name: &str, value: String| {
        env.retain(|(n, _)| n != name);
        env.push((name.to_string(), value));
    };
    set("SHELL", "/bin/bash".to_string());
    for name in ["TMPDIR", "TMP", "TEMP"] {
        set(name, tmp.clone());
    }
    let offline = if network {
        &[][..]
    } else {
        &settings.offline_environment[..]
    };
    for (name, value) in settings.set_environment.iter().chain(offline) {
        set(name, value.replace("{tmp}", &tmp));
    }
    env.sort();
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::command_policy::CommandPolicy;
    use crate::redact::Redactor;

    #[test]
    fn only_allowed_variables_pass_and_secrets_never_do() {
        let redactor = Redactor::new();
        redactor.add("sk-test-1234567890");
        let source = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "C.UTF-8"),
            ("OPENAI_API_KEY", "sk-other"),
            ("MANDATE_API_KEY", "sk-test-1234567890"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1/bus"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent"),
            ("CARGO_HOME", "/home/u/.cargo"),
            ("LANG", "sk-test-1234567890"),
            ("TMPDIR", "/tmp"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let policy = CommandPolicy::builtin();
        let env = command_environment(
            source,
            policy.confinement(),
            Path::new("/tmp/mandate-cmd-x"),
            false,
            &redactor,
        );
        let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
        for kept in [
            "PATH",
            "HOME",
            "LC_ALL",
            "CARGO_HOME",
            "SHELL",
            "TMPDIR",
            "CARGO_NET_OFFLINE",
        ] {
            assert!(names.contains(&kept), "{kept} missing from {names:?}");
        }
        for dropped in [
            "OPENAI_API_KEY",
            "MANDATE_API_KEY",
            "DBUS_SESSION_BUS_ADDRESS",
            "SSH_AUTH_SOCK",
            "LANG",
        ] {
            assert!(!names.contains(&dropped), "{dropped} passed: {names:?}");
        }
        let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("TMPDIR"), Some("/tmp/mandate-cmd-x"));
        assert_eq!(
            get("npm_config_cache"),
            Some("/tmp/mandate-cmd-x/npm-cache")
        );
    }
}
