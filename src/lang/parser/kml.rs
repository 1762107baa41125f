//! KML: UPSERT, UPDATE, MERGE, DELETE.

use super::*;

// -------------------------------------------------------------------- KML --

pub(super) fn upsert(pair: Pair<Rule>) -> Result<Upsert> {
    let mut u = Upsert {
        items: Vec::new(),
        metadata: None,
    };
    for p in inner(pair) {
        match p.as_rule() {
            Rule::concept_block => u.items.push(UpsertItem::Concept(concept_block(p)?)),
            Rule::prop_block => u.items.push(UpsertItem::Proposition(prop_block(p)?)),
            Rule::with_metadata => u.metadata = Some(with_metadata(p)?),
            r => unreachable!("unexpected upsert rule {r:?}"),
        }
    }
    Ok(u)
}

pub(super) fn concept_block(pair: Pair<Rule>) -> Result<ConceptBlock> {
    let mut handle = String::new();
    let mut identity = None;
    let mut expect_version = None;
    let mut set_attributes = None;
    let mut set_propositions = None;
    let mut metadata = None;
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::kw_concept => {}
            Rule::var => handle = var(p)?,
            Rule::concept_sel => {
                let sel = concept_sel(p.clone())?;
                if !sel.is_identity() {
                    return Err(syn(
                        &p,
                        "a CONCEPT block is identified by {type: …, name: …} or {id: …}",
                    )
                    .with_hint("Write the block as CONCEPT ?h { {type: \"Person\", name: \"Alice\"} SET ATTRIBUTES { … } }, or {id: \"C:12\"} for an existing concept."));
                }
                identity = Some(sel);
            }
            Rule::expect_version => {
                expect_version = Some(uint_arg(
                    inner(p).next().expect("version"),
                    "EXPECT VERSION",
                )?)
            }
            Rule::set_attributes => {
                let f = fields(
                    inner(p.clone())
                        .find(|q| q.as_rule() == Rule::fields)
                        .expect("fields"),
                )?;
                once(&mut set_attributes, f, &p, "SET ATTRIBUTES")?;
            }
            Rule::set_propositions => {
                let items = p
                    .clone()
                    .into_inner()
                    .filter(|q| q.as_rule() == Rule::set_prop_item)
                    .map(set_prop_item)
                    .collect::<Result<_>>()?;
                once(&mut set_propositions, items, &p, "SET PROPOSITIONS")?;
            }
            Rule::with_metadata => metadata = Some(with_metadata(p)?),
            r => unreachable!("unexpected concept block rule {r:?}"),
        }
    }
    Ok(ConceptBlock {
        handle,
        identity: identity.expect("identity"),
        expect_version,
        set_attributes,
        set_propositions,
        metadata,
    })
}

pub(super) fn set_prop_item(pair: Pair<Rule>) -> Result<SetProposition> {
    let mut it = pair.into_inner();
    let predicate = str_arg(it.next().expect("predicate"))?;
    let target_pair = it.next().expect("target");
    let target = endpoint(target_pair.clone())?;
    check_upsert_endpoint(&target, &target_pair)?;
    let metadata = it.next().map(with_metadata).transpose()?;
    Ok(SetProposition {
        predicate,
        target,
        metadata,
    })
}

