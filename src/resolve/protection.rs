//! Protected system structure (RC10 §4.2.4, Appendix 4 `KIP_3004`): the one
//! place that decides what KML and the maintenance cycle may not change.
//!
//! Three circles, from the strictest:
//!
//! * **Immutable core** — the meta-type definitions (`$ConceptType`,
//!   `$PropositionType`), the `belongs_to_domain` predicate definition, the
//!   `CoreSchema` domain, and the `belongs_to_domain` links anchoring the
//!   protected structure in `CoreSchema`. No write path may change them:
//!   UPSERT (attributes *or* metadata), UPDATE, DELETE and MERGE are all
//!   `KIP_3004`. Re-asserting what is already stored changes nothing and is
//!   accepted, so the Genesis capsule stays re-runnable; creating them on an
//!   empty space is the bootstrap itself.
//! * **Structure** — the immutable core plus the `Domain` type and the other
//!   core domains. They cannot be deleted, merged, bulk-`UPDATE`d or have
//!   keys deleted; `UPSERT` may refine the ones outside the core (the spec
//!   lets the schema evolve, §2.9.1).
//! * **System actors** — `$self` and `$system`. Their identity cannot be
//!   deleted or merged away, and their `core_directives` cannot change once
//!   set; every other attribute evolves freely.
//!
//! The maintenance cycle protects a wider set from *automatic* changes
//! ([`exempt_from_maintenance_sql`]): every schema node, every domain, the
//! system actors and everything filed under `CoreSchema`.
//!
//! The extension's own bootstrap loads the capsules with
//! `Origin::Bootstrap` and may refine the core (a newer capsule version
//! extends `key_instances`); agents and maintenance cannot.

use crate::schema::{CONCEPT_TYPE, PROPOSITION_TYPE};
use crate::exec::{spi, Access, SqlParam};
use crate::space::Space;
use kip_lang::{ErrorCode, KipError};
use serde_json::{Map, Value};

pub const CORE_DOMAINS: [&str; 4] = ["CoreSchema", "Unsorted", "Archived", "System"];
pub const SYSTEM_ACTORS: [&str; 2] = ["$self", "$system"];
/// The one attribute of the system actors that is immutable.
pub const CORE_DIRECTIVES: &str = "core_directives";
/// The predicate that files a concept under a domain.
pub const BELONGS_TO_DOMAIN: &str = "belongs_to_domain";
/// The domain holding the schema's own definitions.
pub const CORE_SCHEMA: &str = "CoreSchema";
/// The type of domain nodes.
pub const DOMAIN: &str = "Domain";

/// The immutable core nodes, as (type, name).
const IMMUTABLE: [(&str, &str); 4] = [
    (CONCEPT_TYPE, CONCEPT_TYPE),
    (CONCEPT_TYPE, PROPOSITION_TYPE),
    (PROPOSITION_TYPE, BELONGS_TO_DOMAIN),
    (DOMAIN, CORE_SCHEMA),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    None,
    Structure,
    SystemActor,
}

pub fn classify(type_name: &str, name: &str) -> Protection {
    let structural = match type_name {
        CONCEPT_TYPE => matches!(name, CONCEPT_TYPE | PROPOSITION_TYPE | DOMAIN),
        PROPOSITION_TYPE => name == BELONGS_TO_DOMAIN,
        DOMAIN => CORE_DOMAINS.contains(&name),
        _ => false,
    };
    if structural {
        Protection::Structure
    } else if type_name == "Person" && SYSTEM_ACTORS.contains(&name) {
        Protection::SystemActor
    } else {
        Protection::None
    }
}

pub fn is_protected_node(type_name: &str, name: &str) -> bool {
    classify(type_name, name) != Protection::None
}

/// Whether `{type, name}` belongs to the immutable core.
pub fn is_immutable(type_name: &str, name: &str) -> bool {
    IMMUTABLE.iter().any(|(t, n)| *t == type_name && *n == name)
}

/// `{type: "T", name: "n"}` for messages.
pub fn describe(type_name: &str, name: &str) -> String {
    format!("{{type: {type_name:?}, name: {name:?}}}")
}

const HINT: &str = "Meta-types, the Domain type, belongs_to_domain, the core domains, the links anchoring them in CoreSchema and the identities of $self/$system are protected. Narrow the WHERE pattern to exclude them; ordinary $self attributes can be changed with UPSERT.";

