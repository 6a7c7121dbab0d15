//! Which servers may answer a read, and which one does (SPEC §4.3, §4.4). Pure: the caller
//! passes each server's state as the heartbeat last saw it.

/// One server of a dataHost: a writeHost (`read: None`) or readHost `read` of writeHost `write`
/// (indexes in document order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceId {
    pub write: usize,
    pub read: Option<usize>,
}

/// What selection needs to know of one server.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// Heartbeat status `Ok`.
    pub alive: bool,
    /// `weight` attribute (default 0).
    pub weight: u32,
    /// Passes the `slaveThreshold` lag filter (always true when the filter is off).
    pub lag_ok: bool,
}

/// A writeHost and its readHosts.
#[derive(Debug, Clone)]
pub struct WriteView {
    pub host: View,
    pub reads: Vec<View>,
}

/// The read candidates of a dataHost with `balance` 1, 2 or 3 (balance 0 has none), with their
/// weights. Rules (SPEC §4.3):
/// * 1: alive standby writeHosts and alive readHosts; the active writeHost is excluded;
/// * 2: every alive writeHost (the active one included) and alive readHosts;
/// * 3: alive readHosts only;
/// * readHosts of a writeHost that is not alive are left out unless `temp_read_host_available`;
/// * every candidate but the active writeHost must pass the lag filter.
///
/// An empty answer means the read goes to the active writeHost.
pub fn read_candidates(
    balance: i32,
    active: usize,
    temp_read_host_available: bool,
    hosts: &[WriteView],
) -> Vec<(SourceId, u32)> {
    let mut out = Vec::new();
    if !(1..=3).contains(&balance) {
        return out;
    }
    for (w, h) in hosts.iter().enumerate() {
        let writes = match balance {
            1 => w != active,
            2 => true,
            _ => false,
        };
        if writes && h.host.alive && (w == active || h.host.lag_ok) {
            out.push((
                SourceId {
                    write: w,
                    read: None,
                },
                h.host.weight,
            ));
        }
        if !(h.host.alive || temp_read_host_available) {
            continue;
        }
        for (r, v) in h.reads.iter().enumerate() {
            if v.alive && v.lag_ok {
                out.push((
                    SourceId {
                        write: w,
                        read: Some(r),
                    },
                    v.weight,
                ));
            }
        }
    }
    out
}

/// `db_type=slave` candidates: every alive readHost that passes the lag filter, whatever the
/// state of its writeHost (SPEC §4.9: that path checks only the readHost's own status). Mycat's
/// own pick here is a known double-random bug (§4.3 step 3); manx picks among all of them.
pub fn replica_candidates(hosts: &[WriteView]) -> Vec<(SourceId, u32)> {
    let mut out = Vec::new();
    for (w, h) in hosts.iter().enumerate() {
        for (r, v) in h.reads.iter().enumerate() {
            if v.alive && v.lag_ok {
                out.push((
                    SourceId {
                        write: w,
                        read: Some(r),
                    },
                    v.weight,
                ));
            }
        }
    }
    out
}

/// Mycat's `balanceType=0` pick (SPEC §4.4): uniform when every weight is equal or the total is
/// 0, otherwise weighted random (weight-0 servers are never chosen). `draw` is a uniform random
/// number; returns an index into `weights`, `None` when it is empty.
pub fn pick(weights: &[u32], draw: u64) -> Option<usize> {
    if weights.is_empty() {
        return None;
    }
    let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
    if total == 0 || weights.iter().all(|w| *w == weights[0]) {
        return Some((draw % weights.len() as u64) as usize);
    }
    let mut point = draw % total;
    for (i, w) in weights.iter().enumerate() {
        let w = u64::from(*w);
        if point < w {
            return Some(i);
        }
        point -= w;
    }
    None
}

/// Mycat 1.6.7's `balanceType=1` pick (SPEC §4.4): smooth weighted round robin. `current` is
/// the dataHost's running state (one counter per server, kept between calls). Each call adds
/// every candidate's weight to its counter, picks the largest counter (the first on a tie) and
/// takes the total weight off it, so weights 1:2 give the order b, a, b, b, a, b, ... with no
/// burst on the heavier server. Candidates of weight 0 are skipped; `None` when none is left
/// (the caller then picks uniformly, as Mycat does). Returns an index into `candidates`.
pub fn pick_round_robin(
    candidates: &[(SourceId, u32)],
    current: &mut std::collections::HashMap<SourceId, i64>,
) -> Option<usize> {
    let mut total = 0i64;
    let mut best: Option<(usize, i64)> = None;
    for (i, (id, weight)) in candidates.iter().enumerate() {
        if *weight == 0 {
            continue;
        }
        let w = i64::from(*weight);
        total += w;
        let c = current.entry(*id).or_insert(0);
        *c += w;
        if best.is_none_or(|(_, b)| *c > b) {
            best = Some((i, *c));
        }
    }
    let (i, _) = best?;
    if let Some(c) = current.get_mut(&candidates[i].0) {
        *c -= total;
    }
    Some(i)
}

