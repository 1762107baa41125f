//! pest parse + AST builder.
//!
//! The grammar (grammar.pest) accepts a slightly wider language than KIP;
//! this module builds the typed AST and performs the structural checks that
//! give better messages than a grammar failure would (identifier format,
//! concept-selector keys, arities, UPSERT target forms, …). Every error is a
//! `KIP_1001` (or `KIP_1002` for identifiers) carrying line and column.

use crate::ast::*;
use crate::depth::MAX_DEPTH;
use crate::error::{ErrorCode, KipError};
use crate::lexical;
use pest::iterators::Pair;
use pest::Parser as _;

#[derive(pest_derive::Parser)]
#[grammar = "grammar.pest"]
pub(crate) struct KipParser;

type Result<T> = std::result::Result<T, KipError>;

pub fn parse_script(text: &str) -> Result<Script> {
    let mut pairs = match KipParser::parse(Rule::script, text) {
        Ok(p) => p,
        Err(e) => return Err(syntax_failure(e, text)),
    };
    let script = pairs.next().expect("script rule");
    let mut commands = Vec::new();
    let mut first_read: Option<(usize, usize, &'static str)> = None;
    for pair in script.into_inner() {
        if pair.as_rule() == Rule::EOI {
            continue;
        }
        let (line, col) = pair.line_col();
        let command = build_command(pair)?;
        if !command.is_kml() && first_read.is_none() {
            first_read = Some((line, col, command.keyword()));
        }
        commands.push(command);
    }
    // One text = one KQL/META command, or a sequence of KML statements: a
    // FIND mixed into a capsule would have no place in the response shape.
    if commands.len() > 1 {
        if let Some((line, col, kw)) = first_read {
            return Err(KipError::syntax(format!(
                "line {line}, column {col}: {kw} must be the only command in its text; only KML statements (UPSERT, UPDATE, MERGE, DELETE) may be sequenced"
            ))
            .with_hint("Send several read commands through the `commands` array instead."));
        }
    }
    Ok(Script { commands })
}

/// Translate a pest failure; re-parse once with pest's error detail on so
/// the message can also list expected punctuation.
fn syntax_failure(err: pest::error::Error<Rule>, text: &str) -> KipError {
    pest::set_error_detail(true);
    let detail = KipParser::parse(Rule::script, text).err();
    pest::set_error_detail(false);
    crate::syntax_error::translate(err, detail, text)
}

// ---------------------------------------------------------------- helpers --

fn at(pair: &Pair<Rule>, code: ErrorCode, msg: impl std::fmt::Display) -> KipError {
    let (line, col) = pair.line_col();
    KipError::new(code, format!("line {line}, column {col}: {msg}"))
}

fn syn(pair: &Pair<Rule>, msg: impl std::fmt::Display) -> KipError {
    at(pair, ErrorCode::InvalidSyntax, msg)
}

/// Iterator over inner pairs that skips keyword tokens (they carry no data).
fn inner(pair: Pair<Rule>) -> impl Iterator<Item = Pair<Rule>> {
    pair.into_inner().filter(|p| !is_keyword(p.as_rule()))
}

fn is_keyword(rule: Rule) -> bool {
    use Rule::*;
    matches!(
        rule,
        kw_find | kw_where | kw_filter | kw_optional | kw_not | kw_union | kw_order | kw_by | kw_limit
            | kw_cursor | kw_upsert | kw_set | kw_with | kw_expect | kw_version | kw_update | kw_merge
            | kw_into | kw_delete | kw_from | kw_describe | kw_search | kw_export | kw_mode | kw_threshold
    )
}

fn one(pair: Pair<Rule>) -> Pair<Rule> {
    pair.into_inner().next().expect("grammar guarantees an inner pair")
}

fn word_ident(pair: &Pair<Rule>, what: &str) -> Result<String> {
    let s = pair.as_str();
    if lexical::is_identifier(s) {
        Ok(s.to_string())
    } else {
        Err(at(
            pair,
            ErrorCode::InvalidIdentifier,
            format!("illegal {what} '{s}': identifiers must match [a-zA-Z_][a-zA-Z0-9_]*"),
        )
        .with_hint(ErrorCode::InvalidIdentifier.default_hint()))
    }
}

/// `?name` -> `name`.
fn var(pair: Pair<Rule>) -> Result<String> {
    debug_assert_eq!(pair.as_rule(), Rule::var);
    let w = one(pair);
    word_ident(&w, "variable name")
}

/// `:name` -> `name`.
fn param(pair: Pair<Rule>) -> Result<String> {
    let w = one(pair);
    word_ident(&w, "parameter name")
}

fn string(pair: Pair<Rule>) -> Result<String> {
    let body = one(pair);
    lexical::unescape(body.as_str()).map_err(|(off, msg)| {
        let pos = body.as_span().start() + off;
        let (line, col) = crate::depth::line_col(body.get_input(), pos);
        KipError::syntax(format!("line {line}, column {col}: {msg}"))
    })
}

fn number(pair: &Pair<Rule>) -> Result<serde_json::Number> {
    lexical::parse_number(pair.as_str()).map_err(|m| syn(pair, m))
}

fn str_arg(pair: Pair<Rule>) -> Result<StrArg> {
    let p = if pair.as_rule() == Rule::str_arg { one(pair) } else { pair };
    match p.as_rule() {
        Rule::string => Ok(Bindable::Lit(string(p)?)),
        Rule::param => Ok(Bindable::Param(param(p)?)),
        _ => unreachable!("str_arg is string | param"),
    }
}

/// `param | number` in a non-negative integer position.
fn uint_arg(pair: Pair<Rule>, what: &str) -> Result<UIntArg> {
    match pair.as_rule() {
        Rule::param => Ok(Bindable::Param(param(pair)?)),
        Rule::number => match number(&pair)?.as_u64() {
            Some(n) => Ok(Bindable::Lit(n)),
            None => Err(syn(&pair, format!("{what} must be a non-negative integer, got {}", pair.as_str()))),
        },
        _ => unreachable!("uint position is param | number"),
    }
}

fn key(pair: Pair<Rule>) -> Result<String> {
    let p = one(pair);
    match p.as_rule() {
        Rule::string => string(p),
        Rule::word => word_ident(&p, "key"),
        _ => unreachable!("key is string | word"),
    }
}

// ----------------------------------------------------------------- values --

fn value(pair: Pair<Rule>) -> Result<ValueOrParam> {
    let p = one(pair);
    Ok(match p.as_rule() {
        Rule::param => ValueOrParam::Param(param(p)?),
        Rule::string => ValueOrParam::Value(Json::String(string(p)?)),
        Rule::number => ValueOrParam::Value(Json::Number(number(&p)?)),
        Rule::kw_true => ValueOrParam::Value(Json::Bool(true)),
        Rule::kw_false => ValueOrParam::Value(Json::Bool(false)),
        Rule::kw_null => ValueOrParam::Value(Json::Null),
        Rule::array => ValueOrParam::array(p.into_inner().map(value).collect::<Result<_>>()?),
        Rule::object => ValueOrParam::object(p.into_inner().map(field).collect::<Result<_>>()?),
        r => unreachable!("unexpected value rule {r:?}"),
    })
}

/// `key: value`.
fn field(pair: Pair<Rule>) -> Result<Field> {
    let mut it = pair.into_inner();
    let k = key(it.next().expect("key"))?;
    let v = value(it.next().expect("value"))?;
    Ok(Field { key: k, value: v })
}

/// `{ k: v, … }` of SET ATTRIBUTES / WITH METADATA.
fn fields(pair: Pair<Rule>) -> Result<Fields> {
    pair.into_inner().map(field).collect()
}

fn with_metadata(pair: Pair<Rule>) -> Result<Fields> {
    fields(pair.into_inner().find(|p| p.as_rule() == Rule::fields).expect("fields"))
}

// --------------------------------------------------------------- dot path --

fn dot_path(pair: Pair<Rule>) -> Result<DotPath> {
    let whole = pair.clone();
    let mut it = pair.into_inner();
    let v = var(it.next().expect("var"))?;
    let segs: Vec<Pair<Rule>> = it.collect();
    let Some(first) = segs.first() else {
        return Ok(DotPath::var(v));
    };
    let simple = |field: PathField| -> Result<DotPath> {
        if segs.len() > 1 {
            return Err(syn(&segs[1], format!("'{}' has no sub-fields in ?{v}.{}", first.as_str(), first.as_str())));
        }
        Ok(DotPath { var: v.clone(), field })
    };
    let keyed = |make: fn(Option<String>) -> PathField| -> Result<DotPath> {
        match segs.len() {
            1 => Ok(DotPath { var: v.clone(), field: make(None) }),
            2 => Ok(DotPath { var: v.clone(), field: make(Some(word_ident(&segs[1], "key")?)) }),
            _ => Err(syn(
                &segs[2],
                format!("nested keys are not supported in dot paths: use ?{v}.{}.{}", first.as_str(), segs[1].as_str()),
            )),
        }
    };
    match first.as_str() {
        "id" => simple(PathField::Id),
        "type" => simple(PathField::Type),
        "name" => simple(PathField::Name),
        "subject" => simple(PathField::Subject),
        "predicate" => simple(PathField::Predicate),
        "object" => simple(PathField::Object),
        "attributes" => keyed(PathField::Attributes),
        "metadata" => keyed(PathField::Metadata),
        other => Err(syn(
            &whole,
            format!(
                "unknown field '{other}' in ?{v}.{other}: use id, type, name, subject, predicate, object, attributes or metadata"
            ),
        )
        .with_hint(format!("For an attribute write ?{v}.attributes.{other}; for metadata ?{v}.metadata.{other}."))),
    }
}

// ---------------------------------------------------------------- command --

fn build_command(pair: Pair<Rule>) -> Result<Command> {
    Ok(match pair.as_rule() {
        Rule::find => Command::Find(find(pair)?),
        Rule::upsert => Command::Upsert(upsert(pair)?),
        Rule::update => Command::Update(update(pair)?),
        Rule::merge => Command::Merge(merge(pair)?),
        Rule::delete => Command::Delete(delete(pair)?),
        Rule::describe => Command::Describe(describe(pair)?),
        Rule::search => Command::Search(search(pair)?),
        Rule::export => Command::Export(export(pair)?),
        r => unreachable!("unexpected command rule {r:?}"),
    })
}

/// Store `value` into `slot`, refusing a second occurrence of a clause.
fn once<T>(slot: &mut Option<T>, value: T, pair: &Pair<Rule>, what: &str) -> Result<()> {
    if slot.is_some() {
        return Err(syn(pair, format!("{what} given more than once")));
    }
    *slot = Some(value);
    Ok(())
}

// -------------------------------------------------------------------- KQL --

fn find(pair: Pair<Rule>) -> Result<FindQuery> {
    let mut q = FindQuery { projections: Vec::new(), where_clauses: Vec::new(), order_by: Vec::new(), limit: None, cursor: None };
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

fn limit(pair: Pair<Rule>) -> Result<UIntArg> {
    uint_arg(inner(pair).next().expect("limit value"), "LIMIT")
}

fn cursor(pair: Pair<Rule>) -> Result<StrArg> {
    str_arg(inner(pair).next().expect("cursor value"))
}

fn projection(pair: Pair<Rule>) -> Result<Projection> {
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
                return Err(syn(&whole, format!("DISTINCT is only allowed in COUNT, not {}", func.keyword())));
            }
            Ok(Projection::Aggregate(Aggregate { func, distinct, arg: arg.expect("aggregate argument") }))
        }
        r => unreachable!("unexpected projection rule {r:?}"),
    }
}

