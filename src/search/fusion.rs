//! Fusing the keyword and semantic rankings of a hybrid SEARCH.
//!
//! * **RRF** (default): Reciprocal Rank Fusion with k = 60, the constant of
//!   Cormack et al. (2009). An element at rank r (1-based) of a list earns
//!   1 / (k + r); the sum over both lists is scaled by k / 2, so `_score` is
//!   k / (k + 1) ≈ 0.984 for an element ranked first by both, and stays
//!   below 1.
//! * **Weighted** (`kip.hybrid_fusion = 'weighted'`): each list's scores are
//!   divided by its best score, then 0.7 × semantic + 0.3 × keyword, scaled
//!   by the same k / (k + 1), so both methods share one range and a perfect
//!   hit scores the same. (Min–max normalisation, as first built, gave each
//!   list's weakest hit 0: a hit only that list found fused to 0 and was
//!   dropped.)
//!
//! Two rules keep the fusion honest:
//! * a keyword hit takes part only if its keyword score reaches
//!   `KEYWORD_FLOOR`: a word such as "for" matches half a memory, and rank
//!   fusion would otherwise give those matches the same weight as a real one;
//! * an element that waits for its embedding cannot be ranked by meaning, so
//!   its keyword evidence stands for both halves (its semantic rank is taken
//!   to be its keyword rank): a new element found by its exact name is not
//!   pushed down by elements the model has already seen;
//! * an exact name or alias (keyword score `EXACT_MATCH` or more) comes
//!   first, in keyword order, scored just under the ceiling: SEARCH grounds
//!   a term to the entity it names (RC10 §5.2), and rank fusion alone put
//!   `Domain` under `belongs_to_domain` for the term "Domain", and an exact
//!   alias twenty places down once its element had a vector.
//!
//! A fused score is a rank, not a measure of likeness (a nonsense term's
//! best semantic neighbour still fuses to about 0.49, and a hit only one
//! ranking found fuses to at most k / (2 (k + 1)) ≈ 0.49 however alike it
//! is). The fused ranking chooses the hits; each is then shown with its
//! evidence, its keyword score or its cosine similarity, as `_score`, and
//! THRESHOLD is compared with that ([`Evidence`]).

use super::query::Hit;
use crate::embed::settings::Fusion;
use std::collections::HashMap;

/// The RRF constant.
pub const RRF_K: f64 = 60.0;
const SEMANTIC_WEIGHT: f64 = 0.7;
const KEYWORD_WEIGHT: f64 = 0.3;
/// Weakest keyword score that takes part in a fusion.
pub const KEYWORD_FLOOR: f64 = 0.15;
/// Keyword scores of an exact alias (0.95) or name (0.99).
pub const EXACT_MATCH: f64 = 0.95;

/// The highest fused score, reached only by an element both lists rank
/// first (or one waiting for its vector that the keyword list ranks first:
/// its keyword rank stands for both).
pub fn ceiling() -> f64 {
    RRF_K / (RRF_K + 1.0)
}

/// Fuse two rankings (each ordered best first) into one, best first; ties
/// are broken by id so the order is deterministic.
pub fn fuse(keyword: &[Hit], semantic: &[Hit], method: Fusion) -> Vec<Hit> {
    let keyword: Vec<Hit> = taking_part(keyword).copied().collect();
    let mut scores: HashMap<i64, f64> = HashMap::new();
    match method {
        Fusion::Rrf => {
            let rrf = |rank: usize| 1.0 / (RRF_K + rank as f64 + 1.0);
            for (rank, hit) in keyword.iter().enumerate() {
                let halves = if hit.unembedded { 2.0 } else { 1.0 };
                *scores.entry(hit.id).or_default() += halves * rrf(rank);
            }
            for (rank, hit) in semantic.iter().enumerate() {
                *scores.entry(hit.id).or_default() += rrf(rank);
            }
            scores.values_mut().for_each(|s| *s *= RRF_K / 2.0);
        }
        Fusion::Weighted => {
            for (hit, normalised) in keyword.iter().zip(scaled_to_best(&keyword)) {
                let weight = if hit.unembedded { KEYWORD_WEIGHT + SEMANTIC_WEIGHT } else { KEYWORD_WEIGHT };
                *scores.entry(hit.id).or_default() += weight * normalised;
            }
            for (hit, normalised) in semantic.iter().zip(scaled_to_best(semantic)) {
                *scores.entry(hit.id).or_default() += SEMANTIC_WEIGHT * normalised;
            }
            scores.values_mut().for_each(|s| *s *= ceiling());
        }
    }
    for (rank, hit) in keyword.iter().enumerate().filter(|(_, h)| h.score >= EXACT_MATCH) {
        scores.insert(hit.id, ceiling() - 1e-6 * rank as f64);
    }
    let mut fused: Vec<Hit> = scores.into_iter().map(|(id, score)| Hit { id, score, unembedded: false }).collect();
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    fused
}

