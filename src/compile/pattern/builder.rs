//! The builder of one block's SELECT: its join tree, its conditions, and
//! the variables it binds (see `block` for how clauses use it).

use super::scope::{Carry, Cx, Row, Scope, Var, VarBinding, VarKind};
use crate::compile::filter::VarAccess;

/// A compiled block: a SELECT with one column per own variable (and, for a
/// top-level FIND block, an `ord` column: the UNION branch a row came from).
#[derive(Debug, Clone)]
pub(crate) struct Rel {
    pub sql: String,
    pub vars: Vec<VarBinding>,
}

enum From {
    Inner(String),
    /// An independent clause group: `FULL JOIN … ON true`.
    Full(String),
    Left(String),
    LeftOn(String, String),
    /// An OPTIONAL block: `LEFT JOIN LATERAL … ON true`.
    Optional(String),
}

impl From {
    /// The alias the item defines: every item ends with it.
    fn alias(&self) -> &str {
        let (From::Inner(x) | From::Full(x) | From::Left(x) | From::LeftOn(x, _) | From::Optional(x)) = self;
        x.rsplit(' ').next().unwrap_or_default()
    }
}

static NEXT_BLOCK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

pub(crate) struct Builder {
    pub id: usize,
    from: Vec<From>,
    conds: Vec<String>,
    /// Variables of enclosing blocks (visible, not output).
    outer: Scope,
    /// Variables bound (or refined) in this block.
    pub local: Scope,
    /// SQL expression of the UNION branch ordinal of a row.
    ord: String,
}

impl Builder {
    pub(super) fn new(outer: &Scope) -> Builder {
        Builder {
            id: NEXT_BLOCK.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            from: Vec::new(),
            conds: Vec::new(),
            outer: outer.clone(),
            local: Scope::default(),
            ord: "0".to_string(),
        }
    }

    pub fn lookup(&self, name: &str) -> Option<&Var> {
        self.local.get(name).or_else(|| self.outer.get(name))
    }

    /// Bind or refine a variable in this block.
    pub fn set_var(&mut self, name: &str, var: Var) {
        self.local.set(name, var);
    }

    /// Bind a variable seen for the first time.
    pub fn bind_new(&mut self, name: &str, kind: VarKind, expr: String, row: Option<Row>) {
        let owner = self.id;
        self.local.set(name, Var { kind, expr, row, row_owner: owner, own: true });
    }

    /// `LEFT JOIN LATERAL item ON true` (an OPTIONAL block).
    pub(super) fn optional(&mut self, item: String) {
        self.from.push(From::Optional(item));
    }

    /// Where the row of a variable whose value is `expr` joins the tree:
    /// right before the first OPTIONAL after the item of this block that
    /// binds the variable (`alias.column`), otherwise at the end. A row join
    /// finds at most one row and reads only the variable, so it may go
    /// before an OPTIONAL that does not bind the variable; there, the
    /// FILTERs of the block that read the row can drop a solution before
    /// the OPTIONAL's lookups run for it (the planner, estimating one row
    /// everywhere in a generic plan, kept the written order and probed the
    /// OPTIONAL for solutions the FILTER then dropped).
    fn row_join_position(&self, expr: &str) -> usize {
        let end = self.from.len();
        let Some((alias, _)) = expr.split_once('.') else { return end };
        let Some(binding) = self.from.iter().position(|item| item.alias() == alias) else { return end };
        self.from[binding + 1..]
            .iter()
            .position(|item| matches!(item, From::Optional(_)))
            .map_or(end, |i| binding + 1 + i)
    }

    /// An independent clause group: the first is the tree's start, the
    /// others `FULL JOIN … ON true`.
    pub(super) fn group(&mut self, item: String) {
        let from = if self.from.is_empty() { From::Inner(item) } else { From::Full(item) };
        self.from.push(from);
    }

    /// True while the block has no FROM item and no condition.
    pub(super) fn is_empty(&self) -> bool {
        self.from.is_empty() && self.conds.is_empty()
    }

    /// Start over from `item` (the UNION of what was built so far and a
    /// branch), whose rows carry their branch ordinal in `ord`.
    pub(super) fn restart_from(&mut self, item: String, ord: String) {
        let outer = self.outer.clone();
        *self = Builder::new(&outer);
        self.from.push(From::Inner(item));
        self.ord = ord;
    }

    pub fn inner(&mut self, item: String) {
        self.from.push(From::Inner(item));
    }

    pub fn cond(&mut self, c: String) {
        self.conds.push(c);
    }

    /// Every variable this block sees (for nested OPTIONAL / NOT blocks).
    pub(super) fn visible(&self) -> Scope {
        self.outer.layered(&self.local)
    }

