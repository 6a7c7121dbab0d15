//! `java.util.GregorianCalendar` arithmetic, lenient, as Mycat's date functions get it through
//! `SimpleDateFormat` and `Calendar.getInstance()`: the Julian calendar before the Gregorian
//! cutover (1582-10-15), out-of-range fields rolling over, Java's int/long wrap-around, and
//! the zone offsets of [`JavaZone`].
//!
//! Dates are handled as "fixed dates" (day 1 = 0001-01-01 proleptic Gregorian, continuous across
//! the cutover), exactly as `sun.util.calendar` does.

use super::zone::JavaZone;

pub(crate) const ONE_DAY: i64 = 86_400_000;
/// Fixed date of 1970-01-01.
const EPOCH_OFFSET: i64 = 719_163;
/// Fixed date of 1582-10-15 (Gregorian), the default `gregorianCutover`.
const CUTOVER_FIXED_DATE: i64 = 577_736;
/// The cutover year, in both calendars.
const CUTOVER_YEAR: i32 = 1582;
/// `BaseCalendar.ACCUMULATED_DAYS_IN_MONTH`, indexed by month 1..=12 (0 = December before).
const ACCUMULATED_DAYS_IN_MONTH: [i64; 13] =
    [-30, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];

/// The calendar fields a `SimpleDateFormat` pattern can set (a subset of `java.util.Calendar`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    Year,
    Month,
    DayOfMonth,
    AmPm,
    Hour,
    HourOfDay,
    Minute,
    Second,
    Millisecond,
}

const FIELD_COUNT: usize = 9;
/// `Calendar.UNSET` stamp.
const UNSET: u32 = 0;
/// `Calendar.MINIMUM_USER_STAMP`.
const MINIMUM_USER_STAMP: u32 = 2;

/// `java.text.CalendarBuilder`: field values with the order they were set in (later wins when
/// fields compete, e.g. `HOUR_OF_DAY` against `HOUR` + `AM_PM`).
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    values: [i32; FIELD_COUNT],
    stamps: [u32; FIELD_COUNT],
    next_stamp: u32,
}

impl Default for Fields {
    fn default() -> Self {
        Fields {
            values: [0; FIELD_COUNT],
            stamps: [UNSET; FIELD_COUNT],
            next_stamp: MINIMUM_USER_STAMP,
        }
    }
}

impl Fields {
    pub(crate) fn set(&mut self, field: Field, value: i32) {
        self.values[field as usize] = value;
        self.stamps[field as usize] = self.next_stamp;
        self.next_stamp += 1;
    }

    /// `CalendarBuilder.addYear`.
    pub(crate) fn add_year(&mut self, years: i32) {
        let y = &mut self.values[Field::Year as usize];
        *y = y.wrapping_add(years);
    }

    fn stamp(&self, field: Field) -> u32 {
        self.stamps[field as usize]
    }

    fn is_set(&self, field: Field) -> bool {
        self.stamp(field) != UNSET
    }

    /// `internalGet`: the value, 0 when unset (after `Calendar.clear()`).
    fn get(&self, field: Field) -> i32 {
        self.values[field as usize]
    }
}

/// `Calendar.aggregateStamp`.
fn aggregate_stamp(a: u32, b: u32) -> u32 {
    if a == UNSET || b == UNSET {
        UNSET
    } else {
        a.max(b)
    }
}

fn is_gregorian_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn is_julian_leap(year: i32) -> bool {
    year % 4 == 0
}

/// `BaseCalendar.getFixedDate` (proleptic Gregorian; `year` 0 = 1 BC).
fn gregorian_fixed_date(year: i32, month: i32, day_of_month: i32) -> i64 {
    let prev = i64::from(year) - 1;
    let month_days = i64::from(367 * month - 362);
    let mut days = i64::from(day_of_month);
    if prev >= 0 {
        days += 365 * prev + prev / 4 - prev / 100 + prev / 400 + month_days / 12;
    } else {
        days += 365 * prev + prev.div_euclid(4) - prev.div_euclid(100)
            + prev.div_euclid(400)
            + month_days.div_euclid(12);
    }
    if month > 2 {
        days -= if is_gregorian_leap(year) { 1 } else { 2 };
    }
    days
}