/// The keyword hits that take part in a fusion (see `KEYWORD_FLOOR`).
fn taking_part(keyword: &[Hit]) -> impl Iterator<Item = &Hit> {
    keyword.iter().filter(|h| h.score >= KEYWORD_FLOOR)
}

/// Each hit's evidence: its keyword score (above the fusion's floor) or its
/// cosine similarity, the larger; computed once per SEARCH, read by
/// THRESHOLD and then by `_score`.
pub struct Evidence(HashMap<i64, f64>);

impl Evidence {
    pub fn of(keyword: &[Hit], semantic: &[Hit]) -> Evidence {
        let mut evidence: HashMap<i64, f64> = HashMap::new();
        for hit in taking_part(keyword).chain(semantic) {
            let best = evidence.entry(hit.id).or_insert(0.0);
            *best = best.max(hit.score);
        }
        Evidence(evidence)
    }

    /// The fused hits whose evidence reaches `threshold`. With no THRESHOLD
    /// (0) every hit with some evidence stays: one the semantic ranking
    /// proposed with a cosine of 0 or less (no likeness) is dropped, as the
    /// semantic and keyword modes drop their hits of score 0, though rank
    /// fusion gave it a positive fused score.
    pub fn keep_at_least(&self, fused: Vec<Hit>, threshold: f64) -> Vec<Hit> {
        fused
            .into_iter()
            .filter(|h| self.0.get(&h.id).is_some_and(|&e| e > 0.0 && (threshold <= 0.0 || super::load::round4(e) >= threshold)))
            .collect()
    }

    /// The hits the fusion chose, each scored with its evidence and ordered
    /// by it, ties in the fusion's order. The fusion decides which hits a
    /// page holds (an element both rankings found moderately can beat one
    /// only one ranking found); `_score` says how alike each is, as RC10
    /// §5.2 asks of it ("normalized relevance", results "in descending
    /// `_score` order", THRESHOLD against it): a fused score is a rank, and
    /// showed 0.98 for a hit of keyword score 0.18 and cosine 0.53, and at
    /// most 0.49 for one of cosine 0.9 that only the semantic ranking found.
    pub fn score(&self, fused: Vec<Hit>) -> Vec<Hit> {
        let mut hits: Vec<Hit> = fused.into_iter().filter_map(|h| self.0.get(&h.id).map(|&score| Hit { score, ..h })).collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits
    }
}

