//! `java.text.SimpleDateFormat` as Mycat uses it: `new SimpleDateFormat(pattern)` in locale
//! `en_US`, lenient, in the JVM default time zone; `parse(String)` and `format(Date)`.
//!
//! Parsing follows `SimpleDateFormat.parse`/`subParse` and the integer `DecimalFormat` it uses
//! for numbers, on UTF-16 code units like Java:
//! * a prefix of the text is parsed and the rest ignored; literals must match exactly;
//! * before each field, spaces and tabs are skipped (not before literals);
//! * numbers take any count of Unicode decimal digits, an optional leading `-`, an exponent
//!   (`1E3`), `NaN` (0) and `∞`; the value is Java's `Number.intValue()` (wrapping for longs,
//!   saturating for doubles); a field directly followed by a numeric field reads at most its
//!   pattern width (`yyyyMMdd`);
//! * out-of-range values roll over in the calendar (`2014-13-01` is 2015-01-01);
//! * `y`/`yy` with exactly two digits use the 80-years-back century window.
//!
//! Supported pattern letters: `y M d H k K h m s S a` (`M` also as `MMM`/`MMMM` English month
//! names). Java's other letters are refused when the pattern is compiled, as is anything Java
//! itself refuses (unknown letters, an unterminated quote).

use super::calendar::{self, Field, Fields, LocalFields};
use super::zone::JavaZone;
use crate::route::function::FunctionError;
use crate::route::function::java;

const LONG_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const SHORT_MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const AM_PM: [&str; 2] = ["AM", "PM"];
/// `DateFormatSymbols.patternChars`: every letter Java accepts in a pattern.
const JAVA_PATTERN_CHARS: &str = "GyMdkHmsSEDFwWahKzZYuXL";
/// `DecimalFormat`'s cap on integer digits when formatting.
const MAX_PADDING: usize = 309;

/// A numeric or text field of the pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Letter {
    /// `y`
    Year,
    /// `M`
    Month,
    /// `d`
    DayOfMonth,
    /// `H` (0-23)
    HourOfDay0,
    /// `k` (1-24)
    HourOfDay1,
    /// `K` (0-11)
    Hour0,
    /// `h` (1-12)
    Hour1,
    /// `m`
    Minute,
    /// `s`
    Second,
    /// `S`
    Millisecond,
    /// `a`
    AmPm,
}

impl Letter {
    fn from_char(c: char) -> Option<Letter> {
        Some(match c {
            'y' => Letter::Year,
            'M' => Letter::Month,
            'd' => Letter::DayOfMonth,
            'H' => Letter::HourOfDay0,
            'k' => Letter::HourOfDay1,
            'K' => Letter::Hour0,
            'h' => Letter::Hour1,
            'm' => Letter::Minute,
            's' => Letter::Second,
            'S' => Letter::Millisecond,
            'a' => Letter::AmPm,
            _ => return None,
        })
    }

