//! Execution of DESCRIBE (RC10 §5.1, result shapes §6.2.2):
//!
//! * `PRIMER` → `{"identity": <$self summary>, "domain_map": [<domain summary
//!   with key_concepts and key_propositions>], "total_domains": n, "search":
//!   <capability>}`, the capability naming the SEARCH modes available and
//!   the embedding model (`embed::Availability::describe`);
//! * `DOMAINS` → `[<domain summary>]`, a summary being
//!   `{"name", "description"?, "scope_note"?, "member_count"}` (the Brain's
//!   Maintenance writes a Domain's `scope_note` to feed the primer's map);
//! * `CONCEPT TYPES` / `PROPOSITION TYPES` → type names (byte order), with
//!   LIMIT and `next_cursor` pagination;
//! * `CONCEPT TYPE "X"` / `PROPOSITION TYPE "x"` → the definition node
//!   `{"id", "type", "name", "attributes"?}`; an unknown name is `KIP_3002`
//!   (the conformance fixtures' code; the lookup is case-sensitive).

use crate::exec::Ctx;
use super::limits::page_size;
use crate::compile::bound::{lit, opt_lit};
use crate::schema::{CONCEPT_TYPE, PROPOSITION_TYPE};
use crate::engine::envelope::Outcome;
use crate::exec::{cursor, spi, Access, SqlParam};
use kip_lang::ast::{Command, Describe};
use kip_lang::{ErrorCode, KipError};
use serde_json::{json, Value};

/// Domains listed in the primer's map, and key concepts per domain.
const PRIMER_DOMAINS: i64 = 200;
/// Most domains DESCRIBE DOMAINS lists; a space with more is answered with
/// `KIP_4002` rather than a listing cut short without a word (the command
/// takes no LIMIT or CURSOR; the equivalent FIND pages).
const MAX_LISTED_DOMAINS: i64 = 10_000;
const KEY_CONCEPTS: i64 = 10;
/// Members of a domain (newest first) among which the primer picks the most
/// connected as key concepts: each costs two index probes (its links as
/// subject and as object), and 25 instead of 50 took the map of 14 domains
/// from 7.5 to 5.0 ms.
const RECENT_MEMBERS: i64 = 25;
/// A predicate's links counted to rank the primer's key propositions: a
/// bounded, index-only range of `propositions_predicate_idx`, so a predicate
/// with millions of links costs what one with a thousand does (the ones past
/// the bound rank among themselves by name).
const PREDICATE_USAGE_CAP: i64 = 1000;

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Describe(d) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "DESCRIBE executor called with another command"));
    };
    match d {
        Describe::Primer => primer(ctx),
        Describe::Domains => listed_domains(ctx),
        Describe::ConceptTypes { limit, cursor } => type_names(ctx, CONCEPT_TYPE, opt_lit(limit)?, opt_lit(cursor)?),
        Describe::PropositionTypes { limit, cursor } => {
            type_names(ctx, PROPOSITION_TYPE, opt_lit(limit)?, opt_lit(cursor)?)
        }
        Describe::ConceptType(name) => definition(ctx, CONCEPT_TYPE, "concept type", &lit(name)?),
        Describe::PropositionType(name) => definition(ctx, PROPOSITION_TYPE, "proposition type", &lit(name)?),
    }
}

/// The definition node of a type, without metadata.
fn definition(ctx: &Ctx, meta_type: &str, what: &str, name: &str) -> Result<Outcome, KipError> {
    let node = spi::query_scalar(
        "SELECT jsonb_build_object('id', 'C:' || c.id, 'type', c.type, 'name', c.name) \
             || CASE WHEN c.attributes = '{}'::jsonb THEN '{}'::jsonb ELSE jsonb_build_object('attributes', c.attributes) END \
         FROM kip.concepts c WHERE c.space = $1 AND c.type = $2 AND c.name = $3",
        &[ctx.space.param(), SqlParam::Text(meta_type.into()), SqlParam::Text(name.into())],
        Access::ReadOnly,
    )?;
    if node.is_null() {
        let listing = if meta_type == CONCEPT_TYPE { "CONCEPT TYPES" } else { "PROPOSITION TYPES" };
        return Err(KipError::new(ErrorCode::NotFound, format!("{what} {} is not defined", kip_lang::quoted(name)))
            .with_hint(format!("Type names are case-sensitive; run DESCRIBE {listing} to list the defined ones.")));
    }
    Ok(Outcome::new(node))
}

/// The cursor shape of a listing of `meta_type`'s names in `space` (what a
/// dry run checks a token against too).
pub(crate) fn type_listing_shape(space: &crate::space::Space, meta_type: &str) -> String {
    cursor::shape(space, &format!("DESCRIBE {meta_type}"))
}

