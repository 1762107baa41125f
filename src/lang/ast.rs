//! Typed abstract syntax tree for KIP (RC9 language, RC10 shapes).
//!
//! This is the contract between the front end and the compiler/executor:
//! nothing downstream ever sees pest types. Design rules:
//!
//! * Every position where the spec allows a `:param` placeholder holds either
//!   a [`Bindable`] (scalar positions: type/name/id strings, predicates,
//!   LIMIT, CURSOR, EXPECT VERSION, SEARCH options…) or a [`ValueOrParam`]
//!   (JSON value positions: attribute/metadata values, FILTER operands, IN
//!   lists, UPDATE operands). [`crate::bind`] resolves all of them; after a
//!   successful bind no `Param` remains anywhere (see [`Script::params`]).
//! * The tree is *normalized*: e.g. `{name: "x", type: "T"}` and
//!   `{type: "T", name: "x"}` give the same [`ConceptSelector`], `{2}` and
//!   `{2,2}` the same [`HopRange`], an omitted sort direction is `Asc`.
//!   This is what makes `parse(print(ast)) == ast` hold.
//! * No source spans are stored, so structural equality is meaningful.
//!
//! All types derive `Debug, Clone, PartialEq, serde::Serialize`.

use serde::Serialize;
pub use serde_json::Value as Json;

// ---------------------------------------------------------------------------
// Script & commands
// ---------------------------------------------------------------------------

/// The parse result of one command text.
///
/// A text holds exactly one KQL/META command, or one or more KML statements
/// (a capsule commonly carries several `UPSERT { … }` statements).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Script {
    pub commands: Vec<Command>,
}

/// One KIP command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Command {
    /// KQL `FIND(…) WHERE {…} [ORDER BY …] [LIMIT n] [CURSOR "…"]`.
    Find(FindQuery),
    /// KML `UPSERT { CONCEPT … PROPOSITION … } [WITH METADATA {…}]`.
    Upsert(Upsert),
    /// KML `UPDATE ?x SET ATTRIBUTES {…} SET METADATA {…} WHERE {…} [LIMIT n]`.
    Update(Update),
    /// KML `MERGE CONCEPT ?a INTO ?b WHERE {…}`.
    Merge(Merge),
    /// KML `DELETE ATTRIBUTES|METADATA|PROPOSITIONS|CONCEPT …`.
    Delete(Delete),
    /// META `DESCRIBE …`.
    Describe(Describe),
    /// META `SEARCH CONCEPT|PROPOSITION …`.
    Search(Search),
    /// META `EXPORT ?x WHERE {…} [LIMIT n] [CURSOR "…"]`.
    Export(Export),
}

impl Command {
    /// The command without its LIMIT and CURSOR (FIND, EXPORT): what stays
    /// the same from one page to the next.
    pub fn without_paging(&self) -> Command {
        let mut bare = self.clone();
        match &mut bare {
            Command::Find(q) => {
                q.limit = None;
                q.cursor = None;
            }
            Command::Export(e) => {
                e.limit = None;
                e.cursor = None;
            }
            _ => {}
        }
        bare
    }

    /// True for KML statements (UPSERT/UPDATE/MERGE/DELETE), i.e. the
    /// commands that need `execute_kip` (not `execute_kip_readonly`) and
    /// whose errors stop a batch.
    pub fn is_kml(&self) -> bool {
        matches!(
            self,
            Command::Upsert(_) | Command::Update(_) | Command::Merge(_) | Command::Delete(_)
        )
    }

    /// The leading keyword(s), e.g. `"FIND"`, `"DELETE CONCEPT"`.
    pub fn keyword(&self) -> &'static str {
        match self {
            Command::Find(_) => "FIND",
            Command::Upsert(_) => "UPSERT",
            Command::Update(_) => "UPDATE",
            Command::Merge(_) => "MERGE",
            Command::Delete(Delete::Attributes { .. }) => "DELETE ATTRIBUTES",
            Command::Delete(Delete::Metadata { .. }) => "DELETE METADATA",
            Command::Delete(Delete::Propositions { .. }) => "DELETE PROPOSITIONS",
            Command::Delete(Delete::Concept { .. }) => "DELETE CONCEPT",
            Command::Describe(_) => "DESCRIBE",
            Command::Search(_) => "SEARCH",
            Command::Export(_) => "EXPORT",
        }
    }
}

