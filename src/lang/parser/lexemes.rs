//! Lexical pieces: identifiers (KIP_1002), strings, numbers, JSON values,
//! object fields and dot paths.

use super::*;
use crate::lexical;

// ---------------------------------------------------------------- helpers --

pub(super) fn at(pair: &Pair<Rule>, code: ErrorCode, msg: impl std::fmt::Display) -> KipError {
    let (line, col) = pair.line_col();
    KipError::new(code, format!("line {line}, column {col}: {msg}"))
}

pub(super) fn syn(pair: &Pair<Rule>, msg: impl std::fmt::Display) -> KipError {
    at(pair, ErrorCode::InvalidSyntax, msg)
}

/// Iterator over inner pairs that skips keyword tokens (they carry no data).
pub(super) fn inner(pair: Pair<Rule>) -> impl Iterator<Item = Pair<Rule>> {
    pair.into_inner().filter(|p| !is_keyword(p.as_rule()))
}

pub(super) fn is_keyword(rule: Rule) -> bool {
    use Rule::*;
    matches!(
        rule,
        kw_find
            | kw_where
            | kw_filter
            | kw_optional
            | kw_not
            | kw_union
            | kw_order
            | kw_by
            | kw_limit
            | kw_cursor
            | kw_upsert
            | kw_set
            | kw_with
            | kw_expect
            | kw_version
            | kw_update
            | kw_merge
            | kw_into
            | kw_delete
            | kw_from
            | kw_describe
            | kw_search
            | kw_export
            | kw_mode
            | kw_threshold
    )
}

pub(super) fn one(pair: Pair<Rule>) -> Pair<Rule> {
    pair.into_inner()
        .next()
        .expect("grammar guarantees an inner pair")
}

pub(super) fn word_ident(pair: &Pair<Rule>, what: &str) -> Result<String> {
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
pub(super) fn var(pair: Pair<Rule>) -> Result<String> {
    debug_assert_eq!(pair.as_rule(), Rule::var);
    let w = one(pair);
    word_ident(&w, "variable name")
}

/// `:name` -> `name`.
pub(super) fn param(pair: Pair<Rule>) -> Result<String> {
    let w = one(pair);
    word_ident(&w, "parameter name")
}

pub(super) fn string(pair: Pair<Rule>) -> Result<String> {
    let body = one(pair);
    lexical::unescape(body.as_str()).map_err(|(off, msg)| {
        let pos = body.as_span().start() + off;
        let (line, col) = crate::depth::line_col(body.get_input(), pos);
        KipError::syntax(format!("line {line}, column {col}: {msg}"))
            .with_hint("Strings follow JSON: escape \\\" and \\\\, and write other escapes as \\n, \\t or \\uXXXX.")
    })
}

pub(super) fn number(pair: &Pair<Rule>) -> Result<serde_json::Number> {
    lexical::parse_number(pair.as_str())
        .map_err(|m| syn(pair, m).with_hint(lexical::NUMBER_RANGE_HINT))
}

pub(super) fn str_arg(pair: Pair<Rule>) -> Result<StrArg> {
    let p = if pair.as_rule() == Rule::str_arg {
        one(pair)
    } else {
        pair
    };
    match p.as_rule() {
        Rule::string => Ok(Bindable::Lit(string(p)?)),
        Rule::param => Ok(Bindable::Param(param(p)?)),
        _ => unreachable!("str_arg is string | param"),
    }
}

/// `param | number` in a non-negative integer position.
pub(super) fn uint_arg(pair: Pair<Rule>, what: &str) -> Result<UIntArg> {
    match pair.as_rule() {
        Rule::param => Ok(Bindable::Param(param(pair)?)),
        Rule::number => match number(&pair)?.as_u64() {
            Some(n) => Ok(Bindable::Lit(n)),
            None => Err(syn(
                &pair,
                format!(
                    "{what} must be a non-negative integer, got {}",
                    pair.as_str()
                ),
            )
            .with_hint(format!(
                "Write a whole number from 0 to {} (e.g. {what} 10), or a :parameter.",
                u64::MAX
            ))),
        },
        _ => unreachable!("uint position is param | number"),
    }
}

pub(super) fn key(pair: Pair<Rule>) -> Result<String> {
    let p = one(pair);
    match p.as_rule() {
        Rule::string => string(p),
        Rule::word => word_ident(&p, "key"),
        _ => unreachable!("key is string | word"),
    }
}

// ----------------------------------------------------------------- values --

pub(super) fn value(pair: Pair<Rule>) -> Result<ValueOrParam> {
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
pub(super) fn field(pair: Pair<Rule>) -> Result<Field> {
    let mut it = pair.into_inner();
    let k = key(it.next().expect("key"))?;
    let v = value(it.next().expect("value"))?;
    Ok(Field { key: k, value: v })
}

/// `{ k: v, … }` of SET ATTRIBUTES / WITH METADATA.
pub(super) fn fields(pair: Pair<Rule>) -> Result<Fields> {
    pair.into_inner().map(field).collect()
}

pub(super) fn with_metadata(pair: Pair<Rule>) -> Result<Fields> {
    fields(
        pair.into_inner()
            .find(|p| p.as_rule() == Rule::fields)
            .expect("fields"),
    )
}

// --------------------------------------------------------------- dot path --

pub(super) fn dot_path(pair: Pair<Rule>) -> Result<DotPath> {
    let whole = pair.clone();
    let mut it = pair.into_inner();
    let v = var(it.next().expect("var"))?;
    let segs: Vec<Pair<Rule>> = it.collect();
    let Some(first) = segs.first() else {
        return Ok(DotPath::var(v));
    };
    let simple = |field: PathField| -> Result<DotPath> {
        if segs.len() > 1 {
            return Err(syn(
                &segs[1],
                format!(
                    "'{}' has no sub-fields in ?{v}.{}",
                    first.as_str(),
                    first.as_str()
                ),
            )
            .with_hint("Only attributes and metadata have keys: use ?x.attributes.<key> or ?x.metadata.<key>."));
        }
        Ok(DotPath {
            var: v.clone(),
            field,
        })
    };
    let keyed = |make: fn(Option<String>) -> PathField| -> Result<DotPath> {
        match segs.len() {
            1 => Ok(DotPath {
                var: v.clone(),
                field: make(None),
            }),
            2 => Ok(DotPath {
                var: v.clone(),
                field: make(Some(word_ident(&segs[1], "key")?)),
            }),
            _ => Err(syn(
                &segs[2],
                format!(
                    "nested keys are not supported in dot paths: use ?{v}.{}.{}",
                    first.as_str(),
                    segs[1].as_str()
                ),
            )
            .with_hint("Dot paths reach one key below attributes or metadata; project the whole value and read inside it.")),
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
