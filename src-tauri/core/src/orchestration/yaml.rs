//! The one place that knows which YAML library is in use, so it can be swapped, and the one
//! way YAML errors are told to people: "line L, column C: what is wrong".

use serde::de::DeserializeOwned;
use serde::Serialize;

pub use serde_norway::{Mapping, Value};

/// Why a YAML text could not be read or a value could not be written as YAML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// The text does not parse, or does not have the expected shape, at this place (1-based).
    #[error("line {line}, column {column}: {message}")]
    At {
        line: usize,
        column: usize,
        message: String,
    },
    /// A problem the library could not place (e.g. an empty document where one was needed).
    #[error("{0}")]
    Unplaced(String),
    /// The value cannot be written as YAML.
    #[error("cannot write YAML: {0}")]
    Write(String),
}

/// Parses YAML; the error names the line and column.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    serde_norway::from_str(text).map_err(|e| parse_error(&e))
}

pub fn to_string<T: Serialize>(value: &T) -> Result<String, YamlError> {
    serde_norway::to_string(value).map_err(|e| YamlError::Write(e.to_string()))
}

/// The library's message with its own " at line L column C" taken out, since the position
/// leads the message; a context the parser adds after it (", while parsing …") is kept.
fn parse_error(e: &serde_norway::Error) -> YamlError {
    let text = e.to_string();
    match e.location() {
        Some(at) => {
            let own = format!(" at line {} column {}", at.line(), at.column());
            let message = match text.find(&own) {
                Some(i) => format!("{}{}", &text[..i], &text[i + own.len()..]),
                None => text,
            };
            YamlError::At {
                line: at.line(),
                column: at.column(),
                message,
            }
        }
        None => YamlError::Unplaced(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn errors_lead_with_their_position_once() {
        let err = from_str::<Value>("a: [1,\nb: 2\n").expect_err("unclosed");
        let YamlError::At { line, column, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!((*line, *column), (3, 1), "{err}");
        let text = err.to_string();
        assert_eq!(
            text,
            "line 3, column 1: did not find expected ',' or ']', while parsing a flow sequence at line 1 column 4"
        );

        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Shape {
            version: u32,
        }
        let err = from_str::<Shape>("version: many\n").expect_err("not a number");
        assert_eq!(
            err.to_string(),
            "line 1, column 10: version: invalid type: string \"many\", expected u32"
        );
    }

    #[test]
    fn values_round_trip() {
        let v: Value = from_str("k: [a, 1]\n").expect("parses");
        assert_eq!(to_string(&v).expect("writes"), "k:\n- a\n- 1\n");
    }
}
