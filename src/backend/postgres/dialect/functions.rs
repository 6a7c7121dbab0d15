//! MySQL functions and literals as PostgreSQL expressions.

use super::*;

pub(super) fn plain_args(f: &Function) -> Option<Vec<Expr>> {
    match &f.args {
        FunctionArguments::None => Some(Vec::new()),
        FunctionArguments::List(l) if l.duplicate_treatment.is_none() && l.clauses.is_empty() => l
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// `name(args)` as a plain function call.
pub(super) fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

pub(super) fn cast(expr: Expr, data_type: DataType) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(expr),
        data_type,
        format: None,
    }
}

pub(super) fn string(s: &str) -> Expr {
    Expr::value(Value::SingleQuotedString(s.to_string()))
}

pub(super) fn rewrite_function(f: &Function) -> Result<Option<Expr>, DialectError> {
    let Some(name) = ident_name(f) else {
        return Ok(None);
    };
    if f.over.is_some() || f.filter.is_some() {
        return Ok(None);
    }
    let args =
        || plain_args(f).ok_or_else(|| DialectError::Unsupported(format!("this form of {name}()")));
    Ok(Some(match name.as_str() {
        "IFNULL" => call("COALESCE", args()?),
        "NOW" | "SYSDATE" | "CURRENT_TIMESTAMP" | "LOCALTIMESTAMP" | "LOCALTIME" => {
            if !args()?.is_empty() {
                return Err(DialectError::Unsupported(format!("{name}(fsp)")));
            }
            cast(
                call("now", Vec::new()),
                DataType::Timestamp(Some(0), TimezoneInfo::None),
            )
        }
        "CURDATE" | "CURRENT_DATE" => cast(call("now", Vec::new()), DataType::Date),
        "LAST_INSERT_ID" if args()?.is_empty() => call("lastval", Vec::new()),
        "RAND" if args()?.is_empty() => call("random", Vec::new()),
        "CONCAT" => {
            let parts = args()?;
            let mut it = parts.into_iter().map(|e| cast(e, DataType::Text));
            let Some(first) = it.next() else {
                return Err(DialectError::Unsupported("CONCAT()".into()));
            };
            Expr::Nested(Box::new(it.fold(first, |acc, e| Expr::BinaryOp {
                left: Box::new(acc),
                op: BinaryOperator::StringConcat,
                right: Box::new(e),
            })))
        }
        "IF" => {
            let a = args()?;
            let [c, t, e]: [Expr; 3] = a
                .try_into()
                .map_err(|_| DialectError::Unsupported("IF() without 3 arguments".into()))?;
            Expr::Case {
                case_token: AttachedToken::empty(),
                end_token: AttachedToken::empty(),
                operand: None,
                conditions: vec![CaseWhen {
                    condition: c,
                    result: t,
                }],
                else_result: Some(Box::new(e)),
            }
        }
        "RTRIM" | "LTRIM" => {
            let mut a = args()?;
            if a.len() != 1 {
                return Ok(None);
            }
            call(
                &name.to_lowercase(),
                vec![cast(a.remove(0), DataType::Text)],
            )
        }
        "WEIGHT_STRING" => {
            // The merge compares these bytes; the node sorts by the column's collation. With a
            // "C" collation (byte order of UTF-8) the two agree, see the module doc of backend
            // postgres.
            let mut a = args()?;
            if a.len() != 1 {
                return Err(DialectError::Unsupported(
                    "WEIGHT_STRING(.. AS/LEVEL)".into(),
                ));
            }
            call(
                "convert_to",
                vec![cast(a.remove(0), DataType::Text), string("UTF8")],
            )
        }
        // HEX of a string or blob (the bytes); HEX of a number is not translated.
        "HEX" if args()?.len() == 1 => call(
            "upper",
            vec![call(
                "encode",
                vec![cast(args()?.remove(0), DataType::Bytea), string("hex")],
            )],
        ),
        "UNHEX" if args()?.len() == 1 => call("decode", vec![args()?.remove(0), string("hex")]),
        "YEAR" | "MONTH" | "DAY" | "DAYOFMONTH" | "HOUR" | "MINUTE" | "SECOND" | "QUARTER"
            if args()?.len() == 1 =>
        {
            let field = match name.as_str() {
                "DAYOFMONTH" => "day".to_string(),
                other => other.to_lowercase(),
            };
            cast(
                call("date_part", vec![string(&field), args()?.remove(0)]),
                DataType::Integer(None),
            )
        }
        // MySQL converts numbers to strings for string functions; PostgreSQL does not.
        "LPAD" | "RPAD" | "LEFT" | "RIGHT" | "REPEAT" | "CHAR_LENGTH" | "LENGTH" => {
            let mut a = args()?;
            if a.is_empty() {
                return Ok(None);
            }
            // LENGTH is octet_length, which takes text and bytea as they are (a cast of bytea to
            // text would count its hex form).
            let first = if name == "LENGTH" {
                a.remove(0)
            } else {
                cast(a.remove(0), DataType::Text)
            };
            a.insert(0, first);
            // MySQL's LENGTH counts bytes.
            let pg_name = if name == "LENGTH" {
                "octet_length".to_string()
            } else {
                name.to_lowercase()
            };
            call(&pg_name, a)
        }
        "DATABASE" | "SCHEMA" if args()?.is_empty() => call("current_database", Vec::new()),
        "UCASE" | "LCASE" if args()?.len() == 1 => call(
            if name == "UCASE" { "upper" } else { "lower" },
            vec![cast(args()?.remove(0), DataType::Text)],
        ),
        // LOCATE(substr, str[, pos]): PostgreSQL's strpos takes them the other way round.
        "LOCATE" | "POSITION" if args()?.len() == 2 => {
            let mut a = args()?;
            let haystack = cast(a.remove(1), DataType::Text);
            call("strpos", vec![haystack, cast(a.remove(0), DataType::Text)])
        }
        // The version the greeting announces, as `@@version` answers it.
        "VERSION" if args()?.is_empty() => string(crate::version::function_version()),
        "UNIX_TIMESTAMP" if args()?.is_empty() => cast(
            call("date_part", vec![string("epoch"), call("now", Vec::new())]),
            DataType::BigInt(None),
        ),
        "FROM_UNIXTIME" if args()?.len() == 1 => cast(
            call("to_timestamp", args()?),
            DataType::Timestamp(Some(0), TimezoneInfo::None),
        ),
        "DATE_FORMAT" => {
            let [value, format]: [Expr; 2] = args()?.try_into().map_err(|_| {
                DialectError::Unsupported("DATE_FORMAT() without 2 arguments".into())
            })?;
            let (pattern, _) = to_char_pattern(&literal_text(&format, "DATE_FORMAT")?)?;
            call("to_char", vec![value, string(&pattern)])
        }
        "STR_TO_DATE" => {
            let [value, format]: [Expr; 2] = args()?.try_into().map_err(|_| {
                DialectError::Unsupported("STR_TO_DATE() without 2 arguments".into())
            })?;
            let (pattern, has_time) = to_char_pattern(&literal_text(&format, "STR_TO_DATE")?)?;
            if has_time {
                cast(
                    call("to_timestamp", vec![value, string(&pattern)]),
                    DataType::Timestamp(Some(0), TimezoneInfo::None),
                )
            } else {
                call("to_date", vec![value, string(&pattern)])
            }
        }
        "GROUP_CONCAT" | "FOUND_ROWS" | "UUID_SHORT" | "INET_ATON" | "UNIX_TIMESTAMP"
        | "DATE_ADD" | "DATE_SUB" | "FIELD" | "FIND_IN_SET" | "ELT" => {
            return Err(DialectError::Unsupported(format!("the function {name}()")));
        }
        _ => return Ok(None),
    }))
}