    /// `SimpleDateFormat.shouldObeyCount`: does a field followed by this one read at most its
    /// pattern width?
    fn is_numeric(self, count: usize) -> bool {
        match self {
            Letter::Month => count <= 2,
            Letter::AmPm => false,
            _ => true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// Text that must appear as is (UTF-16 code units).
    Literal(Vec<u16>),
    Field {
        letter: Letter,
        count: usize,
    },
}

/// A compiled `SimpleDateFormat` pattern.
#[derive(Debug, Clone)]
pub(crate) struct SimpleDateFormat {
    items: Vec<Item>,
}

impl SimpleDateFormat {
    /// `SimpleDateFormat.compile`: fails like Java on an unknown pattern letter or an
    /// unterminated quote, and on the letters manx does not support.
    pub(crate) fn new(pattern: &str) -> Result<Self, FunctionError> {
        let units: Vec<u16> = pattern.encode_utf16().collect();
        let mut items: Vec<Item> = Vec::new();
        let mut field: Option<(u16, usize)> = None;
        let mut quoted: Option<Vec<u16>> = None;
        let quote = u16::from(b'\'');
        let flush = |field: &mut Option<(u16, usize)>, items: &mut Vec<Item>| {
            if let Some((c, count)) = field.take() {
                let ch = char::from(c as u8);
                let letter = Letter::from_char(ch).ok_or_else(|| {
                    FunctionError::Invalid(format!(
                        "dateFormat {pattern:?}: pattern letter '{ch}' is not supported \
                         (supported: y M d H k K h m s S a)"
                    ))
                })?;
                items.push(Item::Field { letter, count });
            }
            Ok::<(), FunctionError>(())
        };
        let push_literal = |items: &mut Vec<Item>, text: &[u16]| {
            if let Some(Item::Literal(prev)) = items.last_mut() {
                prev.extend_from_slice(text);
            } else if !text.is_empty() {
                items.push(Item::Literal(text.to_vec()));
            }
        };
        let mut i = 0;
        while i < units.len() {
            let c = units[i];
            if c == quote {
                if units.get(i + 1) == Some(&quote) {
                    // '' is a quote, inside or outside a quoted section.
                    i += 2;
                    flush(&mut field, &mut items)?;
                    match quoted.as_mut() {
                        Some(q) => q.push(quote),
                        None => push_literal(&mut items, &[quote]),
                    }
                    continue;
                }
                match quoted.take() {
                    None => {
                        flush(&mut field, &mut items)?;
                        quoted = Some(Vec::new());
                    }
                    Some(q) => push_literal(&mut items, &q),
                }
                i += 1;
                continue;
            }
            if let Some(q) = quoted.as_mut() {
                q.push(c);
                i += 1;
                continue;
            }
            let is_letter = c < 128 && (c as u8).is_ascii_alphabetic();
            if !is_letter {
                flush(&mut field, &mut items)?;
                push_literal(&mut items, &[c]);
                i += 1;
                continue;
            }
            let ch = char::from(c as u8);
            if !JAVA_PATTERN_CHARS.contains(ch) {
                return Err(FunctionError::Invalid(format!(
                    "dateFormat {pattern:?}: Illegal pattern character '{ch}' \
                     (java.lang.IllegalArgumentException)"
                )));
            }
            match &mut field {
                Some((last, count)) if *last == c => *count += 1,
                _ => {
                    flush(&mut field, &mut items)?;
                    field = Some((c, 1));
                }
            }
            i += 1;
        }
        if quoted.is_some() {
            return Err(FunctionError::Invalid(format!(
                "dateFormat {pattern:?}: Unterminated quote (java.lang.IllegalArgumentException)"
            )));
        }
        flush(&mut field, &mut items)?;
        Ok(SimpleDateFormat { items })
    }

    /// `DateFormat.parse(text)`: the epoch milliseconds in `zone`, or `None` where Java throws
    /// `ParseException`. `now` gives the clock for the two-digit-year window.
    pub(crate) fn parse(&self, text: &str, zone: &JavaZone, now: &dyn Fn() -> i64) -> Option<i64> {
        let t: Vec<u16> = text.encode_utf16().collect();
        let mut fields = Fields::default();
        let mut ambiguous_year = false;
        let mut century: Option<(i64, i32)> = None;
        let mut start = 0usize;
        for (i, item) in self.items.iter().enumerate() {
            match item {
                Item::Literal(units) => {
                    for &u in units {
                        if t.get(start) != Some(&u) {
                            return None;
                        }
                        start += 1;
                    }
                }
                Item::Field { letter, count } => {
                    let obey_count = match self.items.get(i + 1) {
                        Some(Item::Field { letter, count }) => letter.is_numeric(*count),
                        _ => false,
                    };
                    let mut window =
                        || *century.get_or_insert_with(|| calendar::century_start(now(), zone));
                    start = sub_parse(
                        &t,
                        start,
                        *letter,
                        *count,
                        obey_count,
                        &mut fields,
                        &mut ambiguous_year,
                        &mut window,
                    )?;
                }
            }
        }
        if start == 0 {
            // DateFormat.parse: nothing was consumed (only an empty pattern gets here).
            return None;
        }
        let mut time = calendar::compute_time(&fields, zone);
        if ambiguous_year {
            let (start_ms, _) =
                *century.get_or_insert_with(|| calendar::century_start(now(), zone));
            if time < start_ms {
                fields.add_year(100);
                time = calendar::compute_time(&fields, zone);
            }
        }
        Some(time)
    }

    /// `DateFormat.format(new Date(utc))`.
    pub(crate) fn format(&self, utc: i64, zone: &JavaZone) -> String {
        let f: LocalFields = calendar::compute_fields(utc, zone);
        let mut out: Vec<u16> = Vec::new();
        let mut put = |s: &str| out.extend(s.encode_utf16());
        for item in &self.items {
            match item {
                Item::Literal(units) => put(&String::from_utf16_lossy(units)),
                Item::Field { letter, count } => {
                    let count = *count;
                    let hour12 = f.hour_of_day % 12;
                    let text = match letter {
                        Letter::Year if count == 2 => pad(f.year, 2, Some(2)),
                        Letter::Year => pad(f.year, count, None),
                        Letter::Month if count >= 4 => month_name(&LONG_MONTHS, f.month),
                        Letter::Month if count == 3 => month_name(&SHORT_MONTHS, f.month),
                        Letter::Month => pad(f.month + 1, count, None),
                        Letter::DayOfMonth => pad(f.day_of_month, count, None),
                        Letter::HourOfDay0 => pad(f.hour_of_day, count, None),
                        Letter::HourOfDay1 if f.hour_of_day == 0 => pad(24, count, None),
                        Letter::HourOfDay1 => pad(f.hour_of_day, count, None),
                        Letter::Hour0 => pad(hour12, count, None),
                        Letter::Hour1 if hour12 == 0 => pad(12, count, None),
                        Letter::Hour1 => pad(hour12, count, None),
                        Letter::Minute => pad(f.minute, count, None),
                        Letter::Second => pad(f.second, count, None),
                        Letter::Millisecond => pad(f.millisecond, count, None),
                        Letter::AmPm => AM_PM[usize::from(f.hour_of_day >= 12)].to_string(),
                    };
                    put(&text);
                }
            }
        }
        String::from_utf16_lossy(&out)
    }
}

fn month_name(names: &[&str; 12], month: i32) -> String {
    usize::try_from(month)
        .ok()
        .and_then(|m| names.get(m))
        .map_or_else(String::new, |s| s.to_string())
}

/// `SimpleDateFormat.zeroPaddingNumber`: at least `min` digits, at most `max` (low-order ones).
fn pad(value: i32, min: usize, max: Option<usize>) -> String {
    let mut digits = i64::from(value).unsigned_abs().to_string();
    if let Some(max) = max
        && digits.len() > max
    {
        digits = digits.split_off(digits.len() - max);
    }
    let width = min.min(MAX_PADDING);
    let zeros = width.saturating_sub(digits.len());
    let sign = if value < 0 { "-" } else { "" };
    format!("{sign}{}{digits}", "0".repeat(zeros))
}

/// `Character.isDigit` for a UTF-16 unit.
fn is_digit(u: u16) -> bool {
    char::from_u32(u32::from(u)).and_then(java::digit).is_some()
}

/// `SimpleDateFormat.subParse` for one field: the index after it, or `None` on failure.
#[allow(clippy::too_many_arguments)]
fn sub_parse(
    t: &[u16],
    start: usize,
    letter: Letter,
    count: usize,
    obey_count: bool,
    fields: &mut Fields,
    ambiguous_year: &mut bool,
    century: &mut dyn FnMut() -> (i64, i32),
) -> Option<usize> {
    let mut pos = start;
    // Skip spaces and tabs; the end of the text fails.
    loop {
        let &c = t.get(pos)?;
        if c != u16::from(b' ') && c != u16::from(b'\t') {
            break;
        }
        pos += 1;
    }
    let actual_start = pos;
    let limit = if obey_count {
        let end = start.checked_add(count)?;
        if end > t.len() {
            return None;
        }
        end
    } else {
        t.len()
    };
    match letter {
        Letter::Month if count >= 3 => {
            // Text months are matched where the field starts, before the skipped blanks.
            let (index, end) = match_names(t, start, &LONG_MONTHS)
                .max_by_key(|&(_, end)| end)
                .into_iter()
                .chain(match_names(t, start, &SHORT_MONTHS).max_by_key(|&(_, end)| end))
                .max_by_key(|&(_, end)| end)?;
            fields.set(Field::Month, index as i32);
            Some(end)
        }
        Letter::AmPm => {
            let (index, end) = match_names(t, start, &AM_PM).max_by_key(|&(_, end)| end)?;
            fields.set(Field::AmPm, index as i32);
            Some(end)
        }
        _ => {
            let value = parse_number(&t[..limit], &mut pos)?;
            match letter {
                Letter::Year => {
                    let mut value = value;
                    if count <= 2
                        && pos - actual_start == 2
                        && is_digit(t[actual_start])
                        && is_digit(t[actual_start + 1])
                    {
                        let (_, start_year) = century();
                        let ambiguous_two_digit_year = start_year % 100;
                        *ambiguous_year = value == ambiguous_two_digit_year;
                        value = value
                            .wrapping_add((start_year / 100).wrapping_mul(100))
                            .wrapping_add(if value < ambiguous_two_digit_year {
                                100
                            } else {
                                0
                            });
                    }
                    fields.set(Field::Year, value);
                }
                Letter::Month => fields.set(Field::Month, value.wrapping_sub(1)),
                Letter::DayOfMonth => fields.set(Field::DayOfMonth, value),
                Letter::HourOfDay0 => fields.set(Field::HourOfDay, value),
                Letter::HourOfDay1 => {
                    fields.set(Field::HourOfDay, if value == 24 { 0 } else { value })
                }
                Letter::Hour0 => fields.set(Field::Hour, value),
                Letter::Hour1 => fields.set(Field::Hour, if value == 12 { 0 } else { value }),
                Letter::Minute => fields.set(Field::Minute, value),
                Letter::Second => fields.set(Field::Second, value),
                Letter::Millisecond => fields.set(Field::Millisecond, value),
                Letter::AmPm => {}
            }
            Some(pos)
        }
    }
}

/// The names that `String.regionMatches(true, start, name, ...)` matches, with their index and
/// the position after them.
fn match_names<'a>(
    t: &'a [u16],
    start: usize,
    names: &'a [&'a str],
) -> impl Iterator<Item = (usize, usize)> + 'a {
    names.iter().enumerate().filter_map(move |(i, name)| {
        let name: Vec<u16> = name.encode_utf16().collect();
        let end = start.checked_add(name.len())?;
        let region = t.get(start..end)?;
        region
            .iter()
            .zip(&name)
            .all(|(&a, &b)| chars_equal_ignore_case(a, b))
            .then_some((i, end))
    })
}