/// Mycat 1.6.7's `balanceType=2` pick (SPEC §4.4): the candidate with the fewest connections in
/// use (`active[i]` for `weights[i]`), ties broken by [`pick`]'s weighted random with `draw`.
/// Candidates of weight 0 are skipped; `None` when none is left (the caller then picks
/// uniformly). Returns an index into `weights`.
pub fn pick_least_active(weights: &[u32], active: &[usize], draw: u64) -> Option<usize> {
    let least = weights
        .iter()
        .zip(active)
        .filter(|(w, _)| **w > 0)
        .map(|(_, a)| *a)
        .min()?;
    let tied: Vec<usize> = (0..weights.len())
        .filter(|&i| weights[i] > 0 && active[i] == least)
        .collect();
    let tied_weights: Vec<u32> = tied.iter().map(|&i| weights[i]).collect();
    pick(&tied_weights, draw).map(|k| tied[k])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(alive: bool) -> View {
        View {
            alive,
            weight: 1,
            lag_ok: true,
        }
    }

    fn ids(c: &[(SourceId, u32)]) -> Vec<(usize, Option<usize>)> {
        c.iter().map(|(s, _)| (s.write, s.read)).collect()
    }

    /// Two writeHosts, each with one readHost; writeHost 0 active.
    fn pair(w0: bool, r0: bool, w1: bool, r1: bool) -> Vec<WriteView> {
        vec![
            WriteView {
                host: v(w0),
                reads: vec![v(r0)],
            },
            WriteView {
                host: v(w1),
                reads: vec![v(r1)],
            },
        ]
    }

    #[test]
    fn balance_modes() {
        let all = pair(true, true, true, true);
        assert!(read_candidates(0, 0, false, &all).is_empty());
        assert_eq!(
            ids(&read_candidates(1, 0, false, &all)),
            [(0, Some(0)), (1, None), (1, Some(0))]
        );
        assert_eq!(
            ids(&read_candidates(2, 0, false, &all)),
            [(0, None), (0, Some(0)), (1, None), (1, Some(0))]
        );
        assert_eq!(
            ids(&read_candidates(3, 0, false, &all)),
            [(0, Some(0)), (1, Some(0))]
        );
    }

    #[test]
    fn dead_hosts_and_orphaned_read_hosts() {
        // writeHost 1 is down: its readHost drops out, unless tempReadHostAvailable.
        let h = pair(true, true, false, true);
        assert_eq!(ids(&read_candidates(1, 0, false, &h)), [(0, Some(0))]);
        assert_eq!(
            ids(&read_candidates(1, 0, true, &h)),
            [(0, Some(0)), (1, Some(0))]
        );
        // A dead readHost is never a candidate; nothing left means the active writeHost.
        let h = pair(true, false, false, false);
        assert!(read_candidates(3, 0, true, &h).is_empty());
        assert!(read_candidates(1, 0, false, &h).is_empty());
        // db_type=slave looks only at the readHost itself.
        let h = pair(true, true, false, true);
        assert_eq!(ids(&replica_candidates(&h)), [(0, Some(0)), (1, Some(0))]);
    }

    #[test]
    fn lag_filter_spares_the_active_write_host() {
        let mut h = pair(true, true, true, true);
        h[0].host.lag_ok = false; // the master has no lag figure
        h[1].host.lag_ok = false;
        h[1].reads[0].lag_ok = false;
        assert_eq!(
            ids(&read_candidates(2, 0, false, &h)),
            [(0, None), (0, Some(0))]
        );
    }

    #[test]
    fn weighted_pick() {
        assert_eq!(pick(&[], 5), None);
        // Equal weights or all zero: uniform over the draw.
        assert_eq!(pick(&[0, 0, 0], 4), Some(1));
        assert_eq!(pick(&[2, 2], 3), Some(1));
        // Weighted: [1, 0, 3] over a total of 4; weight 0 is never chosen.
        let picks: Vec<_> = (0..8).map(|d| pick(&[1, 0, 3], d).unwrap()).collect();
        assert_eq!(picks, [0, 2, 2, 2, 0, 2, 2, 2]);
    }

    fn sid(w: usize) -> SourceId {
        SourceId {
            write: w,
            read: None,
        }
    }

    #[test]
    fn round_robin_is_smooth_and_follows_the_weights() {
        let c = [(sid(0), 1), (sid(1), 2)];
        let mut state = std::collections::HashMap::new();
        let order: Vec<usize> = (0..6)
            .map(|_| pick_round_robin(&c, &mut state).unwrap())
            .collect();
        assert_eq!(order, [1, 0, 1, 1, 0, 1]);
        let c = [(sid(0), 5), (sid(1), 1), (sid(2), 1)];
        let mut state = std::collections::HashMap::new();
        let order: Vec<usize> = (0..7)
            .map(|_| pick_round_robin(&c, &mut state).unwrap())
            .collect();
        // nginx's classic example: a a b a c a a (never five in a row).
        assert_eq!(order, [0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn round_robin_skips_weight_zero_and_gives_up_when_all_are_zero() {
        let mut state = std::collections::HashMap::new();
        let c = [(sid(0), 0), (sid(1), 3)];
        assert!((0..5).all(|_| pick_round_robin(&c, &mut state) == Some(1)));
        assert_eq!(pick_round_robin(&[(sid(0), 0)], &mut state), None);
        assert_eq!(pick_round_robin(&[], &mut state), None);
    }

    #[test]
    fn least_active_prefers_the_idlest_and_breaks_ties_by_weight() {
        assert_eq!(pick_least_active(&[1, 1, 1], &[3, 0, 2], 0), Some(1));
        assert_eq!(pick_least_active(&[1, 1, 1], &[3, 0, 2], 7), Some(1));
        // Weight 0 never chosen even when idle.
        assert_eq!(pick_least_active(&[0, 1], &[0, 5], 0), Some(1));
        // Tie between 0 and 2 with weights 1 and 3: draw 0 -> 0, draws 1..3 -> 2.
        assert_eq!(pick_least_active(&[1, 9, 3], &[1, 4, 1], 0), Some(0));
        assert_eq!(pick_least_active(&[1, 9, 3], &[1, 4, 1], 3), Some(2));
        assert_eq!(pick_least_active(&[0, 0], &[0, 0], 0), None);
    }
}
