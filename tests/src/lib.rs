//! Support for Mandate's black-box tests: a scripted LLM provider on loopback that speaks the real
//! wire formats, realistic SSE transcripts, and a WebDriver client for the real window.

pub mod app;
pub mod cli;
pub mod gitrepo;
pub mod llm_server;
pub mod long_task;
pub mod mcp;
pub mod notifications;
pub mod processes;
pub mod real_provider;
pub mod script;
pub mod sse;
pub mod trace_schema;
pub mod webdriver;
pub mod x11;
