#!/bin/sh
# Runs once, when the PostgreSQL container initialises an empty data directory
# (docker-entrypoint-initdb.d). One login role and one schema per service, each schema owned by
# its service's role and closed to everyone else, so a service can read and write only its own
# event store. Schema names are the event-store library's (`clipyard_<service token>`); the
# services create them too if missing (CREATE SCHEMA IF NOT EXISTS), which then is a no-op.
#
# Needs POSTGRES_USER, POSTGRES_DB and CLIPYARD_PG_PASSWORD_<SERVICE> for each service
# (docker-compose.yml passes them; `just compose-env` generates them into .env).
set -eu

for service in gateway realizer supervisor controller credentials; do
    variable="CLIPYARD_PG_PASSWORD_$(printf '%s' "$service" | tr '[:lower:]' '[:upper:]')"
    password=$(printenv "$variable" || true)
    if [ -z "$password" ]; then
        echo "clipyard: $variable is not set" >&2
        exit 1
    fi
    psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
        -v role="clipyard_$service" -v schema="clipyard_$service" -v password="$password" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', :'role', :'password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'role') \gexec
CREATE SCHEMA IF NOT EXISTS :"schema" AUTHORIZATION :"role";
REVOKE ALL ON SCHEMA :"schema" FROM PUBLIC;
-- CREATE: the services run CREATE SCHEMA IF NOT EXISTS at start, which PostgreSQL checks
-- against the database even when the schema exists. Other schemas stay closed to the role.
GRANT CONNECT, CREATE ON DATABASE :"DBNAME" TO :"role";
SQL
done

# git-credentials' key vault lives in a schema of its own (so it can forget: VACUUM FULL after a
# secret's keys are destroyed), owned by git-credentials' role and closed to everyone else.
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
CREATE SCHEMA IF NOT EXISTS git_credentials_vault AUTHORIZATION clipyard_credentials;
REVOKE ALL ON SCHEMA git_credentials_vault FROM PUBLIC;
SQL

# Nobody but the owner creates anything in the public schema (PostgreSQL 15's default, made explicit).
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -c 'REVOKE CREATE ON SCHEMA public FROM PUBLIC'