/// KIP_3004 for an operation on a protected node.
pub fn refused(action: &str, type_name: &str, name: &str) -> KipError {
    let what = match classify(type_name, name) {
        Protection::SystemActor => "the identity of a system actor",
        _ => "protected system structure",
    };
    KipError::new(ErrorCode::ImmutableTarget, format!("cannot {action} {}: it is {what}", describe(type_name, name)))
        .with_hint(HINT)
}

/// KIP_3004 for a change of `core_directives` on `$self` / `$system`.
/// A type or predicate definition still in use cannot be deleted or
/// merged away (`KIP_2002`): its instances would keep a type that no longer
/// exists, and every later UPSERT of them would fail with `KIP_2001`. RC10
/// §2.9.1 asks schema evolution to keep existing instances valid.
pub fn definition_in_use(action: &str, type_name: &str, name: &str) -> KipError {
    let (what, users, hint) = if type_name == PROPOSITION_TYPE {
        ("predicate", "links", format!("Delete the {name:?} links first (DELETE PROPOSITIONS ?l WHERE {{ ?l (?s, {name:?}, ?o) }}), or keep the definition and update its description."))
    } else {
        ("type", "concepts", format!("Delete the {name:?} concepts first (DELETE CONCEPT ?x DETACH WHERE {{ ?x {{type: {name:?}}} }}), or keep the definition and update its description."))
    };
    KipError::new(ErrorCode::ConstraintViolation, format!("cannot {action} the {what} definition {name:?}: {users} of the space still use it"))
        .with_hint(hint)
}

pub fn directives_refused(name: &str) -> KipError {
    KipError::new(ErrorCode::ImmutableTarget, format!("the core_directives of {name} are immutable"))
        .with_hint("core_directives are set at bootstrap and never change. Evolve other attributes instead (persona, values, behavior_preferences, identity_narrative, …).")
}

/// SQL condition: the `kip.concepts` row `alias` is Structure. `alias` is
/// chosen by the caller's code, never user text; the names are this
/// module's constants.
fn structure_concept_sql(alias: &str) -> String {
    let domains = CORE_DOMAINS.iter().map(|d| format!("'{d}'")).collect::<Vec<_>>().join(", ");
    format!(
        "(({a}.type = '{CONCEPT_TYPE}' AND {a}.name IN ('{CONCEPT_TYPE}', '{PROPOSITION_TYPE}', '{DOMAIN}')) \
          OR ({a}.type = '{PROPOSITION_TYPE}' AND {a}.name = '{BELONGS_TO_DOMAIN}') \
          OR ({a}.type = '{DOMAIN}' AND {a}.name IN ({domains})))",
        a = alias
    )
}

/// SQL condition: the link row `p`, whose subject and object concept rows
/// are `s` and `o`, anchors protected structure in `CoreSchema` (the
/// aliases are the callers' own, never user text).
fn anchors_sql(p: &str, s: &str, o: &str) -> String {
    format!(
        "{p}.predicate = '{BELONGS_TO_DOMAIN}' AND {o}.type = '{DOMAIN}' AND {o}.name = '{CORE_SCHEMA}' AND {}",
        structure_concept_sql(s)
    )
}

/// SQL condition: the `kip.concepts` row `alias` is a system actor.
fn system_actor_sql(alias: &str) -> String {
    let actors = SYSTEM_ACTORS.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(", ");
    format!("({alias}.type = 'Person' AND {alias}.name IN ({actors}))")
}

/// The anchoring links among `ids` (`belongs_to_domain` links from
/// protected structure to `CoreSchema`) that writing `attrs` and `meta`
/// would change: (link id, subject type, subject name).
fn anchoring_links(space: &Space, ids: &[i64], attrs: &Map<String, Value>, meta: &Map<String, Value>) -> Result<Vec<(i64, String, String)>, KipError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let params = [space.param(), SqlParam::IntArray(ids.to_vec()), json(attrs), json(meta)];
    let sql = format!(
        "SELECT p.id, s.type, s.name FROM kip.propositions p \
           JOIN kip.concepts s ON s.id = p.subject_concept \
           JOIN kip.concepts o ON o.id = p.object_concept \
          WHERE p.space = $1 AND p.id = ANY($2) AND {} AND {} ORDER BY p.id",
        anchors_sql("p", "s", "o"),
        changes_sql("p", "$3", "$4")
    );
    let rows = spi::query(&sql, &params, Access::ReadWrite)?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let text = |i: usize| r.get(i).and_then(Value::as_str).unwrap_or_default().to_string();
            (r.first().and_then(Value::as_i64).unwrap_or_default(), text(1), text(2))
        })
        .collect())
}

