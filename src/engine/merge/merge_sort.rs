//! MergeSort: the k-way merge of the nodes' sorted streams, one row per node held.

use super::*;

/// A k-way merge of streams each sorted by `keys`: holds the head row of every stream and
/// yields the smallest (ties go to the earlier stream).
pub(super) fn merge_sorted<'a>(streams: Vec<RowStream<'a>>, keys: Vec<Key>) -> RowStream<'a> {
    struct State<'a> {
        streams: Vec<RowStream<'a>>,
        heads: Vec<Option<Row>>,
        started: bool,
        failed: bool,
        pending: Option<BackendError>,
        keys: Vec<Key>,
    }
    let n = streams.len();
    let state = State {
        streams,
        heads: vec![None; n],
        started: false,
        failed: false,
        pending: None,
        keys,
    };
    futures::stream::unfold(state, |mut st| async move {
        if st.failed {
            return None;
        }
        if let Some(e) = st.pending.take() {
            st.failed = true;
            return Some((Err(e), st));
        }
        if !st.started {
            st.started = true;
            for i in 0..st.streams.len() {
                match st.streams[i].next().await {
                    Some(Ok(row)) => st.heads[i] = Some(row),
                    Some(Err(e)) => {
                        st.failed = true;
                        return Some((Err(e), st));
                    }
                    None => {}
                }
            }
        }
        let mut best: Option<usize> = None;
        for i in 0..st.heads.len() {
            if let Some(row) = &st.heads[i] {
                let better = match best {
                    None => true,
                    Some(b) => {
                        compare(&st.keys, row, st.heads[b].as_ref().expect("head"))
                            == Ordering::Less
                    }
                };
                if better {
                    best = Some(i);
                }
            }
        }
        let i = best?;
        let row = st.heads[i].take().expect("head");
        match st.streams[i].next().await {
            Some(Ok(next)) => st.heads[i] = Some(next),
            // The row in hand is good; the failure is reported right after it.
            Some(Err(e)) => st.pending = Some(e),
            None => {}
        }
        Some((Ok(row), st))
    })
    .boxed()
}
