//! KQL: FIND, WHERE clauses, concept/proposition patterns, FILTER
//! expressions.

use super::*;
use crate::depth::MAX_FILTER_DEPTH;

// -------------------------------------------------------------------- KQL --

pub(super) fn find(pair: Pair<Rule>) -> Result<FindQuery> {
    let mut q = FindQuery {
        projections: Vec::new(),
        where_clauses: Vec::new(),
        order_by: Vec::new(),
        limit: None,
        cursor: None,
    };
    let mut order: Option<Vec<OrderKey>> = None;
    for p in inner(pair) {
        match p.as_rule() {
            Rule::projection => q.projections.push(projection(p)?),
            Rule::where_block => q.where_clauses = where_block(p)?,
            Rule::order_by => {
                let keys = inner(p.clone()).map(order_key).collect::<Result<_>>()?;
                once(&mut order, keys, &p, "ORDER BY")?;
            }
            Rule::limit => {
                let v = limit(p.clone())?;
                once(&mut q.limit, v, &p, "LIMIT")?;
            }
            Rule::cursor => {
                let v = cursor(p.clone())?;
                once(&mut q.cursor, v, &p, "CURSOR")?;
            }
            r => unreachable!("unexpected find rule {r:?}"),
        }
    }
    q.order_by = order.unwrap_or_default();
    Ok(q)
}

pub(super) fn limit(pair: Pair<Rule>) -> Result<UIntArg> {
    uint_arg(inner(pair).next().expect("limit value"), "LIMIT")
}

pub(super) fn cursor(pair: Pair<Rule>) -> Result<StrArg> {
    str_arg(inner(pair).next().expect("cursor value"))
}

pub(super) fn projection(pair: Pair<Rule>) -> Result<Projection> {
    let p = one(pair);
    match p.as_rule() {
        Rule::dot_path => Ok(Projection::Path(dot_path(p)?)),
        Rule::aggregate => {
            let whole = p.clone();
            let mut func = AggFunc::Count;
            let mut distinct = false;
            let mut arg = None;
            for q in p.into_inner() {
                match q.as_rule() {
                    Rule::agg_func => {
                        func = match q.as_str() {
                            "COUNT" => AggFunc::Count,
                            "SUM" => AggFunc::Sum,
                            "AVG" => AggFunc::Avg,
                            "MIN" => AggFunc::Min,
                            _ => AggFunc::Max,
                        }
                    }
                    Rule::kw_distinct => distinct = true,
                    Rule::dot_path => arg = Some(dot_path(q)?),
                    r => unreachable!("unexpected aggregate rule {r:?}"),
                }
            }
            if distinct && func != AggFunc::Count {
                return Err(syn(
                    &whole,
                    format!("DISTINCT is only allowed in COUNT, not {}", func.keyword()),
                )
                .with_hint("Write COUNT(DISTINCT ?x); SUM, AVG, MIN and MAX take a plain ?x or dot path."));
            }
            Ok(Projection::Aggregate(Aggregate {
                func,
                distinct,
                arg: arg.expect("aggregate argument"),
            }))
        }
        r => unreachable!("unexpected projection rule {r:?}"),
    }
}

pub(super) fn order_key(pair: Pair<Rule>) -> Result<OrderKey> {
    let mut it = pair.into_inner();
    let expr = projection(it.next().expect("projection"))?;
    let direction = match it.next().map(|p| p.as_rule()) {
        Some(Rule::kw_desc) => SortDirection::Desc,
        _ => SortDirection::Asc,
    };
    Ok(OrderKey { expr, direction })
}

pub(super) fn where_block(pair: Pair<Rule>) -> Result<Vec<WhereClause>> {
    inner(pair).map(where_clause).collect()
}