/// Java's `regionMatches(ignoreCase = true)` comparison of two UTF-16 units.
fn chars_equal_ignore_case(a: u16, b: u16) -> bool {
    if a == b {
        return true;
    }
    let (Some(a), Some(b)) = (char::from_u32(u32::from(a)), char::from_u32(u32::from(b))) else {
        return false;
    };
    let upper = |c: char| {
        let mut it = c.to_uppercase();
        match (it.next(), it.next()) {
            (Some(u), None) => u,
            _ => c,
        }
    };
    let lower = |c: char| {
        let mut it = c.to_lowercase();
        match (it.next(), it.next()) {
            (Some(l), None) => l,
            _ => c,
        }
    };
    let (ua, ub) = (upper(a), upper(b));
    ua == ub || lower(ua) == lower(ub)
}

/// The digits of a number as `java.text.DigitList` holds them (no leading zeros).
struct DigitList {
    digits: Vec<u8>,
    decimal_at: i32,
}

impl DigitList {
    /// `DigitList.fitsIntoLong` + `getLong`: the value as a long, when it fits.
    fn to_long(&self, positive: bool) -> Option<i64> {
        const LONG_MIN_REP: &[u8; 19] = b"9223372036854775808";
        let mut count = self.digits.len();
        while count > 0 && self.digits[count - 1] == 0 {
            count -= 1;
        }
        let digits = &self.digits[..count];
        if count == 0 {
            return Some(0);
        }
        let decimal_at = usize::try_from(self.decimal_at).ok()?;
        if decimal_at < count || decimal_at > 19 {
            return None;
        }
        let value = || {
            let v = digits.iter().fold(0i64, |v, &d| v * 10 + i64::from(d));
            (count..decimal_at).fold(v, |v, _| v * 10)
        };
        if decimal_at < 19 {
            return Some(value());
        }
        for (&d, &m) in digits.iter().zip(LONG_MIN_REP.iter()) {
            let m = m - b'0';
            if d > m {
                return None;
            }
            if d < m {
                return Some(value());
            }
        }
        if count < decimal_at {
            return Some(value());
        }
        // Exactly 9223372036854775808: only Long.MIN_VALUE.
        (!positive).then_some(i64::MIN)
    }