fn anchoring_refused(action: &str, id: i64, type_name: &str, name: &str) -> KipError {
    KipError::new(
        ErrorCode::ImmutableTarget,
        format!(
            "cannot {action} P:{id}:{BELONGS_TO_DOMAIN}: it anchors {} in the CoreSchema domain, which is protected system structure",
            describe(type_name, name)
        ),
    )
    .with_hint(HINT)
}

/// SQL condition: writing the jsonb parameters `attrs` and `meta` onto the
/// row `alias` would change it (shallow merge semantics; JSON compared as
/// jsonb, so `1` and `1.0` are equal). Arguments are the caller's alias and
/// placeholders, never user text.
fn changes_sql(alias: &str, attrs: &str, meta: &str) -> String {
    format!(
        "(EXISTS (SELECT 1 FROM jsonb_each({attrs}::jsonb) n WHERE {alias}.attributes -> n.key IS DISTINCT FROM n.value) \
          OR EXISTS (SELECT 1 FROM jsonb_each({meta}::jsonb) n WHERE {alias}.metadata -> n.key IS DISTINCT FROM n.value))"
    )
}

fn json(m: &Map<String, Value>) -> SqlParam {
    SqlParam::Json(Value::Object(m.clone()))
}

/// UPSERT of the concept `{type, name}` with `attrs` / `meta`: KIP_3004 when
/// it is an existing immutable-core node and the write would change it.
pub fn check_concept_upsert(space: &Space, type_name: &str, name: &str, attrs: &Map<String, Value>, meta: &Map<String, Value>) -> Result<(), KipError> {
    if !is_immutable(type_name, name) {
        return Ok(());
    }
    if attrs.is_empty() && meta.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "SELECT EXISTS (SELECT 1 FROM kip.concepts c WHERE c.space = $1 AND c.type = $2 AND c.name = $3 AND {})",
        changes_sql("c", "$4", "$5")
    );
    let params = [space.param(), SqlParam::Text(type_name.into()), SqlParam::Text(name.into()), json(attrs), json(meta)];
    if spi::query_scalar(&sql, &params, Access::ReadWrite)? == Value::Bool(true) {
        return Err(refused("modify", type_name, name)
            .with_hint("The meta-types, belongs_to_domain and the CoreSchema domain are immutable: UPSERT may re-assert their stored content but not change it. Define your own types and predicates instead."));
    }
    Ok(())
}

/// UPSERT of the link `(subject, predicate, object)` (endpoints given as
/// concept row ids when they are concepts): KIP_3004 when it is an existing
/// anchoring link and the write would change it.
pub fn check_link_upsert(
    space: &Space,
    subject_concept: Option<i64>,
    predicate: &str,
    object_concept: Option<i64>,
    attrs: &Map<String, Value>,
    meta: &Map<String, Value>,
) -> Result<(), KipError> {
    let (Some(s), Some(o)) = (subject_concept, object_concept) else { return Ok(()) };
    if predicate != BELONGS_TO_DOMAIN {
        return Ok(());
    }
    if attrs.is_empty() && meta.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "SELECT p.id, s.type, s.name FROM kip.concepts s \
           JOIN kip.concepts o ON o.id = $3 AND o.space = $1 \
           JOIN kip.propositions p ON p.subject_concept = s.id AND p.object_concept = o.id \
          WHERE s.space = $1 AND s.id = $2 AND {} AND {}",
        anchors_sql("p", "s", "o"),
        changes_sql("p", "$4", "$5")
    );
    let rows = spi::query(&sql, &[space.param(), SqlParam::Int(s), SqlParam::Int(o), json(attrs), json(meta)], Access::ReadWrite)?;
    if let Some(row) = rows.first() {
        let text = |i: usize| row.get(i).and_then(Value::as_str).unwrap_or_default().to_string();
        return Err(anchoring_refused("modify", row.first().and_then(Value::as_i64).unwrap_or_default(), &text(1), &text(2)));
    }
    Ok(())
}