fn order_key(pair: Pair<Rule>) -> Result<OrderKey> {
    let mut it = pair.into_inner();
    let expr = projection(it.next().expect("projection"))?;
    let direction = match it.next().map(|p| p.as_rule()) {
        Some(Rule::kw_desc) => SortDirection::Desc,
        _ => SortDirection::Asc,
    };
    Ok(OrderKey { expr, direction })
}

fn where_block(pair: Pair<Rule>) -> Result<Vec<WhereClause>> {
    inner(pair).map(where_clause).collect()
}

fn where_clause(pair: Pair<Rule>) -> Result<WhereClause> {
    Ok(match pair.as_rule() {
        Rule::filter => WhereClause::Filter(expr(inner(pair).next().expect("expr"))?),
        Rule::optional_clause => WhereClause::Optional(sub_block(pair)?),
        Rule::not_clause => WhereClause::Not(sub_block(pair)?),
        Rule::union_clause => WhereClause::Union(sub_block(pair)?),
        Rule::concept_clause => {
            let mut it = pair.into_inner();
            let v = var(it.next().expect("var"))?;
            WhereClause::Concept { var: v, selector: concept_sel(it.next().expect("selector"))? }
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
            WhereClause::Proposition { var: v, pattern: pattern.expect("pattern") }
        }
        r => unreachable!("unexpected where rule {r:?}"),
    })
}

