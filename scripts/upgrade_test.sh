#!/usr/bin/env bash
# Upgrade test: a database full of kip 0.1.0 memories survives
# `ALTER EXTENSION kip UPDATE` unchanged, gets the new capsules, still dumps
# and restores, and ends with the same SQL objects as a fresh install; and
# databases of the later releases (0.2.0 to 0.11.0) likewise (step 4).
#
#   1. install the 0.1.0 release script (sql/releases/) next to the current
#      one; create a 0.1.0 database whose spaces are bootstrapped with the
#      0.1.0 capsules (tests/upgrade/capsules-0.1.0.kip);
#   2. write memories in two spaces: higher-order links, an EXPORT page and
#      its cursor, SleepTasks, a maintenance cycle; an agent's own Experience
#      type in one space, an Event type an agent reworded in the other, and a
#      third space whose Experience type cannot be merged;
#   3. ALTER EXTENSION kip UPDATE (twice), use every space, and check;
#   4. the same update from 0.2.0, 0.3.0, 0.4.0, 0.5.0, 0.6.0, 0.7.0, 0.8.0, 0.9.0, 0.10.0 and 0.11.0: memories unchanged,
#      schema = fresh install, history recorded afterwards.
# Runs against the project's cluster (scripts/cluster.sh, ${KIP_PGPORT}).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${KIP_PGPORT:-54329}
PG_CONFIG=${PG_CONFIG:-/usr/bin/pg_config}
BIN=$("$PG_CONFIG" --bindir)
OLD=0.1.0
NEW=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
DB=kip_upgrade_test
FRESH=kip_upgrade_fresh
RESTORED=kip_upgrade_restored
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export PGOPTIONS="-c client_min_messages=warning"
PSQL=("$BIN/psql" -X -q -h localhost -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -P pager=off)
q() { "${PSQL[@]}" -d "$1" -tA -c "$2"; }
fail() { echo "upgrade test FAILED: $*"; exit 1; }

# 1. The 0.1.0 install script beside the current version's.
EXTDIR=$("$PG_CONFIG" --sharedir)/extension
if [ -w "$EXTDIR" ]; then install -m 644 "sql/releases/kip--$OLD.sql" "$EXTDIR/"
else sudo install -m 644 "sql/releases/kip--$OLD.sql" "$EXTDIR/"; fi

for db in $DB $FRESH $RESTORED; do q postgres "DROP DATABASE IF EXISTS $db" >/dev/null; done
q postgres "CREATE DATABASE $DB" >/dev/null
q $DB "CREATE EXTENSION kip VERSION '$OLD' CASCADE" >/dev/null
[ "$(q $DB "SELECT extversion FROM pg_extension WHERE extname = 'kip'")" = "$OLD" ] || fail "0.1.0 not installed"

kip() { # space, command
  "${PSQL[@]}" -d $DB -tA -v space="$1" -v cmd="$2" <<'SQL'
SET kip.space = :'space';
SELECT kip_execute(:'cmd');
SQL
}
must_ok() { local out; out=$(kip "$1" "$2" | tail -1); echo "$out" | grep -q '"result"' || fail "in $1: $2 => $out"; echo "$out"; }

# Spaces bootstrapped by 0.1.0: the row, then its capsules.
for space in alpha beta gamma; do
  q $DB "INSERT INTO kip.spaces (name, bootstrapped_at) VALUES ('$space', now())" >/dev/null
  loaded=$("${PSQL[@]}" -d $DB -tA -v space="$space" -v caps="$(cat tests/upgrade/capsules-0.1.0.kip)" <<'SQL' | tail -1
SET kip.space = :'space';
SELECT kip_execute(:'caps') ? 'result';
SQL
)
  [ "$loaded" = t ] || fail "0.1.0 capsules in $space"
done
[ "$(q $DB "SELECT count(*) FROM kip.concepts WHERE name IN ('Experience', 'Skill', 'has_step')")" = 0 ] \
  || fail "the 0.1.0 capsules already hold RC11 types"