/// UPSERT of the link with row id `id`: KIP_3004 when it is an anchoring
/// link and the write would change it.
pub fn check_link_patch(space: &Space, id: i64, attrs: &Map<String, Value>, meta: &Map<String, Value>) -> Result<(), KipError> {
    if attrs.is_empty() && meta.is_empty() {
        return Ok(());
    }
    if let Some((_, t, n)) = anchoring_links(space, &[id], attrs, meta)?.into_iter().next() {
        return Err(anchoring_refused("modify", id, &t, &n));
    }
    Ok(())
}

/// MERGE's side of the rule of [`definition_in_use`]: refuse to merge away
/// the concept `type_name`/`name` when it defines a type or predicate the
/// space uses. (DELETE CONCEPT applies it in its statement, `BulkRules`.)
pub fn check_merge_source(space: &Space, type_name: &str, name: &str) -> Result<(), KipError> {
    let sql = match type_name {
        CONCEPT_TYPE => "SELECT EXISTS (SELECT 1 FROM kip.concepts WHERE space = $1 AND type = $2)",
        PROPOSITION_TYPE => "SELECT EXISTS (SELECT 1 FROM kip.propositions WHERE space = $1 AND predicate = $2)",
        _ => return Ok(()),
    };
    if spi::query_scalar(sql, &[space.param(), SqlParam::Text(name.to_string())], Access::ReadWrite)? == Value::Bool(true) {
        return Err(definition_in_use("merge", type_name, name));
    }
    Ok(())
}

/// Which targets a bulk command (UPDATE, DELETE) may not touch.
#[derive(Debug, Clone, Copy, Default)]
pub struct BulkRules {
    /// Concepts are the wrong kind of target (DELETE PROPOSITIONS).
    pub no_concepts: bool,
    /// Links are the wrong kind of target (DELETE CONCEPT).
    pub no_links: bool,
    /// Structure nodes are refused (every bulk command but DELETE PROPOSITIONS).
    pub structure: bool,
    /// The system actors are refused outright (DELETE CONCEPT).
    pub system_actors: bool,
    /// The system actors are refused because the command writes or removes
    /// their `core_directives`.
    pub directives: bool,
    /// Links anchoring protected structure in `CoreSchema` are refused.
    pub anchoring: bool,
    /// A type or predicate definition that elements outside the targets
    /// still use is refused (DELETE CONCEPT): they would be left with a
    /// type no one can write again (`KIP_2001` on their next UPSERT).
    pub definitions_in_use: bool,
}

/// Why a bulk command refused a target (the first column of [`refusal_sql`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    WrongKind = 1,
    Protected = 2,
    Directives = 3,
    Anchoring = 4,
    InUse = 5,
}

impl Refusal {
    pub fn from_code(code: i64) -> Option<Refusal> {
        [Refusal::WrongKind, Refusal::Protected, Refusal::Directives, Refusal::Anchoring, Refusal::InUse]
            .into_iter()
            .find(|r| *r as i64 == code)
    }

    /// The KIP_3004 error for a refused target (not for `WrongKind`, whose
    /// message depends on the command). `identity` is the concept's type
    /// and name; for `Anchoring`, the anchored concept's.
    pub fn error(self, action: &str, id: i64, type_name: &str, name: &str) -> KipError {
        match self {
            Refusal::Directives => directives_refused(name),
            Refusal::Anchoring => anchoring_refused(action, id, type_name, name),
            Refusal::InUse => definition_in_use(action, type_name, name),
            Refusal::WrongKind | Refusal::Protected => refused(action, type_name, name),
        }
    }
}

