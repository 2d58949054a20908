//! Mandate's host: everything trusted, with no dependency on the window.

pub mod diff;
pub mod fsutil;
pub mod llm;
pub mod orchestration;
pub mod protocol;
pub mod secrets;
pub mod settings;
pub mod workspace;
