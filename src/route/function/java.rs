//! The Java library semantics Mycat's partition functions inherit (SPEC §0.3), reproduced
//! exactly because they decide which shard a row lands on.

/// First code point of each block of ten Unicode decimal digits (category Nd) in the Basic
/// Multilingual Plane. Java's `Character.digit(char, 10)` accepts all of them, and
/// `Long.parseLong`, `Integer.parseInt` and `new BigInteger(String)` go through it: `"１２３"`
/// (full-width) parses as 123 in Mycat. Supplementary-plane digits arrive as surrogate pairs,
/// which Java rejects, so none are listed. Identical in Unicode 13 (Java 17) and 14.
const DIGIT_ZEROS: [u32; 37] = [
    0x0030, 0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6,
    0x0D66, 0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80,
    0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
    0xFF10,
];

/// Java `Character.digit(c, 10)`: the decimal value of `c`, or `None`.
pub fn digit(c: char) -> Option<u32> {
    let cp = c as u32;
    let i = DIGIT_ZEROS.partition_point(|&z| z <= cp);
    let zero = *DIGIT_ZEROS.get(i.checked_sub(1)?)?;
    (cp - zero < 10).then_some(cp - zero)
}

/// Splits Java's optional single sign from a number's digits: `(negative, digits)`.
/// `None` when there are no digits or a non-digit (per [`digit`]) appears.
fn sign_and_digits(s: &str) -> Option<(bool, Vec<u32>)> {
    let (negative, rest) = match s.chars().next()? {
        '-' => (true, &s[1..]),
        '+' => (false, &s[1..]),
        _ => (false, s),
    };
    let digits: Option<Vec<u32>> = rest.chars().map(digit).collect();
    let digits = digits?;
    (!digits.is_empty()).then_some((negative, digits))
}

/// Java `Long.parseLong(s)`: sign then decimal digits, range-checked to i64.
pub fn parse_long(s: &str) -> Option<i64> {
    let (negative, digits) = sign_and_digits(s)?;
    // Accumulate negatively, as Java does, so i64::MIN parses.
    let mut acc: i64 = 0;
    for d in digits {
        acc = acc.checked_mul(10)?.checked_sub(d as i64)?;
    }
    if negative {
        Some(acc)
    } else {
        acc.checked_neg()
    }
}

/// Java `Integer.parseInt(s)` / `Integer.valueOf(s)`.
pub fn parse_int(s: &str) -> Option<i32> {
    parse_long(s).and_then(|v| i32::try_from(v).ok())
}

/// `|new BigInteger(s)| mod m` for `m > 0`, without building the big integer.
/// `None` when `s` is not a Java BigInteger literal.
pub fn big_integer_abs_mod(s: &str, m: u64) -> Option<u64> {
    let (_, digits) = sign_and_digits(s)?;
    let m = m as u128;
    Some(
        digits
            .into_iter()
            .fold(0u128, |r, d| (r * 10 + d as u128) % m) as u64,
    )
}

/// Java `String.hashCode()`: `h = 31*h + unit` over UTF-16 code units, wrapping at 32 bits.
pub fn string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(u as i32))
}

/// Java `String.trim()`: removes characters up to U+0020 from both ends (not Unicode spaces
/// such as U+3000, which Rust's `trim` would remove).
pub fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= '\u{20}')
}

/// Mycat `StringUtil.removeBackquote`: trim, then strip one pair of surrounding `` ` `` or `'`.
/// (A `"104"` literal reaches the functions unquoted because the SQL parser reads it as a string,
/// so `'104'`, `104` and `"104"` route the same, DECISIONS.md item 5.)
pub fn remove_backquote(s: &str) -> &str {
    let t = trim(s);
    for q in ['`', '\''] {
        if t.len() >= 2 && t.starts_with(q) && t.ends_with(q) {
            return &t[1..t.len() - 1];
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_number_parsing() {
        assert_eq!(parse_long("+42"), Some(42));
        assert_eq!(parse_long("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_long("9223372036854775808"), None);
        assert_eq!(parse_long("１２３"), Some(123));
        assert_eq!(parse_long("٣"), Some(3));
        for bad in ["", "+", "-", "+-1", "1 ", " 1", "1.0", "0x1F", "1e3", "𝟏"] {
            assert_eq!(parse_long(bad), None, "{bad:?}");
        }
        assert_eq!(parse_int("2147483648"), None);
        assert_eq!(
            big_integer_abs_mod("-123456789012345678901234567890", 7),
            Some((123456789012345678901234567890u128 % 7) as u64)
        );
    }

    #[test]
    fn java_hash_and_quotes() {
        assert_eq!(string_hash(""), 0);
        assert_eq!(string_hash("a"), 97);
        assert_eq!(string_hash("+-1"), 42767);
        assert_eq!(string_hash("😀"), 0xD83D * 31 + 0xDE00);
        assert_eq!(remove_backquote(" '104' "), "104");
        assert_eq!(remove_backquote("`104`"), "104");
        assert_eq!(remove_backquote("'"), "'");
        assert_eq!(remove_backquote("\u{3000}1\t"), "\u{3000}1");
    }
}
