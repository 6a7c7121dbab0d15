//! Where an operand ends, which tells the operator `a MOD b` from the function `MOD(a, b)`
//! (module docs of `forms`).

use sqlparser::tokenizer::{Token, TokenWithSpan};

/// Keywords after which an operand starts (a `MOD` after them is the function, `MOD(a, b)`).
/// MariaDB reserves all of them, so none can be a column name there.
const BEFORE_OPERAND: &[&str] = &[
    "SELECT",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "XOR",
    "ON",
    "BY",
    "HAVING",
    "WHEN",
    "THEN",
    "ELSE",
    "SET",
    "VALUES",
    "IN",
    "IS",
    "LIKE",
    "RLIKE",
    "REGEXP",
    "CASE",
    "DIV",
    "MOD",
    "BETWEEN",
    "INTERVAL",
    "DISTINCT",
    "DISTINCTROW",
    "ALL",
    "ANY",
    "SOME",
    "EXISTS",
    "BINARY",
    "AS",
    "RETURN",
    "LIMIT",
    "OFFSET",
    "ESCAPE",
    "SEPARATOR",
    "USING",
    "AGAINST",
    "TO",
    "FROM",
    "HIGH_PRIORITY",
    "STRAIGHT_JOIN",
    "SQL_CALC_FOUND_ROWS",
    "SQL_NO_CACHE",
    "SQL_CACHE",
    "SQL_SMALL_RESULT",
    "SQL_BIG_RESULT",
    "SQL_BUFFER_RESULT",
    "DEFAULT",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "WITH",
    "RECURSIVE",
    "LEADING",
    "TRAILING",
    "BOTH",
    "FOR",
    "UPDATE",
    "DELETE",
    "INSERT",
    "REPLACE",
    "INTO",
    "IF",
    "ELSEIF",
    "WHILE",
    "UNTIL",
    "DO",
    "CHECK",
    "OVER",
    "PARTITION",
    "ROWS",
    "RANGE",
    "PRECEDING",
    "FOLLOWING",
    "ORDER",
    "GROUP",
    "JOIN",
    "KEY",
    "LOW_PRIORITY",
    "IGNORE",
    "QUICK",
    "DELAYED",
    "COLLATE",
    "CHARACTER",
    "CHARSET",
    "WINDOW",
];

/// Whether the significant token at `k` ends an operand (a value, a name, a closing
/// parenthesis or an ODBC escape's brace), so that a `MOD` after it is the operator. A word
/// ends one unless it is a keyword an operand follows ([`BEFORE_OPERAND`]) or an ODBC escape's
/// keyword (right after `{`); quoted, or qualified (`t.k`), it is a name.
pub(super) fn operand_end(tokens: &[TokenWithSpan], sig: &[usize], k: usize) -> bool {
    match &tokens[sig[k]].token {
        Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::NationalStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::SingleQuotedByteStringLiteral(_)
        | Token::DoubleQuotedByteStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::RParen
        // The close of an ODBC escape (`{fn f(..)}`), an expression.
        | Token::RBrace
        | Token::Placeholder(_) => true,
        Token::Word(w) => {
            // An ODBC escape's keyword (`{fn mod(a, b)}`) is no operand.
            let escape_keyword = k > 0 && matches!(tokens[sig[k - 1]].token, Token::LBrace);
            w.quote_style.is_some()
                || (k > 0 && matches!(tokens[sig[k - 1]].token, Token::Period))
                || (!escape_keyword
                    && !BEFORE_OPERAND
                        .iter()
                        .any(|b| w.value.eq_ignore_ascii_case(b)))
        }
        _ => false,
    }
}
