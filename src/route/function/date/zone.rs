//! The JVM default time zone as `java.util.Calendar` sees it (`sun.util.calendar.ZoneInfo`
//! built by `ZoneInfoFile` from the tz database), so that wall-clock fields turn into the same
//! epoch milliseconds as in Mycat.
//!
//! `ZoneInfo` is not the plain tz database: its transition table starts with an entry at
//! 1900-01-01T00:00Z and ends in 2037. Before the table every instant uses the zone's *current*
//! standard offset (no LMT), after it the zone's last DST rule (a `SimpleTimeZone`), or the
//! offset of the last transition. A wall time is resolved by taking the last transition whose
//! `instant + offset after it` is not later than the wall time, which puts times in a DST gap
//! on the old offset (so they move forward) and times in an overlap on the new offset.

use crate::route::function::FunctionError;
use jiff::Timestamp;
use jiff::tz::{Offset, TimeZone, TimeZoneDatabase};

/// 1900-01-01T00:00:00Z, where `ZoneInfo`'s transition table starts (seconds).
const UTC1900: i64 = -2_208_988_800;
/// 2037-12-31T23:59:59Z, the last transition `ZoneInfoFile` keeps (seconds).
const UTC2037: i64 = 2_145_916_799;
/// 2037-01-01T00:00:00 as local seconds, the ending entry of zones without a DST rule.
const LDT2037: i64 = 2_114_380_800;
/// Milliseconds in 400 Gregorian years: DST rules repeat with this period.
const CYCLE_400Y_MS: i64 = 146_097 * 86_400_000;
/// 2040-01-01T00:00:00Z in ms: far-future instants are folded into [2040, 2440) before asking
/// the tz rules, which jiff only evaluates up to year 9999.
const FOLD_BASE_MS: i64 = 2_208_988_800_000;

/// A time zone with Java's `ZoneInfo` offsets.
#[derive(Debug, Clone)]
pub(crate) struct JavaZone {
    /// `getLastRawOffset()`: the zone's current standard offset (ms).
    raw: i64,
    /// `(transition instant ms, total offset after it ms)`; empty for a zone with no transition
    /// since 1900 (`transitions == null`: always `raw`).
    table: Vec<(i64, i64)>,
    /// The zone, when it keeps changing offset after 2037 (`ZoneInfo.getLastRule() != null`).
    rule: Option<TimeZone>,
}

impl JavaZone {
    /// The zone named `name`, or the process's local zone (`TZ`, `/etc/localtime`) for `None`.
    /// Names are resolved as `java.util.TimeZone.getTimeZone` does: Java's old three-letter
    /// IDs (`CTT`, `PST`, fixed `EST`...), custom `GMT+8` / `GMT-05:30` offsets, then tz
    /// database names, from the bundled database first (rearguard data, like the JDK's own
    /// copy). An unknown name is an error (Java would silently use GMT).
    pub(crate) fn new(name: Option<&str>) -> Result<Self, FunctionError> {
        let bundled = |name: &str| TimeZoneDatabase::bundled().get(name).ok();
        let tz = match name {
            None => {
                let system = TimeZone::system();
                system.iana_name().and_then(bundled).unwrap_or(system)
            }
            Some(name) => match java_zone_id(name) {
                Some(JavaId::Fixed(seconds)) => Offset::from_seconds(seconds)
                    .map(TimeZone::fixed)
                    .map_err(|e| FunctionError::Invalid(format!("time zone {name:?}: {e}")))?,
                Some(JavaId::Alias(iana)) => bundled(iana).ok_or_else(|| {
                    FunctionError::Invalid(format!(
                        "time zone {name:?} ({iana}) is not in the database"
                    ))
                })?,
                None => bundled(name)
                    .map_or_else(|| TimeZone::get(name), Ok)
                    .map_err(|e| {
                        FunctionError::Invalid(format!("unknown time zone {name:?}: {e}"))
                    })?,
            },
        };
        Ok(Self::from_tz(tz))
    }

    /// UTC (no transitions).
    #[cfg(test)]
    pub(crate) fn utc() -> Self {
        JavaZone {
            raw: 0,
            table: Vec::new(),
            rule: None,
        }
    }

