//! The hub without a real server (the real ones are in the black-box tests).