pub(super) fn prop_block(pair: Pair<Rule>) -> Result<PropositionBlock> {
    let mut b = PropositionBlock {
        handle: None,
        identity: PropPattern::Id(Bindable::Lit(String::new())),
        expect_version: None,
        set_attributes: None,
        metadata: None,
    };
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::kw_proposition => {}
            Rule::var => b.handle = Some(var(p)?),
            Rule::prop_pattern => {
                let pat = prop_pattern(p.clone())?;
                check_upsert_prop(&pat, &p)?;
                b.identity = pat;
            }
            Rule::expect_version => {
                b.expect_version = Some(uint_arg(
                    inner(p).next().expect("version"),
                    "EXPECT VERSION",
                )?)
            }
            Rule::set_attributes => {
                let f = fields(
                    inner(p.clone())
                        .find(|q| q.as_rule() == Rule::fields)
                        .expect("fields"),
                )?;
                once(&mut b.set_attributes, f, &p, "SET ATTRIBUTES")?;
            }
            Rule::set_propositions => {
                return Err(syn(&p, "SET PROPOSITIONS is only valid in a CONCEPT block")
                    .with_hint(
                        "Write a separate PROPOSITION block, or a CONCEPT block for the subject.",
                    ));
            }
            Rule::with_metadata => b.metadata = Some(with_metadata(p)?),
            r => unreachable!("unexpected proposition block rule {r:?}"),
        }
    }
    Ok(b)
}

/// UPSERT references must identify existing/defined elements exactly: a
/// handle, `{type,name}`/`{id}`, `(id: …)`, or a structural reference with
/// single literal predicates.
pub(super) fn check_upsert_endpoint(e: &Endpoint, pos: &Pair<Rule>) -> Result<()> {
    match e {
        Endpoint::Var(_) | Endpoint::Id(_) => Ok(()),
        Endpoint::Concept(sel) if sel.is_identity() => Ok(()),
        Endpoint::Concept(_) => Err(syn(
            pos,
            "inside UPSERT a concept reference needs {type: …, name: …} or {id: …}",
        )
        .with_hint("Name the concept as {type: \"Person\", name: \"Alice\"} or {id: \"C:12\"}, or use a handle (?h) defined earlier in the UPSERT.")),
        Endpoint::Proposition(p) => check_upsert_prop(p, pos),
    }
}

pub(super) fn check_upsert_prop(p: &PropPattern, pos: &Pair<Rule>) -> Result<()> {
    match p {
        PropPattern::Id(_) => Ok(()),
        PropPattern::Triple(t) => {
            if !matches!(t.predicate, Predicate::Literal(_)) {
                return Err(syn(pos, "inside UPSERT a proposition needs a single literal predicate (no variable, hops or alternatives)")
                .with_hint("Write one quoted predicate, e.g. (?h, \"treats\", ?s); hop ranges, alternatives and predicate variables belong to FIND."));
            }
            check_upsert_endpoint(&t.subject, pos)?;
            check_upsert_endpoint(&t.object, pos)
        }
    }
}

pub(super) fn update(pair: Pair<Rule>) -> Result<Update> {
    let mut it = inner(pair).peekable();
    let target = var(it.next().expect("target"))?;
    let mut u = Update {
        target,
        set_attributes: None,
        set_metadata: None,
        where_clauses: Vec::new(),
        limit: None,
    };
    for p in it {
        match p.as_rule() {
            Rule::update_set => {
                let pos = p.clone();
                let mut q = inner(p);
                let which = q.next().expect("ATTRIBUTES|METADATA");
                let entries = q
                    .map(|f| update_field(f, &u.target))
                    .collect::<Result<Vec<_>>>()?;
                if which.as_rule() == Rule::kw_attributes {
                    once(&mut u.set_attributes, entries, &pos, "SET ATTRIBUTES")?;
                } else {
                    once(&mut u.set_metadata, entries, &pos, "SET METADATA")?;
                }
            }
            Rule::where_block => u.where_clauses = where_block(p)?,
            Rule::limit => u.limit = Some(limit(p)?),
            r => unreachable!("unexpected update rule {r:?}"),
        }
    }
    Ok(u)
}

pub(super) fn update_field(pair: Pair<Rule>, target: &str) -> Result<UpdateField> {
    let mut it = pair.into_inner();
    let k = key(it.next().expect("key"))?;
    let value = update_expr(it.next().expect("value"), target)?;
    Ok(UpdateField { key: k, value })
}

