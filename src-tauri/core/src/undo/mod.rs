//! Taking back what the agent changed.
mod merge;
pub use merge::{merge3, Overlap};