/// `JulianCalendar.getFixedDate` (`jyear` normalized: 0 = 1 BC).
fn julian_fixed_date(jyear: i32, month: i32, day_of_month: i32) -> i64 {
    const JULIAN_EPOCH: i64 = -1;
    let y = i64::from(jyear);
    let mut days = JULIAN_EPOCH - 1 + 365 * (y - 1) + i64::from(day_of_month);
    days += if y > 0 {
        (y - 1) / 4
    } else {
        (y - 1).div_euclid(4)
    };
    let month_days = 367 * i64::from(month) - 362;
    days += if month > 0 {
        month_days / 12
    } else {
        month_days.div_euclid(12)
    };
    if month > 2 {
        days -= if is_julian_leap(jyear) { 1 } else { 2 };
    }
    days
}

/// `BaseCalendar.getGregorianYearFromFixedDate`, with Java's int arithmetic.
fn gregorian_year_from_fixed(fixed: i64) -> i32 {
    let d0 = fixed - 1;
    let (n400, d1) = (d0.div_euclid(146_097) as i32, d0.rem_euclid(146_097) as i32);
    let (n100, d2) = (d1 / 36_524, d1 % 36_524);
    let (n4, d3) = (d2 / 1461, d2 % 1461);
    let n1 = d3 / 365;
    let mut year = n400
        .wrapping_mul(400)
        .wrapping_add(100 * n100)
        .wrapping_add(4 * n4)
        .wrapping_add(n1);
    if !(n100 == 4 || n1 == 4) {
        year = year.wrapping_add(1);
    }
    year
}

/// A date in one of the two calendars: normalized year (0 = 1 BC), month 1..=12, day.
struct CalendarDate {
    year: i32,
    month: i32,
    day: i32,
}

/// `BaseCalendar.getCalendarDateFromFixedDate` (Gregorian).
fn gregorian_from_fixed(fixed: i64) -> CalendarDate {
    let year = gregorian_year_from_fixed(fixed);
    let jan1 = gregorian_fixed_date(year, 1, 1);
    let leap = is_gregorian_leap(year);
    let mut prior_days = (fixed - jan1) as i32;
    let mar1 = jan1 + 31 + 28 + i64::from(leap);
    if fixed >= mar1 {
        prior_days = prior_days.wrapping_add(if leap { 1 } else { 2 });
    }
    let month = month_from_prior_days(prior_days);
    let idx = month.clamp(0, 12) as usize;
    let mut month1 = jan1 + ACCUMULATED_DAYS_IN_MONTH[idx];
    if leap && month >= 3 {
        month1 += 1;
    }
    CalendarDate {
        year,
        month,
        day: ((fixed - month1) as i32).wrapping_add(1),
    }
}

/// `JulianCalendar.getCalendarDateFromFixedDate`.
fn julian_from_fixed(fixed: i64) -> CalendarDate {
    let fd = 4 * (fixed + 1) + 1464;
    let year = fd.div_euclid(1461) as i32;
    let mut prior_days = (fixed - julian_fixed_date(year, 1, 1)) as i32;
    let leap = is_julian_leap(year);
    if fixed >= julian_fixed_date(year, 3, 1) {
        prior_days = prior_days.wrapping_add(if leap { 1 } else { 2 });
    }
    let month = month_from_prior_days(prior_days);
    let day = ((fixed - julian_fixed_date(year, month, 1)) as i32).wrapping_add(1);
    CalendarDate { year, month, day }
}

/// `month = (12 * priorDays + 373) / 367`, floored.
fn month_from_prior_days(prior_days: i32) -> i32 {
    let m = prior_days.wrapping_mul(12).wrapping_add(373);
    if m > 0 { m / 367 } else { m.div_euclid(367) }
}