/// Clauses of OPTIONAL / NOT / UNION (the keyword token is skipped).
fn sub_block(pair: Pair<Rule>) -> Result<Vec<WhereClause>> {
    pair.into_inner()
        .filter(|p| !matches!(p.as_rule(), Rule::kw_optional | Rule::kw_not | Rule::kw_union))
        .map(where_clause)
        .collect()
}

/// `{id: …}` / `{type: …, name: …}` / `{type: …}` / `{name: …}`.
fn concept_sel(pair: Pair<Rule>) -> Result<ConceptSelector> {
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
            _ => return Err(syn(&val_pair, format!("the '{k}' of a concept clause must be a string"))),
        };
        once(slot, v, &p_pos, &format!("key '{k}'"))?;
    }
    match (id, ty, name) {
        (Some(id), None, None) => Ok(ConceptSelector::Id(id)),
        (Some(_), _, _) => Err(syn(&whole, "a concept clause with 'id' cannot also have 'type' or 'name'")),
        (None, Some(t), Some(n)) => Ok(ConceptSelector::TypeName { type_name: t, name: n }),
        (None, Some(t), None) => Ok(ConceptSelector::Type(t)),
        (None, None, Some(n)) => Ok(ConceptSelector::Name(n)),
        (None, None, None) => Err(syn(&whole, "empty concept clause: give id, or type and/or name")),
    }
}

