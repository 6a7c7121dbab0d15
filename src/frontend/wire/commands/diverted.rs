//! The commands the session answers itself, as typed values ([`Diverted`]) with the placeholder
//! text that takes their place in opensrv's loop, and `COM_CHANGE_USER`'s fields.

use super::*;

/// The placeholder COM_QUERY text handed to opensrv in place of a diverted command. The session
/// acts on the [`Diverted`] value the reader put in the shared slot, never on this text: the
/// same text from a client finds no value there and is an ordinary (empty) statement.
pub const DIVERTED_QUERY: &str = "/* manx: diverted command */";

/// A command the reader takes out of opensrv's hands and the session answers (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Diverted {
    /// `COM_RESET_CONNECTION`.
    ResetConnection,
    /// `COM_STMT_RESET`.
    StmtReset,
    /// `COM_STATISTICS`.
    Statistics,
    /// `COM_PING` (an OK, or 1053 while the gateway is offline).
    Ping,
    /// `COM_FIELD_LIST` with its arguments as sent (the table name, a NUL, the wildcard).
    FieldList(String),
    /// `COM_CHANGE_USER`, read ([`ChangeUser`]).
    ChangeUser(ChangeUser),
    /// A command the reader refused: the error answering it.
    Refused(MysqlError),
}

/// The fields of a `COM_CHANGE_USER` (MySQL's protocol documentation,
/// "COM_CHANGE_USER"): the user, the proof of its password computed with the connection's
/// original scramble, the schema to use (empty: none) and the client's authentication plugin
/// (`None` when the client did not name one).
#[derive(Clone, PartialEq, Eq)]
pub struct ChangeUser {
    pub user: String,
    pub auth_response: Vec<u8>,
    pub database: String,
    pub plugin: Option<String>,
    /// The character set (a collation id) the client asks for, when the packet carries one.
    pub charset: Option<u16>,
}

impl std::fmt::Debug for ChangeUser {
    // The proof is a password hash: never in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeUser")
            .field("user", &self.user)
            .field("database", &self.database)
            .field("plugin", &self.plugin)
            .finish_non_exhaustive()
    }
}

/// Reads a `COM_CHANGE_USER` payload (the command byte first) of a client with capabilities
/// `caps`: `user NUL`, the auth response (1-byte length with `CLIENT_SECURE_CONNECTION`, else
/// NUL-terminated), `database NUL`, then, when present, the character set (2 bytes) and with
/// `CLIENT_PLUGIN_AUTH` the plugin name (NUL-terminated); connection attributes are ignored.
/// `None` for a payload that does not hold those fields.
pub fn read_change_user(payload: &[u8], caps: u32) -> Option<ChangeUser> {
    const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
    const CLIENT_PLUGIN_AUTH: u32 = 0x0008_0000;
    let nul_terminated = |from: usize| -> Option<(&[u8], usize)> {
        let rest = payload.get(from..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        Some((&rest[..end], from + end + 1))
    };
    let (user, at) = nul_terminated(1)?;
    let (auth_response, at) = if caps & CLIENT_SECURE_CONNECTION != 0 {
        let len = usize::from(*payload.get(at)?);
        (payload.get(at + 1..at + 1 + len)?, at + 1 + len)
    } else {
        nul_terminated(at)?
    };
    let (database, at) = match payload.get(at) {
        None => (&[][..], at),
        Some(_) => nul_terminated(at)?,
    };
    let charset = payload
        .get(at..at + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]));
    let plugin = if caps & CLIENT_PLUGIN_AUTH != 0 && payload.len() > at + 2 {
        let (name, _) = nul_terminated(at + 2)?;
        Some(String::from_utf8(name.to_vec()).ok()?)
    } else {
        None
    };
    Some(ChangeUser {
        user: String::from_utf8(user.to_vec()).ok()?,
        auth_response: auth_response.to_vec(),
        database: String::from_utf8(database.to_vec()).ok()?,
        plugin,
        charset,
    })
}