/// `GregorianCalendar.getFixedDate(cal, year, fieldMask)` for the MONTH + DAY_OF_MONTH
/// combination (the only one the supported patterns produce).
fn fixed_date_of(julian: bool, year: i32, fields: &Fields) -> i64 {
    let (mut year, mut month) = (year, fields.get(Field::Month));
    if month > 11 {
        year = year.wrapping_add(month / 12);
        month %= 12;
    } else if month < 0 {
        year = year.wrapping_add(month.div_euclid(12));
        month = month.rem_euclid(12);
    }
    let mut fixed = if julian {
        julian_fixed_date(year, month + 1, 1)
    } else {
        gregorian_fixed_date(year, month + 1, 1)
    };
    if fields.is_set(Field::DayOfMonth) {
        fixed += i64::from(fields.get(Field::DayOfMonth));
        fixed -= 1;
    }
    fixed
}

/// `GregorianCalendar.computeTime()` after `clear()` and the builder's `set` calls (lenient):
/// the epoch milliseconds the fields denote in `zone`.
pub(crate) fn compute_time(fields: &Fields, zone: &JavaZone) -> i64 {
    // Calendar.selectFields: the date is always MONTH + DAY_OF_MONTH here; the hour is
    // HOUR_OF_DAY or HOUR (+ AM_PM), whichever group was set last.
    let hour_of_day_stamp = fields.stamp(Field::HourOfDay);
    let hour_stamp = aggregate_stamp(fields.stamp(Field::Hour), fields.stamp(Field::AmPm));
    let mut best = if hour_stamp > hour_of_day_stamp {
        hour_stamp
    } else {
        hour_of_day_stamp
    };
    if best == UNSET {
        best = fields.stamp(Field::Hour).max(fields.stamp(Field::AmPm));
    }
    let use_hour_of_day = best != UNSET && best == hour_of_day_stamp;
    let use_am_pm = best != UNSET && !use_hour_of_day && fields.is_set(Field::AmPm);

    let year = if fields.is_set(Field::Year) {
        fields.get(Field::Year)
    } else {
        1970
    };

    let mut time_of_day: i64 = if use_hour_of_day {
        i64::from(fields.get(Field::HourOfDay))
    } else {
        let mut t = i64::from(fields.get(Field::Hour));
        if use_am_pm {
            t += i64::from(12i32.wrapping_mul(fields.get(Field::AmPm)));
        }
        t
    };
    time_of_day = time_of_day * 60 + i64::from(fields.get(Field::Minute));
    time_of_day = time_of_day * 60 + i64::from(fields.get(Field::Second));
    time_of_day = time_of_day * 1000 + i64::from(fields.get(Field::Millisecond));
    let mut fixed = time_of_day / ONE_DAY;
    time_of_day %= ONE_DAY;
    while time_of_day < 0 {
        time_of_day += ONE_DAY;
        fixed -= 1;
    }

    let gregorian = |f: i64| f + fixed_date_of(false, year, fields);
    let julian = |f: i64| f + fixed_date_of(true, year, fields);
    let (gfd, jfd);
    if year > CUTOVER_YEAR {
        gfd = gregorian(fixed);
        if gfd >= CUTOVER_FIXED_DATE {
            return to_utc(gfd, time_of_day, zone);
        }
        jfd = julian(fixed);
    } else if year < CUTOVER_YEAR {
        jfd = julian(fixed);
        if jfd < CUTOVER_FIXED_DATE {
            return to_utc(jfd, time_of_day, zone);
        }
        gfd = jfd;
    } else {
        jfd = julian(fixed);
        gfd = gregorian(fixed);
    }
    // In the cutover period: an "overlapping" date takes the Gregorian reading (the calendar
    // system of a fresh calendar), a "missing" one the Julian reading.
    let fixed = if gfd >= CUTOVER_FIXED_DATE { gfd } else { jfd };
    to_utc(fixed, time_of_day, zone)
}

fn to_utc(fixed: i64, time_of_day: i64, zone: &JavaZone) -> i64 {
    let wall = (fixed - EPOCH_OFFSET)
        .wrapping_mul(ONE_DAY)
        .wrapping_add(time_of_day);
    wall.wrapping_sub(zone.offset_by_wall(wall))
}