pub(super) fn where_clause(pair: Pair<Rule>) -> Result<WhereClause> {
    Ok(match pair.as_rule() {
        Rule::filter => WhereClause::Filter(expr(inner(pair).next().expect("expr"), 0)?),
        Rule::optional_clause => WhereClause::Optional(sub_block(pair)?),
        Rule::not_clause => WhereClause::Not(sub_block(pair)?),
        Rule::union_clause => WhereClause::Union(sub_block(pair)?),
        Rule::concept_clause => {
            let mut it = pair.into_inner();
            let v = var(it.next().expect("var"))?;
            WhereClause::Concept {
                var: v,
                selector: concept_sel(it.next().expect("selector"))?,
            }
        }
        Rule::prop_clause => {
            let mut v = None;
            let mut pattern = None;
            for p in pair.into_inner() {
                match p.as_rule() {
                    Rule::var => v = Some(var(p)?),
                    _ => pattern = Some(prop_pattern(p)?),
                }
            }
            WhereClause::Proposition {
                var: v,
                pattern: pattern.expect("pattern"),
            }
        }
        r => unreachable!("unexpected where rule {r:?}"),
    })
}

/// Clauses of OPTIONAL / NOT / UNION (the keyword token is skipped).
pub(super) fn sub_block(pair: Pair<Rule>) -> Result<Vec<WhereClause>> {
    pair.into_inner()
        .filter(|p| {
            !matches!(
                p.as_rule(),
                Rule::kw_optional | Rule::kw_not | Rule::kw_union
            )
        })
        .map(where_clause)
        .collect()
}

/// `{id: …}` / `{type: …, name: …}` / `{type: …}` / `{name: …}`.
pub(super) fn concept_sel(pair: Pair<Rule>) -> Result<ConceptSelector> {
    let whole = pair.clone();
    let (mut id, mut ty, mut name) = (None, None, None);
    for p in pair.into_inner() {
        let p_pos = p.clone();
        let mut it = p.into_inner();
        let key_pair = it.next().expect("key");
        let k = key(key_pair.clone())?;
        let val_pair = it.next().expect("value");
        let slot = match k.as_str() {
            "id" => &mut id,
            "type" => &mut ty,
            "name" => &mut name,
            other => {
                return Err(syn(&key_pair, format!("unknown key '{other}' in a concept clause: only id, type and name are allowed"))
                    .with_hint("Match attributes with FILTER(?x.attributes.key == value)."));
            }
        };
        let v = match value(val_pair.clone())? {
            ValueOrParam::Value(Json::String(s)) => Bindable::Lit(s),
            ValueOrParam::Param(p) => Bindable::Param(p),
            _ => {
                return Err(syn(
                    &val_pair,
                    format!("the '{k}' of a concept clause must be a string"),
                )
                .with_hint("Quote the value, e.g. {type: \"Drug\", name: \"Aspirin\"}, or pass it as a :parameter."))
            }
        };
        once(slot, v, &p_pos, &format!("key '{k}'"))?;
    }
    match (id, ty, name) {
        (Some(id), None, None) => Ok(ConceptSelector::Id(id)),
        (Some(_), _, _) => Err(syn(
            &whole,
            "a concept clause with 'id' cannot also have 'type' or 'name'",
        )
        .with_hint("Match by {id: \"C:12\"} alone, or by {type: …, name: …}.")),
        (None, Some(t), Some(n)) => Ok(ConceptSelector::TypeName {
            type_name: t,
            name: n,
        }),
        (None, Some(t), None) => Ok(ConceptSelector::Type(t)),
        (None, None, Some(n)) => Ok(ConceptSelector::Name(n)),
        (None, None, None) => Err(syn(
            &whole,
            "empty concept clause: give id, or type and/or name",
        )
        .with_hint("Write {type: \"Drug\"} for all concepts of a type, {type: \"Drug\", name: \"Aspirin\"} for one, or {id: \"C:12\"}.")),
    }
}

pub(super) fn prop_pattern(pair: Pair<Rule>) -> Result<PropPattern> {
    let p = one(pair);
    match p.as_rule() {
        Rule::prop_id => {
            let val_pair = p.into_inner().nth(1).expect("id value");
            match value(val_pair.clone())? {
                ValueOrParam::Value(Json::String(s)) => Ok(PropPattern::Id(Bindable::Lit(s))),
                ValueOrParam::Param(n) => Ok(PropPattern::Id(Bindable::Param(n))),
                _ => Err(syn(&val_pair, "a proposition id must be a string")
                .with_hint("Write (id: \"P:40:treats\"), or pass the id as a :parameter.")),
            }
        }
        Rule::triple => {
            let mut it = p.into_inner();
            let subject = endpoint(it.next().expect("subject"))?;
            let predicate = predicate(it.next().expect("predicate"))?;
            let object = endpoint(it.next().expect("object"))?;
            Ok(PropPattern::Triple(Box::new(Triple {
                subject,
                predicate,
                object,
            })))
        }
        r => unreachable!("unexpected prop_pattern rule {r:?}"),
    }
}

