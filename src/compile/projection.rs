//! FIND projections: which columns the result has, how they are grouped,
//! and SQL for their values over the solutions.
//!
//! Result shape (RC10 §6.2.2 as refined by the conformance fixtures):
//! * consecutive plain expressions on the same variable share one column,
//!   whose entries are arrays of their values (`FIND(?d.name, ?d.attributes.x)`
//!   → `[["Aspirin", 2], …]`);
//! * an aggregation is *grouped* — an aligned column, one value per
//!   distinct combination of the plain expressions' values — when its
//!   variable is not itself projected and is linked to a projected variable
//!   through proposition endpoints (`FIND(?d.name, COUNT(?n)) WHERE { ?d …
//!   OPTIONAL { (?n, "belongs_to_domain", ?d) } }`); otherwise it is computed
//!   over all solutions and contributes a scalar. (This is what the
//!   reference engines do: e.g. `FIND(?s.name, COUNT(?link))` with `?link`
//!   the matched link itself counts all links.)
//! * aggregations see each element once per group: `COUNT(?x)` counts the
//!   distinct elements bound to `?x` (nulls ignored, so an OPTIONAL miss
//!   counts 0); `SUM/AVG/MIN/MAX(?x.attributes.k)` aggregate one value per
//!   distinct element; `COUNT(DISTINCT ?x.attributes.k)` counts distinct
//!   values. SUM/AVG use the numbers; MIN/MAX the numbers, else the strings.

use crate::compile::element::{concept_json, proposition_json};
use crate::compile::filter::{path_operand, path_text, JsonSql, JsonType, Operand, VarAccess};
use crate::compile::pattern::{either_link_row, Carry, Cx, Row, Var, VarBinding, VarKind};
use kip_lang::ast::{AggFunc, Aggregate, DotPath, Endpoint, PathField, Predicate, Projection, PropPattern, WhereClause};
use kip_lang::{ErrorCode, KipError};
use std::collections::HashMap;

/// One entry of the result: a column of plain paths or an aggregation.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    /// Consecutive plain paths on one variable.
    Column(Vec<DotPath>),
    Agg { agg: Aggregate, grouped: bool },
}

/// Split FIND expressions into result items.
pub(crate) fn items(projections: &[Projection], where_clauses: &[WhereClause]) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::new();
    for p in projections {
        match p {
            Projection::Path(path) => match out.last_mut() {
                Some(Item::Column(paths)) if paths[0].var == path.var => paths.push(path.clone()),
                _ => out.push(Item::Column(vec![path.clone()])),
            },
            Projection::Aggregate(a) => out.push(Item::Agg { agg: a.clone(), grouped: false }),
        }
    }
    let plain: Vec<String> = plain_vars(&out);
    if !plain.is_empty() {
        let links = Links::of(where_clauses);
        for item in out.iter_mut() {
            if let Item::Agg { agg, grouped } = item {
                *grouped = !plain.contains(&agg.arg.var) && plain.iter().any(|p| links.connected(p, &agg.arg.var));
            }
        }
    }
    out
}

/// Variables of the plain columns, in order.
pub(crate) fn plain_vars(items: &[Item]) -> Vec<String> {
    let mut vars = Vec::new();
    for i in items {
        if let Item::Column(paths) = i {
            if !vars.contains(&paths[0].var) {
                vars.push(paths[0].var.clone());
            }
        }
    }
    vars
}

/// Which variables are linked through proposition endpoints (union-find).
struct Links {
    parent: HashMap<String, String>,
}

impl Links {
    fn of(clauses: &[WhereClause]) -> Links {
        let mut l = Links { parent: HashMap::new() };
        l.walk(clauses);
        l
    }

    fn walk(&mut self, clauses: &[WhereClause]) {
        for c in clauses {
            match c {
                WhereClause::Proposition { pattern, .. } => {
                    let mut vars = Vec::new();
                    endpoint_vars(pattern, &mut vars);
                    for w in vars.windows(2) {
                        self.join(&w[0], &w[1]);
                    }
                }
                WhereClause::Optional(inner) | WhereClause::Union(inner) => self.walk(inner),
                _ => {}
            }
        }
    }

    fn find(&mut self, v: &str) -> String {
        let p = self.parent.get(v).cloned().unwrap_or_else(|| v.to_string());
        if p == v {
            return p;
        }
        let root = self.find(&p);
        self.parent.insert(v.to_string(), root.clone());
        root
    }

    fn join(&mut self, a: &str, b: &str) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent.insert(ra, rb);
        }
    }

    fn connected(&self, a: &str, b: &str) -> bool {
        let mut me = Links { parent: self.parent.clone() };
        me.find(a) == me.find(b)
    }
}

