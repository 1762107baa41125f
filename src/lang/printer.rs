//! Canonical KIP printer.
//!
//! Output is deterministic, indented with two spaces, and re-parses to the
//! identical AST (`parse(print(x)) == x`, checked by the round-trip tests).
//! It is suitable for logs, for normalizing commands, and for generating
//! capsules (e.g. EXPORT). Conventions: keywords uppercase; object keys
//! unquoted when they are identifiers; `ORDER BY` keys always carry their
//! direction; KML statements of one script are separated by a blank line.

use crate::ast::*;
use crate::lexical::{is_identifier, quote};
use std::fmt::Write as _;

pub fn print_script(script: &Script) -> String {
    let mut out = String::new();
    for (i, c) in script.commands.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        print_command(&mut out, c);
    }
    out
}

/// Canonical text of one command.
pub fn print_command(out: &mut String, c: &Command) {
    match c {
        Command::Find(q) => find(out, q),
        Command::Upsert(u) => upsert(out, u),
        Command::Update(u) => update(out, u),
        Command::Merge(m) => {
            let _ = writeln!(out, "MERGE CONCEPT ?{} INTO ?{}", m.source, m.target);
            where_block(out, &m.where_clauses);
        }
        Command::Delete(d) => delete(out, d),
        Command::Describe(d) => describe(out, d),
        Command::Search(s) => search(out, s),
        Command::Export(e) => {
            let _ = writeln!(out, "EXPORT ?{}", e.target);
            where_block(out, &e.where_clauses);
            page(out, &e.limit, &e.cursor);
        }
    }
}

// ----------------------------------------------------------------- values --

/// A JSON value in KIP object-literal style (`{key: "v", "odd key": 1}`).
pub fn json(out: &mut String, v: &Json) {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Json::String(s) => out.push_str(&quote(s)),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                json(out, item);
            }
            out.push(']');
        }
        Json::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push_str("{ ");
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                key(out, k);
                out.push_str(": ");
                json(out, v);
            }
            out.push_str(" }");
        }
    }
}

fn key(out: &mut String, k: &str) {
    if is_identifier(k) {
        out.push_str(k);
    } else {
        out.push_str(&quote(k));
    }
}

fn value(out: &mut String, v: &ValueOrParam) {
    match v {
        ValueOrParam::Value(j) => json(out, j),
        ValueOrParam::Param(n) => {
            let _ = write!(out, ":{n}");
        }
        ValueOrParam::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                value(out, item);
            }
            out.push(']');
        }
        ValueOrParam::Object(fields) => {
            out.push_str("{ ");
            for (i, f) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                key(out, &f.key);
                out.push_str(": ");
                value(out, &f.value);
            }
            out.push_str(" }");
        }
    }
}

/// Long objects (schemas in capsules) are spread over several lines;
/// everything else is printed inline.
fn value_block(out: &mut String, v: &ValueOrParam, level: usize) {
    const INLINE_MAX: usize = 80;
    let mut inline = String::new();
    value(&mut inline, v);
    let entries: Vec<(&str, ValueOrParam)> = match v {
        ValueOrParam::Value(Json::Object(m)) if inline.len() > INLINE_MAX => m
            .iter()
            .map(|(k, v)| (k.as_str(), ValueOrParam::Value(v.clone())))
            .collect(),
        ValueOrParam::Object(fs) if inline.len() > INLINE_MAX => fs
            .iter()
            .map(|f| (f.key.as_str(), f.value.clone()))
            .collect(),
        _ => {
            out.push_str(&inline);
            return;
        }
    };
    out.push_str("{\n");
    let n = entries.len();
    for (i, (k, v)) in entries.into_iter().enumerate() {
        indent(out, level + 1);
        key(out, k);
        out.push_str(": ");
        value_block(out, &v, level + 1);
        if i + 1 < n {
            out.push(',');
        }
        out.push('\n');
    }
    indent(out, level);
    out.push('}');
}

