//! Date-based functions: PartitionByDate, PartitionByMonth, PartitionByMonthAndHistory,
//! PartitionByHotDate, LatestMonthPartion, PartitionByRangeDateHash (SPEC §2.5.11-2.5.16).
//!
//! Mycat parses dates with a lenient `java.text.SimpleDateFormat` in the JVM default time zone
//! and then works on epoch milliseconds or `Calendar` fields; [`sdf`], [`calendar`] and [`zone`]
//! reproduce that (prefix parsing, rollover, Unicode digits, the Julian calendar before
//! 1582-10-15, `ZoneInfo` offsets), so every function here routes exactly as Mycat does.

mod calendar;
mod sdf;
mod zone;

use crate::route::function::FunctionError;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use self::calendar::{LocalFields, ONE_DAY};
use self::sdf::SimpleDateFormat;
use self::zone::JavaZone;
use super::{
    BuildContext, JavaException, PartitionError, PartitionFunction, Props, RangePartitions, java,
};
use crate::config::MycatVersion;

/// The family's function for Mycat class `short` (without the package), or `None` when the
/// class is not one of this family's.
pub(super) fn build(
    short: &str,
    props: &Props<'_>,
    ctx: &BuildContext<'_>,
) -> Option<Result<Arc<dyn PartitionFunction>, FunctionError>> {
    let built = match short {
        "PartitionByDate" => PartitionByDate::new(props, ctx).map(super::to_arc),
        "PartitionByMonth" => PartitionByMonth::new(props, ctx).map(super::to_arc),
        "PartitionByMonthAndHistory" => {
            PartitionByMonthAndHistory::new(props, ctx).map(super::to_arc)
        }
        "PartitionByHotDate" => PartitionByHotDate::new(props, ctx).map(super::to_arc),
        "LatestMonthPartion" => LatestMonthPartion::new(props).map(super::to_arc),
        "PartitionByRangeDateHash" => PartitionByRangeDateHash::new(props, ctx).map(super::to_arc),
        _ => return None,
    };
    Some(built.map_err(|e| FunctionError::Class {
        class: short.to_string(),
        source: Box::new(e),
    }))
}

/// Ranges that would list more partitions (or walk more days) than this route to all
/// partitions instead: Mycat would spend minutes or run out of memory building the list
/// (DECISIONS.md: no hangs; more nodes than needed, never fewer).
const RANGE_LIMIT: i64 = 1_000_000;

/// PartitionByDate's BETWEEN formats and re-parses every calendar day; beyond this many days
/// (about 270 years) it routes to all partitions instead.
const DAY_WALK_LIMIT: i64 = 100_000;

/// A function's `new SimpleDateFormat(dateFormat)` in the JVM default zone, and its clock.
#[derive(Debug)]
struct Dates {
    pattern: String,
    format: SimpleDateFormat,
    zone: JavaZone,
    /// Fixed "now" (epoch ms); `None` = the system clock.
    now_ms: Option<i64>,
}

impl Dates {
    /// `dateFormat` must be present (Mycat fails with a NullPointerException without it).
    fn new(pattern: Option<&str>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let pattern = pattern.ok_or_else(|| FunctionError::Required("dateFormat".to_string()))?;
        Ok(Dates {
            pattern: pattern.to_string(),
            format: SimpleDateFormat::new(pattern)?,
            zone: JavaZone::new(ctx.time_zone)?,
            now_ms: ctx.now_ms,
        })
    }

    fn now(&self) -> i64 {
        self.now_ms.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64)
        })
    }

    /// `SimpleDateFormat.parse(text).getTime()`; `None` for a `ParseException`.
    fn parse(&self, text: &str) -> Option<i64> {
        self.format.parse(text, &self.zone, &|| self.now())
    }

    /// Parses a value given to `calculate`, failing as Mycat does.
    fn parse_value(&self, value: &str) -> Result<i64, PartitionError> {
        self.parse(value).ok_or_else(|| PartitionError {
            exception: JavaException::IllegalArgument,
            message: format!("columnValue:{value} Please check if the format satisfied."),
        })
    }

    /// Parses a date property at build time (`init()` wraps the ParseException).
    fn parse_property(&self, name: &str, text: &str) -> Result<i64, FunctionError> {
        self.parse(text).ok_or_else(|| {
            FunctionError::Invalid(format!(
                "{name} {text:?} does not match dateFormat {:?} \
                 (java.text.ParseException: Unparseable date: \"{text}\")",
                self.pattern
            ))
        })
    }

    fn format(&self, utc: i64) -> String {
        self.format.format(utc, &self.zone)
    }

    /// `Calendar.setTime(date)` fields.
    fn fields(&self, utc: i64) -> LocalFields {
        calendar::compute_fields(utc, &self.zone)
    }
}