# 2. Memories.
for space in alpha beta; do
  must_ok $space 'UPSERT {
    CONCEPT ?ana { {type: "Person", name: "Ana"} SET ATTRIBUTES { person_class: "Human" } }
    CONCEPT ?tea { {type: "Preference", name: "green tea"} SET ATTRIBUTES { description: "Prefers green tea", evidence_count: 2 } }
    CONCEPT ?chat { {type: "Event", name: "chat-1"} SET ATTRIBUTES { event_class: "Conversation", start_time: "2026-01-01T10:00:00Z", content_summary: "talked about tea" }
      SET PROPOSITIONS { ("involves", ?ana) ("mentions", ?tea) } }
    CONCEPT ?task { {type: "SleepTask", name: "consolidate chat-1"} SET ATTRIBUTES { target_type: "Event", target_name: "chat-1", requested_action: "consolidate_to_semantic", reason: "new preference", status: "pending", priority: 1 }
      SET PROPOSITIONS { ("assigned_to", {type: "Person", name: "$system"}) } }
  } WITH METADATA { source: "upgrade-test", confidence: 0.8, created_at: "2020-01-01T00:00:00Z" }' >/dev/null
  must_ok $space 'UPSERT { CONCEPT ?ana { {type: "Person", name: "Ana"} SET PROPOSITIONS { ("prefers", {type: "Preference", name: "green tea"}) } } }
    WITH METADATA { confidence: 0.9, created_at: "2020-01-01T00:00:00Z" }' >/dev/null
  # A higher-order link: the Event derives the prefers link.
  must_ok $space 'UPSERT { PROPOSITION ?p { ({type: "Person", name: "Ana"}, "prefers", {type: "Preference", name: "green tea"}) } }' >/dev/null
  must_ok $space 'UPSERT { CONCEPT ?e { {type: "Event", name: "chat-1"} SET PROPOSITIONS { ("consolidated_to", ({type: "Person", name: "Ana"}, "prefers", {type: "Preference", name: "green tea"})) } } }' >/dev/null
done
# The agent's own schema changes.
must_ok alpha 'UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Event"} SET ATTRIBUTES { description: "Something that happened (reworded by the agent)." } } }' >/dev/null
must_ok beta 'UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Experience"} SET ATTRIBUTES {
    description: "An agent-defined experience type.", mood: "curious",
    instance_schema: { "goal": { "type": "string", "description": "agent wording" }, "rating": { "type": "number" } } }
  SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } } }' >/dev/null
must_ok gamma 'UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Experience"} SET ATTRIBUTES {
    description: "A type that cannot be merged.", instance_schema: { "goal": "free text" } } } }' >/dev/null
q $DB "SELECT kip_maintenance('*')" >/dev/null
page1=$(must_ok alpha 'EXPORT ?t WHERE { ?t {type: "Person"} } LIMIT 2')
cursor=$(echo "$page1" | sed -n 's/.*"next_cursor": "\([^"]*\)".*/\1/p')
[ -n "$cursor" ] || fail "no EXPORT cursor"
page2_before=$(must_ok alpha "EXPORT ?t WHERE { ?t {type: \"Person\"} } LIMIT 2 CURSOR \"$cursor\"")
# A read the old SQL objects cannot serve (whole element objects need
# kip.concept_json, from 0.6.0) answers an envelope that says to update,
# not an internal error naming the missing function.
out=$(kip alpha 'FIND(?p) WHERE { ?p {type: "Person", name: "Ana"} }' | tail -1)
echo "$out" | grep -q 'Run ALTER EXTENSION kip UPDATE' || fail "a FIND of whole elements on the $OLD schema: $out"

# Everything, before.
"${PSQL[@]}" -d $DB <<'SQL'
CREATE SCHEMA upgrade_check;
CREATE TABLE upgrade_check.concepts AS SELECT id, space, type, name, attributes, metadata, version, created_at, updated_at FROM kip.concepts;
CREATE TABLE upgrade_check.propositions AS SELECT id, space, subject, predicate, object, attributes, metadata, version, created_at, updated_at FROM kip.propositions;
CREATE TABLE upgrade_check.spaces AS SELECT * FROM kip.spaces;
CREATE TABLE upgrade_check.log AS SELECT * FROM kip.maintenance_log;
SQL
snapshot() {
  q $DB "SELECT c::text FROM (SELECT id, space, type, name, attributes, metadata, version, created_at, updated_at FROM kip.concepts) c ORDER BY id" > "$1"
  q $DB "SELECT p::text FROM (SELECT id, space, subject, predicate, object, attributes, metadata, version, created_at, updated_at FROM kip.propositions) p ORDER BY id" >> "$1"
  q $DB "SELECT s::text FROM (SELECT name, created_at, bootstrapped_at FROM kip.spaces) s ORDER BY name" >> "$1"
  q $DB "SELECT l::text FROM kip.maintenance_log l ORDER BY id" >> "$1"
}
snapshot "$TMP/before"