fn prop_pattern(pair: Pair<Rule>) -> Result<PropPattern> {
    let p = one(pair);
    match p.as_rule() {
        Rule::prop_id => {
            let val_pair = p.into_inner().nth(1).expect("id value");
            match value(val_pair.clone())? {
                ValueOrParam::Value(Json::String(s)) => Ok(PropPattern::Id(Bindable::Lit(s))),
                ValueOrParam::Param(n) => Ok(PropPattern::Id(Bindable::Param(n))),
                _ => Err(syn(&val_pair, "a proposition id must be a string")),
            }
        }
        Rule::triple => {
            let mut it = p.into_inner();
            let subject = endpoint(it.next().expect("subject"))?;
            let predicate = predicate(it.next().expect("predicate"))?;
            let object = endpoint(it.next().expect("object"))?;
            Ok(PropPattern::Triple(Box::new(Triple { subject, predicate, object })))
        }
        r => unreachable!("unexpected prop_pattern rule {r:?}"),
    }
}

fn endpoint(pair: Pair<Rule>) -> Result<Endpoint> {
    let p = one(pair);
    Ok(match p.as_rule() {
        Rule::var => Endpoint::Var(var(p)?),
        Rule::concept_sel => Endpoint::Concept(concept_sel(p)?),
        Rule::prop_pattern => Endpoint::Proposition(Box::new(prop_pattern(p)?)),
        Rule::str_arg => Endpoint::Id(str_arg(p)?),
        r => unreachable!("unexpected endpoint rule {r:?}"),
    })
}

fn predicate(pair: Pair<Rule>) -> Result<Predicate> {
    let p = one(pair);
    Ok(match p.as_rule() {
        Rule::bad_pred_var => {
            return Err(syn(&p, "a predicate variable cannot take a hop range or alternatives")
                .with_hint("Use a literal predicate such as \"follows\"{1,3} or \"a\" | \"b\"."))
        }
        Rule::var => Predicate::Var(var(p)?),
        Rule::str_arg => Predicate::Literal(str_arg(p)?),
        Rule::pred_alts => Predicate::Alternatives(p.into_inner().map(str_arg).collect::<Result<_>>()?),
        Rule::pred_hops => {
            let mut it = p.into_inner();
            let predicate = str_arg(it.next().expect("predicate"))?;
            let range = hop_range(it.next().expect("hop range"))?;
            Predicate::Hops { predicate, range }
        }
        r => unreachable!("unexpected predicate rule {r:?}"),
    })
}

fn hop_range(pair: Pair<Rule>) -> Result<HopRange> {
    let whole = pair.clone();
    let hop = |p: &Pair<Rule>| -> Result<u32> {
        number(p)?
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| syn(p, format!("hop count must be a non-negative integer, got {}", p.as_str())))
    };
    let mut it = pair.into_inner();
    let min = hop(&it.next().expect("min"))?;
    let range = match (it.next(), it.next()) {
        (None, _) => HopRange { min, max: Some(min) },
        (Some(_comma), None) => HopRange { min, max: None },
        (Some(_comma), Some(max)) => HopRange { min, max: Some(hop(&max)?) },
    };
    if let Some(max) = range.max {
        if max < range.min {
            return Err(syn(&whole, format!("hop range {{{},{}}} has its minimum above its maximum", range.min, max)));
        }
    }
    Ok(range)
}

