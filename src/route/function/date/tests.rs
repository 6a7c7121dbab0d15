//! SPEC.md §2.5.11-2.5.16 examples, Mycat's own unit-test values, and this family's golden
//! vector files with every mismatch listed.

use crate::route::function::FunctionError;
use std::collections::BTreeMap;

use super::*;

const NOW: i64 = 1_718_452_800_000; // 2024-06-15T12:00:00Z, the vectors' frozen clock

fn ctx_in<'a>(
    version: MycatVersion,
    time_zone: Option<&'a str>,
    read: &'a dyn Fn(&str) -> Result<String, String>,
) -> BuildContext<'a> {
    BuildContext {
        version,
        read_map_file: read,
        time_zone,
        now_ms: Some(NOW),
        table: None,
    }
}

fn no_files(name: &str) -> Result<String, String> {
    Err(format!("no map file {name}"))
}

fn build_in(
    class: &str,
    props: &[(&str, &str)],
    version: MycatVersion,
    zone: &str,
) -> Result<Arc<dyn PartitionFunction>, FunctionError> {
    let map: BTreeMap<String, String> = props
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let ctx = ctx_in(version, Some(zone), &no_files);
    build(class, &Props(&map), &ctx).expect("a date-family class")
}

fn func(class: &str, props: &[(&str, &str)]) -> Arc<dyn PartitionFunction> {
    build_in(class, props, MycatVersion::V1_6_7_6, "UTC").unwrap()
}

fn calc(f: &Arc<dyn PartitionFunction>, v: &str) -> i32 {
    f.calculate(v).unwrap().unwrap()
}

#[test]
fn partition_by_date_spec_examples() {
    let ten_days = [
        ("dateFormat", "yyyy-MM-dd"),
        ("sBeginDate", "2014-01-01"),
        ("sPartionDay", "10"),
    ];
    let f = func("PartitionByDate", &ten_days);
    for (v, p) in [
        ("2014-01-01", 0),
        ("2014-01-10", 0),
        ("2014-01-11", 1),
        ("2014-05-01", 12),
    ] {
        assert_eq!(calc(&f, v), p, "{v}");
    }
    assert_eq!(f.partition_num(), None);

    let mut with_end = ten_days.to_vec();
    with_end.push(("sEndDate", "2014-01-31"));
    let f = func("PartitionByDate", &with_end);
    assert_eq!(f.partition_num(), Some(4));
    for (v, p) in [
        ("2014-02-01", 3),
        ("2014-02-19", 0),
        ("2014-02-20", 1),
        ("2014-03-01", 1),
        ("2014-03-02", 2),
        ("2014-03-11", 2),
        ("2014-03-20", 3),
    ] {
        assert_eq!(calc(&f, v), p, "{v}");
    }

    let one_day = [
        ("dateFormat", "yyyy-MM-dd"),
        ("sBeginDate", "2014-01-01"),
        ("sEndDate", "2014-01-31"),
        ("sPartionDay", "1"),
    ];
    let f = func("PartitionByDate", &one_day);
    assert_eq!((calc(&f, "2014-01-10"), calc(&f, "2014-02-01")), (9, 0));

    let natural = [
        ("dateFormat", "yyyy-MM-dd"),
        ("sBeginDate", "2014-01-01"),
        ("sPartionDay", "10"),
        ("sNaturalDay", "1"),
    ];
    let f = func("PartitionByDate", &natural);
    for (v, p) in [("2014-01-20", 19), ("2014-03-01", 0), ("2018-03-31", 30)] {
        assert_eq!(calc(&f, v), p, "{v}");
    }
    // Natural mode with an end date under 28 days falls back to 10-day periods.
    let mut short = natural.to_vec();
    short.push(("sEndDate", "2014-01-20"));
    let f = func("PartitionByDate", &short);
    assert_eq!((calc(&f, "2014-01-20"), f.partition_num()), (1, Some(2)));
}