// ---------------------------------------------------------------------------
// Values and placeholders
// ---------------------------------------------------------------------------

/// A scalar position that is either a literal or a `:name` placeholder.
///
/// Used for strings (`StrArg`), non-negative integers (`UIntArg`),
/// numbers (`NumArg`) and search modes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Bindable<T> {
    Lit(T),
    /// Placeholder name without the leading `:`.
    Param(String),
}

/// A string literal or placeholder (type names, concept names, ids,
/// predicates, SEARCH terms, CURSOR tokens, DELETE keys…).
pub type StrArg = Bindable<String>;
/// A non-negative integer or placeholder (LIMIT, EXPECT VERSION).
pub type UIntArg = Bindable<u64>;
/// A number or placeholder (THRESHOLD).
pub type NumArg = Bindable<f64>;

impl<T> Bindable<T> {
    /// The literal, if this is not a placeholder.
    pub fn lit(&self) -> Option<&T> {
        match self {
            Bindable::Lit(v) => Some(v),
            Bindable::Param(_) => None,
        }
    }
}

impl StrArg {
    /// The literal string, if this is not a placeholder.
    pub fn as_str(&self) -> Option<&str> {
        self.lit().map(String::as_str)
    }
}

/// A JSON value position that may contain placeholders.
///
/// Invariant (kept by the parser and by [`ValueOrParam::array`] /
/// [`ValueOrParam::object`]): a subtree without any placeholder is always a
/// single `Value`; `Array`/`Object` appear only when some element below is a
/// `Param`. After binding, every `ValueOrParam` is a `Value`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ValueOrParam {
    /// A plain JSON value (string, number, bool, null, or a placeholder-free
    /// array/object). Object key order is preserved.
    Value(Json),
    /// `:name` (name without the colon).
    Param(String),
    /// An array literal containing at least one placeholder somewhere below.
    Array(Vec<ValueOrParam>),
    /// An object literal containing at least one placeholder somewhere below.
    Object(Vec<Field>),
}

impl ValueOrParam {
    /// Build an array node, collapsing to `Value` when no placeholder is inside.
    pub fn array(items: Vec<ValueOrParam>) -> ValueOrParam {
        if items.iter().all(|v| matches!(v, ValueOrParam::Value(_))) {
            ValueOrParam::Value(Json::Array(
                items
                    .into_iter()
                    .map(|v| v.into_json().expect("checked"))
                    .collect(),
            ))
        } else {
            ValueOrParam::Array(items)
        }
    }

    /// Build an object node, collapsing to `Value` when no placeholder is
    /// inside. A duplicate key keeps its first position and takes the last
    /// value (JSON/serde_json behaviour) in the collapsed form.
    pub fn object(fields: Vec<Field>) -> ValueOrParam {
        if fields
            .iter()
            .all(|f| matches!(f.value, ValueOrParam::Value(_)))
        {
            let mut map = serde_json::Map::new();
            for f in fields {
                map.insert(f.key, f.value.into_json().expect("checked"));
            }
            ValueOrParam::Value(Json::Object(map))
        } else {
            ValueOrParam::Object(fields)
        }
    }

    /// The JSON value, if fully bound.
    pub fn as_json(&self) -> Option<&Json> {
        match self {
            ValueOrParam::Value(v) => Some(v),
            _ => None,
        }
    }

    /// The JSON value, if fully bound.
    pub fn into_json(self) -> Option<Json> {
        match self {
            ValueOrParam::Value(v) => Some(v),
            _ => None,
        }
    }
}

/// One `key: value` entry of an object literal, `SET ATTRIBUTES {…}` or
/// `WITH METADATA {…}`. Unquoted keys are normalized to strings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Field {
    pub key: String,
    pub value: ValueOrParam,
}

/// Entries of `SET ATTRIBUTES {…}` / `WITH METADATA {…}` in source order.
/// Duplicate keys are kept as written; applying them in order gives
/// "last one wins", like a JSON object.
pub type Fields = Vec<Field>;

// ---------------------------------------------------------------------------
// Dot paths
// ---------------------------------------------------------------------------

/// `?var` or `?var.<field>` (spec §3.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DotPath {
    /// Variable name without the leading `?`.
    pub var: String,
    pub field: PathField,
}