    /// `DigitList.getDouble`.
    fn to_double(&self) -> f64 {
        if self.digits.is_empty() {
            return 0.0;
        }
        let digits: String = self.digits.iter().map(|d| char::from(b'0' + d)).collect();
        format!("0.{digits}e{}", self.decimal_at)
            .parse()
            .unwrap_or(0.0)
    }
}

/// Reads digits at `*pos` as `DecimalFormat.subparseNumber` does (leading zeros skipped); the
/// position after them and the digit count. `None` when there is no digit.
fn read_digits(t: &[u16], pos: usize) -> Option<(DigitList, usize, bool)> {
    let mut digits = Vec::new();
    let mut count = 0i32;
    let mut saw_digit = false;
    let mut p = pos;
    while let Some(&u) = t.get(p) {
        let d = if (u16::from(b'0')..=u16::from(b'9')).contains(&u) {
            Some(u32::from(u - u16::from(b'0')))
        } else {
            char::from_u32(u32::from(u)).and_then(java::digit)
        };
        let Some(d) = d else { break };
        saw_digit = true;
        if d != 0 || !digits.is_empty() {
            count = count.wrapping_add(1);
            digits.push(d as u8);
        }
        p += 1;
    }
    saw_digit.then_some((
        DigitList {
            digits,
            decimal_at: count,
        },
        p,
        saw_digit,
    ))
}

