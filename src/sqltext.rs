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

/// Whether `hay` contains `needle`, ignoring ASCII case (without allocating).
pub fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = n.split_first() else {
        return true;
    };
    if h.len() < n.len() {
        return false;
    }
    // A needle byte without case (`_`, `@`) must occur as it is: one fast search rules most
    // statements out.
    if let Some(caseless) = n.iter().find(|b| !b.is_ascii_alphabetic())
        && !h.contains(caseless)
    {
        return false;
    }
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    (0..=h.len() - n.len()).any(|i| {
        (h[i] == lower || h[i] == upper) && h[i + 1..i + n.len()].eq_ignore_ascii_case(rest)
    })
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