/// Names of all `$ConceptType` / `$PropositionType` nodes, paginated in
/// byte order ("C", whatever the database's collation). A page continues
/// after the previous page's last name, which the partial index
/// `concepts_definition_names_idx` serves in that order: walking every page
/// costs time linear in the listing. (A token that carries only an offset
/// still resumes by offset.)
fn type_names(ctx: &Ctx, meta_type: &str, limit: Option<u64>, token: Option<String>) -> Result<Outcome, KipError> {
    let limit = page_size(limit);
    let shape = type_listing_shape(&ctx.space, meta_type);
    let resume = match token {
        Some(t) => cursor::decode_resume(&shape, &t)?,
        None => cursor::Resume::default(),
    };
    // The constant `type IN (…)` is the index's predicate, written as in
    // the index so that the planner can use it with a generic plan too.
    const DEFINITIONS: &str = "SELECT c.name FROM kip.concepts c \
         WHERE c.space = $1 AND c.type = $2 AND c.type IN ('$ConceptType', '$PropositionType')";
    let mut params = vec![ctx.space.param(), SqlParam::Text(meta_type.into()), SqlParam::Int(limit as i64 + 1)];
    let sql = match resume.after_name {
        Some(name) => {
            params.push(SqlParam::Text(name));
            format!("{DEFINITIONS} AND c.name COLLATE \"C\" > $4 ORDER BY c.name COLLATE \"C\" LIMIT $3")
        }
        None if resume.offset > 0 => {
            params.push(SqlParam::Int(resume.offset as i64));
            format!("{DEFINITIONS} ORDER BY c.name COLLATE \"C\" LIMIT $3 OFFSET $4")
        }
        // No OFFSET at all on the first page: a generic plan would guess a
        // large one, and sort every definition instead of reading the index.
        None => format!("{DEFINITIONS} ORDER BY c.name COLLATE \"C\" LIMIT $3"),
    };
    let mut names: Vec<String> = spi::query(&sql, &params, Access::ReadOnly)?
        .into_iter()
        .filter_map(|row| row.into_iter().next().and_then(|v| v.as_str().map(str::to_string)))
        .collect();
    // LIMIT 0 has no next page: a cursor for the same place would loop.
    let more = names.len() as u64 > limit && limit > 0;
    names.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_cursor = match names.last() {
        Some(last) if more => cursor::encode_after_name(&shape, resume.offset.saturating_add(limit), last)?,
        _ => None,
    };
    Ok(Outcome { result: json!(names).into(), next_cursor })
}

