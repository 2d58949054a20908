//! Support for Mandate's black-box tests: a scripted LLM provider on loopback that speaks the real
//! wire formats, realistic SSE transcripts, and a WebDriver client for the real window.

pub mod llm_server;
pub mod sse;
pub mod webdriver;
