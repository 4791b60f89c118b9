#!/bin/sh
# The PostgreSQL image's entrypoint (hack/images/recipes/postgres.sh): on first start it
# initialises PGDATA from the environment, then runs postgres in the foreground as the image's
# user (999) so the container's lifetime is the server's.
#
# The environment follows the official postgres image, so a manifest works with either:
#   POSTGRES_PASSWORD          the superuser's password; clients on the Pod network log in
#                              with it (scram-sha-256). Required, unless
#   POSTGRES_HOST_AUTH_METHOD  is "trust": anyone who reaches port 5432 is let in without a
#                              password (only for a throwaway test database).
#   POSTGRES_USER              the superuser's name (default postgres)
#   POSTGRES_DB                a database created for it (default: the user's name)
#   PGDATA                     default /var/lib/postgresql/data/pgdata: mount the volume at
#                              /var/lib/postgresql/data (a mount point cannot be chmod 700)
# With a read-only root filesystem, mount an emptyDir at /tmp too: the socket lives there.
# The data directory is only initialised when empty; an existing one is never touched.
set -eu
bin=/usr/lib/postgresql/15/bin
: "${PGDATA:=/var/lib/postgresql/data/pgdata}"
user=${POSTGRES_USER:-postgres}
database=${POSTGRES_DB:-$user}

fail() {
    echo "sundial-postgres: $*" >&2
    exit 2
}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -n "${POSTGRES_PASSWORD:-}" ]; then
        method=scram-sha-256
    elif [ "${POSTGRES_HOST_AUTH_METHOD:-}" = trust ]; then
        method=trust
    else
        fail "set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust for a throwaway database"
    fi
    for name in "$user" "$database"; do
        case $name in
        '' | [0-9]* | *[!a-zA-Z0-9_]*)
            fail "POSTGRES_USER/POSTGRES_DB '$name' must be letters, digits and _ (not first a digit)"
            ;;
        esac
    done
    mkdir -p "$PGDATA"
    chmod 700 "$PGDATA" || fail "cannot chmod 700 $PGDATA: mount the volume on its parent"
    password_file=
    if [ "$method" != trust ]; then
        password_file=$(mktemp)
        printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
    fi
    "$bin/initdb" --pgdata="$PGDATA" --username="$user" --encoding=UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host="$method" ${password_file:+--pwfile="$password_file"} \
        >/dev/null
    [ -z "$password_file" ] || rm -f "$password_file"
    printf 'host all all 0.0.0.0/0 %s\nhost all all ::/0 %s\n' "$method" "$method" \
        >>"$PGDATA/pg_hba.conf"
    if [ "$database" != postgres ]; then
        echo "CREATE DATABASE \"$database\" OWNER \"$user\"" |
            "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
    fi
    echo "sundial-postgres: initialised $PGDATA (user $user, database $database, auth $method)" >&2
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp \
    -c jit=off "$@"
