//! SQL conditions for the protected entities of BrainMaintenance ("never
//! delete"): the meta-types and every schema node, every `Domain`, `$self` and
//! `$system`, and anything filed under the `CoreSchema` domain.
//! `alias` is a table alias written in this module's callers, never user text.

/// True when the concept row `alias` is protected from automatic changes.
pub fn protected_concept(alias: &str) -> String {
    format!(
        "({a}.type IN ('$ConceptType', '$PropositionType', 'Domain') \
          OR ({a}.type = 'Person' AND {a}.name IN ('$self', '$system')) \
          OR EXISTS (SELECT 1 FROM kip.propositions pb JOIN kip.concepts pd ON pd.id = pb.object_concept \
                     WHERE pb.subject_concept = {a}.id AND pb.predicate = 'belongs_to_domain' \
                       AND pd.type = 'Domain' AND pd.name = 'CoreSchema'))",
        a = alias
    )
}

/// The current time as ISO-8601 UTC text, for metadata stamps.
pub const NOW_ISO: &str = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";