pub(super) fn endpoint(pair: Pair<Rule>) -> Result<Endpoint> {
    let p = one(pair);
    Ok(match p.as_rule() {
        Rule::var => Endpoint::Var(var(p)?),
        Rule::concept_sel => Endpoint::Concept(concept_sel(p)?),
        Rule::prop_pattern => Endpoint::Proposition(Box::new(prop_pattern(p)?)),
        Rule::str_arg => Endpoint::Id(str_arg(p)?),
        r => unreachable!("unexpected endpoint rule {r:?}"),
    })
}

pub(super) fn predicate(pair: Pair<Rule>) -> Result<Predicate> {
    let mut it = pair.into_inner();
    let head = it.next().expect("predicate head");
    let mut names = Vec::new();
    let mut range = None;
    match head.as_rule() {
        Rule::var => {
            if let Some(bad) = it.next() {
                return Err(syn(
                    &bad,
                    "a predicate variable cannot take a hop range or alternatives",
                )
                .with_hint("Use a literal predicate such as \"follows\"{1,3} or \"a\" | \"b\"."));
            }
            return Ok(Predicate::Var(var(head)?));
        }
        // `("a" | "b")`: the group holds the head and its alternatives.
        Rule::pred_group => {
            let mut group = head.into_inner();
            names.push(str_arg(group.next().expect("group head"))?);
            for alt in group {
                names.push(str_arg(one(alt))?);
            }
        }
        _ => names.push(str_arg(head)?),
    }
    for p in it {
        match p.as_rule() {
            Rule::pred_alt => names.push(str_arg(one(p))?),
            Rule::hop_range => range = Some(hop_range(p)?),
            Rule::bad_pred_tail => {
                return Err(syn(
                    &p,
                    "a hop range must come last: it quantifies the whole alternation",
                )
                .with_hint("Write one range after the last alternative, e.g. \"a\" | \"b\"{1,3} or (\"a\" | \"b\"){1,3}."));
            }
            r => unreachable!("unexpected predicate rule {r:?}"),
        }
    }
    Ok(match range {
        Some(range) => Predicate::Hops { predicates: names, range },
        None if names.len() == 1 => Predicate::Literal(names.pop().expect("one name")),
        None => Predicate::Alternatives(names),
    })
}

pub(super) fn hop_range(pair: Pair<Rule>) -> Result<HopRange> {
    let whole = pair.clone();
    let hop = |p: &Pair<Rule>| -> Result<u32> {
        number(p)?
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                syn(
                    p,
                    format!(
                        "hop count must be a non-negative integer, got {}",
                        p.as_str()
                    ),
                )
                .with_hint("Write a hop range of whole numbers, e.g. \"is_subclass_of\"{1,3}, {2} or {1,}.")
            })
    };
    let mut it = pair.into_inner();
    let min = hop(&it.next().expect("min"))?;
    let range = match (it.next(), it.next()) {
        (None, _) => HopRange {
            min,
            max: Some(min),
        },
        (Some(_comma), None) => HopRange { min, max: None },
        (Some(_comma), Some(max)) => HopRange {
            min,
            max: Some(hop(&max)?),
        },
    };
    if let Some(max) = range.max {
        if max < range.min {
            return Err(syn(
                &whole,
                format!(
                    "hop range {{{},{}}} has its minimum above its maximum",
                    range.min, max
                ),
            )
            .with_hint("Write the smaller count first, e.g. {1,3}."));
        }
    }
    Ok(range)
}

// ------------------------------------------------------------ FILTER expr --

// `depth` counts the expression nesting so far (parentheses, function
// calls and `!`), so the AST depth stays bounded even when many `!` sit
// inside many parentheses; depth.rs only sees the brackets.
pub(super) fn expr(pair: Pair<Rule>, depth: usize) -> Result<Expr> {
    let mut parts: Vec<Expr> = pair
        .into_inner()
        .filter(|p| p.as_rule() != Rule::or_op)
        .map(|p| and_expr(p, depth))
        .collect::<Result<_>>()?;
    Ok(if parts.len() == 1 {
        parts.pop().expect("one")
    } else {
        Expr::Or(parts)
    })
}

