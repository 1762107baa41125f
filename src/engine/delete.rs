//! Execution of DELETE commands (RC10 §4.2).
//!
//! The WHERE block selects the targets through the shared pattern compiler;
//! protection (`KIP_3004`) and reserved keys (`KIP_2002`) are checked before
//! anything is removed. `DELETE CONCEPT … DETACH` and `DELETE PROPOSITIONS`
//! rely on the storage's cascading foreign keys to remove every link that
//! (transitively, through higher-order links) references a deleted element;
//! the same closure is counted beforehand for the `deleted_propositions`
//! audit figure.

use crate::exec::Ctx;
use crate::engine::envelope::Outcome;
use crate::compile::bound::lit_str;
use crate::compile::kml_bulk::BulkAction;
use crate::engine::targets::{self, Refused};
use crate::resolve::protection::{BulkRules, Refusal, CORE_DIRECTIVES};
use crate::schema::reserved;
use kip_lang::ast::{Command, Delete};
use kip_lang::{ErrorCode, KipError};
use serde_json::json;

pub fn execute(command: &Command, ctx: &Ctx) -> Result<Outcome, KipError> {
    let Command::Delete(delete) = command else {
        return Err(KipError::new(ErrorCode::InternalError, "DELETE executor called with another command"));
    };
    let result = match delete {
        Delete::Attributes { keys, target, where_clauses } | Delete::Metadata { keys, target, where_clauses } => {
            let metadata = matches!(delete, Delete::Metadata { .. });
            if metadata {
                reserved::check_deleted_keys(keys)?;
            }
            let keys: Vec<String> = keys.iter().map(|k| lit_str(k).map(str::to_string)).collect::<Result<_, _>>()?;
            let directives = !metadata && keys.iter().any(|k| k == CORE_DIRECTIVES);
            let rules = BulkRules { structure: true, directives, anchoring: true, ..BulkRules::default() };
            let counts = targets::run(where_clauses, ctx, target, None, rules, BulkAction::DeleteKeys { keys, metadata })?
                .map_err(|r| r.error("delete keys of"))?;
            json!({ "updated_concepts": counts.first, "updated_propositions": counts.second })
        }
        Delete::Propositions { target, where_clauses } => {
            let rules = BulkRules { no_concepts: true, anchoring: true, ..BulkRules::default() };
            let counts = targets::run(where_clauses, ctx, target, None, rules, BulkAction::DeletePropositions)?
                .map_err(|r| wrong_kind_or(r, "delete", || {
                    KipError::syntax(format!("?{target} binds concept nodes; DELETE PROPOSITIONS removes proposition links"))
                        .with_hint(format!("Use DELETE CONCEPT ?{target} DETACH WHERE {{ … }} to delete concepts, or bind ?{target} to a link: ?{target} (?s, \"p\", ?o)."))
                }))?;
            json!({ "deleted_propositions": counts.first })
        }
        Delete::Concept { target, where_clauses } => {
            let rules = BulkRules { no_links: true, structure: true, system_actors: true, definitions_in_use: true, ..BulkRules::default() };
            let counts = targets::run(where_clauses, ctx, target, None, rules, BulkAction::DeleteConcepts)?
                .map_err(|r| wrong_kind_or(r, "delete", || {
                    KipError::syntax(format!("?{target} binds proposition links; DELETE CONCEPT removes concept nodes"))
                        .with_hint(format!("Use DELETE PROPOSITIONS ?{target} WHERE {{ … }} to delete links."))
                }))?;
            json!({ "deleted_concepts": counts.first, "deleted_propositions": counts.second })
        }
    };
    Ok(Outcome::new(result))
}

/// The error for a refused target: `wrong_kind` words a target of the
/// wrong kind, the protection rules word the rest.
fn wrong_kind_or(refused: Refused, action: &str, wrong_kind: impl FnOnce() -> KipError) -> KipError {
    if refused.reason == Refusal::WrongKind {
        wrong_kind()
    } else {
        refused.error(action)
    }
}
