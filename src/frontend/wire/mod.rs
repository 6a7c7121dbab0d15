//! The wire layer: the MySQL client/server protocol as bytes, between the client socket and
//! opensrv-mysql, which this layer corrects from both sides.
//!
//! - [`tls`]: TLS on the client socket (rustls), beneath the reader and the writer.
//! - `commands`: the read side, the packet reader. Commands opensrv-mysql 0.7 does not do
//!   are taken out of its hands and reach the session as typed values (`commands::Diverted`),
//!   never as text a client could send; multi-statement texts are handed on one statement at a
//!   time; commands over `max_allowed_packet` are refused.
//! - `long_data`: `COM_STMT_SEND_LONG_DATA` pieces held until their statement executes.
//! - [`watch`]: beneath the reader, the client socket watched while a statement runs, so that
//!   a client that goes away then is noticed at once.
//! - [`tap`]: the write side, the packet writer, which corrects the packets opensrv-mysql
//!   writes; its [`tap::ErrorSlot`] is what the session, the reader and the writer share.
//! - `binary`: row encoding (text and binary protocol values).
//! - `lenenc`: length-encoded integers and strings.
//!
//! What it must not import: nothing of the router (`crate::route`, checked by
//! `tests/layering.rs`): it knows packets, not statements. The one step that needs SQL lexing,
//! cutting a multi-statement text where the backend will cut it, is handed in by the session
//! (`commands::Splitter`); the `sql_mode` it cuts under is the ground module's
//! ([`crate::sqltext::SqlMode`]). Nor anything of the front end above it (the session, the
//! manager, the registry) but the error type its answers carry ([`crate::frontend::MysqlError`]).

pub(super) mod binary;
pub(super) mod commands;
pub(super) mod lenenc;
pub(super) mod long_data;
pub mod tap;
pub mod tls;
pub mod watch;