pub(super) fn and_expr(pair: Pair<Rule>, depth: usize) -> Result<Expr> {
    let mut parts: Vec<Expr> = pair
        .into_inner()
        .filter(|p| p.as_rule() != Rule::and_op)
        .map(|p| cmp_expr(p, depth))
        .collect::<Result<_>>()?;
    Ok(if parts.len() == 1 {
        parts.pop().expect("one")
    } else {
        Expr::And(parts)
    })
}

pub(super) fn cmp_expr(pair: Pair<Rule>, depth: usize) -> Result<Expr> {
    let mut it = pair.into_inner();
    let left = unary(it.next().expect("left"), depth)?;
    let Some(op) = it.next() else { return Ok(left) };
    let op = match op.as_str() {
        "==" => CompareOp::Eq,
        "!=" => CompareOp::Ne,
        "<=" => CompareOp::Le,
        ">=" => CompareOp::Ge,
        "<" => CompareOp::Lt,
        _ => CompareOp::Gt,
    };
    let right = unary(it.next().expect("right"), depth)?;
    Ok(Expr::Compare {
        op,
        left: Box::new(left),
        right: Box::new(right),
    })
}

pub(super) fn unary(pair: Pair<Rule>, depth: usize) -> Result<Expr> {
    let whole = pair.clone();
    let parts: Vec<Pair<Rule>> = pair.into_inner().collect();
    let nots = parts.len() - 1;
    // `!` is a repetition in the grammar (no recursion), but each one nests
    // the AST; count it with the other expression levels.
    let depth = depth + nots + 1;
    if depth > MAX_FILTER_DEPTH {
        return Err(syn(&whole, format!("FILTER expression nested deeper than {MAX_FILTER_DEPTH} levels (parentheses, functions and '!')"))
        .with_hint("Flatten the expression, or split it into several FILTER clauses (they are AND-ed)."));
    }
    let mut e = primary(parts.into_iter().last().expect("primary"), depth)?;
    for _ in 0..nots {
        e = Expr::Not(Box::new(e));
    }
    Ok(e)
}

pub(super) fn primary(pair: Pair<Rule>, depth: usize) -> Result<Expr> {
    let p = one(pair);
    match p.as_rule() {
        Rule::expr => expr(p, depth),
        Rule::dot_path => Ok(Expr::Path(dot_path(p)?)),
        Rule::value => Ok(Expr::Value(value(p)?)),
        Rule::func_call => func_call(p, depth),
        r => unreachable!("unexpected primary rule {r:?}"),
    }
}

pub(super) fn func_call(pair: Pair<Rule>, depth: usize) -> Result<Expr> {
    let whole = pair.clone();
    let mut it = pair.into_inner();
    let func = match it.next().expect("func").as_str() {
        "IN" => FilterFunc::In,
        "IS_NULL" => FilterFunc::IsNull,
        "IS_NOT_NULL" => FilterFunc::IsNotNull,
        "CONTAINS" => FilterFunc::Contains,
        "STARTS_WITH" => FilterFunc::StartsWith,
        "ENDS_WITH" => FilterFunc::EndsWith,
        _ => FilterFunc::Regex,
    };
    let args: Vec<Expr> = it.map(|a| expr(a, depth)).collect::<Result<_>>()?;
    if args.len() != func.arity() {
        return Err(syn(
            &whole,
            format!(
                "{} takes {} argument{}, got {}",
                func.keyword(),
                func.arity(),
                if func.arity() == 1 { "" } else { "s" },
                args.len()
            ),
        )
        .with_hint(format!("Write it as {}.", func.usage())));
    }
    if func == FilterFunc::In {
        let list_ok = match &args[1] {
            Expr::Value(ValueOrParam::Param(_)) | Expr::Value(ValueOrParam::Array(_)) => true,
            Expr::Value(ValueOrParam::Value(v)) => v.is_array(),
            _ => false,
        };
        if !list_ok {
            return Err(syn(
                &whole,
                "the second argument of IN must be a list like [\"a\", \"b\"] or a :parameter",
            )
            .with_hint(format!("Write it as {}.", func.usage())));
        }
    }
    Ok(Expr::Call { func, args })
}