impl DotPath {
    /// A bare variable reference `?var`.
    pub fn var(name: impl Into<String>) -> DotPath {
        DotPath {
            var: name.into(),
            field: PathField::Whole,
        }
    }
}

/// What a dot path selects from the element bound to the variable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum PathField {
    /// `?var` — the whole bound element (node, link, or primitive for a
    /// predicate variable).
    Whole,
    /// `?var.id`
    Id,
    /// `?var.type` (concepts)
    Type,
    /// `?var.name` (concepts)
    Name,
    /// `?var.subject` (propositions)
    Subject,
    /// `?var.predicate` (propositions)
    Predicate,
    /// `?var.object` (propositions)
    Object,
    /// `?var.attributes` (`None`, whole object) or `?var.attributes.<key>`.
    Attributes(Option<String>),
    /// `?var.metadata` (`None`, whole object) or `?var.metadata.<key>`.
    Metadata(Option<String>),
}

// ---------------------------------------------------------------------------
// KQL
// ---------------------------------------------------------------------------

/// `FIND(…) WHERE {…} [ORDER BY …] [LIMIT n] [CURSOR "…"]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindQuery {
    /// At least one projection.
    pub projections: Vec<Projection>,
    pub where_clauses: Vec<WhereClause>,
    pub order_by: Vec<OrderKey>,
    pub limit: Option<UIntArg>,
    pub cursor: Option<StrArg>,
}

/// One expression in `FIND(…)` or an `ORDER BY` key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Projection {
    /// `?v`, `?v.name`, `?v.attributes.k`, …
    Path(DotPath),
    /// `COUNT(?v)`, `COUNT(DISTINCT ?v)`, `SUM(?v.attributes.k)`, …
    Aggregate(Aggregate),
}

/// An aggregation expression.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aggregate {
    pub func: AggFunc,
    /// `COUNT(DISTINCT …)`; only COUNT accepts DISTINCT.
    pub distinct: bool,
    pub arg: DotPath,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum AggFunc {
    Count,
    Sum,
    Avg,
    Min,
    Max,
}

impl AggFunc {
    pub fn keyword(self) -> &'static str {
        match self {
            AggFunc::Count => "COUNT",
            AggFunc::Sum => "SUM",
            AggFunc::Avg => "AVG",
            AggFunc::Min => "MIN",
            AggFunc::Max => "MAX",
        }
    }
}

/// `ORDER BY <key> [ASC|DESC]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderKey {
    pub expr: Projection,
    pub direction: SortDirection,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SortDirection {
    Asc,
    Desc,
}

/// One clause inside `WHERE { … }` (clauses are AND-ed in order).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum WhereClause {
    /// `?var {…}` concept node clause (§3.4.1).
    Concept {
        var: String,
        selector: ConceptSelector,
    },
    /// `[?var] (…)` proposition link clause (§3.4.2).
    Proposition {
        var: Option<String>,
        pattern: PropPattern,
    },
    /// `FILTER(<expr>)`.
    Filter(Expr),
    /// `OPTIONAL { … }` — left join.
    Optional(Vec<WhereClause>),
    /// `NOT { … }` — exclusion; inner variables are private.
    Not(Vec<WhereClause>),
    /// `UNION { … }` — an independent branch OR-ed with the clauses
    /// preceding it in the same block.
    Union(Vec<WhereClause>),
}

/// The clauses of a block after its last `UNION`: those whose rows and
/// conditions hold for every solution of the block. The clauses before a
/// UNION are its other operand (`{ A UNION { B } C }` is `(A ∪ B) ⋈ C`).
pub fn after_last_union(clauses: &[WhereClause]) -> &[WhereClause] {
    let start = clauses.iter().rposition(|c| matches!(c, WhereClause::Union(_))).map_or(0, |i| i + 1);
    &clauses[start..]
}

/// The type every solution of the block binds `?var` to (a literal or a
/// placeholder): the one a concept clause of `?var` names after the block's
/// last UNION (a clause before it holds for that side's solutions alone).
pub fn fixed_type<'a>(clauses: &'a [WhereClause], var: &str) -> Option<&'a StrArg> {
    after_last_union(clauses).iter().find_map(|c| match c {
        WhereClause::Concept { var: v, selector: ConceptSelector::Type(t) | ConceptSelector::TypeName { type_name: t, .. } }
            if v == var =>
        {
            Some(t)
        }
        _ => None,
    })
}

