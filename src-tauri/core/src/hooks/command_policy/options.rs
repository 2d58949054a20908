//! Options as the programs themselves read them. GNU `getopt_long` (and git's and npm's own
//! parsers) accept any unique prefix of a long option, `--exp=X` for `--expression=X`, and
//! short options clustered, `-ni` for `-n -i`. A policy names the option it fears once,
//! `--in-place`, and every spelling that reaches it is found here.

use super::classify::Arg;

/// Whether `arg` (one argument as the program sees it) uses `option`.
///
/// `option` is `--name` (a long option: `arg` matches when its name, before any `=`, is a
/// non-empty prefix of `name`, as a unique prefix would be read, or an ambiguous one refused)
/// or `-x` (a short option: `arg` matches when it is a cluster of short options containing
/// `x`; a value attached to an earlier letter is read as letters too, which errs towards
/// refusing).
pub(super) fn uses_option(arg: &str, option: &str) -> bool {
    if let Some(name) = option.strip_prefix("--") {
        let Some(written) = arg.strip_prefix("--") else {
            return false;
        };
        let written = written.split('=').next().unwrap_or_default();
        !written.is_empty() && name.starts_with(written)
    } else if let Some(letter) = option.strip_prefix('-') {
        arg.len() > 1
            && arg.starts_with('-')
            && !arg.starts_with("--")
            && letter.chars().next().is_some_and(|l| arg[1..].contains(l))
    } else {
        false
    }
}

/// The value of a long option written in full or as a prefix: `--exp=X` gives `Some("X")`
/// for `--expression`, and `--exp` alone gives `Some("")` (the value is the next argument).
pub(super) fn long_value<'a>(arg: &'a str, option: &str) -> Option<&'a str> {
    let name = option.strip_prefix("--")?;
    let written = arg.strip_prefix("--")?;
    let (written_name, value) = match written.split_once('=') {
        Some((n, v)) => (n, v),
        None => (written, ""),
    };
    (!written_name.is_empty() && name.starts_with(written_name)).then_some(value)
}

/// Whether a long option written as `arg` (without `=`) takes its value from the next
/// argument, given the command's value options.
pub(super) fn takes_next_value(arg: &str, value_options: &[&str]) -> bool {
    if arg.contains('=') {
        return false;
    }
    if value_options.contains(&arg) {
        return true;
    }
    arg.starts_with("--")
        && value_options
            .iter()
            .any(|o| o.starts_with("--") && long_value(arg, o).is_some())
}

/// Options a safe rule refuses, with the reason shown to the user.
#[derive(Debug, Clone)]
pub(super) struct OptionRefusal {
    pub options: Vec<String>,
    pub reason: String,
}

impl OptionRefusal {
    /// Checks the names at load: `--name` or `-x`.
    pub(super) fn compile(options: Vec<String>, reason: String) -> Result<OptionRefusal, String> {
        for option in &options {
            let long = option.strip_prefix("--").is_some_and(|n| {
                !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
            let short = option.len() == 2
                && option.starts_with('-')
                && option[1..].chars().all(|c| c.is_ascii_alphanumeric());
            if !long && !short {
                return Err(format!(
                    "option `{option}` must be `--name` or `-x` (a letter or digit)"
                ));
            }
        }
        if reason.trim().is_empty() {
            return Err("an option refusal needs a `reason`".into());
        }
        Ok(OptionRefusal { options, reason })
    }

    /// The first argument (before `--`) using one of the options.
    pub(super) fn find<'a>(&self, args: &'a [Arg]) -> Option<&'a Arg> {
        args.iter()
            .skip(1)
            .take_while(|a| a.text != "--")
            .find(|a| self.options.iter().any(|o| uses_option(&a.text, o)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_options_match_by_unique_prefix_as_getopt_long_reads_them() {
        assert!(uses_option("--i", "--in-place"));
        assert!(uses_option("--in-place=.bak", "--in-place"));
        assert!(uses_option("--o=F", "--output"));
        assert!(uses_option("--unset-a", "--unset-all"));
        assert!(uses_option("--comp", "--compile"));
        assert!(!uses_option("--", "--output"));
        assert!(!uses_option("--outputs", "--output"));
        assert!(!uses_option("--pretty", "--pre"));
        assert!(!uses_option("-o", "--output"));
        assert_eq!(long_value("--exp=1e id", "--expression"), Some("1e id"));
        assert_eq!(long_value("--e", "--expression"), Some(""));
        assert_eq!(long_value("--x=1", "--expression"), None);
    }

    #[test]
    fn short_options_match_inside_clusters() {
        assert!(uses_option("-ni", "-i"));
        assert!(uses_option("-i.bak", "-i"));
        assert!(!uses_option("--i", "-i"));
        assert!(!uses_option("-", "-i"));
        assert!(!uses_option("x-i", "-i"));
    }

    #[test]
    fn value_options_take_the_next_argument_by_prefix_too() {
        let values = ["-e", "--expression", "--line-length"];
        assert!(takes_next_value("--exp", &values));
        assert!(takes_next_value("-e", &values));
        assert!(!takes_next_value("--exp=x", &values));
        assert!(!takes_next_value("--quiet", &values));
    }
}
