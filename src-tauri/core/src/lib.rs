//! Mandate's host: everything trusted, with no dependency on the window.

pub mod agent;
pub mod changes;
pub mod checkpoint;
pub mod cli;
pub mod diff;
pub mod fsutil;
pub mod hooks;
pub mod host;
pub mod journal;
pub mod llm;
pub mod logging;
pub mod markdown;
pub mod mcp;
pub mod mutation;
pub mod orchestration;
pub mod prompt;
pub mod protocol;
pub mod redact;
pub mod sandbox;
pub mod secrets;
pub mod settings;
pub mod text;
pub mod tools;
pub mod undo;
pub mod user_hooks;
pub mod workspace;