#[test]
fn partition_by_date_errors_and_ranges() {
    let f = func(
        "PartitionByDate",
        &[
            ("dateFormat", "yyyy-MM-dd"),
            ("sBeginDate", "2014-01-01"),
            ("sPartionDay", "10"),
        ],
    );
    let e = f.calculate("2014/01/01").unwrap_err();
    assert_eq!(e.exception, JavaException::IllegalArgument);
    assert_eq!(
        e.message,
        "columnValue:2014/01/01 Please check if the format satisfied."
    );
    assert_eq!(
        f.calculate_range("2014-01-05", "2014-01-25").unwrap(),
        RangePartitions::Some(vec![0, 1, 2])
    );
    assert_eq!(
        f.calculate_range("x", "2014-01-25").unwrap(),
        RangePartitions::All
    );
    assert_eq!(
        f.calculate_range("2014-01-25", "2014-01-05").unwrap(),
        RangePartitions::All
    );
    // Far too many days to walk: all partitions instead of a hang.
    assert_eq!(
        f.calculate_range("0001-01-01", "9999-01-01").unwrap(),
        RangePartitions::All
    );
    // Routing uses the same walk: every day's partition, so never too narrow.
    assert_eq!(
        f.route_range("2014-01-05", "2014-01-25").unwrap(),
        RangePartitions::Some(vec![0, 1, 2])
    );
    assert_eq!(
        f.route_range(&i64::MIN.to_string(), "2014-01-25").unwrap(),
        RangePartitions::All
    );

    // Without sBeginDate the period is 0: Mycat divides by zero on every value.
    let f = func(
        "PartitionByDate",
        &[("dateFormat", "yyyy-MM-dd"), ("sPartionDay", "10")],
    );
    assert_eq!(
        f.calculate("2014-01-01").unwrap_err().exception,
        JavaException::Arithmetic
    );

    for bad in [
        vec![("sBeginDate", "2014-01-01"), ("sPartionDay", "10")],
        vec![("dateFormat", "yyyy-MM-dd"), ("sBeginDate", "2014-01-01")],
        vec![
            ("dateFormat", "yyyy-MM-dd"),
            ("sBeginDate", "x"),
            ("sPartionDay", "1"),
        ],
        vec![
            ("dateFormat", "yyyy-EEE"),
            ("sBeginDate", "2014-01-01"),
            ("sPartionDay", "1"),
        ],
        vec![
            ("dateFormat", "yyyy-MM-dd"),
            ("sBeginDate", "2014-01-01"),
            ("sEndDate", "2014-02-01"),
            ("sPartionDay", "0"),
        ],
    ] {
        assert!(
            build_in("PartitionByDate", &bad, MycatVersion::V1_6_7_6, "UTC").is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn partition_by_date_dst_in_shanghai() {
    // China observed DST in 1986-1991: the day after a DST start is 23 hours after local
    // midnight, so millisecond arithmetic puts it one partition early.
    let f = build_in(
        "PartitionByDate",
        &[
            ("dateFormat", "yyyy-MM-dd"),
            ("sBeginDate", "1986-01-01"),
            ("sPartionDay", "1"),
        ],
        MycatVersion::V1_6_7_6,
        "Asia/Shanghai",
    )
    .unwrap();
    assert_eq!(calc(&f, "1986-05-04"), 123);
    assert_eq!(calc(&f, "1986-05-05"), 123);
}

#[test]
fn partition_by_month_spec_examples() {
    let f = func(
        "PartitionByMonth",
        &[("dateFormat", "yyyy-MM-dd"), ("sBeginDate", "2014-01-01")],
    );
    for (v, p) in [
        ("2014-01-01", 0),
        ("2014-01-10", 0),
        ("2014-01-31", 0),
        ("2014-02-01", 1),
        ("2014-02-28", 1),
        ("2014-03-1", 2),
        ("2014-12-31", 11),
        ("2015-01-31", 12),
        ("2015-12-31", 23),
        ("2013-06-01", 0), // before begin: clamped in 1.6.7.6
    ] {
        assert_eq!(calc(&f, v), p, "{v}");
    }
    assert_eq!(f.partition_num(), None);

    let f = func(
        "PartitionByMonth",
        &[
            ("dateFormat", "yyyy-MM-dd"),
            ("sBeginDate", "2015-01-01"),
            ("sEndDate", "2015-12-01"),
        ],
    );
    assert_eq!(f.partition_num(), Some(12));
    for (v, p) in [
        ("2013-01-02", 0),
        ("2016-01-20", 0),
        ("2013-02-02", 1),
        ("2013-06-01", 5),
        ("2013-12-28", 11),
        ("2016-12-31", 11),
    ] {
        assert_eq!(calc(&f, v), p, "{v}");
    }

    let f = func("PartitionByMonth", &[]);
    assert_eq!((calc(&f, "2015-01-31"), calc(&f, "2015-12-31")), (0, 11));
    assert_eq!(f.partition_num(), Some(12));
    assert_eq!(
        f.calculate_range("2014-11-22", "2015-02-01").unwrap(),
        RangePartitions::Some(vec![10, 11, 0, 1])
    );

    assert!(
        build_in(
            "PartitionByMonth",
            &[("sBeginDate", "2015-02-01"), ("sEndDate", "2015-01-01")],
            MycatVersion::V1_6_7_6,
            "UTC"
        )
        .unwrap_err()
        .to_string()
        .contains("Incorrect time range")
    );
}

#[test]
fn partition_by_month_versions() {
    let props = [("dateFormat", "yyyy-MM-dd"), ("sBeginDate", "2015-01-01")];
    let head = func("PartitionByMonth", &props);
    let branch = build_in("PartitionByMonth", &props, MycatVersion::V1_6_7_5, "UTC").unwrap();
    assert_eq!(
        (calc(&head, "2014-01-01"), calc(&branch, "2014-01-01")),
        (0, -12)
    );
    let range = |f: &Arc<dyn PartitionFunction>| f.calculate_range("2014-11-01", "2015-03-01");
    assert_eq!(range(&head).unwrap(), RangePartitions::Some(vec![0, 1, 2]));
    // The 1.6 branch wraps with n = -1: everything is 0.
    assert_eq!(range(&branch).unwrap(), RangePartitions::Some(vec![0]));
    // 1.6.5: no default format, no scene without dates.
    assert!(build_in("PartitionByMonth", &[], MycatVersion::V1_6_5, "UTC").is_err());
    assert!(build_in("PartitionByMonth", &[], MycatVersion::V1_6_7_5, "UTC").is_ok());

    let history = func("PartitionByMonthAndHistory", &props);
    assert_eq!(calc(&history, "2014-01-01"), -12);
    assert_eq!(history.partition_num(), None);
    assert!(
        build_in(
            "PartitionByMonthAndHistory",
            &[("sBeginDate", "2015-01-01")],
            MycatVersion::V1_6_7_6,
            "UTC"
        )
        .is_err()
    );
}

#[test]
fn hot_date() {
    let f = func(
        "PartitionByHotDate",
        &[
            ("dateFormat", "yyyy-MM-dd"),
            ("sLastDay", "10"),
            ("sPartionDay", "1"),
        ],
    );
    // now = 2024-06-15T12:00Z; the hot boundary is 2024-06-05T12:00Z.
    assert_eq!(calc(&f, "2024-06-15"), 0);
    assert_eq!(calc(&f, "2030-01-01"), 0);
    assert_eq!(calc(&f, "2024-06-06"), 0);
    assert_eq!(calc(&f, "2024-06-05"), 1);
    assert_eq!(calc(&f, "2024-06-04"), 2);
    assert_eq!(
        f.calculate_range("2024-06-10", "2024-06-12").unwrap(),
        RangePartitions::Some(vec![0])
    );
    assert_eq!(
        f.calculate_range("2024-06-01", "2024-06-12").unwrap(),
        RangePartitions::Some(vec![0, 1, 2, 3, 4, 5])
    );
    assert_eq!(
        f.calculate_range("2024-06-01", "2024-05-01").unwrap(),
        RangePartitions::None
    );
    let e = f.calculate_range("x", "2024-05-01").unwrap_err();
    assert_eq!(
        e.message,
        "endValue:2024-05-01 Please check if the format satisfied."
    );
    assert!(
        build_in(
            "PartitionByHotDate",
            &[
                ("dateFormat", "yyyy-MM-dd"),
                ("sLastDay", "x"),
                ("sPartionDay", "1")
            ],
            MycatVersion::V1_6_7_6,
            "UTC"
        )
        .is_err()
    );
}

#[test]
fn latest_month() {
    let f = func("LatestMonthPartion", &[("splitOneDay", "24")]);
    assert_eq!(calc(&f, "2015020100"), 0);
    assert_eq!(calc(&f, "2015020216"), 40);
    assert_eq!(calc(&f, "2015022823"), 27 * 24 + 23);
    match f.calculate_range("2015020100", "2015022823").unwrap() {
        RangePartitions::Some(p) => assert_eq!(p.len(), 27 * 24 + 23 + 1),
        other => panic!("{other:?}"),
    }
    let e = f.calculate("101").unwrap_err();
    assert_eq!(
        (e.exception, e.message.as_str()),
        (
            JavaException::StringIndexOutOfBounds,
            "begin -1, end 1, length 3"
        )
    );
    assert_eq!(
        f.calculate("2014abcd").unwrap_err().exception,
        JavaException::IllegalArgument
    );
    let f = func("LatestMonthPartion", &[("splitOneDay", "4")]);
    assert_eq!(calc(&f, "2015020223"), 4 + 3);
    let f = func("LatestMonthPartion", &[]);
    assert_eq!(
        f.calculate("2015020100").unwrap_err().exception,
        JavaException::Arithmetic
    );
    for bad in ["0", "25", "-1", "x"] {
        assert!(
            build_in(
                "LatestMonthPartion",
                &[("splitOneDay", bad)],
                MycatVersion::V1_6_7_6,
                "UTC"
            )
            .is_err(),
            "{bad}"
        );
    }
}

#[test]
fn range_date_hash_mycat_test_values() {
    let props = [
        ("dateFormat", "yyyy-MM-dd HH:mm:ss"),
        ("sBeginDate", "2014-01-01 00:00:00"),
        ("sPartionDay", "3"),
        ("groupPartionSize", "6"),
    ];
    // PartitionByRangeDateHashTest (written in UTC+8).
    let f = build_in(
        "PartitionByRangeDateHash",
        &props,
        MycatVersion::V1_6_7_6,
        "Asia/Shanghai",
    )
    .unwrap();
    for (v, p) in [
        ("2014-01-01 00:00:00", 3),
        ("2014-01-01 00:00:01", 1),
        ("2014-01-04 00:00:00", 7),
        ("2014-01-04 00:00:01", 11),
    ] {
        assert_eq!(calc(&f, v), p, "{v}");
    }
    assert_eq!(
        f.calculate_range("2014-01-01 00:00:00", "2014-01-04 00:00:00")
            .unwrap(),
        RangePartitions::Some((0..12).collect())
    );
    assert_eq!(
        f.calculate_range("2014-01-04 00:00:00", "2014-01-01 00:00:00")
            .unwrap(),
        RangePartitions::None
    );
    let mut bad = props.to_vec();
    bad[3] = ("groupPartionSize", "0");
    assert!(
        build_in(
            "PartitionByRangeDateHash",
            &bad,
            MycatVersion::V1_6_7_6,
            "UTC"
        )
        .is_err()
    );
}

#[test]
fn guava_consistent_hash() {
    // Values from Guava's HashingTest.testConsistentHash_correctness / known outputs.
    assert_eq!(consistent_hash(0, 1), 0);
    for input in [0i64, 1, -1, i64::MAX, i64::MIN, 1_388_534_400_000] {
        for buckets in [1, 2, 6, 100, i32::MAX] {
            let b = consistent_hash(input, buckets);
            assert!((0..buckets).contains(&b));
        }
    }
    // Monotone: growing the bucket count only moves keys to the new bucket.
    for input in 0..200i64 {
        for buckets in 1..50 {
            let (a, b) = (
                consistent_hash(input, buckets),
                consistent_hash(input, buckets + 1),
            );
            assert!(a == b || b == buckets);
        }
    }
}