# 3. The upgrade, twice.
q $DB "ALTER EXTENSION kip UPDATE" >/dev/null
q $DB "ALTER EXTENSION kip UPDATE" >/dev/null
[ "$(q $DB "SELECT extversion FROM pg_extension WHERE extname = 'kip'")" = "$NEW" ] || fail "not at $NEW after the update"
snapshot "$TMP/after"
diff -u "$TMP/before" "$TMP/after" >/dev/null || { diff -u "$TMP/before" "$TMP/after" | head -20; fail "ALTER EXTENSION changed stored data"; }
[ "$(q $DB "SELECT string_agg(name || '=' || capsule_level, ',' ORDER BY name) FROM kip.spaces")" = "alpha=1,beta=1,gamma=1" ] \
  || fail "existing spaces are not at capsule level 1"
echo "ALTER EXTENSION kip UPDATE $OLD -> $NEW (twice): every element, version and timestamp unchanged"

# First use after the upgrade: alpha and beta are upgraded; gamma is refused
# with a warning naming the capsule, and stays as it was.
must_ok alpha 'FIND(?p) WHERE { ?p {type: "Person"} } LIMIT 1' >/dev/null
q $DB "SELECT kip_maintenance('beta')" >/dev/null
gamma_before=$(q $DB "SELECT jsonb_agg(to_jsonb(c) - 'embedding' ORDER BY id) FROM kip.concepts c WHERE space = 'gamma'")
warning=$(PGOPTIONS="-c client_min_messages=warning" kip gamma 'FIND(?p) WHERE { ?p {type: "Person"} } LIMIT 1' 2>&1 >/dev/null || true)
echo "$warning" | grep -q 'capsule Experience.kip cannot be applied to memory space \\"gamma\\"' || fail "no warning naming the capsule: $warning"
echo "$warning" | grep -q 'instance_schema.goal' || fail "the warning does not name the attribute: $warning"
[ "$(q $DB "SELECT jsonb_agg(to_jsonb(c) - 'embedding' ORDER BY id) FROM kip.concepts c WHERE space = 'gamma'")" = "$gamma_before" ] \
  || fail "a refused capsule upgrade changed space gamma"
report=$(q $DB "SELECT kip_maintenance('gamma') -> 'capsules'")
echo "$report" | grep -q 'Experience.kip' || fail "maintenance does not report the refused capsule: $report"
[ "$(q $DB "SELECT string_agg(name || '=' || capsule_level, ',' ORDER BY name) FROM kip.spaces")" = "alpha=2,beta=2,gamma=1" ] \
  || fail "capsule levels after first use: $(q $DB "SELECT string_agg(name || '=' || capsule_level, ',' ORDER BY name) FROM kip.spaces")"

"${PSQL[@]}" -d $DB -tA >"$TMP/checks" <<'SQL'
-- Memories (everything but schema nodes) are untouched.
SELECT 'changed memory concept ' || o.id FROM upgrade_check.concepts o
LEFT JOIN kip.concepts n ON n.id = o.id
WHERE o.type NOT IN ('$ConceptType', '$PropositionType', 'Domain')
  AND (n.id IS NULL OR (n.space, n.type, n.name, n.attributes, n.metadata, n.version, n.created_at, n.updated_at)
       IS DISTINCT FROM (o.space, o.type, o.name, o.attributes, o.metadata, o.version, o.created_at, o.updated_at));
SELECT 'changed link ' || o.id FROM upgrade_check.propositions o
LEFT JOIN kip.propositions n ON n.id = o.id
WHERE n.id IS NULL OR (n.space, n.subject, n.predicate, n.object, n.attributes, n.metadata, n.version, n.created_at, n.updated_at)
       IS DISTINCT FROM (o.space, o.subject, o.predicate, o.object, o.attributes, o.metadata, o.version, o.created_at, o.updated_at);