/// `DecimalFormat.parse(text, pos).intValue()` for `SimpleDateFormat`'s integer format
/// (`en_US`: prefix `-`, no grouping, integers only, exponent `E`, `NaN`, `∞`). Advances `*pos`
/// on success.
fn parse_number(t: &[u16], pos: &mut usize) -> Option<i32> {
    let p = *pos;
    if p > t.len() {
        return None;
    }
    if region_matches(t, p, "NaN") {
        *pos = p + 3;
        return Some(0); // Double.NaN.intValue()
    }
    let negative = t.get(p) == Some(&u16::from(b'-'));
    let q = p + usize::from(negative);
    if region_matches(t, q, "\u{221e}") {
        *pos = q + 1;
        return Some(if negative { i32::MIN } else { i32::MAX });
    }
    let (mut list, mut end, _) = read_digits(t, q)?;
    // Exponent: "E", then an optional '-', then digits whose value fits a long.
    if region_matches(t, end, "E") {
        let e = end + 1;
        let exp_negative = t.get(e) == Some(&u16::from(b'-'));
        if let Some((exp, exp_end, _)) = read_digits(t, e + usize::from(exp_negative))
            && let Some(v) = exp.to_long(!exp_negative)
        {
            let v = v as i32;
            let exponent = if exp_negative { v.wrapping_neg() } else { v };
            list.decimal_at = list.decimal_at.wrapping_add(exponent);
            end = exp_end;
        }
    }
    *pos = end;
    Some(match list.to_long(!negative) {
        Some(v) => {
            let v = if negative && v != i64::MIN { -v } else { v };
            v as i32
        }
        None => {
            let d = list.to_double();
            (if negative { -d } else { d }) as i32
        }
    })
}