fn str_arg(out: &mut String, s: &StrArg) {
    match s {
        Bindable::Lit(s) => out.push_str(&quote(s)),
        Bindable::Param(n) => {
            let _ = write!(out, ":{n}");
        }
    }
}

fn uint_arg(out: &mut String, v: &UIntArg) {
    let _ = match v {
        Bindable::Lit(n) => write!(out, "{n}"),
        Bindable::Param(n) => write!(out, ":{n}"),
    };
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// `{\n key: value,\n …\n}` at `level` (closing brace at `level`).
fn fields(out: &mut String, fields: &[Field], level: usize) {
    if fields.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push_str("{\n");
    for (i, f) in fields.iter().enumerate() {
        indent(out, level + 1);
        key(out, &f.key);
        out.push_str(": ");
        value_block(out, &f.value, level + 1);
        if i + 1 < fields.len() {
            out.push(',');
        }
        out.push('\n');
    }
    indent(out, level);
    out.push('}');
}

// -------------------------------------------------------------- patterns --

fn dot_path(out: &mut String, p: &DotPath) {
    let _ = write!(out, "?{}", p.var);
    match &p.field {
        PathField::Whole => {}
        PathField::Id => out.push_str(".id"),
        PathField::Type => out.push_str(".type"),
        PathField::Name => out.push_str(".name"),
        PathField::Subject => out.push_str(".subject"),
        PathField::Predicate => out.push_str(".predicate"),
        PathField::Object => out.push_str(".object"),
        PathField::Attributes(k) => {
            out.push_str(".attributes");
            if let Some(k) = k {
                let _ = write!(out, ".{k}");
            }
        }
        PathField::Metadata(k) => {
            out.push_str(".metadata");
            if let Some(k) = k {
                let _ = write!(out, ".{k}");
            }
        }
    }
}

fn selector(out: &mut String, s: &ConceptSelector) {
    out.push('{');
    match s {
        ConceptSelector::Id(id) => {
            out.push_str("id: ");
            str_arg(out, id);
        }
        ConceptSelector::TypeName { type_name, name } => {
            out.push_str("type: ");
            str_arg(out, type_name);
            out.push_str(", name: ");
            str_arg(out, name);
        }
        ConceptSelector::Type(t) => {
            out.push_str("type: ");
            str_arg(out, t);
        }
        ConceptSelector::Name(n) => {
            out.push_str("name: ");
            str_arg(out, n);
        }
    }
    out.push('}');
}

fn prop_pattern(out: &mut String, p: &PropPattern) {
    out.push('(');
    match p {
        PropPattern::Id(id) => {
            out.push_str("id: ");
            str_arg(out, id);
        }
        PropPattern::Triple(t) => {
            endpoint(out, &t.subject);
            out.push_str(", ");
            predicate(out, &t.predicate);
            out.push_str(", ");
            endpoint(out, &t.object);
        }
    }
    out.push(')');
}

fn endpoint(out: &mut String, e: &Endpoint) {
    match e {
        Endpoint::Var(v) => {
            let _ = write!(out, "?{v}");
        }
        Endpoint::Concept(s) => selector(out, s),
        Endpoint::Proposition(p) => prop_pattern(out, p),
        Endpoint::Id(id) => str_arg(out, id),
    }
}

fn predicate(out: &mut String, p: &Predicate) {
    match p {
        Predicate::Literal(s) => str_arg(out, s),
        Predicate::Alternatives(alts) => alternatives(out, alts),
        // A walk over alternatives prints in the parenthesized form, which
        // shows at a glance that the range quantifies the whole group.
        Predicate::Hops { predicates, range } => {
            match predicates.as_slice() {
                [one] => str_arg(out, one),
                many => {
                    out.push('(');
                    alternatives(out, many);
                    out.push(')');
                }
            }
            let _ = match range.max {
                Some(max) if max == range.min => write!(out, "{{{}}}", range.min),
                Some(max) => write!(out, "{{{},{}}}", range.min, max),
                None => write!(out, "{{{},}}", range.min),
            };
        }
        Predicate::Var(v) => {
            let _ = write!(out, "?{v}");
        }
    }
}

fn alternatives(out: &mut String, alts: &[StrArg]) {
    for (i, a) in alts.iter().enumerate() {
        if i > 0 {
            out.push_str(" | ");
        }
        str_arg(out, a);
    }
}

// --------------------------------------------------------------- FILTER --

/// Binding strength, used to decide where parentheses are needed.
fn prec(e: &Expr) -> u8 {
    match e {
        Expr::Or(_) => 1,
        Expr::And(_) => 2,
        Expr::Compare { .. } => 3,
        Expr::Not(_) => 4,
        Expr::Value(_) | Expr::Path(_) | Expr::Call { .. } => 5,
    }
}

/// Print `e`, parenthesized if it binds weaker than `min`. Nested `||` in
/// `||` (and `&&` in `&&`) are parenthesized so the n-ary grouping written
/// by the author survives the round trip.
fn expr(out: &mut String, e: &Expr, min: u8) {
    let paren = prec(e) < min;
    if paren {
        out.push('(');
    }
    match e {
        Expr::Value(v) => value(out, v),
        Expr::Path(p) => dot_path(out, p),
        Expr::Not(x) => {
            out.push('!');
            expr(out, x, 4);
        }
        Expr::And(xs) | Expr::Or(xs) => {
            let (sep, child_min) = if matches!(e, Expr::And(_)) {
                (" && ", 3)
            } else {
                (" || ", 2)
            };
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                expr(out, x, child_min);
            }
        }
        Expr::Compare { op, left, right } => {
            expr(out, left, 4);
            let _ = write!(out, " {} ", op.symbol());
            expr(out, right, 4);
        }
        Expr::Call { func, args } => {
            out.push_str(func.keyword());
            out.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                expr(out, a, 0);
            }
            out.push(')');
        }
    }
    if paren {
        out.push(')');
    }
}

