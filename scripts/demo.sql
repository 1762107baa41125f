-- A small demo memory in space 'demo': a drug/symptom schema, a few facts,
-- and the queries an agent would send. Safe to run repeatedly (UPSERT).
SET kip.space = 'demo';
\pset format aligned
\pset tuples_only on

SELECT 'UPSERT schema and facts' AS step,
       kip_execute($$
UPSERT {
  CONCEPT ?drug_type { {type: "$ConceptType", name: "Drug"}
    SET ATTRIBUTES { description: "A medication." } }
  CONCEPT ?symptom_type { {type: "$ConceptType", name: "Symptom"}
    SET ATTRIBUTES { description: "A symptom a person can have." } }
  CONCEPT ?treats { {type: "$PropositionType", name: "treats"}
    SET ATTRIBUTES { description: "A drug treats a symptom.", subject_types: ["Drug"], object_types: ["Symptom"] } }
}
WITH METADATA { source: "demo", confidence: 1.0 }
$$) AS response;

SELECT 'UPSERT facts' AS step,
       kip_execute($$
UPSERT {
  CONCEPT ?headache { {type: "Symptom", name: "Headache"} }
  CONCEPT ?fever { {type: "Symptom", name: "Fever"} }
  CONCEPT ?aspirin { {type: "Drug", name: "Aspirin"}
    SET ATTRIBUTES { risk_level: 2, aliases: ["acetylsalicylic acid"] }
    SET PROPOSITIONS { ("treats", ?headache) ("treats", ?fever) } }
  CONCEPT ?ibuprofen { {type: "Drug", name: "Ibuprofen"}
    SET ATTRIBUTES { risk_level: 3 }
    SET PROPOSITIONS { ("treats", ?headache) } }
}
WITH METADATA { source: "demo", confidence: 0.9 }
$$) AS response;

SELECT 'FIND drugs that treat Headache' AS step,
       kip_execute('FIND(?d.name, ?d.attributes.risk_level) WHERE { ?d {type: "Drug"} (?d, "treats", {type: "Symptom", name: :s}) } ORDER BY ?d.name',
                   '{"s": "Headache"}') AS response;

SELECT 'DESCRIBE PRIMER' AS step, kip_execute('DESCRIBE PRIMER') AS response;
