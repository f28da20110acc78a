//! The report's duration buckets, one definition for every histogram that real and simulated runs print:
//! upper edges `10^(k/4)` µs for `k = 0..=28` (four buckets a decade, 1 µs .. 10 s), then one open-ended bucket.
//! Edges are whole nanoseconds, `round(1000 × 10^(k/4))`, so every recorder puts a duration in the same bucket.

use crate::Histogram;

/// Finite upper edges; bucket [`BUCKET_EDGES`] (the last of `BUCKET_EDGES + 1`) is open-ended.
pub const BUCKET_EDGES: usize = 29;

/// The upper edges in nanoseconds.
pub fn bucket_edges_ns() -> [u64; BUCKET_EDGES] {
    let mut edges = [0; BUCKET_EDGES];
    for (k, edge) in edges.iter_mut().enumerate() {
        *edge = (1000.0 * 10f64.powf(k as f64 / 4.0)).round() as u64;
    }
    edges
}

/// The bucket of `ns` given [`bucket_edges_ns`]: the first `k` with `ns <= edge_k`, or the open bucket.
pub fn bucket_of(edges: &[u64; BUCKET_EDGES], ns: u64) -> usize {
    edges.partition_point(|&edge| edge < ns)
}

/// A report [`Histogram`] from counts per bucket (`BUCKET_EDGES + 1` of them).
pub fn histogram_from_counts(
    edges: &[u64; BUCKET_EDGES],
    counts: &[u64; BUCKET_EDGES + 1],
) -> Histogram {
    Histogram {
        // Finite edges only (JSON has no infinity): the extra last count is the open-ended bucket.
        upper_edges_us: edges.iter().map(|&ns| ns as f64 / 1000.0).collect(),
        counts: counts.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_are_four_a_decade_from_one_microsecond() {
        let edges = bucket_edges_ns();
        assert_eq!(edges[0], 1_000); // 10^0 µs
        assert_eq!(edges[4], 10_000); // 10^1 µs
        assert_eq!(edges[7], 56_234); // 10^1.75 µs = 56.234 µs
        assert_eq!(edges[28], 10_000_000_000); // 10^7 µs = 10 s
    }

    #[test]
    fn a_duration_lands_in_the_first_bucket_whose_edge_holds_it() {
        let edges = bucket_edges_ns();
        assert_eq!(bucket_of(&edges, 0), 0);
        assert_eq!(bucket_of(&edges, 1_000), 0); // on the edge: inclusive
        assert_eq!(bucket_of(&edges, 1_001), 1);
        assert_eq!(bucket_of(&edges, 40_000), 7); // 31.6 µs < 40 µs <= 56.2 µs
        assert_eq!(bucket_of(&edges, 20_000_000_000), BUCKET_EDGES); // past 10 s: the open bucket
    }
}
