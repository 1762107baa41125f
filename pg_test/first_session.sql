-- The README's first KIP session, as a user would type it in psql.
CREATE EXTENSION kip CASCADE;
SET kip.space = 'demo';

SELECT kip_execute($$
  UPSERT {
    CONCEPT ?t { {type: "$ConceptType", name: "Drug"}
                 SET ATTRIBUTES { description: "A medication." } }
  }
$$) -> 'result' -> 'blocks' AS blocks;

SELECT kip_execute($$
  UPSERT { CONCEPT ?d { {type: "Drug", name: :name} SET ATTRIBUTES { risk_level: 2 } } }
  WITH METADATA { source: "conversation", confidence: 0.9 }
$$, '{"name": "Aspirin"}') ? 'result' AS upserted;

SELECT kip_execute('FIND(?d.name, ?d.attributes.risk_level) WHERE { ?d {type: "Drug"} }');
SELECT kip_execute('FIND(?d.metadata.source, ?d.metadata.confidence, ?d.metadata._version) WHERE { ?d {type: "Drug"} }');
SELECT kip_execute('DESCRIBE PRIMER') -> 'result' ? 'identity' AS primer_has_identity;

SELECT jsonb_array_length(kip_execute('{"commands": ["DESCRIBE PRIMER",
                                  {"command": "FIND(?n.name) WHERE { ?n {type: :t} }",
                                   "parameters": {"t": "Drug"}}]}'::jsonb) -> 'result') AS batch_items;
SELECT kip_execute('{"commands": ["DESCRIBE PRIMER",
                                  {"command": "FIND(?n.name) WHERE { ?n {type: :t} }",
                                   "parameters": {"t": "Drug"}}]}'::jsonb) -> 'result' -> 1 AS second_item;

SELECT kip_execute_readonly('FIND(?d.name) WHERE { ?d {type: "Drug"} }');
SELECT kip_execute_readonly('UPSERT { CONCEPT ?d { {type: "Drug", name: "X"} } }') -> 'error' ->> 'code' AS readonly_refusal;
SELECT kip_execute('FIND(?d.name WHERE') -> 'error' ->> 'code' AS syntax_error;

-- The same memory, read with plain SQL.
SELECT type, name, attributes, version FROM kip.concept_nodes WHERE space = 'demo' AND type = 'Drug';