/// Scores rescaled to [0, 1] over the list: its best hit 1, the others in
/// proportion, so every hit with a positive score keeps a positive share
/// (none when the best is not positive: a list of no likeness is no
/// evidence).
fn scaled_to_best(list: &[Hit]) -> Vec<f64> {
    let max = list.iter().map(|h| h.score).fold(f64::NEG_INFINITY, f64::max);
    list.iter().map(|h| if max > 0.0 { (h.score / max).clamp(0.0, 1.0) } else { 0.0 }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(ids: &[i64]) -> Vec<Hit> {
        ids.iter().enumerate().map(|(i, &id)| Hit { id, score: 0.9 - i as f64 * 0.1, unembedded: false }).collect()
    }

    fn hit(id: i64, score: f64) -> Hit {
        Hit { id, score, unembedded: false }
    }

    #[test]
    fn rrf_ranks_agreement_first_and_stays_below_one() {
        let fused = fuse(&hits(&[1, 2, 3]), &hits(&[2, 1, 4]), Fusion::Rrf);
        assert_eq!(fused.iter().map(|h| h.id).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
        assert!(fused.iter().all(|h| h.score > 0.0 && h.score < 1.0));
        let top = fuse(&hits(&[7]), &hits(&[7]), Fusion::Rrf);
        assert!((top[0].score - ceiling()).abs() < 1e-12);
    }

    #[test]
    fn an_element_only_one_list_knows_is_kept() {
        let fused = fuse(&hits(&[1]), &[], Fusion::Rrf);
        assert_eq!(fused.len(), 1);
        assert!((fused[0].score - RRF_K / 2.0 / (RRF_K + 1.0)).abs() < 1e-12);
    }

    #[test]
    fn weighted_prefers_semantic_and_normalises_each_list() {
        let kw = vec![hit(1, 0.9), hit(2, 0.2)];
        let sem = vec![hit(2, 0.6), hit(1, 0.2)];
        let fused = fuse(&kw, &sem, Fusion::Weighted);
        assert_eq!(fused[0].id, 2);
        // 2: 0.7 × 0.6/0.6 + 0.3 × 0.2/0.9; 1: 0.7 × 0.2/0.6 + 0.3 × 0.9/0.9.
        assert!((fused[0].score - (0.7 + 0.3 * 0.2 / 0.9) * ceiling()).abs() < 1e-12);
        assert!((fused[1].score - (0.7 * 0.2 / 0.6 + 0.3) * ceiling()).abs() < 1e-12);
        let both = fuse(&kw[..1], &sem[..1].iter().map(|h| Hit { id: 1, ..*h }).collect::<Vec<_>>(), Fusion::Weighted);
        assert!(both[0].score < 1.0);
    }

    #[test]
    fn weighted_keeps_a_hit_only_one_list_found() {
        // 3 is only the keyword list's, and its weakest; 4 only the semantic one's.
        let kw = vec![hit(1, 0.9), hit(3, 0.65)];
        let sem = vec![hit(1, 0.8), hit(4, 0.5)];
        let fused = fuse(&kw, &sem, Fusion::Weighted);
        for id in [3, 4] {
            let h = fused.iter().find(|h| h.id == id).unwrap_or_else(|| panic!("{id} lost: {fused:?}"));
            assert!(h.score > 0.0, "{fused:?}");
        }
    }

    #[test]
    fn exact_names_and_aliases_come_first() {
        // The exact alias (0.95) is third by keyword and absent from the
        // semantic list; elements ranked well by both would outrank it.
        let kw = vec![hit(1, 0.99), hit(2, 0.6), hit(3, 0.95), hit(4, 0.5)];
        let sem = vec![hit(2, 0.8), hit(4, 0.7), hit(1, 0.6)];
        for method in [Fusion::Rrf, Fusion::Weighted] {
            let fused = fuse(&kw, &sem, method);
            assert_eq!(fused.iter().map(|h| h.id).take(2).collect::<Vec<_>>(), vec![1, 3], "{method:?}: {fused:?}");
            assert!(fused.iter().all(|h| h.score < 1.0));
        }
    }

    #[test]
    fn a_threshold_asks_for_evidence_not_just_a_rank() {
        let kw = vec![hit(1, 0.2)];
        let sem = vec![hit(2, 0.15), hit(3, 0.6)];
        let fused = fuse(&kw, &sem, Fusion::Rrf);
        let kept = Evidence::of(&kw, &sem).keep_at_least(fused.clone(), 0.45);
        assert_eq!(kept.iter().map(|h| h.id).collect::<Vec<_>>(), vec![3]);
        assert_eq!(Evidence::of(&kw, &sem).keep_at_least(fused.clone(), 0.0).len(), fused.len());
    }

    #[test]
    fn a_hit_of_no_likeness_is_dropped_without_a_threshold_too() {
        // 2 and 3 only the semantic ranking proposed, with cosines 0 and -0.2.
        let kw = vec![hit(1, 0.4)];
        let sem = vec![hit(1, 0.3), hit(2, 0.0), hit(3, -0.2)];
        for method in [Fusion::Rrf, Fusion::Weighted] {
            let fused = fuse(&kw, &sem, method);
            let kept = Evidence::of(&kw, &sem).keep_at_least(fused, 0.0);
            assert_eq!(kept.iter().map(|h| h.id).collect::<Vec<_>>(), vec![1], "{method:?}");
        }
    }

    #[test]
    fn hits_are_scored_and_ordered_by_their_evidence() {
        // 1 found by both weakly, 2 by meaning alone and strongly.
        let kw = vec![hit(1, 0.2)];
        let sem = vec![hit(1, 0.5), hit(2, 0.9)];
        let fused = fuse(&kw, &sem, Fusion::Rrf);
        let scored = Evidence::of(&kw, &sem).score(fused);
        assert_eq!(scored.iter().map(|h| (h.id, h.score)).collect::<Vec<_>>(), vec![(2, 0.9), (1, 0.5)]);
    }

    #[test]
    fn weak_keyword_matches_stay_out_of_the_fusion() {
        let fused = fuse(&[hit(1, 0.05)], &[hit(2, 0.5)], Fusion::Rrf);
        assert_eq!(fused.iter().map(|h| h.id).collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn an_unembedded_keyword_hit_counts_for_both_halves() {
        let new = Hit { id: 9, score: 0.99, unembedded: true };
        let fused = fuse(&[new, hit(1, 0.5)], &hits(&[1, 2, 3]), Fusion::Rrf);
        assert_eq!(fused[0].id, 9, "{fused:?}");
        assert!((fused[0].score - ceiling()).abs() < 1e-12);
        let fused = fuse(&[new, hit(1, 0.5)], &hits(&[1, 2, 3]), Fusion::Weighted);
        assert_eq!(fused[0].id, 9, "{fused:?}");
    }
}