/// The variables a link pattern ties together: its endpoints', nested
/// links' included, and its predicate variable (`(?d, ?p, ?o)`: COUNT(?o)
/// per ?p is the associative-recall idiom of RC10 §6.2.2). Not the link's
/// own variable (`?l (…)`): a fixture counts a link variable over all
/// solutions.
fn endpoint_vars(p: &PropPattern, out: &mut Vec<String>) {
    if let PropPattern::Triple(t) = p {
        if let Predicate::Var(v) = &t.predicate {
            out.push(v.clone());
        }
        for e in [&t.subject, &t.object] {
            match e {
                Endpoint::Var(v) => out.push(v.clone()),
                Endpoint::Proposition(inner) => endpoint_vars(inner, out),
                _ => {}
            }
        }
    }
}

/// Reads variables from the columns of a solutions relation (`src.v_n`),
/// LEFT-joining element rows on demand.
pub(crate) struct SolutionAccess {
    src: String,
    vars: Vec<VarBinding>,
    rows: HashMap<String, Row>,
    /// The joins made so far, with the alias each introduces.
    joins: Vec<(String, String)>,
    /// Element rows are read by a primary-key lookup per solution row
    /// ([`SolutionAccess::per_row`]) instead of a join the planner may turn
    /// into a merge or hash join.
    per_row: bool,
}

impl SolutionAccess {
    pub fn new(src: &str, vars: &[VarBinding]) -> SolutionAccess {
        SolutionAccess { src: src.to_string(), vars: vars.to_vec(), rows: HashMap::new(), joins: Vec::new(), per_row: false }
    }

    /// Element rows looked up per solution row (a LATERAL subquery with
    /// `OFFSET 0`, which the planner cannot flatten into a join): for a
    /// page whose rows are the first solutions in the order they stream,
    /// only the rows that reach the page are read. As a plain join, the
    /// generic plan (which assumes LIMIT `$n` keeps a tenth of the rows)
    /// merge-joined a million-member type with the primary key from its
    /// start: 12 ms for a page of ten.
    pub fn per_row(mut self) -> SolutionAccess {
        self.per_row = true;
        self
    }

    pub fn column(&self, name: &str) -> Option<String> {
        self.vars.iter().find(|v| v.name == name).map(|v| format!("{}.{}", self.src, v.column))
    }

    /// The joins made for the expressions in `used`, without those it never
    /// names, directly or through a join it keeps.
    /// An element variable of either kind gets a row from each table, of
    /// which a path may read one (`?o.name` reads the concept's); a plain
    /// LEFT JOIN on a unique key that nothing reads is removed by the
    /// planner, a per-row lookup is not. Its link row is looked up only
    /// when the concept row is missing (`either_link_row`), so a path that
    /// reads only the link's (`?o.predicate`) needs the concept's join too:
    /// without it the statement named a relation it never joined.
    pub fn joins_sql_for(&self, used: &str) -> String {
        // A join reads only the joins before it: walk back from the last.
        let mut kept: Vec<&str> = Vec::new();
        for (alias, sql) in self.joins.iter().rev() {
            if names_alias(used, alias) || kept.iter().any(|k| names_alias(k, alias)) {
                kept.push(sql);
            }
        }
        kept.reverse();
        kept.join(" ")
    }
}

impl VarAccess for SolutionAccess {
    fn var(&self, name: &str) -> Option<Var> {
        let b = self.vars.iter().find(|v| v.name == name)?;
        Some(Var { kind: b.kind, expr: format!("{}.{}", self.src, b.column), row: None, row_owner: 0, own: false })
    }

