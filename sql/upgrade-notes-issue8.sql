-- Issue 8 (SEARCH recall): the HNSW indexes of the embeddings are built
-- with a wider search per insert (ef_construction 128 instead of pgvector's
-- default 64; m stays at its default, 16).
--
-- For sql/schema.sql (replacing the two `USING hnsw` lines):
--
--   CREATE INDEX concepts_embedding_idx ON kip.concepts
--       USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128);
--   CREATE INDEX propositions_embedding_idx ON kip.propositions
--       USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128);
--
-- Why (benches/SEARCH-BENCH.md: 100,000 near-duplicate descriptions, 20
-- questions, recall@10 of the HNSW scan against an exact scan, strict id
-- overlap, at hnsw.ef_search 64 / 100 / 160 / 200):
--   m = 16, ef_construction = 64 (today):  0.63 / 0.80 / -    / 0.87  (0.945 at 400)
--   m = 32, ef_construction = 64:          0.865 / 0.88 / -   / -     (0.885 at 128)
--   m = 32, ef_construction = 128:         0.895 / 0.945 / 0.975 / 0.98
--   m = 16, ef_construction = 128:         0.905 / 0.94 / 0.985 / 0.99 (84,602 vectors)
-- On this near-duplicate data the build's search width is what matters: with
-- it, kip's ef_search of 160 for semantic SEARCH recalls ~0.98. m = 32 doubles
-- the links each scan step and each insert reads and rewrites (an insert's
-- neighbour updates were 30 % of the backfill's time with m = 32) for no
-- better recall, so m stays 16. Each insert searches the graph with
-- ef_construction, so the index part of storing a vector costs more (see the
-- backfill figures).
--
-- For the upgrade script sql/kip--0.2.0--0.3.0.sql: pgvector builds the
-- graph only at CREATE INDEX (ALTER INDEX ... SET (ef_construction = ...)
-- would not rebuild it), so the indexes are rebuilt. A build takes minutes
-- per 100,000 vectors (about 4 min for 85,000 on the 2-core benchmark
-- machine under load, with maintenance_work_mem = 1GB so the graph is built
-- in memory); it blocks writes to the table, not reads.

DROP INDEX kip.concepts_embedding_idx;
CREATE INDEX concepts_embedding_idx ON kip.concepts
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128);
DROP INDEX kip.propositions_embedding_idx;
CREATE INDEX propositions_embedding_idx ON kip.propositions
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128);