/// The `{…}` concept match. Keys may be written in any order in the source;
/// only `id`, `type` and `name` are accepted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ConceptSelector {
    /// `{id: "…"}`
    Id(StrArg),
    /// `{type: "…", name: "…"}` — full identity.
    TypeName { type_name: StrArg, name: StrArg },
    /// `{type: "…"}` — broad match.
    Type(StrArg),
    /// `{name: "…"}` — broad match.
    Name(StrArg),
}

impl ConceptSelector {
    /// True for the forms that identify at most one node (`{id}`,
    /// `{type, name}`), the only ones allowed in KML targets.
    pub fn is_identity(&self) -> bool {
        matches!(
            self,
            ConceptSelector::Id(_) | ConceptSelector::TypeName { .. }
        )
    }
}

/// The `(…)` proposition match.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum PropPattern {
    /// `(id: "…")`
    Id(StrArg),
    /// `(subject, predicate, object)`
    Triple(Box<Triple>),
}

/// Structural proposition pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Triple {
    pub subject: Endpoint,
    pub predicate: Predicate,
    pub object: Endpoint,
}

/// Subject/object of a proposition clause, or target of a
/// `SET PROPOSITIONS` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Endpoint {
    /// `?v` — a query variable (KQL) or a local handle (UPSERT).
    Var(String),
    /// Unnamed `{…}` concept clause.
    Concept(ConceptSelector),
    /// Unnamed nested `(…)` proposition clause (higher-order).
    Proposition(Box<PropPattern>),
    /// A bare element id string (`"C:12"`, `"P:3:treats"`) or a placeholder
    /// bound to one (spec §1.1: subject/object are concept or link ids).
    Id(StrArg),
}

/// The predicate position of a structural proposition pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Predicate {
    /// `"treats"` or `:pred`.
    Literal(StrArg),
    /// `"a" | "b" | …` (two or more alternatives).
    Alternatives(Vec<StrArg>),
    /// `"follows"{m,n}` / `{m,}` / `{n}`, or a walk over alternatives:
    /// `("a" | "b"){m,n}` (also written `"a" | "b"{m,n}`: the range
    /// quantifies the whole alternation), where each hop may follow any of
    /// the listed predicates. `predicates` holds one or more names.
    Hops { predicates: Vec<StrArg>, range: HopRange },
    /// `?p` — binds the predicate name (string).
    Var(String),
}

/// Hop bounds of a multi-hop predicate. `{n}` is stored as `min = max = n`;
/// `{m,}` has `max = None` (unbounded). `min <= max` is guaranteed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HopRange {
    pub min: u32,
    pub max: Option<u32>,
}

/// FILTER expression. Precedence (high→low): `!`, comparisons, `&&`, `||`.
/// `&&`/`||` chains are flattened to n-ary nodes so long chains stay shallow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Expr {
    /// Literal JSON value or placeholder (arrays appear as IN lists).
    Value(ValueOrParam),
    /// `?v` or a dot path.
    Path(DotPath),
    /// `!e`
    Not(Box<Expr>),
    /// `a && b && …` (at least two operands).
    And(Vec<Expr>),
    /// `a || b || …` (at least two operands).
    Or(Vec<Expr>),
    /// `a <op> b` (comparisons are non-associative).
    Compare {
        op: CompareOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `IN(…)`, `IS_NULL(…)`, `CONTAINS(…)`, … with checked arity.
    Call { func: FilterFunc, args: Vec<Expr> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

impl CompareOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Eq => "==",
            CompareOp::Ne => "!=",
            CompareOp::Lt => "<",
            CompareOp::Gt => ">",
            CompareOp::Le => "<=",
            CompareOp::Ge => ">=",
        }
    }
}

/// FILTER functions. Arity: `IN` 2 (second is an array literal or a
/// placeholder), `IS_NULL`/`IS_NOT_NULL` 1, string functions 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FilterFunc {
    In,
    IsNull,
    IsNotNull,
    Contains,
    StartsWith,
    EndsWith,
    Regex,
}

