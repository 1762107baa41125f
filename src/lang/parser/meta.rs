//! META: DESCRIBE, SEARCH, EXPORT.

use super::*;

// ------------------------------------------------------------------- META --

pub(super) fn describe(pair: Pair<Rule>) -> Result<Describe> {
    let form = inner(pair).next().expect("describe form");
    let rule = form.as_rule();
    let mut limit_v = None;
    let mut cursor_v = None;
    let mut name = None;
    for p in form.into_inner() {
        match p.as_rule() {
            Rule::limit => {
                let v = limit(p.clone())?;
                once(&mut limit_v, v, &p, "LIMIT")?;
            }
            Rule::cursor => {
                let v = cursor(p.clone())?;
                once(&mut cursor_v, v, &p, "CURSOR")?;
            }
            Rule::str_arg => name = Some(str_arg(p)?),
            _ => {}
        }
    }
    Ok(match rule {
        Rule::describe_primer => Describe::Primer,
        Rule::describe_domains => Describe::Domains,
        Rule::describe_concept_types => Describe::ConceptTypes {
            limit: limit_v,
            cursor: cursor_v,
        },
        Rule::describe_prop_types => Describe::PropositionTypes {
            limit: limit_v,
            cursor: cursor_v,
        },
        Rule::describe_concept_type => Describe::ConceptType(name.expect("type name")),
        Rule::describe_prop_type => Describe::PropositionType(name.expect("predicate")),
        r => unreachable!("unexpected describe rule {r:?}"),
    })
}

pub(super) fn search(pair: Pair<Rule>) -> Result<Search> {
    let mut it = inner(pair);
    let target = match it.next().expect("target").as_rule() {
        Rule::kw_concept => SearchTarget::Concept,
        _ => SearchTarget::Proposition,
    };
    let term = str_arg(it.next().expect("term"))?;
    let mut s = Search {
        target,
        term,
        with_type: None,
        mode: None,
        threshold: None,
        limit: None,
    };
    for p in it {
        let pos = p.clone();
        match p.as_rule() {
            Rule::search_with_type => {
                let v = str_arg(
                    inner(p)
                        .find(|q| q.as_rule() != Rule::kw_type)
                        .expect("type"),
                )?;
                once(&mut s.with_type, v, &pos, "WITH TYPE")?;
            }
            Rule::search_mode => {
                let v = match str_arg(inner(p).next().expect("mode"))? {
                    Bindable::Param(n) => Bindable::Param(n),
                    Bindable::Lit(m) => Bindable::Lit(SearchMode::from_name(&m).ok_or_else(|| {
                        syn(&pos, format!("unknown search MODE \"{m}\": use \"keyword\", \"semantic\" or \"hybrid\""))
                        .with_hint("Write MODE \"keyword\", MODE \"semantic\" or MODE \"hybrid\".")
                    })?),
                };
                once(&mut s.mode, v, &pos, "MODE")?;
            }
            Rule::search_threshold => {
                let q = inner(p).next().expect("threshold");
                let v = match q.as_rule() {
                    Rule::param => Bindable::Param(param(q)?),
                    _ => {
                        let n = number(&q)?.as_f64().unwrap_or(f64::NAN);
                        if !(0.0..=1.0).contains(&n) {
                            return Err(syn(
                                &q,
                                format!("THRESHOLD must be between 0 and 1, got {}", q.as_str()),
                            )
                            .with_hint("A THRESHOLD is a score from 0 to 1, e.g. THRESHOLD 0.5."));
                        }
                        Bindable::Lit(n)
                    }
                };
                once(&mut s.threshold, v, &pos, "THRESHOLD")?;
            }
            Rule::limit => {
                let v = limit(p)?;
                once(&mut s.limit, v, &pos, "LIMIT")?;
            }
            r => unreachable!("unexpected search rule {r:?}"),
        }
    }
    Ok(s)
}

pub(super) fn export(pair: Pair<Rule>) -> Result<Export> {
    let mut it = inner(pair);
    let target = var(it.next().expect("target"))?;
    let where_clauses = where_block(it.next().expect("where"))?;
    let mut e = Export {
        target,
        where_clauses,
        limit: None,
        cursor: None,
    };
    for p in it {
        let pos = p.clone();
        match p.as_rule() {
            Rule::limit => {
                let v = limit(p)?;
                once(&mut e.limit, v, &pos, "LIMIT")?;
            }
            Rule::cursor => {
                let v = cursor(p)?;
                once(&mut e.cursor, v, &pos, "CURSOR")?;
            }
            r => unreachable!("unexpected export rule {r:?}"),
        }
    }
    Ok(e)
}