pub(super) fn update_expr(pair: Pair<Rule>, target: &str) -> Result<UpdateExpr> {
    let p = one(pair);
    match p.as_rule() {
        Rule::value => Ok(UpdateExpr::Value(value(p)?)),
        Rule::dot_path => {
            let pos = p.clone();
            let path = dot_path(p)?;
            if path.var != target {
                return Err(syn(
                    &pos,
                    format!(
                        "update expressions may only read the target ?{target} itself, not ?{}",
                        path.var
                    ),
                )
                .with_hint("Each element's new value must be computable from its own state."));
            }
            Ok(UpdateExpr::Path(path))
        }
        Rule::update_call => {
            let whole = p.clone();
            let mut it = p.into_inner();
            let func = match it.next().expect("func").as_str() {
                "ADD" => UpdateFunc::Add,
                "MUL" => UpdateFunc::Mul,
                "CLAMP" => UpdateFunc::Clamp,
                _ => UpdateFunc::Coalesce,
            };
            let args: Vec<UpdateExpr> =
                it.map(|a| update_expr(a, target)).collect::<Result<_>>()?;
            if args.len() != func.arity() {
                return Err(syn(
                    &whole,
                    format!(
                        "{} takes {} arguments, got {}",
                        func.keyword(),
                        func.arity(),
                        args.len()
                    ),
                )
                .with_hint(format!("Write it as {}.", func.usage())));
            }
            Ok(UpdateExpr::Call { func, args })
        }
        r => unreachable!("unexpected update expr rule {r:?}"),
    }
}

pub(super) fn merge(pair: Pair<Rule>) -> Result<Merge> {
    let mut it = inner(pair).filter(|p| p.as_rule() != Rule::kw_concept);
    let source = var(it.next().expect("source"))?;
    let target = var(it.next().expect("target"))?;
    let where_clauses = where_block(it.next().expect("where"))?;
    Ok(Merge {
        source,
        target,
        where_clauses,
    })
}

pub(super) fn delete(pair: Pair<Rule>) -> Result<Delete> {
    let form = inner(pair).next().expect("delete form");
    let rule = form.as_rule();
    let whole = form.clone();
    let parts: Vec<Pair<Rule>> = form
        .into_inner()
        .filter(|p| {
            !matches!(
                p.as_rule(),
                Rule::kw_attributes
                    | Rule::kw_metadata
                    | Rule::kw_propositions
                    | Rule::kw_concept
                    | Rule::kw_from
            )
        })
        .collect();
    let mut keys = Vec::new();
    let mut target = String::new();
    let mut where_clauses = Vec::new();
    let mut detach = false;
    for p in parts {
        match p.as_rule() {
            Rule::key_set => keys = p.into_inner().map(key_item).collect::<Result<_>>()?,
            Rule::var => target = var(p)?,
            Rule::kw_detach => detach = true,
            Rule::where_block => where_clauses = where_block(p)?,
            r => unreachable!("unexpected delete rule {r:?}"),
        }
    }
    Ok(match rule {
        Rule::delete_attrs => Delete::Attributes {
            keys,
            target,
            where_clauses,
        },
        Rule::delete_meta => Delete::Metadata {
            keys,
            target,
            where_clauses,
        },
        Rule::delete_props => Delete::Propositions {
            target,
            where_clauses,
        },
        _ => {
            if !detach {
                return Err(syn(&whole, "DELETE CONCEPT requires DETACH")
                    .with_hint("Write DELETE CONCEPT ?x DETACH WHERE { … }: DETACH confirms that all links of the concept are removed too."));
            }
            Delete::Concept {
                target,
                where_clauses,
            }
        }
    })
}

pub(super) fn key_item(pair: Pair<Rule>) -> Result<StrArg> {
    let p = one(pair);
    match p.as_rule() {
        Rule::string => Ok(Bindable::Lit(string(p)?)),
        Rule::param => Ok(Bindable::Param(param(p)?)),
        _ => Ok(Bindable::Lit(word_ident(&p, "key")?)),
    }
}
