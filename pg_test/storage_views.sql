-- Plain SQL over kip storage: the readable views and the cascade, as a BI
-- user or another tool would see them.
CREATE EXTENSION kip CASCADE;
INSERT INTO kip.spaces (name) VALUES ('s1');
INSERT INTO kip.concepts (space, type, name) VALUES ('s1', 'Drug', 'Aspirin'), ('s1', 'Symptom', 'Headache'), ('s1', 'Person', 'Ann');
INSERT INTO kip.propositions (space, subject_concept, predicate, object_concept)
SELECT 's1', d.id, 'treats', s.id FROM kip.concepts d, kip.concepts s WHERE d.name = 'Aspirin' AND s.name = 'Headache';
INSERT INTO kip.propositions (space, subject_concept, predicate, object_link)
SELECT 's1', p.id, 'believes', f.id FROM kip.concepts p, kip.propositions f WHERE p.name = 'Ann';
SELECT subject_type, subject_name, predicate, object_type, object_name FROM kip.facts ORDER BY predicate;
SELECT type, name, version FROM kip.concept_nodes ORDER BY name;
DELETE FROM kip.concepts WHERE name = 'Headache';
SELECT count(*) AS links_left FROM kip.facts;
