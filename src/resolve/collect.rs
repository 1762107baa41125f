//! Walks of a WHERE block that list what `resolve` must look up: literal
//! ids, regular expressions, unanchored `(?s, ?p, ?o)` clauses, the named
//! concepts of the mandatory pattern and the schema names it uses. Pure
//! functions of the AST.

use super::registry::{Kind, Requirement};
use crate::compile::ids::{self, ElementKind};
use kip_lang::ast::{
    Bindable, ConceptSelector, Endpoint, Expr, FilterFunc, Json, PropPattern, Predicate, ValueOrParam, WhereClause,
};
use kip_lang::KipError;

/// The literals of a WHERE block, anywhere in it (OPTIONAL, NOT and UNION
/// included), that the compiler decides on from catalog facts.
#[derive(Debug, Default, PartialEq)]
pub struct PatternLiterals {
    /// Row ids of literal `C:<n>` ids.
    pub concept_ids: Vec<i64>,
    /// Row ids of literal `P:<n>[:<predicate>]` ids.
    pub proposition_ids: Vec<i64>,
    /// Literal patterns of `REGEX(…, "pattern")`.
    pub regexes: Vec<String>,
    /// True when some clause is `(?s, ?p, ?o)` with three variables: it may
    /// be an unanchored scan, which the compiler refuses on large spaces.
    pub may_scan_unanchored: bool,
}

/// Everything [`PatternLiterals`] lists. A malformed literal id is
/// `KIP_1001` here, as it would be in the compiler.
pub fn pattern_literals(clauses: &[WhereClause]) -> Result<PatternLiterals, KipError> {
    let mut out = PatternLiterals::default();
    for clause in clauses {
        clause_literals(clause, &mut out)?;
    }
    out.concept_ids.sort_unstable();
    out.concept_ids.dedup();
    out.proposition_ids.sort_unstable();
    out.proposition_ids.dedup();
    out.regexes.sort();
    out.regexes.dedup();
    Ok(out)
}

fn clause_literals(clause: &WhereClause, out: &mut PatternLiterals) -> Result<(), KipError> {
    match clause {
        WhereClause::Concept { selector, .. } => selector_literals(selector, out),
        WhereClause::Proposition { pattern, .. } => pattern_literals_of(pattern, out),
        WhereClause::Filter(e) => {
            expr_literals(e, out);
            Ok(())
        }
        WhereClause::Optional(inner) | WhereClause::Not(inner) | WhereClause::Union(inner) => {
            inner.iter().try_for_each(|c| clause_literals(c, out))
        }
    }
}

fn id_literal(id: &Bindable<String>, out: &mut PatternLiterals) -> Result<(), KipError> {
    let Bindable::Lit(text) = id else { return Ok(()) };
    let parsed = ids::parse(text)?;
    if let Some(n) = parsed.id {
        match parsed.kind {
            ElementKind::Concept => out.concept_ids.push(n),
            ElementKind::Proposition => out.proposition_ids.push(n),
        }
    }
    Ok(())
}

fn selector_literals(selector: &ConceptSelector, out: &mut PatternLiterals) -> Result<(), KipError> {
    match selector {
        ConceptSelector::Id(id) => id_literal(id, out),
        _ => Ok(()),
    }
}

fn pattern_literals_of(pattern: &PropPattern, out: &mut PatternLiterals) -> Result<(), KipError> {
    match pattern {
        PropPattern::Id(id) => id_literal(id, out),
        PropPattern::Triple(t) => {
            let all_vars = matches!(
                (&t.subject, &t.predicate, &t.object),
                (Endpoint::Var(_), Predicate::Var(_), Endpoint::Var(_))
            );
            out.may_scan_unanchored |= all_vars;
            for e in [&t.subject, &t.object] {
                match e {
                    Endpoint::Var(_) => {}
                    Endpoint::Concept(sel) => selector_literals(sel, out)?,
                    Endpoint::Proposition(p) => pattern_literals_of(p, out)?,
                    Endpoint::Id(id) => id_literal(id, out)?,
                }
            }
            Ok(())
        }
    }
}

fn expr_literals(e: &Expr, out: &mut PatternLiterals) {
    match e {
        Expr::Value(_) | Expr::Path(_) => {}
        Expr::Not(inner) => expr_literals(inner, out),
        Expr::And(items) | Expr::Or(items) => items.iter().for_each(|i| expr_literals(i, out)),
        Expr::Compare { left, right, .. } => {
            expr_literals(left, out);
            expr_literals(right, out);
        }
        Expr::Call { func, args } => {
            if *func == FilterFunc::Regex {
                if let Some(Expr::Value(ValueOrParam::Value(Json::String(p)))) = args.get(1) {
                    out.regexes.push(p.clone());
                }
            }
            args.iter().for_each(|a| expr_literals(a, out));
        }
    }
}

