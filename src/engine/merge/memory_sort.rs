//! Sort: groups collected and sorted, for an order the nodes could not sort by.

use super::*;

/// Collects every row and sorts them by `keys` (stable: equal rows keep their order).
pub(super) fn sort<'a>(input: RowStream<'a>, keys: Vec<Key>) -> RowStream<'a> {
    futures::stream::once(async move {
        let rows: Vec<Result<Row, BackendError>> = input.collect().await;
        let mut rows: Vec<Row> = match rows.into_iter().collect::<Result<_, _>>() {
            Ok(r) => r,
            Err(e) => return futures::stream::iter(vec![Err(e)]),
        };
        rows.sort_by(|a, b| compare(&keys, a, b));
        futures::stream::iter(rows.into_iter().map(Ok).collect::<Vec<_>>())
    })
    .flatten()
    .boxed()
}
