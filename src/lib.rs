//! manx: a MySQL-protocol sharding gateway that runs Mycat 1.6 configurations unchanged.
//!
//! Modules, lowest first (a module never imports one above it; see `shared/DESIGN.md`):
//! [`config`] and [`backend`]; [`route`] and [`datahost`]; [`sequence`] (global sequences,
//! over `datahost`); [`xa`] (two-phase commit, over `backend` and `datahost`); [`engine`];
//! [`stats`] (the statement recorder, over nothing); [`frontend`].
#![forbid(unsafe_code)]

pub mod backend;
pub mod charset;
pub mod config;
pub mod coord;
pub mod datahost;
pub mod engine;
pub mod frontend;
pub mod pgcatalog;
pub mod route;
pub mod sequence;
pub mod sqltext;
pub mod stats;
pub mod version;
pub mod xa;