impl FilterFunc {
    pub fn keyword(self) -> &'static str {
        match self {
            FilterFunc::In => "IN",
            FilterFunc::IsNull => "IS_NULL",
            FilterFunc::IsNotNull => "IS_NOT_NULL",
            FilterFunc::Contains => "CONTAINS",
            FilterFunc::StartsWith => "STARTS_WITH",
            FilterFunc::EndsWith => "ENDS_WITH",
            FilterFunc::Regex => "REGEX",
        }
    }

    /// Number of arguments the function takes.
    pub fn arity(self) -> usize {
        match self {
            FilterFunc::IsNull | FilterFunc::IsNotNull => 1,
            _ => 2,
        }
    }

    /// A call written correctly, for the hint of an error about the call.
    pub fn usage(self) -> &'static str {
        match self {
            FilterFunc::In => "IN(?x.attributes.status, [\"active\", \"draft\"])",
            FilterFunc::IsNull => "IS_NULL(?x.metadata.expires_at)",
            FilterFunc::IsNotNull => "IS_NOT_NULL(?x.metadata.expires_at)",
            FilterFunc::Contains => "CONTAINS(?x.name, \"text\")",
            FilterFunc::StartsWith => "STARTS_WITH(?x.name, \"prefix\")",
            FilterFunc::EndsWith => "ENDS_WITH(?x.name, \"suffix\")",
            FilterFunc::Regex => "REGEX(?x.name, \"^pattern$\")",
        }
    }
}

// ---------------------------------------------------------------------------
// KML
// ---------------------------------------------------------------------------

/// `UPSERT { items… } [WITH METADATA {…}]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Upsert {
    /// CONCEPT / PROPOSITION blocks, in execution order.
    pub items: Vec<UpsertItem>,
    /// Statement-level default metadata.
    pub metadata: Option<Fields>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum UpsertItem {
    Concept(ConceptBlock),
    Proposition(PropositionBlock),
}

/// `CONCEPT ?h { identity [EXPECT VERSION n] [SET ATTRIBUTES {…}]
/// [SET PROPOSITIONS {…}] } [WITH METADATA {…}]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConceptBlock {
    /// Local handle without `?`.
    pub handle: String,
    /// Always `ConceptSelector::Id` or `ConceptSelector::TypeName`.
    pub identity: ConceptSelector,
    pub expect_version: Option<UIntArg>,
    pub set_attributes: Option<Fields>,
    /// `None` when no `SET PROPOSITIONS` clause was written.
    pub set_propositions: Option<Vec<SetProposition>>,
    pub metadata: Option<Fields>,
}

/// One `("predicate", target) [WITH METADATA {…}]` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetProposition {
    pub predicate: StrArg,
    /// `Var` = local handle; `Concept` is an identity selector
    /// (`{type,name}` / `{id}`); `Proposition` is `(id: …)` or a structural
    /// reference with single literal predicates; `Id` a bare id string.
    pub target: Endpoint,
    pub metadata: Option<Fields>,
}

/// `PROPOSITION [?h] { (s, "p", o) | (id: …) [EXPECT VERSION n]
/// [SET ATTRIBUTES {…}] } [WITH METADATA {…}]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PropositionBlock {
    pub handle: Option<String>,
    /// `PropPattern::Id`, or a triple whose predicate is a single
    /// `Predicate::Literal` and whose concept endpoints are identities.
    pub identity: PropPattern,
    pub expect_version: Option<UIntArg>,
    pub set_attributes: Option<Fields>,
    pub metadata: Option<Fields>,
}

/// `UPDATE ?target SET … WHERE {…} [LIMIT n]` (RC10 §4.3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Update {
    pub target: String,
    /// At least one of `set_attributes` / `set_metadata` is `Some`.
    pub set_attributes: Option<Vec<UpdateField>>,
    pub set_metadata: Option<Vec<UpdateField>>,
    pub where_clauses: Vec<WhereClause>,
    pub limit: Option<UIntArg>,
}

/// `key: <value or update expression>`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpdateField {
    pub key: String,
    pub value: UpdateExpr,
}