// -------------------------------------------------------------------- KQL --

/// One FIND expression or ORDER BY key as KIP text (for error messages).
pub fn projection_text(p: &Projection) -> String {
    let mut out = String::new();
    projection(&mut out, p);
    out
}

fn projection(out: &mut String, p: &Projection) {
    match p {
        Projection::Path(d) => dot_path(out, d),
        Projection::Aggregate(a) => {
            out.push_str(a.func.keyword());
            out.push('(');
            if a.distinct {
                out.push_str("DISTINCT ");
            }
            dot_path(out, &a.arg);
            out.push(')');
        }
    }
}

fn find(out: &mut String, q: &FindQuery) {
    out.push_str("FIND(");
    for (i, p) in q.projections.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        projection(out, p);
    }
    out.push_str(")\n");
    where_block(out, &q.where_clauses);
    if !q.order_by.is_empty() {
        out.push_str("\nORDER BY ");
        for (i, k) in q.order_by.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            projection(out, &k.expr);
            out.push_str(match k.direction {
                SortDirection::Asc => " ASC",
                SortDirection::Desc => " DESC",
            });
        }
    }
    page(out, &q.limit, &q.cursor);
}

fn page(out: &mut String, limit: &Option<UIntArg>, cursor: &Option<StrArg>) {
    if let Some(l) = limit {
        out.push_str("\nLIMIT ");
        uint_arg(out, l);
    }
    if let Some(c) = cursor {
        out.push_str("\nCURSOR ");
        str_arg(out, c);
    }
}

/// `WHERE {\n … \n}` (no trailing newline).
fn where_block(out: &mut String, clauses: &[WhereClause]) {
    out.push_str("WHERE ");
    clause_block(out, clauses, 0);
}

/// `{ clauses }` whose closing brace is at `level`.
fn clause_block(out: &mut String, clauses: &[WhereClause], level: usize) {
    if clauses.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push_str("{\n");
    for c in clauses {
        indent(out, level + 1);
        clause(out, c, level + 1);
        out.push('\n');
    }
    indent(out, level);
    out.push('}');
}

