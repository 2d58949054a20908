pub mod support {}