/// A query over the bulk command's target CTE `t(id, type, name)` (type
/// NULL for links) returning the first target `rules` refuse, as one row
/// `(reason, id, type, name)`: the wrong kind first, then protected nodes,
/// then anchoring links, each in id order. `space` is the placeholder of
/// the space name. Only this module's constants reach the SQL text.
pub fn refusal_sql(rules: BulkRules, space: &str) -> String {
    let mut parts = Vec::new();
    let system_actor = system_actor_sql("t");
    if rules.no_concepts {
        parts.push("SELECT 1, t.id, t.type, t.name FROM t WHERE t.type IS NOT NULL".to_string());
    }
    if rules.no_links {
        parts.push("SELECT 1, t.id, t.type, t.name FROM t WHERE t.type IS NULL".to_string());
    }
    if rules.structure {
        parts.push(format!("SELECT 2, t.id, t.type, t.name FROM t WHERE {}", structure_concept_sql("t")));
    }
    if rules.system_actors {
        parts.push(format!("SELECT 2, t.id, t.type, t.name FROM t WHERE {system_actor}"));
    } else if rules.directives {
        parts.push(format!("SELECT 3, t.id, t.type, t.name FROM t WHERE {system_actor}"));
    }
    if rules.definitions_in_use {
        // A definition used by an element that is not itself a target (an
        // instance deleted by the same command does not count; nor does a
        // link whose concept endpoint is a target, which the cascade
        // removes). One probe of (space, type, name) or (space, predicate)
        // per definition among the targets.
        parts.push(format!(
            "SELECT 5, t.id, t.type, t.name FROM t WHERE \
               (t.type = '{CONCEPT_TYPE}' AND EXISTS (SELECT 1 FROM kip.concepts u \
                  WHERE u.space = {space} AND u.type = t.name AND u.id NOT IN (SELECT t2.id FROM t t2))) \
            OR (t.type = '{PROPOSITION_TYPE}' AND EXISTS (SELECT 1 FROM kip.propositions u \
                  WHERE u.space = {space} AND u.predicate = t.name \
                    AND NOT EXISTS (SELECT 1 FROM t t2 WHERE t2.id IN (u.subject_concept, u.object_concept))))"
        ));
    }
    if rules.anchoring {
        // Driven from the few links filed under CoreSchema, probed against
        // the targets: a handful of rows, whatever the number of targets.
        parts.push(format!(
            "SELECT 4, p.id, s.type, s.name FROM kip.concepts o \
               JOIN kip.propositions p ON p.object_concept = o.id \
               JOIN kip.concepts s ON s.id = p.subject_concept \
              WHERE o.space = {space} AND {} AND p.id IN (SELECT t.id FROM t WHERE t.type IS NULL)",
            anchors_sql("p", "s", "o")
        ));
    }
    if parts.is_empty() {
        return "SELECT NULL::int AS reason, NULL::bigint AS id, NULL::text AS type, NULL::text AS name WHERE false".to_string();
    }
    format!(
        "SELECT r.reason, r.id, r.type, r.name FROM ({}) r(reason, id, type, name) ORDER BY CASE r.reason WHEN 1 THEN 0 WHEN 4 THEN 2 ELSE 1 END, r.id LIMIT 1",
        parts.join(" UNION ALL ")
    )
}

/// SQL condition for the maintenance cycle: the concept row `alias` is
/// exempt from automatic changes (decay, expiry, archiving): every schema
/// node, every domain, the system actors, and anything filed under
/// `CoreSchema`. `alias` is a table alias written in the callers, never
/// user text.
pub fn exempt_from_maintenance_sql(alias: &str) -> String {
    format!(
        "({a}.type IN ('{CONCEPT_TYPE}', '{PROPOSITION_TYPE}', '{DOMAIN}') \
          OR {actor} \
          OR EXISTS (SELECT 1 FROM kip.propositions pb JOIN kip.concepts pd ON pd.id = pb.object_concept \
                     WHERE pb.subject_concept = {a}.id AND pb.predicate = '{BELONGS_TO_DOMAIN}' \
                       AND pd.type = '{DOMAIN}' AND pd.name = '{CORE_SCHEMA}'))",
        a = alias,
        actor = system_actor_sql(alias)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies() {
        assert_eq!(classify("$ConceptType", "$ConceptType"), Protection::Structure);
        assert_eq!(classify("$ConceptType", "Domain"), Protection::Structure);
        assert_eq!(classify("$ConceptType", "Drug"), Protection::None);
        assert_eq!(classify("$PropositionType", "belongs_to_domain"), Protection::Structure);
        assert_eq!(classify("$PropositionType", "treats"), Protection::None);
        assert_eq!(classify("Domain", "CoreSchema"), Protection::Structure);
        assert_eq!(classify("Domain", "Medical"), Protection::None);
        assert_eq!(classify("Person", "$self"), Protection::SystemActor);
        assert_eq!(classify("Person", "Alice"), Protection::None);
    }

    #[test]
    fn the_immutable_core_is_structure() {
        for (t, n) in IMMUTABLE {
            assert_eq!(classify(t, n), Protection::Structure, "{t}/{n}");
        }
        assert!(!is_immutable("$ConceptType", "Domain"));
        assert!(!is_immutable("Domain", "Unsorted"));
    }
}