/// The calendar fields of an instant (`Calendar.setTime` then `get`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LocalFields {
    /// `YEAR`: the year of the era (1 BC is 1 with `bce`).
    pub year: i32,
    pub bce: bool,
    /// `MONTH`, 0-based.
    pub month: i32,
    pub day_of_month: i32,
    pub hour_of_day: i32,
    pub minute: i32,
    pub second: i32,
    pub millisecond: i32,
    /// Local fixed date (day number, continuous across the cutover).
    pub fixed_date: i64,
    /// Local milliseconds within the day.
    pub time_of_day: i64,
}

/// Local fixed date and time of day of `utc` in `zone` (`GregorianCalendar.computeFields`).
fn local_day(utc: i64, zone: &JavaZone) -> (i64, i64) {
    let offset = zone.offset_at_utc(utc);
    let mut fixed = offset / ONE_DAY + utc / ONE_DAY;
    let mut time_of_day = offset % ONE_DAY + utc % ONE_DAY;
    if time_of_day >= ONE_DAY {
        time_of_day -= ONE_DAY;
        fixed += 1;
    } else {
        while time_of_day < 0 {
            time_of_day += ONE_DAY;
            fixed -= 1;
        }
    }
    (fixed + EPOCH_OFFSET, time_of_day)
}

/// `GregorianCalendar.computeFields`: the fields of the instant `utc` in `zone`.
pub(crate) fn compute_fields(utc: i64, zone: &JavaZone) -> LocalFields {
    let (fixed, time_of_day) = local_day(utc, zone);
    let date = if fixed >= CUTOVER_FIXED_DATE {
        gregorian_from_fixed(fixed)
    } else {
        julian_from_fixed(fixed)
    };
    let (year, bce) = if date.year <= 0 {
        (1i32.wrapping_sub(date.year), true)
    } else {
        (date.year, false)
    };
    let t = time_of_day as i32;
    LocalFields {
        year,
        bce,
        month: date.month - 1,
        day_of_month: date.day,
        hour_of_day: t / 3_600_000,
        minute: t % 3_600_000 / 60_000,
        second: t % 60_000 / 1000,
        millisecond: t % 1000,
        fixed_date: fixed,
        time_of_day,
    }
}

/// `GregorianCalendar.add(Calendar.DATE, 1)` on the instant `utc`: the same wall-clock time
/// on the next calendar day, with Java's adjustment when the zone offset changes.
pub(crate) fn add_one_day(utc: i64, zone: &JavaZone) -> i64 {
    let offset = zone.offset_at_utc(utc);
    let (fixed, time_of_day) = local_day(utc, zone);
    let fixed = fixed + 1;
    let t = (fixed - EPOCH_OFFSET)
        .wrapping_mul(ONE_DAY)
        .wrapping_add(time_of_day)
        .wrapping_sub(offset);
    let delta = offset - zone.offset_at_utc(t);
    if delta == 0 {
        return t;
    }
    let adjusted = t.wrapping_add(delta);
    if local_day(adjusted, zone).0 != fixed {
        t
    } else {
        adjusted
    }
}