    fn row(&mut self, cx: &mut Cx, name: &str) -> Option<Row> {
        if let Some(r) = self.rows.get(name) {
            return Some(r.clone());
        }
        let var = self.var(name)?;
        let binding = self.vars.iter().find(|v| v.name == name)?;
        if binding.carried != Carry::No {
            // The solution brought the rows' columns along: name them as
            // rows (subqueries without FROM, which the planner flattens).
            // A concept variable's id is the variable; an element's rows
            // carry their ids among their columns.
            let columns = binding.carried_columns();
            let mut pseudo_row = |of_link: bool, prefix: &str, id: Option<&str>| {
                let a = cx.alias(prefix);
                let mut list: Vec<String> = id.map(|id| format!("{id} AS id")).into_iter().collect();
                list.extend(
                    columns.iter().filter(|(_, _, link)| *link == of_link).map(|(suffix, col, _)| format!("{}{suffix} AS {col}", var.expr)),
                );
                self.joins.push((a.clone(), format!("LEFT JOIN LATERAL (SELECT {}) {a} ON true", list.join(", "))));
                a
            };
            let row = match binding.carried {
                Carry::Either => {
                    let concept = pseudo_row(false, "ec", None);
                    let proposition = pseudo_row(true, "ep", None);
                    Row::Either { concept, proposition }
                }
                _ => Row::Concept(pseudo_row(false, "ec", Some(&var.expr))),
            };
            self.rows.insert(name.to_string(), row.clone());
            return Some(row);
        }
        let per_row = self.per_row;
        let mut join = |table: &str, prefix: &str| {
            let a = cx.alias(prefix);
            let sql = if per_row {
                // By id alone (see `either_link_row`), as the join below:
                // the probe of the primary key compares one bigint a level,
                // where the `(space, id)` key the planner picked when given
                // the space too compared a text first (a quarter of a
                // {1,3} walk).
                format!("LEFT JOIN LATERAL (SELECT * FROM kip.{table} r WHERE r.id = {} OFFSET 0) {a} ON true", var.expr)
            } else {
                format!("LEFT JOIN kip.{table} {a} ON {a}.id = {}", var.expr)
            };
            self.joins.push((a.clone(), sql));
            a
        };
        let row = match var.kind {
            VarKind::Predicate => return None,
            VarKind::Concept => Row::Concept(join("concepts", "ec")),
            VarKind::Proposition => Row::Proposition(join("propositions", "ep")),
            VarKind::Element => {
                let concept = join("concepts", "ec");
                let proposition = cx.alias("ep");
                let lateral = either_link_row(&proposition, &var.expr, &concept);
                self.joins.push((proposition.clone(), format!("LEFT JOIN {lateral} ON true")));
                Row::Either { concept, proposition }
            }
        };
        self.rows.insert(name.to_string(), row.clone());
        Some(row)
    }
}

