//! `COM_STMT_SEND_LONG_DATA`, bounded by the packet limit.
//!
//! A client may send a prepared statement's parameter in pieces (`COM_STMT_SEND_LONG_DATA`,
//! no answer) before it executes the statement. opensrv-mysql 0.7 appends every piece to the
//! statement without limit (256 MiB of pieces took the gateway's RSS to 664 MB) and keeps them
//! across `COM_STMT_RESET`, which the reader answers itself ([`super::commands`]). So the
//! reader keeps the pieces here instead, and hands them to opensrv only right before the
//! statement's `COM_STMT_EXECUTE`, which consumes them.
//!
//! The bounds, with `max_allowed_packet` (server.xml `maxPacketSize`) as the limit:
//! - one parameter's pieces together: past the limit, MySQL's rule (`Item_param::set_longdata`),
//!   the statement's next execution is refused with MySQL's 1105 / HY000 `Parameter of
//!   prepared statement which is set through mysql_send_long_data() is longer than
//!   'max_allowed_packet' bytes`;
//! - the pieces held for all of a connection's statements together (manx's own bound: MySQL
//!   has none but the number of statements): past the limit, the statement whose piece went
//!   over is refused the same way, with a message saying so.
//!
//! A refused statement's pieces are dropped at once, and the ones that come after it until its
//! execution, so memory stays within the limit per connection; the execution that gets the
//! error ends that state (the statement can be given its long data again). `COM_STMT_RESET`
//! and `COM_STMT_CLOSE` drop a statement's pieces, as in MySQL.

use std::collections::HashMap;

/// Why a statement's execution is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// One parameter's long data went past the limit (MySQL's own refusal).
    Parameter,
    /// The long data held for the connection's statements together went past the limit.
    Connection,
}

/// The long data of one prepared statement.
#[derive(Debug, Default)]
struct Held {
    /// The `COM_STMT_SEND_LONG_DATA` payloads as they came (command byte included).
    packets: Vec<Vec<u8>>,
    /// Data bytes by parameter index.
    per_parameter: HashMap<u16, usize>,
    /// Data bytes of all its parameters.
    bytes: usize,
    /// Went over a bound: the next execution is refused.
    overflow: Option<Overflow>,
}

/// The long data of a connection's prepared statements, by statement id (module docs).
#[derive(Debug)]
pub struct LongData {
    limit: usize,
    statements: HashMap<u32, Held>,
    /// Data bytes held for all statements.
    bytes: usize,
}

/// Bytes before the data in a `COM_STMT_SEND_LONG_DATA` payload: command, statement id (4),
/// parameter index (2).
const HEADER: usize = 7;

impl LongData {
    /// An empty store whose bounds are `limit` bytes (`max_allowed_packet`).
    pub fn new(limit: usize) -> Self {
        LongData {
            limit,
            statements: HashMap::new(),
            bytes: 0,
        }
    }

    /// Keeps a `COM_STMT_SEND_LONG_DATA` payload of statement `id`, or drops it (and all of the
    /// statement's long data) when it takes the statement over a bound. A payload too short to
    /// name a parameter is dropped, as MySQL ignores it.
    pub fn hold(&mut self, id: u32, payload: Vec<u8>) {
        if payload.len() < HEADER {
            return;
        }
        let parameter = u16::from_le_bytes([payload[5], payload[6]]);
        let n = payload.len() - HEADER;
        let held = self.statements.entry(id).or_default();
        if held.overflow.is_some() {
            return;
        }
        let parameter_bytes = held.per_parameter.get(&parameter).copied().unwrap_or(0) + n;
        let overflow = if parameter_bytes > self.limit {
            Some(Overflow::Parameter)
        } else if self.bytes + n > self.limit {
            Some(Overflow::Connection)
        } else {
            None
        };
        if let Some(o) = overflow {
            tracing::info!(
                statement = id,
                parameter,
                parameter_bytes,
                connection_bytes = self.bytes + n,
                limit = self.limit,
                "long data past max_allowed_packet: dropped, the execution will be refused"
            );
            self.bytes -= held.bytes;
            *held = Held {
                overflow: Some(o),
                ..Held::default()
            };
            return;
        }
        held.per_parameter.insert(parameter, parameter_bytes);
        held.bytes += n;
        held.packets.push(payload);
        self.bytes += n;
    }

