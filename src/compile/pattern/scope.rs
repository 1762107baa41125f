//! Compilation state shared by every block of one statement: bound
//! variables, their SQL expressions, and the generator of SQL aliases.

use crate::compile::Params;
use crate::compile::env::Env;
use kip_lang::{ErrorCode, KipError};

/// One variable visible at the top level of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarBinding {
    /// KIP variable name without the leading `?`.
    pub name: String,
    pub kind: VarKind,
    /// The generated SQL column alias of this variable in `Pattern::sql`.
    pub column: String,
    /// Which row columns the pattern's SELECT carries beside the variable,
    /// so a projection reads them without a second lookup of the row
    /// (`Cx::carry_rows`).
    pub carried: Carry,
}

/// The row columns a variable carries (see [`VarBinding::carried_columns`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carry {
    No,
    /// A concept variable: its concept row's columns, `{column}_type`, …
    /// ([`CARRIED_CONCEPT_COLUMNS`]; the id is the variable's own column).
    Concept,
    /// An element variable of either kind whose rows the pattern joined:
    /// the concept row's id (`{column}_cid`, NULL when the element is a
    /// link) and columns, and the link row's (`{column}_p_id`, …,
    /// [`CARRIED_PROPOSITION_COLUMNS`]).
    Either,
}

/// The columns of a `kip.concepts` row a carried variable brings along (its
/// id is the variable's own column): every column a projection reads.
pub const CARRIED_CONCEPT_COLUMNS: [&str; 8] = ["space", "type", "name", "attributes", "metadata", "version", "created_at", "updated_at"];

/// The columns of a `kip.propositions` row an element variable brings
/// along: every column a projection reads.
pub const CARRIED_PROPOSITION_COLUMNS: [&str; 14] = [
    "id",
    "space",
    "subject_concept",
    "subject_link",
    "predicate",
    "object_concept",
    "object_link",
    "subject",
    "object",
    "attributes",
    "metadata",
    "version",
    "created_at",
    "updated_at",
];

impl VarBinding {
    /// The suffixes of the carried columns (`{column}{suffix}`) and the row
    /// column each holds, the concept row's first: `(suffix, column, of a
    /// link row)`.
    pub fn carried_columns(&self) -> Vec<(String, &'static str, bool)> {
        match self.carried {
            Carry::No => Vec::new(),
            Carry::Concept => CARRIED_CONCEPT_COLUMNS.iter().map(|c| (format!("_{c}"), *c, false)).collect(),
            Carry::Either => std::iter::once(("_cid".to_string(), "id", false))
                .chain(CARRIED_CONCEPT_COLUMNS.iter().map(|c| (format!("_{c}"), *c, false)))
                .chain(CARRIED_PROPOSITION_COLUMNS.iter().map(|c| (format!("_p_{c}"), *c, true)))
                .collect(),
        }
    }
}

/// What a variable's column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarKind {
    /// bigint id of a `kip.concepts` row.
    Concept,
    /// bigint id of a `kip.propositions` row.
    Proposition,
    /// bigint id of a concept **or** a proposition (an endpoint variable no
    /// clause pins down to one kind).
    Element,
    /// text: the predicate name bound by a predicate variable `?p`.
    Predicate,
}

/// The statement being compiled: space, bind parameters, alias counter.
pub(crate) struct Cx<'a> {
    pub env: Env<'a>,
    /// Placeholder of the space name (`$1::text`), pushed once, used everywhere.
    pub space_sql: String,
    pub params: &'a mut Params,
    /// True while compiling the mandatory pattern; false inside `OPTIONAL`,
    /// `NOT` and `UNION`, where a dangling literal id matches nothing
    /// instead of being `KIP_3002`.
    pub mandatory: bool,
    /// Literal concept ids of the mandatory pattern that the statement must
    /// verify (`Facts::verified_in_statement`): (row id, the id as written).
    pub unverified_concept_ids: std::cell::RefCell<Vec<(i64, String)>>,
    /// The top-level block carries the row columns of its variables whose
    /// rows it joined (`VarBinding::carried`): set by FIND when its page
    /// needs no GROUP BY of its own, or groups for aggregations
    /// (`find::carries_rows`), so each element row is read once.
    pub carry_rows: bool,
    /// Set when a condition's good plan depends on its value: an attribute
    /// containment (`filter::attribute_containment`), which the GIN index
    /// serves well only when the value is rare. A generic plan cannot tell,
    /// and under an ORDER BY … LIMIT it walked the type's `(space, type,
    /// id)` index past every member instead (`FindSql::plan_per_call`).
    pub value_dependent: bool,
    /// The variables of the mandatory pattern bound by a scan of a type
    /// whose space is written `= ANY` (`Facts::per_call`): the page orders
    /// each by its space, then its id.
    pub space_ordered: Vec<String>,
    next_alias: usize,
}

impl<'a> Cx<'a> {
    pub fn new(env: Env<'a>, params: &'a mut Params) -> Cx<'a> {
        let space_sql = params.text(env.space);
        Cx {
            env,
            space_sql,
            params,
            mandatory: true,
            unverified_concept_ids: Default::default(),
            carry_rows: false,
            value_dependent: false,
            space_ordered: Vec::new(),
            next_alias: 0,
        }
    }

    /// Run `f` with `mandatory` switched off (the body of OPTIONAL / NOT / UNION).
    pub fn in_optional_part<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = std::mem::replace(&mut self.mandatory, false);
        let out = f(self);
        self.mandatory = saved;
        out
    }

    /// A fresh SQL alias such as `c7`; never derived from user text.
    pub fn alias(&mut self, prefix: &str) -> String {
        self.next_alias += 1;
        format!("{prefix}{}", self.next_alias)
    }
}

/// Where the table row of an element variable can be read in SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Row {
    Concept(String),
    Proposition(String),
    /// Two LEFT-joined aliases, exactly one of which matches.
    Either { concept: String, proposition: String },
}

/// A bound variable.
#[derive(Debug, Clone)]
pub(crate) struct Var {
    pub kind: VarKind,
    /// SQL expression of the id (bigint) or predicate name (text).
    pub expr: String,
    /// A joined row of the element, when one is in scope.
    pub row: Option<Row>,
    /// Block that created `row` (only that block may add conditions to it).
    pub row_owner: usize,
    /// True when the variable was first bound in this block (and is therefore
    /// one of the block's output columns).
    pub own: bool,
}

/// Variables in order of first binding.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    entries: Vec<(String, Var)>,
}

impl Scope {
    pub fn get(&self, name: &str) -> Option<&Var> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Var> {
        self.entries.iter_mut().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn set(&mut self, name: &str, var: Var) {
        match self.get_mut(name) {
            Some(v) => *v = var,
            None => self.entries.push((name.to_string(), var)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Var)> {
        self.entries.iter().map(|(n, v)| (n, v))
    }

    /// `inner` layered over `self`: what a nested block sees.
    pub fn layered(&self, inner: &Scope) -> Scope {
        let mut all = self.clone();
        for (n, v) in inner.iter() {
            let mut v = v.clone();
            v.own = false;
            all.set(n, v);
        }
        for (_, v) in all.entries.iter_mut() {
            v.own = false;
        }
        all
    }
}

pub(crate) use crate::compile::bound::lit;

/// KIP_1001 for a variable used both as a predicate and as an element.
pub(crate) fn kind_conflict(name: &str) -> KipError {
    KipError::new(
        ErrorCode::InvalidSyntax,
        format!("variable ?{name} is used both as a predicate (a string) and as a concept or proposition"),
    )
    .with_hint("Use distinct variable names for predicates and for nodes/links.")
}
