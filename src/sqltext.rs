//! Small facts about SQL text that several layers need without depending on each other (a leaf
//! module: it uses nothing of the crate).

/// The index just past the quoted string or identifier starting at `start` (MySQL rules:
/// a doubled quote stands for itself; backslash escapes inside string literals, not inside
/// backquotes), or `None` when it is not closed.
pub fn quoted_end(b: &[u8], start: usize) -> Option<usize> {
    let q = b[start];
    let mut i = start + 1;
    while i < b.len() {
        if b[i] == b'\\' && q != b'`' {
            i += 2;
            continue;
        }
        if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::quoted_end;

    #[test]
    fn quotes_end_where_mysql_ends_them() {
        assert_eq!(quoted_end(b"'it''s' x", 0), Some(7));
        assert_eq!(quoted_end(b"'a\\'b' x", 0), Some(6));
        assert_eq!(quoted_end(b"`a\\`x", 0), Some(4));
        assert_eq!(quoted_end(b"'open", 0), None);
    }
}