/// The full `{type, name}` identities of the mandatory pattern: top-level
/// concept clauses and the embedded endpoints of top-level proposition
/// clauses, at any nesting depth. Partial selectors and clauses inside
/// OPTIONAL / NOT / UNION are not identities a command must find, and
/// neither are the top-level clauses written before a UNION: they are its
/// other operand (`{ A UNION { B } C }` is `(A ∪ B) ⋈ C`), so a concept
/// named there may be missing while the other branch matches, whichever
/// order the two are written in.
pub fn named_concepts(clauses: &[WhereClause]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut patterns: Vec<&PropPattern> = Vec::new();
    for clause in kip_lang::ast::after_last_union(clauses) {
        match clause {
            WhereClause::Concept { selector, .. } => push_identity(selector, &mut out),
            WhereClause::Proposition { pattern, .. } => patterns.push(pattern),
            _ => {}
        }
    }
    // Nested endpoints are walked with an explicit stack.
    while let Some(pattern) = patterns.pop() {
        let PropPattern::Triple(t) = pattern else { continue };
        for e in [&t.subject, &t.object] {
            match e {
                Endpoint::Concept(sel) => push_identity(sel, &mut out),
                Endpoint::Proposition(p) => patterns.push(p),
                Endpoint::Var(_) | Endpoint::Id(_) => {}
            }
        }
    }
    out
}

fn push_identity(selector: &ConceptSelector, out: &mut Vec<(String, String)>) {
    if let ConceptSelector::TypeName { type_name: Bindable::Lit(t), name: Bindable::Lit(n) } = selector {
        out.push((t.clone(), n.clone()));
    }
}

/// The concept types and predicates the top-level clauses name, in use order.
pub fn schema_names(clauses: &[WhereClause]) -> Vec<Requirement> {
    let mut out = Vec::new();
    for clause in clauses {
        match clause {
            WhereClause::Concept { selector, .. } => selector_type(selector, &mut out),
            WhereClause::Proposition { pattern, .. } => pattern_schema(pattern, &mut out),
            _ => {}
        }
    }
    out
}

fn selector_type(selector: &ConceptSelector, out: &mut Vec<Requirement>) {
    if let ConceptSelector::TypeName { type_name: Bindable::Lit(t), .. } | ConceptSelector::Type(Bindable::Lit(t)) = selector {
        out.push(Requirement { kind: Kind::ConceptType, name: t.clone() });
    }
}

fn pattern_schema(pattern: &PropPattern, out: &mut Vec<Requirement>) {
    let PropPattern::Triple(t) = pattern else { return };
    let predicates = match &t.predicate {
        Predicate::Literal(p) => std::slice::from_ref(p),
        Predicate::Alternatives(ps) | Predicate::Hops { predicates: ps, .. } => ps.as_slice(),
        Predicate::Var(_) => &[],
    };
    for p in predicates {
        if let Bindable::Lit(name) = p {
            out.push(Requirement { kind: Kind::Predicate, name: name.clone() });
        }
    }
    for e in [&t.subject, &t.object] {
        match e {
            Endpoint::Concept(sel) => selector_type(sel, out),
            Endpoint::Proposition(p) => pattern_schema(p, out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clauses(text: &str) -> Vec<WhereClause> {
        let script = kip_lang::parse(&format!("FIND(?x) WHERE {{ {text} }}")).unwrap();
        match &script.commands[0] {
            kip_lang::ast::Command::Find(q) => q.where_clauses.clone(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn lists_literal_ids_everywhere() {
        let lits = pattern_literals(&clauses(
            r#"?x {id: "C:3"} OPTIONAL { (?x, "p", {id: "C:9"}) } NOT { ?y (id: "P:4:p") (?y, "q", "C:3") }"#,
        ))
        .unwrap();
        assert_eq!(lits.concept_ids, vec![3, 9]);
        assert_eq!(lits.proposition_ids, vec![4]);
        assert!(!lits.may_scan_unanchored);
    }

    #[test]
    fn flags_three_variable_triples_and_regexes() {
        let lits = pattern_literals(&clauses(r#"(?s, ?p, ?o) FILTER(REGEX(?s.name, "^a.*"))"#)).unwrap();
        assert!(lits.may_scan_unanchored);
        assert_eq!(lits.regexes, vec!["^a.*".to_string()]);
    }

    #[test]
    fn malformed_ids_are_syntax_errors() {
        let err = pattern_literals(&clauses(r#"?x {id: "C:007"}"#)).unwrap_err();
        assert_eq!(err.code, kip_lang::ErrorCode::InvalidSyntax);
    }

    #[test]
    fn named_concepts_are_those_of_the_mandatory_pattern() {
        let named = named_concepts(&clauses(
            r#"?x {type: "Drug", name: "A"} (?x, "treats", ({type: "Symptom", name: "B"}, "p", ?z)) OPTIONAL { ?y {type: "Drug", name: "C"} }"#,
        ));
        assert_eq!(named, vec![("Drug".into(), "A".into()), ("Symptom".into(), "B".into())]);
    }

    #[test]
    fn named_concepts_before_a_union_are_an_operand_of_it() {
        let named = named_concepts(&clauses(
            r#"?x {type: "Drug", name: "A"} UNION { ?x {type: "Drug", name: "B"} } (?x, "treats", {type: "Symptom", name: "C"})"#,
        ));
        assert_eq!(named, vec![("Symptom".into(), "C".into())]);
    }

    #[test]
    fn schema_names_in_use_order() {
        let names = schema_names(&clauses(r#"?x {type: "Drug"} (?x, "treats" | "cures", ?y)"#));
        let listed: Vec<&str> = names.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(listed, vec!["Drug", "treats", "cures"]);
    }
}