/// The text of a string literal argument of `function` (formats must be constants).
pub(super) fn literal_text(e: &Expr, function: &str) -> Result<String, DialectError> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(t) | Value::DoubleQuotedString(t) => Ok(t.clone()),
            _ => Err(DialectError::Unsupported(format!(
                "{function}() with a format that is not a string literal"
            ))),
        },
        _ => Err(DialectError::Unsupported(format!(
            "{function}() with a format that is not a string literal"
        ))),
    }
}

/// A MySQL `DATE_FORMAT`/`STR_TO_DATE` format as a PostgreSQL `to_char`/`to_timestamp`
/// pattern, and whether it has a time of day. Literal text is double-quoted (PostgreSQL
/// would read letters as patterns). Specifiers without a PostgreSQL equivalent (`%U`, `%u`,
/// `%V`, `%v`, `%X`, `%x`, `%D`, `%w`) are refused by name.
pub(super) fn to_char_pattern(mysql: &str) -> Result<(String, bool), DialectError> {
    let mut out = String::new();
    let mut literal = String::new();
    let mut has_time = false;
    let flush = |out: &mut String, literal: &mut String| {
        if !literal.is_empty() {
            out.push('"');
            out.push_str(&literal.replace('\\', "\\\\").replace('"', "\\\""));
            out.push('"');
            literal.clear();
        }
    };
    let mut chars = mysql.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            literal.push(c);
            continue;
        }
        let Some(spec) = chars.next() else {
            literal.push('%');
            break;
        };
        let (pattern, time) = match spec {
            'Y' => ("YYYY", false),
            'y' => ("YY", false),
            'm' => ("MM", false),
            'c' => ("FMMM", false),
            'd' => ("DD", false),
            'e' => ("FMDD", false),
            'j' => ("DDD", false),
            'M' => ("FMMonth", false),
            'b' => ("Mon", false),
            'W' => ("FMDay", false),
            'a' => ("Dy", false),
            'H' => ("HH24", true),
            'k' => ("FMHH24", true),
            'h' | 'I' => ("HH12", true),
            'l' => ("FMHH12", true),
            'i' => ("MI", true),
            's' | 'S' => ("SS", true),
            'f' => ("US", true),
            'p' => ("AM", true),
            'T' => ("HH24:MI:SS", true),
            'r' => ("HH12:MI:SS AM", true),
            '%' => {
                literal.push('%');
                continue;
            }
            other => {
                return Err(DialectError::Unsupported(format!(
                    "the date format specifier %{other}"
                )));
            }
        };
        flush(&mut out, &mut literal);
        out.push_str(pattern);
        has_time |= time;
    }
    flush(&mut out, &mut literal);
    Ok((out, has_time))
}