/// `SimpleDateFormat`'s two-digit-year window: the instant 80 years before `now` and its
/// year (`initializeDefaultCentury`: `Calendar.add(YEAR, -80)`, day pinned to the month).
pub(crate) fn century_start(now: i64, zone: &JavaZone) -> (i64, i32) {
    let f = compute_fields(now, zone);
    // Normalized year, minus 80, back to an era year.
    let normalized = if f.bce { 1 - f.year } else { f.year };
    let start = normalized.saturating_sub(80);
    let month_len = match f.month {
        1 if is_gregorian_leap(start) => 29,
        1 => 28,
        3 | 5 | 8 | 10 => 30,
        _ => 31,
    };
    let mut fields = Fields::default();
    fields.set(Field::Year, start);
    fields.set(Field::Month, f.month);
    fields.set(Field::DayOfMonth, f.day_of_month.min(month_len));
    fields.set(Field::HourOfDay, f.hour_of_day);
    fields.set(Field::Minute, f.minute);
    fields.set(Field::Second, f.second);
    fields.set(Field::Millisecond, f.millisecond);
    let ms = compute_time(&fields, zone);
    (ms, compute_fields(ms, zone).year)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ymd(y: i32, m: i32, d: i32) -> Fields {
        let mut f = Fields::default();
        f.set(Field::Year, y);
        f.set(Field::Month, m - 1);
        f.set(Field::DayOfMonth, d);
        f
    }

    fn days(y: i32, m: i32, d: i32) -> i64 {
        compute_time(&ymd(y, m, d), &JavaZone::utc()).div_euclid(ONE_DAY)
    }

    #[test]
    fn gregorian_and_julian_fixed_dates() {
        assert_eq!(gregorian_fixed_date(1970, 1, 1), EPOCH_OFFSET);
        assert_eq!(gregorian_fixed_date(1582, 10, 15), CUTOVER_FIXED_DATE);
        // Julian 1582-10-05 is Gregorian 1582-10-15.
        assert_eq!(julian_fixed_date(1582, 10, 5), CUTOVER_FIXED_DATE);
        assert_eq!(julian_fixed_date(1, 1, 1), -1);
        for fixed in [-800_000, -1, 0, 1, 577_735, 577_736, 719_163, 3_652_059] {
            let g = gregorian_from_fixed(fixed);
            assert_eq!(gregorian_fixed_date(g.year, g.month, g.day), fixed);
            let j = julian_from_fixed(fixed);
            assert_eq!(julian_fixed_date(j.year, j.month, j.day), fixed);
        }
    }

    #[test]
    fn lenient_fields_roll_over() {
        assert_eq!(days(2014, 13, 1), days(2015, 1, 1));
        assert_eq!(days(2014, 2, 30), days(2014, 3, 2));
        assert_eq!(days(2014, 1, 0), days(2013, 12, 31));
        assert_eq!(days(2014, 0, 1), days(2013, 12, 1));
        assert_eq!(days(1970, 1, 1), 0);
    }

    #[test]
    fn julian_before_the_cutover() {
        // 1582-10-04 (Julian) is the day before 1582-10-15 (Gregorian).
        assert_eq!(days(1582, 10, 4) + 1, days(1582, 10, 15));
        // 1582-10-10 does not exist: read as Julian, it is 1582-10-20.
        assert_eq!(days(1582, 10, 10), days(1582, 10, 20));
        let f = compute_fields(days(1582, 10, 4) * ONE_DAY, &JavaZone::utc());
        assert_eq!((f.year, f.month, f.day_of_month), (1582, 9, 4));
        // Year 0 is 1 BC.
        let f = compute_fields(days(0, 1, 1) * ONE_DAY, &JavaZone::utc());
        assert_eq!((f.year, f.bce, f.month, f.day_of_month), (1, true, 0, 1));
    }

    #[test]
    fn hour_fields_compete_by_stamp() {
        let utc = JavaZone::utc();
        let mut f = ymd(1970, 1, 1);
        f.set(Field::Hour, 3);
        f.set(Field::AmPm, 1);
        assert_eq!(compute_time(&f, &utc), 15 * 3_600_000);
        f.set(Field::HourOfDay, 4);
        assert_eq!(compute_time(&f, &utc), 4 * 3_600_000);
        let mut f = ymd(1970, 1, 1);
        f.set(Field::Hour, 5); // no AM_PM: HOUR alone
        assert_eq!(compute_time(&f, &utc), 5 * 3_600_000);
    }

    #[test]
    fn add_day_keeps_wall_time_across_dst() {
        let ny = JavaZone::new(Some("America/New_York")).unwrap();
        let mut f = ymd(2021, 3, 13);
        f.set(Field::HourOfDay, 12);
        let t = compute_time(&f, &ny);
        let next = add_one_day(t, &ny);
        assert_eq!(next - t, 23 * 3_600_000);
        assert_eq!(compute_fields(next, &ny).hour_of_day, 12);
    }

    #[test]
    fn century_window() {
        // 2024-06-15T12:00Z → 1944-06-15T12:00Z.
        let (start, year) = century_start(1_718_452_800_000, &JavaZone::utc());
        assert_eq!(year, 1944);
        assert_eq!(start, -806_155_200_000);
    }
}
