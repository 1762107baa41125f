//! Size limits checked before a command is compiled: the command text
//! (`kip.max_command_size`), the number of WHERE clauses and FILTER terms
//! (`kip.max_clauses`), and the length of names that become index keys.
//! Each refusal names the limit and how to change it. And the page size a
//! LIMIT gives (`kip.default_limit`, `kip.max_limit`).

use kip_lang::ast::{Command, Delete, Expr, Script, WhereClause};
use kip_lang::{ErrorCode, KipError};

/// The effective page size: LIMIT (capped at `kip.max_limit`) or `kip.default_limit`.
pub(crate) fn page_size(limit: Option<u64>) -> u64 {
    let max = crate::guc::MAX_LIMIT.get().max(1) as u64;
    let default = crate::guc::DEFAULT_LIMIT.get().max(1) as u64;
    limit.unwrap_or(default).min(max)
}

/// Longest type, concept name or predicate accepted, in bytes. The unique
/// index on `(space, type, name)` holds at most about 2,700 bytes per key.
pub const MAX_NAME_BYTES: usize = 1024;

pub fn check_command_size(text: &str) -> Result<(), KipError> {
    let limit_kb = crate::guc::MAX_COMMAND_SIZE.get().max(1) as usize;
    if text.len() > limit_kb.saturating_mul(1024) {
        return Err(KipError::new(
            ErrorCode::ResourceExhausted,
            format!("the command text is {} bytes; kip.max_command_size is {limit_kb} kB", text.len()),
        )
        .with_hint("Send a shorter command: split a capsule into several UPSERT commands (EXPORT pages are independent capsules), pass long values as :parameters, or raise kip.max_command_size."));
    }
    Ok(())
}

/// KIP_4002 when the script's patterns hold more clauses and FILTER terms
/// than `kip.max_clauses`.
pub fn check_clauses(script: &Script) -> Result<(), KipError> {
    let limit = crate::guc::MAX_CLAUSES.get().max(1) as usize;
    let mut count = 0usize;
    for command in &script.commands {
        count += clause_count(where_clauses(command));
    }
    if !clauses_allowed(count) {
        return Err(KipError::new(
            ErrorCode::ResourceExhausted,
            format!("the pattern has {count} clauses and FILTER terms; kip.max_clauses is {limit}"),
        )
        .with_hint("Split the query into smaller ones, use IN(…) with a list instead of many alternatives, or raise kip.max_clauses."));
    }
    Ok(())
}

/// Most expressions in a FIND's `FIND(…)` list. Each reads its element's
/// row for every solution; Postgres takes at most 100 arguments to the
/// function that builds a result row.
pub const MAX_FIND_EXPRESSIONS: usize = 64;

/// Most `ORDER BY` keys. Each key reads its element's attributes or
/// metadata afresh for every solution, and a large attributes object read
/// that way hundreds of times at once holds that many copies in memory.
pub const MAX_ORDER_KEYS: usize = 32;

/// KIP_4002 when a FIND lists more expressions or ORDER BY keys than
/// [`MAX_FIND_EXPRESSIONS`] / [`MAX_ORDER_KEYS`].
pub fn check_find_lists(script: &Script) -> Result<(), KipError> {
    for command in &script.commands {
        let Command::Find(q) = command else { continue };
        if q.projections.len() > MAX_FIND_EXPRESSIONS {
            return Err(KipError::new(
                ErrorCode::ResourceExhausted,
                format!("FIND lists {} expressions; at most {MAX_FIND_EXPRESSIONS} are allowed", q.projections.len()),
            )
            .with_hint("Project whole elements (FIND(?x) returns every attribute) or split the query."));
        }
        if q.order_by.len() > MAX_ORDER_KEYS {
            return Err(KipError::new(
                ErrorCode::ResourceExhausted,
                format!("ORDER BY has {} keys; at most {MAX_ORDER_KEYS} are allowed", q.order_by.len()),
            )
            .with_hint("Order by fewer keys: later keys only break ties of the earlier ones."));
        }
    }
    Ok(())
}

/// Whether a script of `count` clauses and FILTER terms is within
/// `kip.max_clauses`.
pub fn clauses_allowed(count: usize) -> bool {
    count <= crate::guc::MAX_CLAUSES.get().max(1) as usize
}

pub(crate) fn where_clauses(command: &Command) -> &[WhereClause] {
    match command {
        Command::Find(q) => &q.where_clauses,
        Command::Export(e) => &e.where_clauses,
        Command::Update(u) => &u.where_clauses,
        Command::Merge(m) => &m.where_clauses,
        Command::Delete(
            Delete::Attributes { where_clauses, .. }
            | Delete::Metadata { where_clauses, .. }
            | Delete::Propositions { where_clauses, .. }
            | Delete::Concept { where_clauses, .. },
        ) => where_clauses,
        Command::Describe(_) | Command::Search(_) | Command::Upsert(_) => &[],
    }
}

/// The clauses and FILTER terms of a pattern, as `kip.max_clauses` counts
/// them: clauses at every nesting level, plus the terms of FILTER
/// expressions (walked with explicit stacks).
pub fn clause_count(clauses: &[WhereClause]) -> usize {
    let mut count = 0;
    let mut blocks: Vec<&[WhereClause]> = vec![clauses];
    while let Some(block) = blocks.pop() {
        for clause in block {
            count += 1;
            match clause {
                WhereClause::Not(inner) | WhereClause::Optional(inner) | WhereClause::Union(inner) => blocks.push(inner),
                WhereClause::Filter(e) => count += expr_terms(e),
                WhereClause::Concept { .. } | WhereClause::Proposition { .. } => {}
            }
        }
    }
    count
}

fn expr_terms(e: &Expr) -> usize {
    let mut count = 0;
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            Expr::And(xs) | Expr::Or(xs) => stack.extend(xs.iter()),
            Expr::Not(x) => stack.push(x),
            Expr::Compare { left, right, .. } => {
                count += 1;
                stack.push(left);
                stack.push(right);
            }
            Expr::Call { args, .. } => {
                count += 1;
                stack.extend(args.iter());
            }
            Expr::Value(_) | Expr::Path(_) => {}
        }
    }
    count
}

/// KIP_2002 when a type, name or predicate written by KML is blank (empty
/// or white space only) or longer than [`MAX_NAME_BYTES`].
pub fn check_name(what: &str, value: &str) -> Result<(), KipError> {
    // A blank name identifies nothing an agent could ground on later: it is
    // almost always a template left unfilled.
    if value.trim().is_empty() {
        return Err(KipError::new(ErrorCode::ConstraintViolation, format!("the {what} {value:?} is blank"))
            .with_hint("Give the element a name that identifies it, e.g. {type: \"Person\", name: \"Alice\"}."));
    }
    if value.len() > MAX_NAME_BYTES {
        let shown: String = value.chars().take(40).collect();
        return Err(KipError::new(
            ErrorCode::ConstraintViolation,
            format!("the {what} {shown:?}… is {} bytes long; the limit is {MAX_NAME_BYTES} bytes", value.len()),
        )
        .with_hint("Use a shorter name and keep long text in an attribute such as description."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_nested_clauses_and_filter_terms() {
        let script = kip_lang::parse(
            r#"FIND(?a) WHERE { ?a {type: "T"} OPTIONAL { (?a, "p", ?b) NOT { ?b {name: "x"} } } FILTER(?a.name == "a" || ?a.name == "b") }"#,
        )
        .unwrap();
        // 3 top-level + 2 in OPTIONAL + 1 in NOT, and 2 comparisons.
        assert_eq!(clause_count(where_clauses(&script.commands[0])), 8);
    }
}
