-- kip 0.6.0 -> 0.7.0.

-- issue 11: performance (roles that are not superusers)
--
-- kip.is_admin() and kip.granted_spaces(text[]) in C instead of SQL. Every
-- row-level security policy calls them, and an SQL function with
-- SET search_path is never inlined: its body (a query on pg_roles, and one on
-- kip.space_grants joined to pg_roles) was parsed and planned again in every
-- statement on kip's tables, two thirds of a small kip_execute call for a
-- role that is not a superuser. The C functions answer the same from
-- Postgres's cached role membership (has_privs_of_role, what
-- pg_has_role(..., 'USAGE') asks) and one read of the caller's roles' grants
-- in kip.space_grants on a plan saved per backend
-- (src/governance/privileges.rs). CREATE OR REPLACE keeps
-- the functions' identity, so the policies that call them are untouched, and
-- drops the SQL functions' SET search_path (the C functions name every object
-- with its schema).
CREATE OR REPLACE FUNCTION kip.is_admin() RETURNS boolean
LANGUAGE c STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'kip_is_admin';
CREATE OR REPLACE FUNCTION kip.granted_spaces(p_privileges text[]) RETURNS text[]
LANGUAGE c STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'kip_granted_spaces';
