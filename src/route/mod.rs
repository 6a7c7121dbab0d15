//! Routing: SQL text to a [`Plan`].
pub mod function;