    fn from_tz(tz: TimeZone) -> Self {
        let offset_ms = |second: i64| -> i64 {
            Timestamp::from_second(second)
                .map(|ts| i64::from(tz.to_offset(ts).seconds()) * 1000)
                .unwrap_or(0)
        };
        // 2100-01-15 and 2100-07-15: standard time is the smaller offset (rearguard data has
        // no negative DST).
        let raw = offset_ms(4_103_654_400).min(offset_ms(4_119_379_200));
        let mut table = Vec::new();
        let mut last_second = None;
        let mut beyond = false;
        if let Ok(start) = Timestamp::from_second(UTC1900 - 1) {
            for t in tz.following(start) {
                let second = t.timestamp().as_second();
                if second > UTC2037 {
                    beyond = true;
                    break;
                }
                if table.is_empty() {
                    // The beginning entry: the offset in effect at 1900.
                    table.push((UTC1900 * 1000, offset_ms(UTC1900 - 1)));
                }
                table.push((second * 1000, i64::from(t.offset().seconds()) * 1000));
                last_second = Some(second);
            }
        }
        if let Some(last) = last_second
            && !beyond
            && last < LDT2037 - raw / 1000
        {
            // ZoneInfo's ending entry for 2037 (zones without a DST rule).
            table.push(((LDT2037 - raw / 1000) * 1000, raw));
        }
        let rule = (beyond && !table.is_empty()).then_some(tz);
        JavaZone { raw, table, rule }
    }

    /// `ZoneInfo.getTransitionIndex`: binary search, comparing `date` with each transition's
    /// instant (`wall == false`) or with its instant plus the offset after it (`wall == true`).
    /// `None` below the table; `Some(len)` above it.
    fn transition_index(&self, date: i64, wall: bool) -> Option<usize> {
        let (mut low, mut high) = (0i64, self.table.len() as i64 - 1);
        while low <= high {
            let mid = (low + high) / 2;
            let (t, off) = self.table[mid as usize];
            let mid_val = if wall { t.wrapping_add(off) } else { t };
            if mid_val < date {
                low = mid + 1;
            } else if mid_val > date {
                high = mid - 1;
            } else {
                return Some(mid as usize);
            }
        }
        if low as usize >= self.table.len() {
            return Some(self.table.len());
        }
        usize::try_from(low - 1).ok()
    }

    fn lookup(&self, date: i64, wall: bool) -> i64 {
        if self.table.is_empty() {
            return self.raw;
        }
        match self.transition_index(date, wall) {
            None => self.raw,
            Some(i) if i < self.table.len() => self.table[i].1,
            Some(_) => match &self.rule {
                // The last rule (SimpleTimeZone) at the instant; a wall time is taken as
                // standard time, and one in a standard-to-daylight gap stays standard.
                Some(tz) => {
                    let msec = if wall {
                        date.wrapping_sub(self.raw)
                    } else {
                        date
                    };
                    let dst = rule_offset(tz, msec) - self.raw;
                    if wall && dst > 0 && rule_offset(tz, msec.wrapping_sub(dst)) == self.raw {
                        self.raw
                    } else {
                        self.raw + dst
                    }
                }
                // No rule: the offset of the last transition.
                None => self.table.last().map_or(self.raw, |&(_, off)| off),
            },
        }
    }

    /// `TimeZone.getOffset(utc)`: the total offset (ms) at an instant.
    pub(crate) fn offset_at_utc(&self, utc_ms: i64) -> i64 {
        self.lookup(utc_ms, false)
    }

    /// `ZoneInfo.getOffsetsByWall(wall)`: the total offset (ms) `GregorianCalendar` subtracts
    /// from a local wall-clock time.
    pub(crate) fn offset_by_wall(&self, wall_ms: i64) -> i64 {
        self.lookup(wall_ms, true)
    }
}

