-- kip 0.5.0 -> 0.6.0.

-- issue 11: performance
--
-- metadata.expires_at as generated columns, and the TTL sweep's partial
-- indexes on them instead of on `metadata`: with `metadata` in no index, an
-- update that changes only metadata (a Formation capsule re-asserting its
-- Domain and Person blocks) can be HOT instead of writing an entry into each
-- of the table's indexes. Adding a stored generated column rewrites each
-- table once, under an ACCESS EXCLUSIVE lock; no trigger fires, so no
-- element, version or timestamp changes.
ALTER TABLE kip.concepts ADD COLUMN expires_at text GENERATED ALWAYS AS (metadata ->> 'expires_at') STORED;
ALTER TABLE kip.propositions ADD COLUMN expires_at text GENERATED ALWAYS AS (metadata ->> 'expires_at') STORED;
DROP INDEX kip.concepts_expiring_idx;
DROP INDEX kip.propositions_expiring_idx;
CREATE INDEX concepts_expiring_idx ON kip.concepts (space) WHERE expires_at IS NOT NULL;
CREATE INDEX propositions_expiring_idx ON kip.propositions (space) WHERE expires_at IS NOT NULL;
