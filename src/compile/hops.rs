//! Hop quantifiers `"p"{m,n}`, `{m,}`, `{n}` as recursive CTEs.
//!
//! Semantics: the walk is directed (forward from a grounded subject, or
//! backward from a grounded object); a node matches when some walk of length
//! `d`, `m <= d <= n`, reaches it along links whose predicate is one of the
//! given ones; `m == 0` includes the anchor itself (zero-hop reflexive match).
//!
//! Cycle safety: the recursive CTE keeps `(node, depth)` pairs with `UNION`
//! (not `UNION ALL`), so each node appears at most once per depth and the
//! walk is bounded by the depth limit: a cycle neither loops nor multiplies
//! rows, and the result is `DISTINCT` nodes.
//!
//! Open ranges `{m,}` walk at most `kip.max_hops` links. The CTE explores one
//! level further; if that level reaches a node that is not already an answer
//! (seen at a depth in `[m, cap]`), the walk would have found more past the
//! bound, and the query fails with `KIP_4002` (raised by `kip.hops_exceeded`,
//! SQLSTATE 54001) instead of silently returning a truncated answer. When
//! every node of level `cap + 1` is already an answer, so is every node of any
//! longer walk (shorten its prefix to the answer's depth, repeat), hence the
//! answer is complete. A node seen only below `m` does not count: on a cycle
//! longer than the cap, the anchor of `{1,}` is an answer only through the
//! full cycle. A closed range whose upper bound, or an open range whose lower
//! bound, exceeds `kip.max_hops` is rejected up front.
//!
//! The walk follows any of the listed predicates at every hop, so
//! `("a" | "b"){m,n}` is one CTE with `predicate = ANY(...)`; everything above
//! holds unchanged.

use crate::compile::pattern::scope::Cx;
use crate::params::SqlParam;
use kip_lang::ast::HopRange;
use kip_lang::{ErrorCode, KipError};


fn too_deep(msg: String, cap: u32) -> KipError {
    KipError::new(ErrorCode::ResourceExhausted, msg)
        .with_hint(format!("Hop quantifiers may span at most kip.max_hops = {cap} links; narrow the range."))
}

/// Reject ranges the engine will not walk (`cap` is `kip.max_hops`).
pub fn check_range(range: HopRange, cap: u32) -> Result<(), KipError> {
    match range.max {
        Some(n) if n > cap => Err(too_deep(format!("hop range {{{},{n}}} exceeds the limit of {cap} hops", range.min), cap)),
        None if range.min > cap => Err(too_deep(format!("hop range {{{},}} starts beyond the limit of {cap} hops", range.min), cap)),
        _ => Ok(()),
    }
}

/// A subquery with one column `node`: the distinct nodes the walk reaches.
/// `anchor` is an SQL expression (may reference outer aliases: the caller
/// puts the subquery in a `LATERAL` item).
pub fn walk_sql(cx: &mut Cx, anchor: &str, forward: bool, predicates: &[String], range: HopRange) -> Result<String, KipError> {
    let (from_col, to_col) = if forward { ("subject", "object") } else { ("object", "subject") };
    let pred_cond = if predicates.len() == 1 {
        format!("p.predicate = {}", cx.params.text(predicates[0].clone()))
    } else {
        format!("p.predicate = ANY({}::text[])", cx.params.push(SqlParam::TextArray(predicates.to_vec())))
    };
    let min = format!("{}::int", cx.params.push(SqlParam::Int(i64::from(range.min))));
    let space = cx.space_sql.clone();
    let base = format!("SELECT ({anchor})::bigint AS node, 0 AS depth WHERE ({anchor}) IS NOT NULL");
    if range.max == Some(0) {
        return Ok(format!("SELECT w.node FROM ({base}) w"));
    }
    let cap = cx.env.limits.max_hops.max(1);
    // Open walks explore one level past the cap to detect that they would go on.
    let limit = range.max.unwrap_or(cap + 1);
    let limit_sql = format!("{}::int", cx.params.push(SqlParam::Int(i64::from(limit))));
    let cte = format!(
        "WITH RECURSIVE w(node, depth) AS ({base} UNION \
         SELECT p.{to_col}, w.depth + 1 FROM w JOIN kip.propositions p \
         ON p.space = {space} AND p.{from_col} = w.node AND {pred_cond} WHERE w.depth < {limit_sql})"
    );
    Ok(match range.max {
        Some(_) => format!("{cte} SELECT DISTINCT w.node FROM w WHERE w.depth >= {min}"),
        None => {
            let cap_sql = format!("{}::int", cx.params.push(SqlParam::Int(i64::from(cap))));
            format!(
                "{cte} SELECT r.node FROM (SELECT DISTINCT w.node FROM w WHERE w.depth >= {min} AND w.depth <= {cap_sql}) r \
                 WHERE kip.hops_exceeded(NOT EXISTS (SELECT 1 FROM w x WHERE x.depth > {cap_sql} \
                 AND NOT EXISTS (SELECT 1 FROM w y WHERE y.node = x.node AND y.depth >= {min} AND y.depth <= {cap_sql})), {cap_sql})"
            )
        }
    })
}