fn divide_by_zero() -> PartitionError {
    PartitionError {
        exception: JavaException::Arithmetic,
        message: "/ by zero".to_string(),
    }
}

/// `Integer.parseInt(value)` of a property at build time (`null` when absent).
fn int_property(props: &Props<'_>, name: &str) -> Result<i32, FunctionError> {
    let value = props.string(name);
    value.and_then(java::parse_int).ok_or_else(|| {
        FunctionError::Invalid(format!(
            "property {name}: {} is not an int (NumberFormatException)",
            value.map_or("null".to_string(), |v| format!("'{v}'"))
        ))
    })
}

/// `contiguous` partitions `first..=last`, or all partitions when there are too many to list.
fn contiguous(prefix: Option<i32>, first: i32, last: i32) -> RangePartitions {
    let len = i64::from(last) - i64::from(first) + 1;
    if len > RANGE_LIMIT {
        return RangePartitions::All;
    }
    RangePartitions::Some(prefix.into_iter().chain(first..=last).collect())
}

/// `io.mycat.route.function.PartitionByDate` (SPEC §2.5.11): fixed-length day periods from
/// `sBeginDate`. `p = (int)((t - begin) / (sPartionDay * 86400000))`, then `p % nCount` for
/// dates after `sEndDate` (when an end date counts). Natural-day mode (`sNaturalDay = 1`,
/// 1.6.7): `p = dayOfMonth - 1`, switched off when the end date gives fewer than 28 days.
/// BETWEEN walks the calendar days from begin to end, formatting and re-parsing each.
#[derive(Debug)]
pub struct PartitionByDate {
    dates: Dates,
    natural: bool,
    begin: i64,
    /// `partionTime` in ms (0 without `sBeginDate`: every `calculate` divides by zero).
    period: i64,
    end: i64,
    /// `nCount` (0 without an end date).
    count: i32,
}

impl PartitionByDate {
    /// Properties: `dateFormat`, `sBeginDate`, `sEndDate`, `sPartionDay`, `sNaturalDay`.
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let dates = Dates::new(props.string("dateFormat"), ctx)?;
        let mut natural =
            ctx.version >= MycatVersion::V1_6_7_5 && props.string("sNaturalDay") == Some("1");
        let days = |natural: bool| -> Result<i64, FunctionError> {
            if natural {
                Ok(ONE_DAY)
            } else {
                Ok(i64::from(int_property(props, "sPartionDay")?) * ONE_DAY)
            }
        };
        let (mut begin, mut period) = (0, 0);
        match props.string("sBeginDate") {
            Some(text) => {
                period = days(natural)?;
                begin = dates.parse_property("sBeginDate", text)?;
            }
            None if ctx.version == MycatVersion::V1_6_5 => {
                return Err(FunctionError::Required("sBeginDate".to_string()));
            }
            None => {}
        }
        let (mut end, mut count) = (0, 0);
        if let Some(text) = props.string("sEndDate")
            && begin > 0
        {
            end = dates.parse_property("sEndDate", text)?;
            let n_count = |period: i64| -> Result<i32, FunctionError> {
                if period == 0 {
                    return Err(FunctionError::Invalid(
                        "sPartionDay 0: / by zero (java.lang.ArithmeticException)".to_string(),
                    ));
                }
                Ok((end.wrapping_sub(begin).wrapping_div(period) as i32).wrapping_add(1))
            };
            count = n_count(period)?;
            if natural && count < 28 {
                natural = false;
                period = days(false)?;
                count = n_count(period)?;
            }
        }
        Ok(PartitionByDate {
            dates,
            natural,
            begin,
            period,
            end,
            count,
        })
    }
}

