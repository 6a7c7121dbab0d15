//! Java `java.util.Properties.load`: the format of Mycat's murmur weight file and of
//! PartitionByCRC32PreSlot's `ruledata/<rule>.properties`.

use crate::route::function::FunctionError;

/// The key/value pairs of a properties file in file order; a repeated key keeps its last value
/// (at the place it first appeared). Comment lines start with `#` or `!`; a line ending in an odd
/// number of backslashes continues on the next one; the key ends at the first unescaped `=`,
/// `:` or white space (space, tab, form feed); the value keeps trailing white space.
///
/// Errors: a malformed `\uXXXX` escape (Java's `IllegalArgumentException`).
pub(super) fn load(content: &str) -> Result<Vec<(String, String)>, FunctionError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for line in logical_lines(content) {
        let (key, value) = split_line(&line)?;
        match pairs.iter_mut().find(|(k, _)| *k == key) {
            Some(pair) => pair.1 = value,
            None => pairs.push((key, value)),
        }
    }
    Ok(pairs)
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

/// Java's `Properties.LineReader`: logical lines without comments, blank lines, leading white
/// space or continuation backslashes (escapes are still in place).
fn logical_lines(content: &str) -> Vec<Vec<char>> {
    let mut lines = Vec::new();
    let mut buf: Vec<char> = Vec::new();
    let mut skip_white = true;
    let mut appended_line_begin = false;
    let mut new_line = true;
    let mut comment = false;
    let mut preceding_backslash = false;
    let mut skip_lf = false;
    for c in content.chars() {
        if skip_lf {
            skip_lf = false;
            if c == '\n' {
                continue;
            }
        }
        if skip_white {
            if is_blank(c) || (!appended_line_begin && (c == '\r' || c == '\n')) {
                continue;
            }
            skip_white = false;
            appended_line_begin = false;
        }
        if new_line {
            new_line = false;
            if c == '#' || c == '!' {
                comment = true;
                continue;
            }
        }
        if c != '\n' && c != '\r' {
            if !comment {
                buf.push(c);
                preceding_backslash = c == '\\' && !preceding_backslash;
            }
            continue;
        }
        // End of a physical line.
        if comment || buf.is_empty() {
            comment = false;
            new_line = true;
            skip_white = true;
            preceding_backslash = false;
            buf.clear();
            continue;
        }
        if preceding_backslash {
            buf.pop();
            skip_white = true;
            appended_line_begin = true;
            preceding_backslash = false;
            skip_lf = c == '\r';
        } else {
            lines.push(std::mem::take(&mut buf));
            new_line = true;
            skip_white = true;
        }
    }
    if !comment && !buf.is_empty() {
        if preceding_backslash {
            buf.pop();
        }
        lines.push(buf);
    }
    lines
}

/// Splits a logical line into key and value and resolves their escapes (`Properties.load0`).
fn split_line(line: &[char]) -> Result<(String, String), FunctionError> {
    let mut key_len = 0;
    let mut value_start = line.len();
    let mut has_sep = false;
    let mut preceding_backslash = false;
    while key_len < line.len() {
        let c = line[key_len];
        if (c == '=' || c == ':') && !preceding_backslash {
            value_start = key_len + 1;
            has_sep = true;
            break;
        }
        if is_blank(c) && !preceding_backslash {
            value_start = key_len + 1;
            break;
        }
        preceding_backslash = c == '\\' && !preceding_backslash;
        key_len += 1;
    }
    while let Some(&c) = line.get(value_start) {
        if !is_blank(c) {
            if !has_sep && (c == '=' || c == ':') {
                has_sep = true;
            } else {
                break;
            }
        }
        value_start += 1;
    }
    let key = unescape(line.get(..key_len).unwrap_or(&[]))?;
    let value = unescape(line.get(value_start..).unwrap_or(&[]))?;
    Ok((key, value))
}

/// `Properties.loadConvert`: `\uXXXX`, `\t`, `\n`, `\r`, `\f`; any other escaped character
/// stands for itself.
fn unescape(chars: &[char]) -> Result<String, FunctionError> {
    let mut out = String::with_capacity(chars.len());
    let mut it = chars.iter().copied();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = it.next() else {
            break;
        };
        match e {
            'u' => {
                let mut code = 0u32;
                for _ in 0..4 {
                    let digit = it.next().and_then(|h| h.to_digit(16));
                    let Some(d) = digit else {
                        return Err(FunctionError::Invalid(
                            "Malformed \\uxxxx encoding.".to_string(),
                        ));
                    };
                    code = code * 16 + d;
                }
                // A lone surrogate cannot be kept in a Rust string; it cannot be a number
                // either, which is all these files hold.
                out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'n' => out.push('\n'),
            'f' => out.push('\u{c}'),
            other => out.push(other),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(content: &str) -> Vec<(String, String)> {
        load(content).unwrap()
    }

    fn p(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn java_properties_format() {
        assert_eq!(
            pairs("# c\n! c\n\n  0=1\n1 : 2 \n2 3\n4\n"),
            [p("0", "1"), p("1", "2 "), p("2", "3"), p("4", "")]
        );
        assert_eq!(pairs("a = = b"), [p("a", "= b")]);
        assert_eq!(
            pairs("a=1,\\\n   2\r\nb=\\u0033"),
            [p("a", "1,2"), p("b", "3")]
        );
        assert_eq!(
            pairs("a\\=b=c\\\\\nx=1\nx=2"),
            [p("a=b", "c\\"), p("x", "2")]
        );
        assert_eq!(
            pairs("# comment \\\nk=v\r\rk2=v2\\"),
            [p("k", "v"), p("k2", "v2")]
        );
        assert!(load("a=\\u12").is_err());
    }
}