/// A Java time zone ID that is not a tz database name.
enum JavaId {
    /// A fixed offset in seconds (`GMT+8`, `EST`).
    Fixed(i32),
    /// One of `ZoneInfoFile`'s old three-letter IDs.
    Alias(&'static str),
}

/// `ZoneInfoFile`'s old mappings and `TimeZone.parseCustomTimeZone` (`GMT[+-]h[h][[:]mm]`).
fn java_zone_id(id: &str) -> Option<JavaId> {
    const OLD_MAPPINGS: [(&str, &str); 25] = [
        ("ACT", "Australia/Darwin"),
        ("AET", "Australia/Sydney"),
        ("AGT", "America/Argentina/Buenos_Aires"),
        ("ART", "Africa/Cairo"),
        ("AST", "America/Anchorage"),
        ("BET", "America/Sao_Paulo"),
        ("BST", "Asia/Dhaka"),
        ("CAT", "Africa/Harare"),
        ("CNT", "America/St_Johns"),
        ("CST", "America/Chicago"),
        ("CTT", "Asia/Shanghai"),
        ("EAT", "Africa/Addis_Ababa"),
        ("ECT", "Europe/Paris"),
        ("IET", "America/Indiana/Indianapolis"),
        ("IST", "Asia/Kolkata"),
        ("JST", "Asia/Tokyo"),
        ("MIT", "Pacific/Apia"),
        ("NET", "Asia/Yerevan"),
        ("NST", "Pacific/Auckland"),
        ("PLT", "Asia/Karachi"),
        ("PNT", "America/Phoenix"),
        ("PRT", "America/Puerto_Rico"),
        ("PST", "America/Los_Angeles"),
        ("SST", "Pacific/Guadalcanal"),
        ("VST", "Asia/Ho_Chi_Minh"),
    ];
    match id {
        "EST" => return Some(JavaId::Fixed(-5 * 3600)),
        "MST" => return Some(JavaId::Fixed(-7 * 3600)),
        "HST" => return Some(JavaId::Fixed(-10 * 3600)),
        _ => {}
    }
    if let Some(&(_, iana)) = OLD_MAPPINGS.iter().find(|(old, _)| *old == id) {
        return Some(JavaId::Alias(iana));
    }
    let rest = id.strip_prefix("GMT")?;
    let (negative, body) = match rest.as_bytes().first()? {
        b'+' => (false, &rest[1..]),
        b'-' => (true, &rest[1..]),
        _ => return None,
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (hours, minutes): (i64, i64) = match body.split_once(':') {
        Some((h, m)) if digits(h) && h.len() <= 2 && digits(m) && m.len() == 2 => {
            (h.parse().ok()?, m.parse().ok()?)
        }
        Some(_) => return None,
        None if digits(body) && body.len() <= 2 => (body.parse().ok()?, 0),
        None if digits(body) && body.len() <= 18 => {
            let n: i64 = body.parse().ok()?;
            (n / 100, n % 100)
        }
        None => return None,
    };
    if hours > 23 || minutes > 59 {
        return None;
    }
    let seconds = ((hours * 60 + minutes) * 60) as i32;
    Some(JavaId::Fixed(if negative { -seconds } else { seconds }))
}

/// The offset of `tz`'s rules at `ms`, folding far instants by 400-year cycles (the Gregorian
/// calendar, and so every DST rule, repeats exactly).
fn rule_offset(tz: &TimeZone, ms: i64) -> i64 {
    let k = (ms as i128 - FOLD_BASE_MS as i128).div_euclid(CYCLE_400Y_MS as i128);
    let folded = (ms as i128 - k * CYCLE_400Y_MS as i128) as i64;
    Timestamp::from_millisecond(folded)
        .map(|ts| i64::from(tz.to_offset(ts).seconds()) * 1000)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    #[test]
    fn utc_has_no_offset() {
        let z = JavaZone::new(Some("UTC")).unwrap();
        assert_eq!(z.offset_at_utc(0), 0);
        assert_eq!(z.offset_by_wall(i64::MIN), 0);
        assert!(JavaZone::new(Some("No/Such_Zone")).is_err());
        assert!(JavaZone::new(None).is_ok());
    }

    #[test]
    fn java_zone_ids() {
        let offset = |id: &str| JavaZone::new(Some(id)).unwrap().offset_at_utc(0);
        assert_eq!(offset("GMT+8"), 8 * H);
        assert_eq!(offset("GMT+08:00"), 8 * H);
        assert_eq!(offset("GMT-0530"), -(5 * H + 30 * 60_000));
        assert_eq!(offset("EST"), -5 * H);
        assert_eq!(offset("CTT"), 8 * H);
        assert_eq!(offset("GMT+123"), H + 23 * 60_000);
        for bad in ["GMT+", "GMT+24", "GMT+1:5", "GMT+12345", "GMT*1"] {
            assert!(java_zone_id(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn shanghai_uses_raw_offset_before_1900_and_lmt_after() {
        let z = JavaZone::new(Some("Asia/Shanghai")).unwrap();
        // Before the table: the current standard offset, not LMT.
        assert_eq!(z.offset_at_utc(-3_000_000_000_000), 8 * H);
        // 1900..1901: LMT +8:05:43 from the beginning entry.
        assert_eq!(z.offset_at_utc(UTC1900 * 1000 + 1), 29_143_000);
        // 1986-05-04 (DST) and far future.
        assert_eq!(z.offset_at_utc(516_067_200_000), 9 * H);
        assert_eq!(z.offset_at_utc(4_000_000_000_000), 8 * H);
    }

    #[test]
    fn new_york_gap_moves_forward_overlap_takes_standard() {
        let z = JavaZone::new(Some("America/New_York")).unwrap();
        // 2021-03-14 02:30 local (gap): the old offset, -5h.
        let gap_wall = 1_615_689_000_000; // 2021-03-14T02:30:00 as if UTC
        assert_eq!(z.offset_by_wall(gap_wall), -5 * H);
        // 2021-11-07 01:30 local (overlap): the new offset, -5h.
        let overlap_wall = 1_636_248_600_000; // 2021-11-07T01:30:00 as if UTC
        assert_eq!(z.offset_by_wall(overlap_wall), -5 * H);
        // 2050-07-01 (beyond the table, SimpleTimeZone rule): EDT.
        assert_eq!(z.offset_at_utc(2_540_246_400_000), -4 * H);
        // Year 99999 July: folded by 400-year cycles, still EDT.
        assert_eq!(z.offset_at_utc(3_093_512_083_200_000), -4 * H);
    }
}