fn clause(out: &mut String, c: &WhereClause, level: usize) {
    match c {
        WhereClause::Concept { var, selector: s } => {
            let _ = write!(out, "?{var} ");
            selector(out, s);
        }
        WhereClause::Proposition { var, pattern } => {
            if let Some(v) = var {
                let _ = write!(out, "?{v} ");
            }
            prop_pattern(out, pattern);
        }
        WhereClause::Filter(e) => {
            out.push_str("FILTER(");
            expr(out, e, 0);
            out.push(')');
        }
        WhereClause::Optional(b) => {
            out.push_str("OPTIONAL ");
            clause_block(out, b, level);
        }
        WhereClause::Not(b) => {
            out.push_str("NOT ");
            clause_block(out, b, level);
        }
        WhereClause::Union(b) => {
            out.push_str("UNION ");
            clause_block(out, b, level);
        }
    }
}

// -------------------------------------------------------------------- KML --

fn upsert(out: &mut String, u: &Upsert) {
    out.push_str("UPSERT {\n");
    for item in &u.items {
        match item {
            UpsertItem::Concept(b) => {
                let _ = writeln!(out, "  CONCEPT ?{} {{", b.handle);
                out.push_str("    ");
                selector(out, &b.identity);
                out.push('\n');
                expect_version(out, &b.expect_version);
                set_attributes(out, &b.set_attributes);
                if let Some(props) = &b.set_propositions {
                    out.push_str("    SET PROPOSITIONS {");
                    if props.is_empty() {
                        out.push_str("}\n");
                    } else {
                        out.push('\n');
                        for sp in props {
                            out.push_str("      (");
                            str_arg(out, &sp.predicate);
                            out.push_str(", ");
                            endpoint(out, &sp.target);
                            out.push(')');
                            if let Some(m) = &sp.metadata {
                                out.push_str(" WITH METADATA ");
                                fields(out, m, 3);
                            }
                            out.push('\n');
                        }
                        out.push_str("    }\n");
                    }
                }
                out.push_str("  }\n");
                block_metadata(out, &b.metadata);
            }
            UpsertItem::Proposition(b) => {
                out.push_str("  PROPOSITION ");
                if let Some(h) = &b.handle {
                    let _ = write!(out, "?{h} ");
                }
                out.push_str("{\n    ");
                prop_pattern(out, &b.identity);
                out.push('\n');
                expect_version(out, &b.expect_version);
                set_attributes(out, &b.set_attributes);
                out.push_str("  }\n");
                block_metadata(out, &b.metadata);
            }
        }
    }
    out.push('}');
    if let Some(m) = &u.metadata {
        out.push_str("\nWITH METADATA ");
        fields(out, m, 0);
    }
}

fn expect_version(out: &mut String, v: &Option<UIntArg>) {
    if let Some(v) = v {
        out.push_str("    EXPECT VERSION ");
        uint_arg(out, v);
        out.push('\n');
    }
}

fn set_attributes(out: &mut String, attrs: &Option<Fields>) {
    if let Some(a) = attrs {
        out.push_str("    SET ATTRIBUTES ");
        fields(out, a, 2);
        out.push('\n');
    }
}

fn block_metadata(out: &mut String, m: &Option<Fields>) {
    if let Some(m) = m {
        out.push_str("  WITH METADATA ");
        fields(out, m, 1);
        out.push('\n');
    }
}

fn update(out: &mut String, u: &Update) {
    let _ = writeln!(out, "UPDATE ?{}", u.target);
    for (kw, set) in [
        ("ATTRIBUTES", &u.set_attributes),
        ("METADATA", &u.set_metadata),
    ] {
        if let Some(set) = set {
            let _ = write!(out, "SET {kw} ");
            if set.is_empty() {
                out.push_str("{}\n");
                continue;
            }
            out.push_str("{\n");
            for (i, f) in set.iter().enumerate() {
                out.push_str("  ");
                key(out, &f.key);
                out.push_str(": ");
                update_expr(out, &f.value);
                if i + 1 < set.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            out.push_str("}\n");
        }
    }
    where_block(out, &u.where_clauses);
    if let Some(l) = &u.limit {
        out.push_str("\nLIMIT ");
        uint_arg(out, l);
    }
}

fn update_expr(out: &mut String, e: &UpdateExpr) {
    match e {
        UpdateExpr::Value(v) => value(out, v),
        UpdateExpr::Path(p) => dot_path(out, p),
        UpdateExpr::Call { func, args } => {
            out.push_str(func.keyword());
            out.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                update_expr(out, a);
            }
            out.push(')');
        }
    }
}

