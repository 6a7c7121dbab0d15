//! Length-encoded integers and strings of the MySQL protocol (MySQL's "Protocol Basics"), for
//! the packets manx writes or corrects itself: one codec, mysql_common's (the crate mysql_async
//! speaks to the backends with), wrapped for the two shapes the front end needs.

use std::io;

use mysql_common::io::{ParseBuf, WriteMysqlExt};

/// The length-encoded integer at the start of `buf`: (its value, the bytes it takes: 1, 3, 4 or
/// 9). `None` when `buf` is shorter than the integer, or starts with 0xFB (NULL in a row) or
/// 0xFF (an error packet's header), which are no integer.
pub fn read_int(buf: &[u8]) -> Option<(u64, usize)> {
    if matches!(buf.first(), None | Some(0xFB | 0xFF)) {
        return None;
    }
    let mut p = ParseBuf(buf);
    let value = p.checked_eat_lenenc_int()?;
    Some((value, buf.len() - p.0.len()))
}

/// Writes `bytes` as a length-encoded string (the length, then the bytes).
///
/// Errors: those of `w`.
pub fn write_str<W: io::Write>(w: &mut W, bytes: &[u8]) -> io::Result<()> {
    w.write_lenenc_str(bytes).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_width_round_trips() {
        for len in [0usize, 250, 251, 65_535, 65_536, 16_777_216] {
            let mut out = Vec::new();
            write_str(&mut out, &vec![b'x'; len]).unwrap();
            let (value, size) = read_int(&out).unwrap();
            assert_eq!(value as usize, len);
            assert_eq!(size + len, out.len());
        }
        assert_eq!(read_int(&[0xFC, 1]), None, "too short");
        assert_eq!(read_int(&[0xFB]), None);
        assert_eq!(read_int(&[0xFF, 0, 0]), None);
        assert_eq!(read_int(&[]), None);
    }
}
