//! A run of plain concept blocks (`write::Plain`) whose links all name
//! concepts, by a handle of the run or by `{type, name}`: the concepts and
//! every link of the run in one statement
//! (`store::concepts_with_links_merge`), where `write::concept_run` needs
//! one for the concepts, one per `{type, name}` object, and one for each
//! block's links. A Formation capsule (Domain, Person, Event, and the
//! Event's three links) is then one statement.
//!
//! The result is the blocks' one by one, errors included. A run this
//! cannot write with that result (an object that is an id, a proposition
//! or a handle from before the run; a handle not yet defined; a
//! self-loop; a link repeated within a block) is left to `concept_run`.

use super::resolve::{self, Handles};
use super::write::Plain;
use crate::compile::bound::{layered, lit_str};
use crate::compile::ids::ElementRef;
use crate::engine::store::{self, ConceptWrite, NamedLinkWrite};
use crate::exec::Ctx;
use kip_lang::ast::{ConceptSelector, Endpoint};
use kip_lang::KipError;
use std::collections::HashMap;

/// The links of `run` in block order, when every one can be written in
/// the run's statement; `None` when one cannot.
pub fn links<'a>(run: &[Plain<'a>]) -> Option<Vec<NamedLinkWrite<'a>>> {
    // The run's handles defined so far: a block's own handle is defined
    // before its links are resolved, and a later definition replaces an
    // earlier one, as in `Handles`.
    let mut handles: HashMap<&str, usize> = HashMap::new();
    let mut links: Vec<NamedLinkWrite<'a>> = Vec::new();
    for (k, block) in run.iter().enumerate() {
        handles.insert(block.block.handle.as_str(), k);
        let first = links.len();
        for item in block.block.set_propositions.iter().flatten() {
            let predicate = lit_str(&item.predicate).ok()?;
            let (object_type, object_name) = match &item.target {
                Endpoint::Var(h) => {
                    let j = *handles.get(h.as_str())?;
                    (run[j].type_name, run[j].name)
                }
                Endpoint::Concept(ConceptSelector::TypeName { type_name, name }) => (lit_str(type_name).ok()?, lit_str(name).ok()?),
                _ => return None,
            };
            // Identities are exact: the same `{type, name}` is the same
            // concept, a different one another concept.
            if (object_type, object_name) == (block.type_name, block.name) {
                return None;
            }
            let repeated = links[first..]
                .iter()
                .any(|l| l.predicate == predicate && (l.object_type, l.object_name) == (object_type, object_name));
            if repeated {
                return None;
            }
            let meta = layered(&block.meta, item.metadata.as_deref()).ok()?;
            links.push(NamedLinkWrite { subject: k, predicate, object_type, object_name, meta });
        }
    }
    Some(links)
}

