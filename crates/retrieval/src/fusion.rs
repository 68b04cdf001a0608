//! Reciprocal rank fusion: one ranking from several, by rank alone, so
//! scores on different scales (BM25, cosine) need no calibration.

use std::collections::HashMap;

/// The constant of Cormack et al. (2009): a rank r counts 1 / (K + r), so
/// the top few of each list matter and no single list dominates.
const K: f32 = 60.0;

/// Every id of `rankings` (each best first), best fused first, with its
/// fused score. Ties keep the order in which ids were first seen.
pub fn reciprocal_rank(rankings: &[Vec<String>]) -> Vec<(String, f32)> {
    let mut scores: HashMap<&str, (f32, usize)> = HashMap::new();
    let mut seen = 0;
    for ranking in rankings {
        for (rank, id) in ranking.iter().enumerate() {
            let entry = scores.entry(id).or_insert_with(|| {
                seen += 1;
                (0.0, seen)
            });
            entry.0 += 1.0 / (K + rank as f32 + 1.0);
        }
    }
    let mut fused: Vec<(&str, (f32, usize))> = scores.into_iter().collect();
    fused.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
    fused.into_iter().map(|(id, (score, _))| (id.to_string(), score)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_id_both_lists_rank_well_beats_one_only_a_single_list_ranks_first() {
        let fused = reciprocal_rank(&[ids(&["a", "b", "c"]), ids(&["b", "d", "a"])]);
        let order: Vec<&str> = fused.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(order, ["b", "a", "d", "c"]);
        assert!((fused[0].1 - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-6);
        assert!(reciprocal_rank(&[]).is_empty());
    }
}