/// Value of an UPDATE key: JSON, placeholder, dot path on the target
/// variable (checked by the parser), or a numeric function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum UpdateExpr {
    Value(ValueOrParam),
    /// A path whose `var` is the UPDATE target.
    Path(DotPath),
    /// `ADD(a,b)`, `MUL(a,b)`, `CLAMP(x,lo,hi)`, `COALESCE(x,d)`.
    Call {
        func: UpdateFunc,
        args: Vec<UpdateExpr>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum UpdateFunc {
    Add,
    Mul,
    Clamp,
    Coalesce,
}

impl UpdateFunc {
    pub fn keyword(self) -> &'static str {
        match self {
            UpdateFunc::Add => "ADD",
            UpdateFunc::Mul => "MUL",
            UpdateFunc::Clamp => "CLAMP",
            UpdateFunc::Coalesce => "COALESCE",
        }
    }

    pub fn arity(self) -> usize {
        match self {
            UpdateFunc::Clamp => 3,
            _ => 2,
        }
    }

    /// A call written correctly, for the hint of an error about the call.
    pub fn usage(self) -> &'static str {
        match self {
            UpdateFunc::Add => "ADD(COALESCE(?x.attributes.count, 0), 1)",
            UpdateFunc::Mul => "MUL(?x.metadata.confidence, 0.9)",
            UpdateFunc::Clamp => "CLAMP(?x.metadata.confidence, 0.0, 1.0)",
            UpdateFunc::Coalesce => "COALESCE(?x.attributes.count, 0)",
        }
    }
}

/// `MERGE CONCEPT ?source INTO ?target WHERE {…}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Merge {
    pub source: String,
    pub target: String,
    pub where_clauses: Vec<WhereClause>,
}

/// The four DELETE forms (§4.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Delete {
    /// `DELETE ATTRIBUTES {"k", …} FROM ?t WHERE {…}`
    Attributes {
        keys: Vec<StrArg>,
        target: String,
        where_clauses: Vec<WhereClause>,
    },
    /// `DELETE METADATA {"k", …} FROM ?t WHERE {…}`
    Metadata {
        keys: Vec<StrArg>,
        target: String,
        where_clauses: Vec<WhereClause>,
    },
    /// `DELETE PROPOSITIONS ?l WHERE {…}`
    Propositions {
        target: String,
        where_clauses: Vec<WhereClause>,
    },
    /// `DELETE CONCEPT ?c DETACH WHERE {…}` (DETACH is mandatory).
    Concept {
        target: String,
        where_clauses: Vec<WhereClause>,
    },
}

// ---------------------------------------------------------------------------
// META
// ---------------------------------------------------------------------------

/// `DESCRIBE …` (§5.1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Describe {
    Primer,
    Domains,
    ConceptTypes {
        limit: Option<UIntArg>,
        cursor: Option<StrArg>,
    },
    ConceptType(StrArg),
    PropositionTypes {
        limit: Option<UIntArg>,
        cursor: Option<StrArg>,
    },
    PropositionType(StrArg),
}

/// `SEARCH CONCEPT|PROPOSITION <term> [WITH TYPE t] [MODE m] [THRESHOLD x]
/// [LIMIT n]` (§5.2). Options may be written in any order, each once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Search {
    pub target: SearchTarget,
    pub term: StrArg,
    /// Concept type (CONCEPT) or predicate (PROPOSITION).
    pub with_type: Option<StrArg>,
    pub mode: Option<Bindable<SearchMode>>,
    /// In `[0, 1]` (checked for literals and bound values).
    pub threshold: Option<NumArg>,
    pub limit: Option<UIntArg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SearchTarget {
    Concept,
    Proposition,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SearchMode {
    Keyword,
    Semantic,
    Hybrid,
}

impl SearchMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Keyword => "keyword",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }

    pub fn from_name(s: &str) -> Option<SearchMode> {
        match s {
            "keyword" => Some(SearchMode::Keyword),
            "semantic" => Some(SearchMode::Semantic),
            "hybrid" => Some(SearchMode::Hybrid),
            _ => None,
        }
    }
}

/// `EXPORT ?target WHERE {…} [LIMIT n] [CURSOR "…"]` (§5.3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Export {
    pub target: String,
    pub where_clauses: Vec<WhereClause>,
    pub limit: Option<UIntArg>,
    pub cursor: Option<StrArg>,
}

// ---------------------------------------------------------------------------
// Placeholder inspection
// ---------------------------------------------------------------------------

impl Script {
    /// Names of all placeholders in the script, in first-appearance order
    /// (deduplicated). Empty after a successful [`crate::bind`].
    pub fn params(&self) -> Vec<String> {
        crate::bind::collect_params(self)
    }

    /// True when no placeholder remains.
    pub fn is_bound(&self) -> bool {
        self.params().is_empty()
    }
}