/// Write `run` and its `links` (from [`links`]) in one statement, define
/// the blocks' handles, and return the concepts' row ids in block order.
/// A link whose object does not exist fails the command with the error
/// the blocks one by one would give first.
pub fn write(ctx: &Ctx, handles: &mut Handles, run: &[Plain<'_>], links: &[NamedLinkWrite<'_>]) -> Result<Vec<i64>, KipError> {
    let concepts: Vec<ConceptWrite<'_>> = run
        .iter()
        .map(|p| ConceptWrite { type_name: p.type_name, name: p.name, attrs: &p.attrs, meta: &p.meta })
        .collect();
    let (ids, missing) = store::concepts_with_links_merge(&ctx.space, &concepts, links)?;
    if let Some(&first) = missing.first() {
        let l = &links[first];
        return Err(resolve::not_found(format_args!("concept {{type: {:?}, name: {:?}}}", l.object_type, l.object_name)));
    }
    for (p, id) in run.iter().zip(&ids) {
        handles.define(&p.block.handle, ElementRef::concept(*id));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::store::JsonMap;
    use kip_lang::ast::{Command, UpsertItem};

    /// `links` of an UPSERT made of plain concept blocks, as
    /// (subject block, predicate, object type, object name).
    fn fused(text: &str) -> Option<Vec<(usize, String, String, String)>> {
        let script = kip_lang::parse(text).unwrap();
        let Command::Upsert(upsert) = &script.commands[0] else { panic!("not an UPSERT: {text}") };
        let meta = JsonMap::new();
        let run: Vec<Plain<'_>> = upsert
            .items
            .iter()
            .map(|item| match item {
                UpsertItem::Concept(block) => Plain::of(block, &meta).unwrap().expect("a plain block"),
                UpsertItem::Proposition(_) => panic!("a proposition block"),
            })
            .collect();
        let links = links(&run)?;
        Some(links.into_iter().map(|l| (l.subject, l.predicate.into(), l.object_type.into(), l.object_name.into())).collect())
    }

    fn link(subject: usize, predicate: &str, object_type: &str, object_name: &str) -> (usize, String, String, String) {
        (subject, predicate.into(), object_type.into(), object_name.into())
    }

    #[test]
    fn a_formation_capsule_is_one_statement() {
        let links = fused(
            r#"UPSERT {
                 CONCEPT ?domain { {type: "Domain", name: "D"} SET ATTRIBUTES { a: 1 } }
                 CONCEPT ?p { {type: "Person", name: "P"} SET ATTRIBUTES { person_class: "Human" } }
                 CONCEPT ?e { {type: "Event", name: "E"} SET ATTRIBUTES { a: 1 }
                   SET PROPOSITIONS { ("belongs_to_domain", ?domain) ("involves", ?p) ("involves", {type: "Person", name: "$self"}) } }
               }"#,
        );
        assert_eq!(
            links,
            Some(vec![link(2, "belongs_to_domain", "Domain", "D"), link(2, "involves", "Person", "P"), link(2, "involves", "Person", "$self")])
        );
    }

    #[test]
    fn a_handle_names_its_latest_definition() {
        let links = fused(
            r#"UPSERT {
                 CONCEPT ?x { {type: "T", name: "first"} SET ATTRIBUTES { a: 1 } }
                 CONCEPT ?x { {type: "T", name: "second"} SET ATTRIBUTES { a: 1 } }
                 CONCEPT ?y { {type: "T", name: "third"} SET ATTRIBUTES { a: 1 } SET PROPOSITIONS { ("p", ?x) } }
               }"#,
        );
        assert_eq!(links, Some(vec![link(2, "p", "T", "second")]));
    }

    #[test]
    fn runs_left_to_the_blocks_one_by_one() {
        let run_with = |links: &str| {
            format!(
                r#"UPSERT {{
                     CONCEPT ?a {{ {{type: "T", name: "a"}} SET ATTRIBUTES {{ n: 1 }} }}
                     CONCEPT ?b {{ {{type: "T", name: "b"}} SET ATTRIBUTES {{ n: 2 }} SET PROPOSITIONS {{ {links} }} }}
                     CONCEPT ?c {{ {{type: "T", name: "c"}} SET ATTRIBUTES {{ n: 3 }} }}
                   }}"#
            )
        };
        assert!(fused(&run_with(r#"("p", ?a) ("q", {type: "T", name: "a"})"#)).is_some());
        for links in [
            r#"("p", ?b)"#,                                   // a self-loop by handle
            r#"("p", {type: "T", name: "b"})"#,               // a self-loop by identity
            r#"("p", ?c)"#,                                   // a handle not yet defined
            r#"("p", ?elsewhere)"#,                           // a handle from before the run
            r#"("p", ?a) ("p", {type: "T", name: "a"})"#,     // one triple twice
            r#"("p", {id: "C:1"})"#,                          // an object by id
            r#"("p", (?a, "q", {type: "T", name: "x"}))"#,    // a proposition
        ] {
            assert_eq!(fused(&run_with(links)), None, "{links}");
        }
    }
}