-- Schema nodes only gain: every attribute they held is still there, metadata as it was.
SELECT 'schema node lost something ' || o.id || ' ' || o.name FROM upgrade_check.concepts o
LEFT JOIN kip.concepts n ON n.id = o.id
WHERE o.type IN ('$ConceptType', '$PropositionType', 'Domain')
  AND (n.id IS NULL OR NOT n.attributes @> o.attributes OR n.metadata IS DISTINCT FROM o.metadata
       OR n.created_at <> o.created_at OR (n.attributes = o.attributes AND n.version <> o.version));
SELECT 'spaces changed' FROM upgrade_check.spaces o JOIN kip.spaces n USING (name)
WHERE (n.created_at, n.bootstrapped_at) IS DISTINCT FROM (o.created_at, o.bootstrapped_at);
SELECT 'maintenance log changed ' || o.id FROM upgrade_check.log o LEFT JOIN kip.maintenance_log n USING (id)
WHERE n IS NULL OR n::text <> o::text;
-- The new capsules are present in the upgraded spaces.
SELECT 'missing ' || s || ' ' || t FROM unnest(ARRAY['alpha', 'beta']) s,
  unnest(ARRAY['Experience', 'ExperienceStep', 'Skill']) t
WHERE NOT EXISTS (SELECT 1 FROM kip.concepts WHERE space = s AND type = '$ConceptType' AND name = t);
SELECT 'missing ' || s || ' ' || t FROM unnest(ARRAY['alpha', 'beta']) s,
  unnest(ARRAY['caused_by', 'compiled_to', 'consolidated_to', 'derived_from', 'derived_insight', 'has_step', 'involves', 'mentions']) t
WHERE NOT EXISTS (SELECT 1 FROM kip.concepts WHERE space = s AND type = '$PropositionType' AND name = t);
SELECT 'involves does not take Experiences in ' || space FROM kip.concepts
WHERE space IN ('alpha', 'beta') AND type = '$PropositionType' AND name = 'involves'
  AND NOT attributes -> 'subject_types' @> '["Event", "Experience"]';
-- The agent's wording and attributes survive, the capsule's fields are added.
SELECT 'agent Event wording lost' WHERE NOT EXISTS (SELECT 1 FROM kip.concepts WHERE space = 'alpha' AND name = 'Event'
  AND type = '$ConceptType' AND attributes ->> 'description' = 'Something that happened (reworded by the agent).');