// ------------------------------------------------------------ FILTER expr --

fn expr(pair: Pair<Rule>) -> Result<Expr> {
    let mut parts: Vec<Expr> = pair.into_inner().filter(|p| p.as_rule() != Rule::or_op).map(and_expr).collect::<Result<_>>()?;
    Ok(if parts.len() == 1 { parts.pop().expect("one") } else { Expr::Or(parts) })
}

fn and_expr(pair: Pair<Rule>) -> Result<Expr> {
    let mut parts: Vec<Expr> = pair.into_inner().filter(|p| p.as_rule() != Rule::and_op).map(cmp_expr).collect::<Result<_>>()?;
    Ok(if parts.len() == 1 { parts.pop().expect("one") } else { Expr::And(parts) })
}

fn cmp_expr(pair: Pair<Rule>) -> Result<Expr> {
    let mut it = pair.into_inner();
    let left = unary(it.next().expect("left"))?;
    let Some(op) = it.next() else { return Ok(left) };
    let op = match op.as_str() {
        "==" => CompareOp::Eq,
        "!=" => CompareOp::Ne,
        "<=" => CompareOp::Le,
        ">=" => CompareOp::Ge,
        "<" => CompareOp::Lt,
        _ => CompareOp::Gt,
    };
    let right = unary(it.next().expect("right"))?;
    Ok(Expr::Compare { op, left: Box::new(left), right: Box::new(right) })
}

fn unary(pair: Pair<Rule>) -> Result<Expr> {
    let whole = pair.clone();
    let parts: Vec<Pair<Rule>> = pair.into_inner().collect();
    let nots = parts.len() - 1;
    // `!` is a repetition in the grammar (no recursion), but each one nests
    // the AST; cap it like bracket depth.
    if nots > MAX_DEPTH {
        return Err(syn(&whole, format!("more than {MAX_DEPTH} consecutive '!'")));
    }
    let mut e = primary(parts.into_iter().last().expect("primary"))?;
    for _ in 0..nots {
        e = Expr::Not(Box::new(e));
    }
    Ok(e)
}

fn primary(pair: Pair<Rule>) -> Result<Expr> {
    let p = one(pair);
    match p.as_rule() {
        Rule::expr => expr(p),
        Rule::dot_path => Ok(Expr::Path(dot_path(p)?)),
        Rule::value => Ok(Expr::Value(value(p)?)),
        Rule::func_call => func_call(p),
        r => unreachable!("unexpected primary rule {r:?}"),
    }
}

fn func_call(pair: Pair<Rule>) -> Result<Expr> {
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
    let args: Vec<Expr> = it.map(expr).collect::<Result<_>>()?;
    if args.len() != func.arity() {
        return Err(syn(
            &whole,
            format!("{} takes {} argument{}, got {}", func.keyword(), func.arity(), if func.arity() == 1 { "" } else { "s" }, args.len()),
        ));
    }
    if func == FilterFunc::In {
        let list_ok = match &args[1] {
            Expr::Value(ValueOrParam::Param(_)) | Expr::Value(ValueOrParam::Array(_)) => true,
            Expr::Value(ValueOrParam::Value(v)) => v.is_array(),
            _ => false,
        };
        if !list_ok {
            return Err(syn(&whole, "the second argument of IN must be a list like [\"a\", \"b\"] or a :parameter"));
        }
    }
    Ok(Expr::Call { func, args })
}

// -------------------------------------------------------------------- KML --

fn upsert(pair: Pair<Rule>) -> Result<Upsert> {
    let mut u = Upsert { items: Vec::new(), metadata: None };
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

fn concept_block(pair: Pair<Rule>) -> Result<ConceptBlock> {
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
                    return Err(syn(&p, "a CONCEPT block is identified by {type: …, name: …} or {id: …}"));
                }
                identity = Some(sel);
            }
            Rule::expect_version => expect_version = Some(uint_arg(inner(p).next().expect("version"), "EXPECT VERSION")?),
            Rule::set_attributes => {
                let f = fields(inner(p.clone()).find(|q| q.as_rule() == Rule::fields).expect("fields"))?;
                once(&mut set_attributes, f, &p, "SET ATTRIBUTES")?;
            }
            Rule::set_propositions => {
                let items = p.clone().into_inner().filter(|q| q.as_rule() == Rule::set_prop_item).map(set_prop_item).collect::<Result<_>>()?;
                once(&mut set_propositions, items, &p, "SET PROPOSITIONS")?;
            }
            Rule::with_metadata => metadata = Some(with_metadata(p)?),
            r => unreachable!("unexpected concept block rule {r:?}"),
        }
    }
    Ok(ConceptBlock { handle, identity: identity.expect("identity"), expect_version, set_attributes, set_propositions, metadata })
}