impl PartitionFunction for PartitionByDate {
    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let t = self.dates.parse_value(value)?;
        if self.natural {
            return Ok(Some(self.dates.fields(t).day_of_month - 1));
        }
        if self.period == 0 {
            return Err(divide_by_zero());
        }
        let mut p = t.wrapping_sub(self.begin).wrapping_div(self.period) as i32;
        if t > self.end && self.count != 0 {
            p = p.wrapping_rem(self.count);
        }
        Ok(Some(p))
    }

    /// Mycat's range walks every day from `begin` to `end` and collects each day's partition
    /// (all partitions past the walk limit or for bounds it cannot read): never too narrow.
    fn route_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        self.calculate_range(begin, end)
    }

    fn calculate_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        let (Some(mut day), Some(last)) = (self.dates.parse(begin), self.dates.parse(end)) else {
            return Ok(RangePartitions::All);
        };
        let mut list = Vec::new();
        let mut seen = HashSet::new();
        let mut steps = 0;
        while day <= last {
            steps += 1;
            if steps > DAY_WALK_LIMIT {
                return Ok(RangePartitions::All);
            }
            if let Some(p) = self.calculate(&self.dates.format(day))?
                && seen.insert(p)
            {
                list.push(p);
            }
            day = calendar::add_one_day(day, &self.dates.zone);
        }
        Ok(if list.is_empty() {
            RangePartitions::All
        } else {
            RangePartitions::Some(list)
        })
    }

    fn partition_num(&self) -> Option<usize> {
        usize::try_from(self.count).ok().filter(|&n| n > 0)
    }
}

/// Month arithmetic shared by PartitionByMonth and PartitionByMonthAndHistory:
/// `idx = (year - beginYear) * 12 + month - beginMonth` on `Calendar` fields (era years, the
/// day ignored), wrapped into `n` partitions when an end date gives `n`.
#[derive(Debug)]
struct Months {
    dates: Dates,
    /// 1.6.7 "scene 1" (no dates): the partition is the month of the year.
    month_of_year: bool,
    begin_year: i32,
    begin_month: i32,
    /// `nPartition`: months from begin to end inclusive, 12 in scene 1, -1 unbounded.
    n: i32,
    /// 1.6.7.6: negative indexes (before an unbounded begin) become 0, and BETWEEN only wraps
    /// when `n > 0`.
    head: bool,
}

impl Months {
    fn new(
        props: &Props<'_>,
        ctx: &BuildContext<'_>,
        class_variant: MonthVariant,
    ) -> Result<Self, FunctionError> {
        let modern = class_variant == MonthVariant::Month && ctx.version >= MycatVersion::V1_6_7_5;
        let head = class_variant == MonthVariant::Month && ctx.version >= MycatVersion::V1_6_7_6;
        let pattern = props
            .string("dateFormat")
            .or(modern.then_some("yyyy-MM-dd"));
        let dates = Dates::new(pattern, ctx)?;
        let (begin, end) = (props.string("sBeginDate"), props.string("sEndDate"));
        if modern && begin.is_none() && end.is_none() {
            let now = dates.fields(dates.now());
            return Ok(Months {
                month_of_year: true,
                begin_year: now.year,
                begin_month: 0,
                n: 12,
                head,
                dates,
            });
        }
        let begin = begin.ok_or_else(|| FunctionError::Required("sBeginDate".to_string()))?;
        let b = dates.fields(dates.parse_property("sBeginDate", begin)?);
        let n = match end {
            Some(end) => {
                let e = dates.fields(dates.parse_property("sEndDate", end)?);
                let n = month_index(e, b.year, b.month).wrapping_add(1);
                if n <= 0 {
                    return Err(FunctionError::Invalid(format!(
                        "Incorrect time range for month partitioning! (sBeginDate {begin:?}, \
                         sEndDate {end:?})"
                    )));
                }
                n
            }
            None => -1,
        };
        Ok(Months {
            dates,
            month_of_year: false,
            begin_year: b.year,
            begin_month: b.month,
            n,
            head,
        })
    }

    fn index(&self, utc: i64) -> i32 {
        month_index(self.dates.fields(utc), self.begin_year, self.begin_month)
    }