/// Whether `sql` reads a column of the relation `alias` (`alias.col`).
fn names_alias(sql: &str, alias: &str) -> bool {
    let qualified = format!("{alias}.");
    sql.match_indices(&qualified).any(|(at, _)| {
        !sql[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// A whole element (or predicate name) as its KIP JSON value.
fn whole_json(access: &mut SolutionAccess, cx: &mut Cx, name: &str, kind: VarKind, expr: &str) -> String {
    match (kind, access.row(cx, name)) {
        (VarKind::Predicate, _) | (_, None) => format!("to_jsonb({expr})"),
        (_, Some(Row::Concept(c))) => format!("CASE WHEN {c}.id IS NOT NULL THEN {} END", concept_json(&c)),
        (_, Some(Row::Proposition(p))) => format!("CASE WHEN {p}.id IS NOT NULL THEN {} END", proposition_json(&p)),
        (_, Some(Row::Either { concept, proposition })) => format!(
            "CASE WHEN {concept}.id IS NOT NULL THEN {} WHEN {proposition}.id IS NOT NULL THEN {} END",
            concept_json(&concept),
            proposition_json(&proposition)
        ),
    }
}

/// The JSON value of a dot path (SQL jsonb, NULL when unbound or missing).
pub(crate) fn path_json(access: &mut SolutionAccess, cx: &mut Cx, path: &DotPath) -> Result<String, KipError> {
    let operand = path_operand(access, cx, path)?;
    Ok(operand_json(access, cx, path, operand))
}

/// A page column of one dot path: [`path_json`], except that a text value
/// (a name, a type, a predicate) is the text itself, which the engine reads
/// as a JSON string (`exec::spi` maps text columns to strings). `to_jsonb`
/// of a text looks the type up, prints and escapes it for every row: it was
/// a sixth of a page of 1,000 names.
pub(crate) fn path_column(access: &mut SolutionAccess, cx: &mut Cx, path: &DotPath) -> Result<String, KipError> {
    Ok(match path_operand(access, cx, path)? {
        Operand::Text(t) | Operand::Id(t, VarKind::Predicate) => t,
        operand => operand_json(access, cx, path, operand),
    })
}

/// An operand of `path` as SQL jsonb.
fn operand_json(access: &mut SolutionAccess, cx: &mut Cx, path: &DotPath, operand: Operand) -> String {
    match operand {
        Operand::Id(expr, kind) => whole_json(access, cx, &path.var, kind, &expr),
        Operand::Text(t) => format!("to_jsonb({t})"),
        Operand::Json(j) => j.to_string(),
        Operand::Object(j) => j,
        Operand::Lit(v) => cx.params.json(v),
    }
}

/// Sort expressions for a path: typed so numbers order as numbers and
/// strings in byte order. `known`: the JSON type every solution's value of
/// the path has (`filter::typed_paths`), whose key alone orders them.
pub(crate) fn path_sort(access: &mut SolutionAccess, cx: &mut Cx, path: &DotPath, known: Option<JsonType>) -> Result<Vec<String>, KipError> {
    Ok(match path_operand(access, cx, path)? {
        Operand::Id(expr, VarKind::Predicate) | Operand::Text(expr) => vec![format!("({expr}) COLLATE \"C\"")],
        Operand::Id(expr, _) => vec![expr],
        Operand::Json(j) => {
            let mut keys = json_sort_keys(&j);
            match known {
                Some(t) => vec![keys.swap_remove(t.sort_key())],
                None => keys,
            }
        }
        Operand::Object(j) => vec![j],
        Operand::Lit(_) => vec![],
    })
}

/// Sort keys of a jsonb value: numbers, then strings, then booleans.
pub(crate) fn json_sort(j: &str) -> Vec<String> {
    json_sort_keys(&JsonSql::Expr(j.to_string()))
}

fn json_sort_keys(j: &JsonSql) -> Vec<String> {
    vec![
        format!("(CASE WHEN jsonb_typeof({j}) = 'number' THEN ({j})::numeric END)"),
        format!("(CASE WHEN jsonb_typeof({j}) = 'string' THEN {} END) COLLATE \"C\"", j.string_text()),
        format!("(CASE WHEN jsonb_typeof({j}) = 'boolean' THEN ({j})::boolean END)"),
    ]
}

/// The value an aggregation reads per solution: (element/predicate key, jsonb value).
pub(crate) fn agg_inputs(access: &mut SolutionAccess, cx: &mut Cx, agg: &Aggregate) -> Result<(String, String), KipError> {
    let key = access.column(&agg.arg.var).ok_or_else(|| crate::compile::filter::unbound(&agg.arg.var))?;
    refuse_valueless(access, agg)?;
    let value = match agg.arg.field {
        PathField::Whole => match access.var(&agg.arg.var).map(|v| v.kind) {
            Some(VarKind::Predicate) => format!("to_jsonb({key})"),
            _ => "NULL::jsonb".to_string(),
        },
        _ => path_json(access, cx, &agg.arg)?,
    };
    Ok((key, value))
}

/// `KIP_1001` for an aggregation whose input has no value of its kind: a
/// whole element has no number and no order (only COUNT counts it), and a
/// name, type, id, predicate or endpoint is a string (no SUM or AVG). It
/// answered null.
fn refuse_valueless(access: &mut SolutionAccess, agg: &Aggregate) -> Result<(), KipError> {
    let predicate_var = matches!(access.var(&agg.arg.var).map(|v| v.kind), Some(VarKind::Predicate));
    let numeric = matches!(agg.func, AggFunc::Sum | AggFunc::Avg);
    let reason = match (&agg.arg.field, agg.func) {
        (_, AggFunc::Count) => return Ok(()),
        (PathField::Whole, _) if predicate_var && !numeric => return Ok(()),
        (PathField::Whole, _) if !predicate_var => "a whole element",
        (PathField::Attributes(Some(_)) | PathField::Metadata(Some(_)), _) => return Ok(()),
        (PathField::Attributes(None) | PathField::Metadata(None), _) => "an object",
        (_, AggFunc::Min | AggFunc::Max) => return Ok(()),
        (PathField::Whole, _) => "a predicate name, a string",
        _ => "a string",
    };
    let what = path_text(&agg.arg);
    Err(KipError::new(ErrorCode::InvalidSyntax, format!("{}({what}): {what} is {reason}, which has no {}", agg.func.keyword(), if numeric { "number" } else { "order" }))
        .with_hint(format!("Aggregate one of its values, e.g. {}(?{}.attributes.<key>), or count it with COUNT(?{}).", agg.func.keyword(), agg.arg.var, agg.arg.var)))
}

/// The aggregate over a deduplicated input `t(k, x)` (one row per element
/// and value within the group), as jsonb.
pub(crate) fn agg_sql(agg: &Aggregate) -> String {
    let non_null = "t.x IS NOT NULL AND t.x <> 'null'::jsonb";
    let num = "CASE WHEN jsonb_typeof(t.x) = 'number' THEN (t.x)::numeric END";
    let text = "(CASE WHEN jsonb_typeof(t.x) = 'string' THEN t.x #>> '{}' END) COLLATE \"C\"";
    match (agg.func, agg.distinct, &agg.arg.field) {
        (AggFunc::Count, false, PathField::Whole) => "to_jsonb(count(t.k))".into(),
        (AggFunc::Count, true, PathField::Whole) => "to_jsonb(count(DISTINCT t.k))".into(),
        (AggFunc::Count, false, _) => format!("to_jsonb(count(t.k) FILTER (WHERE {non_null}))"),
        (AggFunc::Count, true, _) => format!("to_jsonb(count(DISTINCT t.x) FILTER (WHERE {non_null}))"),
        (AggFunc::Sum, _, _) => format!("to_jsonb(sum({num}))"),
        (AggFunc::Avg, _, _) => format!("to_jsonb(avg({num}))"),
        (AggFunc::Min, _, _) => format!("coalesce(to_jsonb(min({num})), to_jsonb(min({text})))"),
        (AggFunc::Max, _, _) => format!("coalesce(to_jsonb(max({num})), to_jsonb(max({text})))"),
    }
}