fn set_prop_item(pair: Pair<Rule>) -> Result<SetProposition> {
    let mut it = pair.into_inner();
    let predicate = str_arg(it.next().expect("predicate"))?;
    let target_pair = it.next().expect("target");
    let target = endpoint(target_pair.clone())?;
    check_upsert_endpoint(&target, &target_pair)?;
    let metadata = it.next().map(with_metadata).transpose()?;
    Ok(SetProposition { predicate, target, metadata })
}

fn prop_block(pair: Pair<Rule>) -> Result<PropositionBlock> {
    let mut b = PropositionBlock { handle: None, identity: PropPattern::Id(Bindable::Lit(String::new())), expect_version: None, set_attributes: None, metadata: None };
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::kw_proposition => {}
            Rule::var => b.handle = Some(var(p)?),
            Rule::prop_pattern => {
                let pat = prop_pattern(p.clone())?;
                check_upsert_prop(&pat, &p)?;
                b.identity = pat;
            }
            Rule::expect_version => b.expect_version = Some(uint_arg(inner(p).next().expect("version"), "EXPECT VERSION")?),
            Rule::set_attributes => {
                let f = fields(inner(p.clone()).find(|q| q.as_rule() == Rule::fields).expect("fields"))?;
                once(&mut b.set_attributes, f, &p, "SET ATTRIBUTES")?;
            }
            Rule::set_propositions => {
                return Err(syn(&p, "SET PROPOSITIONS is only valid in a CONCEPT block")
                    .with_hint("Write a separate PROPOSITION block, or a CONCEPT block for the subject."));
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
fn check_upsert_endpoint(e: &Endpoint, pos: &Pair<Rule>) -> Result<()> {
    match e {
        Endpoint::Var(_) | Endpoint::Id(_) => Ok(()),
        Endpoint::Concept(sel) if sel.is_identity() => Ok(()),
        Endpoint::Concept(_) => Err(syn(pos, "inside UPSERT a concept reference needs {type: …, name: …} or {id: …}")),
        Endpoint::Proposition(p) => check_upsert_prop(p, pos),
    }
}

fn check_upsert_prop(p: &PropPattern, pos: &Pair<Rule>) -> Result<()> {
    match p {
        PropPattern::Id(_) => Ok(()),
        PropPattern::Triple(t) => {
            if !matches!(t.predicate, Predicate::Literal(_)) {
                return Err(syn(pos, "inside UPSERT a proposition needs a single literal predicate (no variable, hops or alternatives)"));
            }
            check_upsert_endpoint(&t.subject, pos)?;
            check_upsert_endpoint(&t.object, pos)
        }
    }
}

fn update(pair: Pair<Rule>) -> Result<Update> {
    let mut it = inner(pair).peekable();
    let target = var(it.next().expect("target"))?;
    let mut u = Update { target, set_attributes: None, set_metadata: None, where_clauses: Vec::new(), limit: None };
    for p in it {
        match p.as_rule() {
            Rule::update_set => {
                let pos = p.clone();
                let mut q = inner(p);
                let which = q.next().expect("ATTRIBUTES|METADATA");
                let entries = q.map(|f| update_field(f, &u.target)).collect::<Result<Vec<_>>>()?;
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

fn update_field(pair: Pair<Rule>, target: &str) -> Result<UpdateField> {
    let mut it = pair.into_inner();
    let k = key(it.next().expect("key"))?;
    let value = update_expr(it.next().expect("value"), target)?;
    Ok(UpdateField { key: k, value })
}

fn update_expr(pair: Pair<Rule>, target: &str) -> Result<UpdateExpr> {
    let p = one(pair);
    match p.as_rule() {
        Rule::value => Ok(UpdateExpr::Value(value(p)?)),
        Rule::dot_path => {
            let pos = p.clone();
            let path = dot_path(p)?;
            if path.var != target {
                return Err(syn(&pos, format!("update expressions may only read the target ?{target} itself, not ?{}", path.var))
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
            let args: Vec<UpdateExpr> = it.map(|a| update_expr(a, target)).collect::<Result<_>>()?;
            if args.len() != func.arity() {
                return Err(syn(&whole, format!("{} takes {} arguments, got {}", func.keyword(), func.arity(), args.len())));
            }
            Ok(UpdateExpr::Call { func, args })
        }
        r => unreachable!("unexpected update expr rule {r:?}"),
    }
}

fn merge(pair: Pair<Rule>) -> Result<Merge> {
    let mut it = inner(pair).filter(|p| p.as_rule() != Rule::kw_concept);
    let source = var(it.next().expect("source"))?;
    let target = var(it.next().expect("target"))?;
    let where_clauses = where_block(it.next().expect("where"))?;
    Ok(Merge { source, target, where_clauses })
}

fn delete(pair: Pair<Rule>) -> Result<Delete> {
    let form = inner(pair).next().expect("delete form");
    let rule = form.as_rule();
    let whole = form.clone();
    let parts: Vec<Pair<Rule>> = form
        .into_inner()
        .filter(|p| !matches!(p.as_rule(), Rule::kw_attributes | Rule::kw_metadata | Rule::kw_propositions | Rule::kw_concept | Rule::kw_from))
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
        Rule::delete_attrs => Delete::Attributes { keys, target, where_clauses },
        Rule::delete_meta => Delete::Metadata { keys, target, where_clauses },
        Rule::delete_props => Delete::Propositions { target, where_clauses },
        _ => {
            if !detach {
                return Err(syn(&whole, "DELETE CONCEPT requires DETACH")
                    .with_hint("Write DELETE CONCEPT ?x DETACH WHERE { … }: DETACH confirms that all links of the concept are removed too."));
            }
            Delete::Concept { target, where_clauses }
        }
    })
}

fn key_item(pair: Pair<Rule>) -> Result<StrArg> {
    let p = one(pair);
    match p.as_rule() {
        Rule::string => Ok(Bindable::Lit(string(p)?)),
        Rule::param => Ok(Bindable::Param(param(p)?)),
        _ => Ok(Bindable::Lit(word_ident(&p, "key")?)),
    }
}

// ------------------------------------------------------------------- META --

fn describe(pair: Pair<Rule>) -> Result<Describe> {
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
        Rule::describe_concept_types => Describe::ConceptTypes { limit: limit_v, cursor: cursor_v },
        Rule::describe_prop_types => Describe::PropositionTypes { limit: limit_v, cursor: cursor_v },
        Rule::describe_concept_type => Describe::ConceptType(name.expect("type name")),
        Rule::describe_prop_type => Describe::PropositionType(name.expect("predicate")),
        r => unreachable!("unexpected describe rule {r:?}"),
    })
}

fn search(pair: Pair<Rule>) -> Result<Search> {
    let mut it = inner(pair);
    let target = match it.next().expect("target").as_rule() {
        Rule::kw_concept => SearchTarget::Concept,
        _ => SearchTarget::Proposition,
    };
    let term = str_arg(it.next().expect("term"))?;
    let mut s = Search { target, term, with_type: None, mode: None, threshold: None, limit: None };
    for p in it {
        let pos = p.clone();
        match p.as_rule() {
            Rule::search_with_type => {
                let v = str_arg(inner(p).filter(|q| q.as_rule() != Rule::kw_type).next().expect("type"))?;
                once(&mut s.with_type, v, &pos, "WITH TYPE")?;
            }
            Rule::search_mode => {
                let v = match str_arg(inner(p).next().expect("mode"))? {
                    Bindable::Param(n) => Bindable::Param(n),
                    Bindable::Lit(m) => Bindable::Lit(SearchMode::from_name(&m).ok_or_else(|| {
                        syn(&pos, format!("unknown search MODE \"{m}\": use \"keyword\", \"semantic\" or \"hybrid\""))
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
                            return Err(syn(&q, format!("THRESHOLD must be between 0 and 1, got {}", q.as_str())));
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

fn export(pair: Pair<Rule>) -> Result<Export> {
    let mut it = inner(pair);
    let target = var(it.next().expect("target"))?;
    let where_clauses = where_block(it.next().expect("where"))?;
    let mut e = Export { target, where_clauses, limit: None, cursor: None };
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