    /// `reCalculatePartition`: circular partitions (Java int arithmetic; `n = -1` makes every
    /// value 0).
    fn wrap(&self, p: i32) -> i32 {
        let n = self.n;
        let mut p = p;
        if p < 0 {
            p = n.wrapping_sub(p.wrapping_neg().wrapping_rem(n));
        }
        if p >= n {
            p = p.wrapping_rem(n);
        }
        p
    }

    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let t = self.dates.parse_value(value)?;
        if self.month_of_year {
            return Ok(Some(self.dates.fields(t).month));
        }
        let mut p = self.index(t);
        if self.n > 0 {
            p = self.wrap(p);
        }
        if self.head && p < 0 {
            p = 0;
        }
        Ok(Some(p))
    }

    fn calculate_range(&self, begin: &str, end: &str) -> RangePartitions {
        let (Some(b), Some(e)) = (self.dates.parse(begin), self.dates.parse(end)) else {
            return RangePartitions::All;
        };
        let (first, last) = (self.index(b), self.index(e));
        let wraps = !self.head || self.n > 0;
        let mut list = Vec::new();
        let mut seen = HashSet::new();
        let mut i = i64::from(first);
        let mut steps = 0;
        while i <= i64::from(last) {
            steps += 1;
            if steps > RANGE_LIMIT {
                return RangePartitions::All;
            }
            let mut p = i as i32;
            if wraps {
                p = self.wrap(p);
            }
            if self.head && p < 0 {
                p = 0;
            }
            if seen.insert(p) {
                list.push(p);
            }
            if wraps && steps >= i64::from(self.n.max(1)) {
                // Wrapped values repeat with period n (every value is 0 when n = -1).
                break;
            }
            // Clamped negatives are all 0: jump to index 0.
            i = if self.head && !wraps && i < 0 {
                0
            } else {
                i + 1
            };
        }
        if list.is_empty() {
            RangePartitions::All
        } else {
            RangePartitions::Some(list)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MonthVariant {
    Month,
    History,
}

/// `(year - beginYear) * 12 + month - beginMonth` with Java int wrap-around.
fn month_index(f: LocalFields, begin_year: i32, begin_month: i32) -> i32 {
    f.year
        .wrapping_sub(begin_year)
        .wrapping_mul(12)
        .wrapping_add(f.month)
        .wrapping_sub(begin_month)
}

/// `io.mycat.route.function.PartitionByMonth` (SPEC §2.5.12): one partition per month from
/// `sBeginDate`, `p = (year - beginYear) * 12 + month - beginMonth`; with `sEndDate`, `n` months
/// that repeat circularly. 1.6.7: no dates = 12 partitions by month of year, `dateFormat`
/// defaults to `yyyy-MM-dd`; 1.6.7.6 also turns indexes before an unbounded begin into 0
/// (1.6.7.5 and 1.6.5 return them negative, and route any BETWEEN without an end date to 0).
#[derive(Debug)]
pub struct PartitionByMonth(Months);

impl PartitionByMonth {
    /// Properties: `dateFormat`, `sBeginDate`, `sEndDate`.
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        Months::new(props, ctx, MonthVariant::Month).map(PartitionByMonth)
    }
}

impl PartitionFunction for PartitionByMonth {
    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        self.0.calculate(value)
    }

    fn calculate_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        Ok(self.0.calculate_range(begin, end))
    }

    /// Every month index from `begin`'s to `end`'s (wrapped as the partitions repeat): the
    /// partitions any date between can be on.
    fn route_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        Ok(self.0.calculate_range(begin, end))
    }

    fn partition_num(&self) -> Option<usize> {
        usize::try_from(self.0.n).ok()
    }
}

/// `io.mycat.route.function.PartitionByMonthAndHistory` (SPEC §2.5.13): the 1.6.5
/// PartitionByMonth (begin date required, circular with an end date, negative indexes before an
/// unbounded begin, BETWEEN without an end date routed to partition 0); no partition count.
#[derive(Debug)]
pub struct PartitionByMonthAndHistory(Months);

impl PartitionByMonthAndHistory {
    /// Properties: `dateFormat`, `sBeginDate` (required), `sEndDate`.
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        Months::new(props, ctx, MonthVariant::History).map(PartitionByMonthAndHistory)
    }
}

impl PartitionFunction for PartitionByMonthAndHistory {
    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        self.0.calculate(value)
    }

    fn calculate_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        Ok(self.0.calculate_range(begin, end))
    }

    fn partition_num(&self) -> Option<usize> {
        None
    }
}

/// `io.mycat.route.function.PartitionByHotDate` (SPEC §2.5.14): the last `sLastDay` days (and
/// the future) on partition 0, older dates in `sPartionDay`-day partitions counted backwards
/// from the hot boundary: `diffDays = (now - t) / 86400000 + 1`; hot when
/// `diffDays - sLastDay <= 0 || diffDays < 0`, else
/// `(int)((now - sLastDay * 86400000 - t) / (sPartionDay * 86400000)) + 1`.
#[derive(Debug)]
pub struct PartitionByHotDate {
    dates: Dates,
    last_days: i64,
    period: i64,
}