    fn render_from(&self) -> String {
        let mut out = String::new();
        for (i, item) in self.from.iter().enumerate() {
            match (i, item) {
                (0, From::Inner(x) | From::Full(x)) => out.push_str(x),
                (0, From::Left(x) | From::Optional(x)) => out.push_str(&format!("(SELECT 1) AS unit LEFT JOIN {x} ON true")),
                (0, From::LeftOn(x, on)) => out.push_str(&format!("(SELECT 1) AS unit LEFT JOIN {x} ON {on}")),
                (_, From::Inner(x)) => out.push_str(&format!(" CROSS JOIN {x}")),
                (_, From::Full(x)) => out.push_str(&format!(" FULL JOIN {x} ON true")),
                (_, From::Left(x) | From::Optional(x)) => out.push_str(&format!(" LEFT JOIN {x} ON true")),
                (_, From::LeftOn(x, on)) => out.push_str(&format!(" LEFT JOIN {x} ON {on}")),
            }
        }
        out
    }

    /// The block as a SELECT of its own variables (plus `ord` when asked).
    pub(super) fn render(&self, with_ord: bool) -> Rel {
        self.render_carrying(with_ord, false)
    }

    /// [`Builder::render`], with `carry`: each concept or element variable
    /// whose row is joined in this block also brings that row's columns
    /// (`VarBinding::carried`).
    pub(super) fn render_carrying(&self, with_ord: bool, carry: bool) -> Rel {
        use std::fmt::Write;
        // One buffer for the select list: a block's SELECT names each
        // variable and, carried, the columns of its rows.
        let mut sql = String::with_capacity(256);
        sql.push_str("SELECT ");
        let mut first = true;
        let mut item = |sql: &mut String| {
            if !first {
                sql.push_str(", ");
            }
            first = false;
        };
        let mut vars = Vec::new();
        for (name, var) in self.local.iter().filter(|(_, v)| v.own) {
            let column = format!("v_{}", vars.len() + 1);
            item(&mut sql);
            let _ = write!(sql, "{} AS {column}", var.expr);
            let carried = match (&var.row, var.kind) {
                (Some(Row::Concept(_)), VarKind::Concept) if carry => Carry::Concept,
                (Some(Row::Either { .. }), VarKind::Element) if carry => Carry::Either,
                _ => Carry::No,
            };
            let binding = VarBinding { name: name.clone(), kind: var.kind, column, carried };
            for (suffix, col, of_link) in binding.carried_columns() {
                let a = match &var.row {
                    Some(Row::Either { proposition, .. }) if of_link => proposition,
                    Some(Row::Concept(a) | Row::Either { concept: a, .. }) => a,
                    _ => continue,
                };
                item(&mut sql);
                let _ = write!(sql, "{a}.{col} AS {}{suffix}", binding.column);
            }
            vars.push(binding);
        }
        if with_ord {
            item(&mut sql);
            let _ = write!(sql, "{} AS ord", self.ord);
        }
        if first {
            sql.push_str("1 AS unit");
        }
        if !self.from.is_empty() {
            sql.push_str(" FROM ");
            sql.push_str(&self.render_from());
        }
        if !self.conds.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&self.conds.join(" AND "));
        }
        Rel { sql, vars }
    }
}

/// The link row of an element variable of either kind, looked up only when
/// no concept has its id (ids are unique across both tables): a LATERAL
/// subquery whose condition on the concept row becomes a one-time filter,
/// so an element that is a concept costs one index probe, not two.
///
/// The probe is by id alone, without the space: every id a solution holds
/// belongs to the space already (the pattern reads only the space's rows,
/// and a link's endpoints are in the link's space by foreign key), and the
/// primary key compares one bigint a level where `(space, id)` compares a
/// text first.
pub(crate) fn either_link_row(alias: &str, id: &str, concept: &str) -> String {
    format!("LATERAL (SELECT * FROM kip.propositions r WHERE r.id = {id} AND {concept}.id IS NULL OFFSET 0) {alias}")
}

impl VarAccess for Builder {
    fn var(&self, name: &str) -> Option<Var> {
        self.lookup(name).cloned()
    }

    /// A readable row for `name`, LEFT-joining the element's table(s) at the
    /// end of the join tree when none is in scope yet.
    fn row(&mut self, cx: &mut Cx, name: &str) -> Option<Row> {
        let var = self.lookup(name)?.clone();
        if let Some(row) = &var.row {
            return Some(row.clone());
        }
        // By id alone, as `either_link_row` explains.
        let at = self.row_join_position(&var.expr);
        let join = |cx: &mut Cx, b: &mut Builder, table: &str, prefix: &str| {
            let a = cx.alias(prefix);
            b.from.insert(at, From::LeftOn(format!("kip.{table} {a}"), format!("{a}.id = {}", var.expr)));
            a
        };
        let row = match var.kind {
            VarKind::Predicate => return None,
            VarKind::Concept => Row::Concept(join(cx, self, "concepts", "rc")),
            VarKind::Proposition => Row::Proposition(join(cx, self, "propositions", "rp")),
            VarKind::Element => {
                let concept = join(cx, self, "concepts", "rc");
                let proposition = cx.alias("rp");
                self.from.insert(at + 1, From::Left(either_link_row(&proposition, &var.expr, &concept)));
                Row::Either { concept, proposition }
            }
        };
        let mut refined = var.clone();
        refined.row = Some(row.clone());
        refined.row_owner = self.id;
        self.local.set(name, refined);
        Some(row)
    }
}