    /// What statement `id`'s execution gets: its long data payloads, to hand on before it
    /// (none when it has none), or the reason it is refused. Either way the statement holds
    /// nothing afterwards.
    pub fn take(&mut self, id: u32) -> Result<Vec<Vec<u8>>, Overflow> {
        let Some(held) = self.statements.remove(&id) else {
            return Ok(Vec::new());
        };
        self.bytes -= held.bytes;
        match held.overflow {
            Some(o) => Err(o),
            None => Ok(held.packets),
        }
    }

    /// Drops statement `id`'s long data (`COM_STMT_RESET`, `COM_STMT_CLOSE`).
    pub fn drop_statement(&mut self, id: u32) {
        if let Some(held) = self.statements.remove(&id) {
            self.bytes -= held.bytes;
        }
    }

    /// Data bytes held for all statements.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(id: u32, parameter: u16, data: &[u8]) -> Vec<u8> {
        let mut p = vec![0x18];
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&parameter.to_le_bytes());
        p.extend_from_slice(data);
        p
    }

    #[test]
    fn pieces_within_the_limit_are_handed_on_in_order() {
        let mut d = LongData::new(8);
        d.hold(1, piece(1, 0, b"abcd"));
        d.hold(1, piece(1, 0, b"efgh"));
        d.hold(2, piece(2, 0, b""));
        assert_eq!(d.bytes(), 8);
        assert_eq!(
            d.take(1),
            Ok(vec![piece(1, 0, b"abcd"), piece(1, 0, b"efgh")])
        );
        assert_eq!(d.bytes(), 0);
        assert_eq!(d.take(1), Ok(Vec::new()), "an execution consumes them");
    }

    #[test]
    fn pieces_past_a_bound_refuse_one_execution_and_are_not_kept() {
        let mut d = LongData::new(8);
        d.hold(1, piece(1, 0, b"abcde"));
        assert_eq!(d.bytes(), 5);
        // Parameter 1 is within the limit, the connection's 10 bytes are not.
        d.hold(1, piece(1, 1, b"abcde"));
        assert_eq!(d.bytes(), 0, "the statement's pieces are dropped");
        d.hold(1, piece(1, 0, b"x"));
        assert_eq!(d.bytes(), 0, "and those after them until the execution");
        assert_eq!(d.take(1), Err(Overflow::Connection));
        d.hold(1, piece(1, 0, b"abcd"));
        d.hold(1, piece(1, 0, b"efghi"));
        assert_eq!(d.bytes(), 0);
        assert_eq!(d.take(1), Err(Overflow::Parameter));
        d.hold(1, piece(1, 0, b"ok"));
        assert_eq!(d.take(1), Ok(vec![piece(1, 0, b"ok")]), "refused once");
    }

    #[test]
    fn reset_and_close_drop_a_statement_s_pieces() {
        let mut d = LongData::new(8);
        d.hold(1, piece(1, 0, b"abcd"));
        d.hold(2, piece(2, 0, b"abcd"));
        d.drop_statement(1);
        assert_eq!(d.bytes(), 4);
        d.hold(1, piece(1, 0, b"wxyz"));
        assert_eq!(d.take(1), Ok(vec![piece(1, 0, b"wxyz")]));
        d.hold(1, piece(1, 0, b"short"));
        assert_eq!(d.take(1), Err(Overflow::Connection));
        d.hold(3, vec![0x18, 3, 0]);
        assert_eq!(
            d.take(3),
            Ok(Vec::new()),
            "a payload without a parameter is ignored"
        );
    }
}