impl PartitionByHotDate {
    /// Properties: `dateFormat`, `sLastDay`, `sPartionDay`.
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let dates = Dates::new(props.string("dateFormat"), ctx)?;
        Ok(PartitionByHotDate {
            last_days: i64::from(int_property(props, "sLastDay")?),
            period: i64::from(int_property(props, "sPartionDay")?) * ONE_DAY,
            dates,
        })
    }

    /// Is `t` hot at `now` (`diffDays - sLastDay <= 0 || diffDays < 0`)?
    fn is_hot(&self, now: i64, t: i64) -> bool {
        let diff_days = now.wrapping_sub(t) / ONE_DAY + 1;
        diff_days.wrapping_sub(self.last_days) <= 0 || diff_days < 0
    }

    fn limit(&self, now: i64) -> i64 {
        now.wrapping_sub(self.last_days.wrapping_mul(ONE_DAY))
    }
}

impl PartitionFunction for PartitionByHotDate {
    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let t = self.dates.parse_value(value)?;
        let now = self.dates.now();
        if self.is_hot(now, t) {
            return Ok(Some(0));
        }
        if self.period == 0 {
            return Err(divide_by_zero());
        }
        let p = self.limit(now).wrapping_sub(t).wrapping_div(self.period) as i32;
        Ok(Some(p.wrapping_add(1)))
    }

    fn calculate_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        let unparseable = || PartitionError {
            exception: JavaException::IllegalArgument,
            message: format!("endValue:{end} Please check if the format satisfied."),
        };
        let start = self.dates.parse(begin).ok_or_else(unparseable)?;
        let mut end_time = self.dates.parse(end).ok_or_else(unparseable)?;
        let now = self.dates.now();
        if self.is_hot(now, start) {
            return Ok(RangePartitions::Some(vec![0]));
        }
        let limit = self.limit(now);
        let hi = self.calculate(java::remove_backquote(begin))?;
        let clamped = end_time.wrapping_sub(limit) > 0;
        if clamped {
            end_time = limit;
        }
        let boundary = self.dates.format(end_time);
        let lo = self.calculate(java::remove_backquote(&boundary))?;
        Ok(match (lo, hi) {
            (Some(lo), Some(hi)) if hi >= lo => contiguous(clamped.then_some(0), lo, hi),
            _ => RangePartitions::None,
        })
    }

    fn partition_num(&self) -> Option<usize> {
        None
    }
}

/// `io.mycat.route.function.LatestMonthPartion` (sic, SPEC §2.5.15): values shaped like
/// `yyyyMMddHH`; only the last four characters count:
/// `(int(DD) - 1) * splitOneDay + int(HH) / (24 / splitOneDay)`. BETWEEN: sequence range.
#[derive(Debug)]
pub struct LatestMonthPartion {
    split_one_day: i32,
    /// `24 / splitOneDay`; 0 when the property is absent (Mycat only sets it in the setter, so
    /// every value then divides by zero).
    hour_span: i32,
}

impl LatestMonthPartion {
    /// Properties: `splitOneDay` (int, 1..=24).
    pub fn new(props: &Props<'_>) -> Result<Self, FunctionError> {
        if props.string("splitOneDay").is_none() {
            return Ok(LatestMonthPartion {
                split_one_day: 24,
                hour_span: 0,
            });
        }
        let split = props.int("splitOneDay", 24)?;
        if split == 0 {
            return Err(FunctionError::Invalid(
                "splitOneDay 0: / by zero (java.lang.ArithmeticException)".to_string(),
            ));
        }
        let hour_span = 24i32.wrapping_div(split);
        if hour_span.wrapping_mul(24) < 24 {
            return Err(FunctionError::Invalid(format!(
                "invalid splitOnDay param:{split} should be an even number and less or equals \
                 than 24"
            )));
        }
        Ok(LatestMonthPartion {
            split_one_day: split,
            hour_span,
        })
    }
}