fn delete(out: &mut String, d: &Delete) {
    let key_list = |out: &mut String, keys: &[StrArg]| {
        out.push('{');
        for (i, k) in keys.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            str_arg(out, k);
        }
        out.push('}');
    };
    match d {
        Delete::Attributes {
            keys,
            target,
            where_clauses,
        }
        | Delete::Metadata {
            keys,
            target,
            where_clauses,
        } => {
            out.push_str(if matches!(d, Delete::Attributes { .. }) {
                "DELETE ATTRIBUTES "
            } else {
                "DELETE METADATA "
            });
            key_list(out, keys);
            let _ = writeln!(out, " FROM ?{target}");
            where_block(out, where_clauses);
        }
        Delete::Propositions {
            target,
            where_clauses,
        } => {
            let _ = writeln!(out, "DELETE PROPOSITIONS ?{target}");
            where_block(out, where_clauses);
        }
        Delete::Concept {
            target,
            where_clauses,
        } => {
            let _ = writeln!(out, "DELETE CONCEPT ?{target} DETACH");
            where_block(out, where_clauses);
        }
    }
}

// ------------------------------------------------------------------- META --

fn describe(out: &mut String, d: &Describe) {
    match d {
        Describe::Primer => out.push_str("DESCRIBE PRIMER"),
        Describe::Domains => out.push_str("DESCRIBE DOMAINS"),
        Describe::ConceptTypes { limit, cursor } => {
            out.push_str("DESCRIBE CONCEPT TYPES");
            inline_page(out, limit, cursor);
        }
        Describe::PropositionTypes { limit, cursor } => {
            out.push_str("DESCRIBE PROPOSITION TYPES");
            inline_page(out, limit, cursor);
        }
        Describe::ConceptType(t) => {
            out.push_str("DESCRIBE CONCEPT TYPE ");
            str_arg(out, t);
        }
        Describe::PropositionType(p) => {
            out.push_str("DESCRIBE PROPOSITION TYPE ");
            str_arg(out, p);
        }
    }
}

fn inline_page(out: &mut String, limit: &Option<UIntArg>, cursor: &Option<StrArg>) {
    if let Some(l) = limit {
        out.push_str(" LIMIT ");
        uint_arg(out, l);
    }
    if let Some(c) = cursor {
        out.push_str(" CURSOR ");
        str_arg(out, c);
    }
}

fn search(out: &mut String, s: &Search) {
    out.push_str(match s.target {
        SearchTarget::Concept => "SEARCH CONCEPT ",
        SearchTarget::Proposition => "SEARCH PROPOSITION ",
    });
    str_arg(out, &s.term);
    if let Some(t) = &s.with_type {
        out.push_str(" WITH TYPE ");
        str_arg(out, t);
    }
    if let Some(m) = &s.mode {
        out.push_str(" MODE ");
        match m {
            Bindable::Lit(m) => out.push_str(&quote(m.as_str())),
            Bindable::Param(n) => {
                let _ = write!(out, ":{n}");
            }
        }
    }
    if let Some(t) = &s.threshold {
        out.push_str(" THRESHOLD ");
        match t {
            Bindable::Lit(x) => match serde_json::Number::from_f64(*x) {
                Some(n) => {
                    let _ = write!(out, "{n}");
                }
                None => out.push('0'),
            },
            Bindable::Param(n) => {
                let _ = write!(out, ":{n}");
            }
        }
    }
    if let Some(l) = &s.limit {
        out.push_str(" LIMIT ");
        uint_arg(out, l);
    }
}