SELECT 'agent Experience not merged: ' || attributes::text FROM kip.concepts
WHERE space = 'beta' AND type = '$ConceptType' AND name = 'Experience'
  AND NOT (attributes ->> 'description' = 'An agent-defined experience type.' AND attributes ->> 'mood' = 'curious'
           AND attributes #>> '{instance_schema,goal,description}' = 'agent wording'
           AND attributes #>> '{instance_schema,goal,is_required}' = 'true'
           AND attributes #> '{instance_schema}' ? 'rating' AND attributes #> '{instance_schema}' ? 'experience_class');
SQL
[ ! -s "$TMP/checks" ] || { cat "$TMP/checks"; fail "upgraded data"; }
# 0.2.0 signs cursors with a random per-database secret: a token issued by
# 0.1.0 is refused (KIP_1001, the client starts over), and paging again from
# the first page gives the same page as before the upgrade.
stale=$(kip alpha "EXPORT ?t WHERE { ?t {type: \"Person\"} } LIMIT 2 CURSOR \"$cursor\"" | tail -1)
echo "$stale" | grep -q '"KIP_1001"' || fail "a cursor of the previous release was not refused: $stale"
page1_after=$(must_ok alpha 'EXPORT ?t WHERE { ?t {type: "Person"} } LIMIT 2')
cursor_after=$(echo "$page1_after" | sed -n 's/.*"next_cursor": "\([^"]*\)".*/\1/p')
page2_after=$(must_ok alpha "EXPORT ?t WHERE { ?t {type: \"Person\"} } LIMIT 2 CURSOR \"$cursor_after\"")
[ "$(echo "$page2_before" | sed 's/"next_cursor": "[^"]*"//')" = "$(echo "$page2_after" | sed 's/"next_cursor": "[^"]*"//')" ] \
  || fail "paging after the upgrade returns another page"
# Idempotent: using the spaces again changes nothing.
v1=$(q $DB "SELECT sum(version) FROM kip.concepts WHERE space IN ('alpha', 'beta')")
must_ok beta 'FIND(?p) WHERE { ?p {type: "Person"} } LIMIT 1' >/dev/null
q $DB "SELECT kip_maintenance('alpha')" >/dev/null
[ "$(q $DB "SELECT sum(version) FROM kip.concepts WHERE space IN ('alpha', 'beta')")" = "$v1" ] || fail "a second use changed versions"
echo "first use: the RC11 capsules merged into alpha and beta without loss; gamma refused, unchanged, with a warning naming Experience.kip"

# pg_dump / pg_restore of the upgraded database.
q $DB "DROP SCHEMA upgrade_check CASCADE" >/dev/null
snapshot "$TMP/dumped"
"$BIN/pg_dump" -h localhost -p "$PORT" -U postgres -Fc -f "$TMP/db.dump" $DB
q postgres "CREATE DATABASE $RESTORED" >/dev/null
"$BIN/pg_restore" -h localhost -p "$PORT" -U postgres -d $RESTORED --exit-on-error "$TMP/db.dump"
DB_SAVE=$DB; DB=$RESTORED; snapshot "$TMP/restored"; DB=$DB_SAVE
diff -u "$TMP/dumped" "$TMP/restored" >/dev/null || { diff -u "$TMP/dumped" "$TMP/restored" | head -20; fail "pg_restore differs"; }
[ "$(q $RESTORED "SELECT extversion FROM pg_extension WHERE extname = 'kip'")" = "$NEW" ] || fail "restored version"
echo "pg_dump / pg_restore of the upgraded database: identical"

# The same SQL objects as a fresh install.
q postgres "CREATE DATABASE $FRESH" >/dev/null
q $FRESH "CREATE EXTENSION kip CASCADE" >/dev/null
"${PSQL[@]}" -d $FRESH -tA -f tests/upgrade/schema_signature.sql > "$TMP/schema-fresh"
"${PSQL[@]}" -d $DB -tA -f tests/upgrade/schema_signature.sql > "$TMP/schema-upgraded"
if ! diff -u "$TMP/schema-fresh" "$TMP/schema-upgraded" > "$TMP/schema.diff"; then
  cat "$TMP/schema.diff"
  fail "the schema of $OLD + ALTER EXTENSION kip UPDATE differs from a fresh $NEW install (- fresh, + upgraded): add the change to sql/kip--$OLD--$NEW.sql"
fi
echo "schema of $OLD + update = schema of a fresh $NEW install ($(wc -l < "$TMP/schema-fresh") catalog lines)"

# The later releases, 0.2.0 to 0.11.0 -> current: memories unchanged, the
# same schema as a fresh install, and the history at work afterwards.
for OLD2 in 0.2.0 0.3.0 0.4.0 0.5.0 0.6.0 0.7.0 0.8.0 0.9.0 0.10.0 0.11.0; do
DB2=kip_upgrade_test_${OLD2//./}
if [ -w "$EXTDIR" ]; then install -m 644 "sql/releases/kip--$OLD2.sql" "$EXTDIR/"
else sudo install -m 644 "sql/releases/kip--$OLD2.sql" "$EXTDIR/"; fi
q postgres "DROP DATABASE IF EXISTS $DB2" >/dev/null
q postgres "CREATE DATABASE $DB2" >/dev/null
q $DB2 "CREATE EXTENSION kip VERSION '$OLD2' CASCADE" >/dev/null
[ "$(q $DB2 "SELECT extversion FROM pg_extension WHERE extname = 'kip'")" = "$OLD2" ] || fail "$OLD2 not installed"
kip2() { # space, command
  "${PSQL[@]}" -d $DB2 -tA -v space="$1" -v cmd="$2" <<'SQL' | tail -1
SET kip.space = :'space';
SELECT kip_execute(:'cmd');
SQL
}
for space in delta epsilon; do
  out=$(kip2 $space 'UPSERT {
    CONCEPT ?ana { {type: "Person", name: "Ana"} SET ATTRIBUTES { person_class: "Human" } }
    CONCEPT ?tea { {type: "Preference", name: "green tea"} SET ATTRIBUTES { description: "Prefers green tea" }
      SET PROPOSITIONS { ("derived_from", ?ana) } }
  } WITH METADATA { source: "upgrade-test", confidence: 0.8 }')
  echo "$out" | grep -q '"result"' || fail "$OLD2 memories in $space: $out"
done
q $DB2 "SELECT kip_maintenance('*')" >/dev/null
# The new library serves the previous releases' schemas until the update
# (DESIGN §5): keyword search there reads that schema's word index (0.10.0's
# on search_text, 0.11.0's per space).
if [ "$OLD2" = 0.10.0 ] || [ "$OLD2" = 0.11.0 ]; then
  out=$(kip2 epsilon 'SEARCH CONCEPT "green tea" MODE "keyword"')
  echo "$out" | grep -q '"name": "green tea"' || fail "keyword search on the $OLD2 schema with the new library: $out"
  echo "the new library searches the $OLD2 schema before the update"
fi
snapshot2() {
  q $DB2 "SELECT c::text FROM (SELECT id, space, type, name, attributes, metadata, version, created_at, updated_at FROM kip.concepts) c ORDER BY id" > "$1"
  q $DB2 "SELECT p::text FROM (SELECT id, space, subject, predicate, object, attributes, metadata, version, created_at, updated_at FROM kip.propositions) p ORDER BY id" >> "$1"
  # The columns every version has (0.12.0 adds each space's incarnation).
  q $DB2 "SELECT s::text FROM (SELECT name, created_at, bootstrapped_at, capsule_level FROM kip.spaces) s ORDER BY name" >> "$1"
  q $DB2 "SELECT l::text FROM kip.maintenance_log l ORDER BY id" >> "$1"
}
if [ "$OLD2" = 0.10.0 ]; then
  # A session that searched inside an update it then rolled back searches
  # on the schema it is back to (its remembered word statistics described
  # the update's keyed index, and its searches failed for a minute).
  out=$("${PSQL[@]}" -d $DB2 -tA 2>/dev/null <<'SQL' | tail -2
SET kip.space = 'epsilon';
BEGIN;
ALTER EXTENSION kip UPDATE;
SELECT kip_execute('SEARCH CONCEPT "green tea" MODE "keyword"');
ROLLBACK;
SELECT kip_execute('SEARCH CONCEPT "green tea" MODE "keyword"');
SELECT kip_execute('SEARCH CONCEPT "green tea" MODE "keyword"');
SQL
)
  [ "$(echo "$out" | grep -c '"name": "green tea"')" = 2 ] || fail "keyword search after a rolled-back update from $OLD2: $out"
  [ "$(q $DB2 "SELECT extversion FROM pg_extension WHERE extname = 'kip'")" = "$OLD2" ] || fail "the rolled-back update stayed"
  echo "a search after a rolled-back update from $OLD2 reads the schema it is back to"
fi
snapshot2 "$TMP/before2"
q $DB2 "ALTER EXTENSION kip UPDATE" >/dev/null
q $DB2 "ALTER EXTENSION kip UPDATE" >/dev/null
[ "$(q $DB2 "SELECT extversion FROM pg_extension WHERE extname = 'kip'")" = "$NEW" ] || fail "not at $NEW after the update from $OLD2"
snapshot2 "$TMP/after2"
diff -u "$TMP/before2" "$TMP/after2" >/dev/null || { diff -u "$TMP/before2" "$TMP/after2" | head -20; fail "ALTER EXTENSION from $OLD2 changed stored data"; }
echo "ALTER EXTENSION kip UPDATE $OLD2 -> $NEW (twice): every element, version and timestamp unchanged"
"${PSQL[@]}" -d $DB2 -tA -f tests/upgrade/schema_signature.sql > "$TMP/schema-upgraded2"
if ! diff -u "$TMP/schema-fresh" "$TMP/schema-upgraded2" > "$TMP/schema2.diff"; then
  cat "$TMP/schema2.diff"
  fail "the schema of $OLD2 + ALTER EXTENSION kip UPDATE differs from a fresh $NEW install (- fresh, + upgraded): add the change to sql/kip--$OLD2--$NEW.sql"
fi
echo "schema of $OLD2 + update = schema of a fresh $NEW install"
# The new objects work on the upgraded database: a change is recorded.
out=$(kip2 delta 'UPSERT { CONCEPT ?ana { {type: "Person", name: "Ana"} SET ATTRIBUTES { person_class: "AI" } } }')
echo "$out" | grep -q '"result"' || fail "write after the update: $out"
[ "$(q $DB2 "SELECT count(*) FROM kip.history WHERE space = 'delta' AND operation = 'update' AND command_hash IS NOT NULL")" = 1 ] \
  || fail "no history row for a change after the update from $OLD2"
echo "after the update from $OLD2: changes are recorded in kip.history"
# Keyword search reads the keyword indexes of the current release.
out=$(kip2 epsilon 'SEARCH CONCEPT "green tea" MODE "keyword"')
echo "$out" | grep -q '"name": "green tea"' || fail "keyword search after the update from $OLD2: $out"
out=$(kip2 epsilon 'SEARCH PROPOSITION "derived" MODE "keyword"')
echo "$out" | grep -q '"predicate": "derived_from"' || fail "keyword search of links after the update from $OLD2: $out"
echo "after the update from $OLD2: keyword search finds concepts and links"
q postgres "DROP DATABASE IF EXISTS $DB2" >/dev/null
done

# Privileges across the update, from 0.11.0, in a database of its own
# (dropped before its roles: pg_init_privs keeps the roles of grants an
# update script saw): an administrator's deliberate grant, passed on by
# its grantee, stays; what the default privileges of the role that
# installed 0.11.0 granted on its tables and sequences is taken back.
PRIV=kip_upgrade_privileges
q postgres "DROP DATABASE IF EXISTS $PRIV" >/dev/null
q postgres "CREATE DATABASE $PRIV" >/dev/null
q $PRIV "DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_upgrade_auditor') THEN CREATE ROLE kip_upgrade_auditor; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_upgrade_deputy') THEN CREATE ROLE kip_upgrade_deputy; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_upgrade_outsider') THEN CREATE ROLE kip_upgrade_outsider; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kip_upgrade_analyst') THEN CREATE ROLE kip_upgrade_analyst; END IF; END \$\$" >/dev/null
q $PRIV "ALTER DEFAULT PRIVILEGES GRANT SELECT, TRUNCATE ON TABLES TO kip_upgrade_outsider; ALTER DEFAULT PRIVILEGES GRANT ALL ON SEQUENCES TO kip_upgrade_outsider" >/dev/null
q $PRIV "CREATE EXTENSION kip VERSION '0.11.0' CASCADE" >/dev/null
[ "$(q $PRIV "SELECT has_table_privilege('kip_upgrade_outsider', 'kip.history', 'TRUNCATE')")" = t ] \
  || fail "the 0.11.0 install did not take the default privileges (the check below would prove nothing)"
q $PRIV "GRANT USAGE ON SCHEMA kip TO kip_upgrade_auditor; GRANT SELECT ON kip.concepts TO kip_upgrade_auditor WITH GRANT OPTION" >/dev/null
q $PRIV "SET ROLE kip_upgrade_auditor; GRANT SELECT ON kip.concepts TO kip_upgrade_deputy" >/dev/null
# A grant by hand after the install, to a role the default privileges
# name only later (a reporting role's own tables, say), is no default's.
q $PRIV "GRANT USAGE ON SCHEMA kip TO kip_upgrade_analyst; GRANT SELECT ON kip.facts TO kip_upgrade_analyst" >/dev/null
q $PRIV "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO kip_upgrade_analyst" >/dev/null
q $PRIV "ALTER EXTENSION kip UPDATE" >/dev/null
[ "$(q $PRIV "SELECT has_table_privilege('kip_upgrade_analyst', 'kip.facts', 'SELECT')")" = t ] \
  || fail "the update took back a grant made by hand to a role default privileges name"
q $PRIV "ALTER DEFAULT PRIVILEGES REVOKE SELECT ON TABLES FROM kip_upgrade_analyst" >/dev/null
[ "$(q $PRIV "SELECT has_table_privilege('kip_upgrade_deputy', 'kip.concepts', 'SELECT')")" = t ] \
  || fail "the update took back an administrator's grant"
[ "$(q $PRIV "SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a WHERE c.relnamespace = 'kip'::regnamespace AND a.grantee = 'kip_upgrade_outsider'::regrole")" = 0 ] \
  || fail "the update left grants of default privileges on kip's tables"
q postgres "DROP DATABASE IF EXISTS $PRIV" >/dev/null
q postgres "DROP ROLE kip_upgrade_outsider, kip_upgrade_deputy, kip_upgrade_auditor, kip_upgrade_analyst" >/dev/null
echo "ALTER EXTENSION kip UPDATE keeps an administrator's grants and takes back those of default privileges"

# A database that is not UTF8: the current release refuses to install
# there, and one an earlier release was installed in answers every command
# with the reason (its names outside ASCII failed or were stored garbled).
LATIN=kip_upgrade_latin1
q postgres "DROP DATABASE IF EXISTS $LATIN" >/dev/null
q postgres "CREATE DATABASE $LATIN ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0" >/dev/null
out=$(q $LATIN "CREATE EXTENSION kip CASCADE" 2>&1 || true)
echo "$out" | grep -q 'kip needs a UTF8 database; this one is LATIN1' || fail "CREATE EXTENSION in a LATIN1 database: $out"
[ "$(q $LATIN "SELECT count(*) FROM pg_extension WHERE extname = 'kip'")" = 0 ] || fail "kip installed in a LATIN1 database"
q $LATIN "CREATE EXTENSION kip VERSION '0.11.0' CASCADE" >/dev/null
out=$(q $LATIN "SELECT kip_execute('FIND(?p) WHERE { ?p {type: \"Person\"} }')")
echo "$out" | grep -q '"code": "KIP_4003".*kip needs a UTF8 database' || fail "kip_execute in a LATIN1 database: $out"
q postgres "DROP DATABASE IF EXISTS $LATIN" >/dev/null
echo "a LATIN1 database: CREATE EXTENSION refused, an earlier install answers KIP_4003 naming the encoding"

# Before ALTER EXTENSION kip UPDATE, kip keeps the caller's search_path
# (an older schema's objects may need it), so its keyword SEARCH must run
# as the caller, not as the tables' owner: a function a role plants in a
# schema on its own path runs with that role's rights only.
PLANT=kip_upgrade_planted
q postgres "DROP DATABASE IF EXISTS $PLANT" >/dev/null
q postgres "CREATE DATABASE $PLANT" >/dev/null
q $PLANT "CREATE EXTENSION kip VERSION '0.11.0' CASCADE" >/dev/null
role="kip_planter_$$"
q postgres "DROP ROLE IF EXISTS $role" >/dev/null
q postgres "CREATE ROLE $role LOGIN IN ROLE kip_reader" >/dev/null
"${PSQL[@]}" -d $PLANT >/dev/null <<SQL
SET kip.space = 'planted';
SELECT kip_execute('UPSERT { CONCEPT ?p { {type: "Person", name: "Ana"} SET ATTRIBUTES { person_class: "Human" } } }');
SELECT kip_grant('planted', '$role', 'read');
CREATE SCHEMA planted;
CREATE TABLE planted.runs (who text);
GRANT USAGE ON SCHEMA planted TO PUBLIC;
GRANT INSERT ON planted.runs TO PUBLIC;
CREATE FUNCTION planted.lower(t text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO planted.runs VALUES (current_user); RETURN pg_catalog.lower(t); END \$\$;
SQL
"${PSQL[@]}" -d $PLANT -U $role >/dev/null <<'SQL'
SET search_path = planted, pg_catalog;
SET kip.space = 'planted';
SELECT public.kip_execute_readonly('SEARCH CONCEPT "Ana" MODE "keyword"');
SQL
runs=$(q $PLANT "SELECT string_agg(DISTINCT who, ',') FROM planted.runs")
[ "$runs" = "$role" ] || fail "a function planted on a reader's path ran as: ${runs:-nobody} (expected $role alone) on the 0.11.0 schema"
q postgres "DROP DATABASE IF EXISTS $PLANT" >/dev/null
q postgres "DROP ROLE IF EXISTS $role" >/dev/null
echo "on the 0.11.0 schema, keyword SEARCH runs as the caller: a planted function runs with the reader's rights only"

for db in $DB $FRESH $RESTORED; do q postgres "DROP DATABASE IF EXISTS $db" >/dev/null; done
echo "upgrade test passed"