/// Domain summaries in name order; with `key_concepts`, each also lists its
/// concept types (all of them, first: an agent needs every type it may
/// write) and then its most connected other members, and its predicates
/// (all of them, the most used first) as `key_propositions` (RC10 §5.1.1:
/// "Key Propositions"), for the primer's map.
fn domains(ctx: &Ctx, key_concepts: Option<i64>) -> Result<Value, KipError> {
    // Key concepts: every concept type of the domain, then the most
    // connected of its other members among the newest `RECENT_MEMBERS`
    // (highest ids, read backwards from the reverse-traversal index), so the
    // primer's cost does not grow with the size of a domain. A member's
    // degree is its links as subject plus as object, a self-link once: two
    // index-only probes. Key propositions: every predicate of the domain,
    // ranked by its links (counted up to `PREDICATE_USAGE_CAP`), then by
    // name. The space's definitions and their domains are looked up once,
    // from the (few) `$ConceptType` / `$PropositionType` nodes.
    let degree = |id: &str| {
        format!(
            "((SELECT count(*) FROM kip.propositions q WHERE q.space = $1 AND q.subject = {id}) \
             + (SELECT count(*) FILTER (WHERE q.subject <> {id}) FROM kip.propositions q WHERE q.space = $1 AND q.object = {id}))"
        )
    };
    let (types_cte, keys) = match key_concepts {
        Some(_) => (
            // From the types to their domain links, in that order whatever
            // the statistics say (the fenced subqueries): the generic plan
            // read every `belongs_to_domain` link of the space and probed
            // its subject instead once another space of the table held
            // many types (6,000 probes, 11 ms, for the primer's 12 types).
            "WITH definitions AS MATERIALIZED ( \
               SELECT t.id, t.name, t.type = '$PropositionType' AS is_predicate, m.object AS domain \
               FROM (SELECT c.id, c.name, c.type FROM kip.concepts c WHERE c.space = $1 AND c.type IN ('$ConceptType', '$PropositionType') OFFSET 0) t \
               CROSS JOIN LATERAL (SELECT l.object FROM kip.propositions l \
                                   WHERE l.space = $1 AND l.subject = t.id AND l.predicate = 'belongs_to_domain' OFFSET 0) m) ",
            format!(
                ", 'key_concepts', (SELECT coalesce(jsonb_agg(k.name ORDER BY k.is_type DESC, k.degree DESC, k.name COLLATE \"C\"), '[]'::jsonb) FROM ( \
                   (SELECT t.name, true AS is_type, {type_degree} AS degree FROM definitions t WHERE t.domain = d.id AND NOT t.is_predicate) \
                   UNION ALL \
                   (SELECT mc.name, false, {member_degree} AS degree \
                    FROM (SELECT m.subject FROM kip.propositions m \
                          WHERE m.space = $1 AND m.object = d.id AND m.predicate = 'belongs_to_domain' \
                          ORDER BY m.subject DESC LIMIT $4) recent \
                    JOIN kip.concepts mc ON mc.id = recent.subject AND mc.type NOT IN ('$ConceptType', '$PropositionType') \
                    ORDER BY degree DESC, mc.name COLLATE \"C\" LIMIT $3)) k), \
                 'key_propositions', (SELECT coalesce(jsonb_agg(p.name ORDER BY p.uses DESC, p.name COLLATE \"C\"), '[]'::jsonb) FROM ( \
                   SELECT t.name, (SELECT count(*) FROM (SELECT 1 FROM kip.propositions u \
                                                         WHERE u.space = $1 AND u.predicate = t.name LIMIT $5) used) AS uses \
                   FROM definitions t WHERE t.domain = d.id AND t.is_predicate) p)",
                type_degree = degree("t.id"),
                member_degree = degree("mc.id"),
            ),
        ),
        None => ("", String::new()),
    };
    let sql = format!(
        "{types_cte}SELECT coalesce(jsonb_agg(x.summary ORDER BY x.name COLLATE \"C\"), '[]'::jsonb) FROM \
         (SELECT d.name, jsonb_strip_nulls(jsonb_build_object('name', d.name, 'description', d.attributes -> 'description', \
            'scope_note', d.attributes -> 'scope_note', \
            'member_count', (SELECT count(*) FROM kip.propositions m WHERE m.space = $1 AND m.predicate = 'belongs_to_domain' AND m.object = d.id){keys})) AS summary \
          FROM kip.concepts d WHERE d.space = $1 AND d.type = 'Domain' ORDER BY d.name COLLATE \"C\" LIMIT $2) x"
    );
    // The generic plan, kept per backend: planning this statement cost more
    // than running it, and its good plan (index probes from the space's
    // domains) does not depend on the values.
    spi::lookup_scalar(
        &sql,
        &[
            ctx.space.param(),
            // The primer's map shows PRIMER_DOMAINS domains; DESCRIBE DOMAINS
            // lists up to MAX_LISTED_DOMAINS, and reads one more to tell.
            SqlParam::Int(if key_concepts.is_some() { PRIMER_DOMAINS } else { MAX_LISTED_DOMAINS + 1 }),
            SqlParam::Int(key_concepts.unwrap_or(0)),
            SqlParam::Int(RECENT_MEMBERS),
            SqlParam::Int(PREDICATE_USAGE_CAP),
        ],
        Access::ReadOnly,
    )
    .map(|v| if v.is_null() { json!([]) } else { v })
}

/// DESCRIBE DOMAINS: every domain's summary, or `KIP_4002` past
/// `MAX_LISTED_DOMAINS`.
fn listed_domains(ctx: &Ctx) -> Result<Outcome, KipError> {
    let listed = domains(ctx, None)?;
    if listed.as_array().is_some_and(|a| a.len() as i64 > MAX_LISTED_DOMAINS) {
        return Err(KipError::new(
            ErrorCode::ResourceExhausted,
            format!("the space holds more than {MAX_LISTED_DOMAINS} domains, more than DESCRIBE DOMAINS lists"),
        )
        .with_hint(r#"Page through them with FIND(?d.name) WHERE { ?d {type: "Domain"} } LIMIT 1000 and its next_cursor."#));
    }
    Ok(Outcome::new(listed))
}

fn primer(ctx: &Ctx) -> Result<Outcome, KipError> {
    let identity = spi::lookup_scalar(
        "SELECT jsonb_build_object('id', 'C:' || c.id, 'type', c.type, 'name', c.name) \
             || CASE WHEN c.attributes = '{}'::jsonb THEN '{}'::jsonb ELSE jsonb_build_object('attributes', c.attributes) END \
         FROM kip.concepts c WHERE c.space = $1 AND c.type = 'Person' AND c.name = '$self'",
        &[ctx.space.param()],
        Access::ReadOnly,
    )?;
    let total = spi::lookup_scalar(
        "SELECT count(*) FROM kip.concepts WHERE space = $1 AND type = 'Domain'",
        &[ctx.space.param()],
        Access::ReadOnly,
    )?;
    let mut map = domains(ctx, Some(KEY_CONCEPTS))?;
    if let Value::Array(a) = &mut map {
        a.truncate(PRIMER_DOMAINS as usize);
    }
    // What SEARCH can do here, so an agent knows whether to search by meaning.
    let search = crate::embed::availability(false).describe();
    Ok(Outcome::new(json!({ "identity": identity, "domain_map": map, "total_domains": total, "search": search })))
}