fn region_matches(t: &[u16], at: usize, s: &str) -> bool {
    let s: Vec<u16> = s.encode_utf16().collect();
    at.checked_add(s.len())
        .and_then(|end| t.get(at..end))
        .is_some_and(|region| region == s.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_718_452_800_000; // 2024-06-15T12:00:00Z

    fn parse(pattern: &str, text: &str) -> Option<i64> {
        SimpleDateFormat::new(pattern)
            .unwrap()
            .parse(text, &JavaZone::utc(), &|| NOW)
    }

    fn day(text: &str) -> Option<i64> {
        parse("yyyy-MM-dd", text).map(|t| t.div_euclid(calendar::ONE_DAY))
    }

    #[test]
    fn canonical_and_lenient_dates() {
        assert_eq!(day("1970-01-01"), Some(0));
        assert_eq!(day("2014-01-01"), Some(16071));
        // Prefix parse, blanks before fields, single digits.
        assert_eq!(day("2014-01-01 12:00"), Some(16071));
        assert_eq!(day("2014-01-01abc"), Some(16071));
        assert_eq!(day(" \t2014-1-1"), Some(16071));
        // Rollover.
        assert_eq!(day("2014-13-01"), day("2015-01-01"));
        assert_eq!(day("2014-02-30"), day("2014-03-02"));
        assert_eq!(day("2014-12-00"), day("2014-11-30"));
        assert_eq!(day("2014--01-01"), day("2013-11-01"));
        // Any digits, Unicode digits, year 14 AD.
        assert_eq!(day("２０１４-01-01"), Some(16071));
        assert_eq!(day("٢٠١٤-٠١-٠١"), Some(16071));
        assert_eq!(day("14-01-01"), day("0014-01-01"));
        assert_eq!(day("2014-01-1e1"), Some(16071));
        // Failures.
        for bad in [
            "",
            " ",
            "abc",
            "2014",
            "2014-01",
            "2014/01/01",
            "+2014-01-01",
            "20140101",
        ] {
            assert_eq!(day(bad), None, "{bad:?}");
        }
        assert_eq!(day("1e3-01-01"), None);
    }

    #[test]
    fn numbers_like_decimal_format() {
        // Exponent, NaN, infinity, wrapping longs, saturating doubles.
        assert_eq!(day("1E3-01-01"), day("1000-01-01"));
        assert_eq!(day("NaN-01-01"), day("0-01-01"));
        assert_eq!(day("4294969310-01-01"), day("2014-01-01"));
        let big = parse("yyyy", "99999999999999999999999").unwrap();
        let max = parse("yyyy", "2147483647").unwrap();
        assert_eq!(big, max);
        assert_eq!(parse("yyyy", "∞"), Some(max));
        let mut pos = 0;
        assert_eq!(
            parse_number(&"-0".encode_utf16().collect::<Vec<_>>(), &mut pos),
            Some(0)
        );
        let mut pos = 0;
        let t: Vec<u16> = "-9223372036854775808".encode_utf16().collect();
        assert_eq!(parse_number(&t, &mut pos), Some(0));
        let mut pos = 0;
        let t: Vec<u16> = "15E-1x".encode_utf16().collect();
        assert_eq!(parse_number(&t, &mut pos), Some(1));
        assert_eq!(pos, 5);
    }

    #[test]
    fn adjacent_fields_obey_width() {
        assert_eq!(
            parse("yyyyMMdd", "20140102"),
            parse("yyyy-MM-dd", "2014-01-02")
        );
        assert_eq!(
            parse("yyyyMMdd", "2014010"),
            parse("yyyy-MM-dd", "2013-12-31")
        );
        assert_eq!(parse("yyyyMMdd", "201401"), None);
        // The last field takes every digit.
        assert_eq!(
            parse("yyyyMMdd", "201401020"),
            parse("yyyy-MM-dd", "2014-01-20")
        );
    }

    #[test]
    fn two_digit_years_use_the_century_window() {
        // Window starts 1944-06-15: "44" before June 15 is 2044, after is 1944.
        assert_eq!(
            parse("yy-MM-dd", "14-01-01"),
            parse("yyyy-MM-dd", "2014-01-01")
        );
        assert_eq!(
            parse("yy-MM-dd", "50-01-01"),
            parse("yyyy-MM-dd", "1950-01-01")
        );
        assert_eq!(
            parse("yy-MM-dd", "44-01-01"),
            parse("yyyy-MM-dd", "2044-01-01")
        );
        assert_eq!(
            parse("yy-MM-dd", "44-07-01"),
            parse("yyyy-MM-dd", "1944-07-01")
        );
        // Three digits or yyyy: literal.
        assert_eq!(
            parse("yy-MM-dd", "014-01-01"),
            parse("yyyy-MM-dd", "0014-01-01")
        );
    }

    #[test]
    fn time_fields_and_text() {
        let p = |pat: &str, text: &str| parse(pat, text).map(|t| t % calendar::ONE_DAY);
        assert_eq!(
            p("yyyy-MM-dd HH:mm:ss", "2014-01-01 25:61:61"),
            Some(93_721_000 - 86_400_000)
        );
        assert_eq!(
            p("yyyy-MM-dd hh:mm a", "2014-01-01 12:30 PM"),
            Some(45_000_000)
        );
        assert_eq!(
            p("yyyy-MM-dd hh:mm a", "2014-01-01 12:30 am"),
            Some(1_800_000)
        );
        assert_eq!(p("yyyy-MM-dd kk:mm", "2014-01-01 24:30"), Some(1_800_000));
        assert_eq!(
            parse("dd MMM yyyy", "05 SEP 2014"),
            parse("yyyy-MM-dd", "2014-09-05")
        );
        assert_eq!(parse("dd MMM yyyy", "05 sept 2014"), None);
        assert_eq!(
            parse("dd MMMM yyyy", "05 September 2014"),
            parse("yyyy-MM-dd", "2014-09-05")
        );
        assert_eq!(
            parse("yyyy'年'MM'月'dd'日'", "2014年01月02日"),
            parse("yyyy-MM-dd", "2014-01-02")
        );
        assert_eq!(
            parse("yyyy年MM月dd日", "2014年01月02日"),
            parse("yyyy-MM-dd", "2014-01-02")
        );
        assert_eq!(parse("''yyyy", "'2014"), parse("yyyy", "2014"));
    }

    #[test]
    fn compile_errors() {
        assert!(SimpleDateFormat::new("yyyy-MM-dd'").is_err());
        assert!(
            SimpleDateFormat::new("yyyy-bb")
                .unwrap_err()
                .to_string()
                .contains("Illegal pattern character")
        );
        assert!(
            SimpleDateFormat::new("yyyy-MM-dd EEE")
                .unwrap_err()
                .to_string()
                .contains("not supported")
        );
    }

    #[test]
    fn format_round_trips() {
        let utc = JavaZone::utc();
        let f = |pat: &str, text: &str| {
            let sdf = SimpleDateFormat::new(pat).unwrap();
            sdf.format(sdf.parse(text, &utc, &|| NOW).unwrap(), &utc)
        };
        assert_eq!(f("yyyy-MM-dd", "2014-1-5"), "2014-01-05");
        assert_eq!(
            f("yyyy-MM-dd HH:mm:ss.SSS", "2014-01-05 7:8:9.5"),
            "2014-01-05 07:08:09.005"
        );
        assert_eq!(f("yy/M/d h a", "2014/1/5 0 PM"), "14/1/5 12 PM");
        assert_eq!(f("yyyy-MMM-dd kk", "2014-Jan-05 00"), "2014-Jan-05 24");
        // Era years: year 0 is 1 BC, printed as 0001; Julian dates before the cutover.
        assert_eq!(f("yyyy-MM-dd", "0000-01-01"), "0001-01-01");
        assert_eq!(f("yyyy-MM-dd", "1582-10-10"), "1582-10-20");
        assert_eq!(f("yyyy-MM-dd", "99999-01-01"), "99999-01-01");
    }
}