impl PartitionFunction for LatestMonthPartion {
    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let units: Vec<u16> = value.encode_utf16().collect();
        let len = units.len();
        if len < 4 {
            let len = len as i64;
            return Err(PartitionError {
                exception: JavaException::StringIndexOutOfBounds,
                message: format!("begin {}, end {}, length {len}", len - 4, len - 2),
            });
        }
        let int = |units: &[u16]| {
            java::parse_int(&String::from_utf16_lossy(units)).ok_or_else(|| PartitionError {
                exception: JavaException::IllegalArgument,
                message: format!("columnValue:{value} Please check if the format satisfied."),
            })
        };
        let day = int(&units[len - 4..len - 2])?;
        let hour = int(&units[len - 2..])?;
        if self.hour_span == 0 {
            return Err(divide_by_zero());
        }
        Ok(Some(
            day.wrapping_sub(1)
                .wrapping_mul(self.split_one_day)
                .wrapping_add(hour.wrapping_div(self.hour_span)),
        ))
    }

    fn calculate_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        super::sequence_range(self, begin, end)
    }

    fn partition_num(&self) -> Option<usize> {
        None
    }
}

/// `io.mycat.route.function.PartitionByRangeDateHash` (SPEC §2.5.16): a date period picks a
/// group of `groupPartionSize` partitions, Guava's consistent hash of the epoch milliseconds
/// picks one inside it: `(int)((t - begin) / (sPartionDay * 86400000)) * g +
/// consistentHash(t, g)`. BETWEEN: every partition of the groups from begin to end.
#[derive(Debug)]
pub struct PartitionByRangeDateHash {
    dates: Dates,
    begin: i64,
    period: i64,
    group: i32,
}

impl PartitionByRangeDateHash {
    /// Properties: `dateFormat`, `sBeginDate`, `sPartionDay`, `groupPartionSize` (> 0).
    pub fn new(props: &Props<'_>, ctx: &BuildContext<'_>) -> Result<Self, FunctionError> {
        let dates = Dates::new(props.string("dateFormat"), ctx)?;
        let begin_text = props
            .string("sBeginDate")
            .ok_or_else(|| FunctionError::Required("sBeginDate".to_string()))?;
        let begin = dates.parse_property("sBeginDate", begin_text)?;
        let group = int_property(props, "groupPartionSize")?;
        if group <= 0 {
            return Err(FunctionError::Invalid(format!(
                "groupPartionSize must >0,but cur is {group}"
            )));
        }
        let period = i64::from(int_property(props, "sPartionDay")?) * ONE_DAY;
        Ok(PartitionByRangeDateHash {
            dates,
            begin,
            period,
            group,
        })
    }

    /// `(int)((t - begin) / partionTime)`.
    fn group_of(&self, t: i64) -> Result<i32, PartitionError> {
        if self.period == 0 {
            return Err(divide_by_zero());
        }
        Ok(t.wrapping_sub(self.begin).wrapping_div(self.period) as i32)
    }
}

/// Guava `Hashing.consistentHash(long input, int buckets)`.
fn consistent_hash(input: i64, buckets: i32) -> i32 {
    let mut state = input;
    let mut candidate: i32 = 0;
    loop {
        state = state
            .wrapping_mul(2_862_933_555_777_941_757)
            .wrapping_add(1);
        let d = f64::from(((state as u64 >> 33) as i32).wrapping_add(1)) / 2_147_483_648.0;
        let next = (f64::from(candidate.wrapping_add(1)) / d) as i32;
        if next >= 0 && next < buckets {
            candidate = next;
        } else {
            return candidate;
        }
    }
}

impl PartitionFunction for PartitionByRangeDateHash {
    fn calculate(&self, value: &str) -> Result<Option<i32>, PartitionError> {
        let t = self.dates.parse_value(value)?;
        let p = self.group_of(t)?;
        Ok(Some(
            p.wrapping_mul(self.group)
                .wrapping_add(consistent_hash(t, self.group)),
        ))
    }

    fn calculate_range(&self, begin: &str, end: &str) -> Result<RangePartitions, PartitionError> {
        let parse = |text: &str| {
            self.dates.parse(text).ok_or_else(|| PartitionError {
                exception: JavaException::IllegalArgument,
                message: format!("java.text.ParseException: Unparseable date: \"{text}\""),
            })
        };
        let first = self.group_of(parse(begin)?)?.wrapping_mul(self.group);
        let last = self
            .group_of(parse(end)?)?
            .wrapping_add(1)
            .wrapping_mul(self.group)
            .wrapping_sub(1);
        Ok(if last >= first {
            contiguous(None, first, last)
        } else {
            RangePartitions::None
        })
    }

    fn partition_num(&self) -> Option<usize> {
        None
    }
}

#[cfg(test)]
mod tests;
