//! Limit: the offset and count applied to the merged stream, and the nodes' remaining rows drained.

use super::*;

/// Rows a cut stream may still read after its `LIMIT` is reached, so that the nodes' results end
/// cleanly (see [`limit`]).
pub(super) const DRAIN_AFTER_LIMIT: usize = 256;

/// `LIMIT offset, count` over `rows`, each row the offset drops counted in `skipped` (MariaDB's
/// `FOUND_ROWS()` counts the rows read up to where the LIMIT stopped). Once `count` rows are out, up to [`DRAIN_AFTER_LIMIT`] more
/// are read and dropped before the stream ends: a node's result read to its end leaves its
/// connection clean, so the pool hands it out again without a reset round trip. A node told
/// `LIMIT offset + count` (as the router pushes it down) has at most that many rows left, which
/// are mostly in the socket already; a longer remainder is left for the pool's reset.
pub(super) fn limit(
    rows: RowStream<'_>,
    offset: u64,
    count: u64,
    skipped: Arc<AtomicU64>,
) -> RowStream<'_> {
    struct State<'a> {
        rows: RowStream<'a>,
        skip: u64,
        left: u64,
        skipped: Arc<AtomicU64>,
    }
    let state = State {
        rows,
        skip: offset,
        left: count,
        skipped,
    };
    futures::stream::unfold(state, |mut st| async move {
        while st.left > 0 {
            match st.rows.next().await? {
                Ok(_) if st.skip > 0 => {
                    st.skip -= 1;
                    st.skipped.fetch_add(1, AtomicOrdering::Relaxed);
                }
                Ok(row) => {
                    st.left -= 1;
                    return Some((Ok(row), st));
                }
                Err(e) => {
                    st.left = 0;
                    return Some((Err(e), st));
                }
            }
        }
        let mut drained = 0;
        while drained < DRAIN_AFTER_LIMIT {
            match st.rows.next().await {
                Some(Ok(_)) => drained += 1,
                Some(Err(_)) | None => break,
            }
        }
        None
    })
    .boxed()
}
