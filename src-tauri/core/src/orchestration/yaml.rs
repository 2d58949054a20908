//! The one place that knows which YAML library is in use, so it can be swapped.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Parses YAML; the error names the line and column.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_yaml::from_str(text).map_err(|e| match e.location() {
        Some(loc) => format!(
            "line {}, column {}: {}",
            loc.line(),
            loc.column(),
            strip_location(&e.to_string())
        ),
        None => e.to_string(),
    })
}

pub fn to_string<T: Serialize>(value: &T) -> Result<String, String> {
    serde_yaml::to_string(value).map_err(|e| e.to_string())
}

/// serde_yaml appends " at line X column Y" itself; the caller already leads with it.
fn strip_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}
