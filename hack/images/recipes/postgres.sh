# PostgreSQL 15 from Debian's package for in-cluster use (the chart's optional database, the
# e2e tests): a debootstrap minbase with postgresql-15, the Debian postgres user renumbered to
# 999:999 (Pods are runAsNonRoot and check a numeric UID), and hack/images/postgres-entrypoint.sh
# as the entrypoint (its header says which environment it reads). Keyed like the Python base.
. "$IMAGES_DIR/debian.sh"
POSTGRES_PACKAGES=postgresql-15
POSTGRES_UID=999

image_tools() {
    command -v debootstrap >/dev/null || echo debootstrap
}

image_inputs() {
    debian_inputs "$POSTGRES_PACKAGES"
    cat "$IMAGES_DIR/postgres-entrypoint.sh"
}

image_build() { # image_build ARCHIVE REF WORK
    local archive=$1 ref=$2 rootfs=$3/rootfs old_uid old_gid
    debian_rootfs "$rootfs" "$POSTGRES_PACKAGES"
    # the package's postinst made a cluster and a TLS key: an image must ship neither
    rm -rf "$rootfs"/var/lib/postgresql/15 "$rootfs"/etc/postgresql/15 \
        "$rootfs"/etc/ssl/private/ssl-cert-snakeoil.key "$rootfs"/etc/ssl/certs/ssl-cert-snakeoil.pem
    # JIT compilation (llvmjit.so and the LLVM it loads, 170 MB of 370) is off in the image:
    # short test queries gain nothing from it. The server itself does not link LLVM.
    rm -rf "$rootfs"/usr/lib/postgresql/15/lib/llvmjit* "$rootfs"/usr/lib/postgresql/15/lib/bitcode \
        "$rootfs"/usr/lib/x86_64-linux-gnu/libLLVM-* "$rootfs"/usr/lib/x86_64-linux-gnu/libz3.so* \
        "$rootfs"/usr/share/i18n
    # Perl beyond perl-base serves only postgresql-common's wrappers (pg_ctlcluster ...), which
    # the entrypoint does not use: 45 MB
    rm -rf "$rootfs"/usr/lib/x86_64-linux-gnu/perl "$rootfs"/usr/share/perl \
        "$rootfs"/usr/lib/x86_64-linux-gnu/libperl.so*
    chroot "$rootfs" /usr/lib/postgresql/15/bin/postgres --version >/dev/null ||
        die "postgres does not start in the slimmed root filesystem"
    old_uid=$(awk -F: '$1 == "postgres" { print $3 }' "$rootfs/etc/passwd")
    old_gid=$(awk -F: '$1 == "postgres" { print $3 }' "$rootfs/etc/group")
    [ -n "$old_uid" ] && [ -n "$old_gid" ] || die "postgresql-15 created no postgres user"
    sed -i "s/^postgres:x:$old_uid:$old_gid:/postgres:x:$POSTGRES_UID:$POSTGRES_UID:/" "$rootfs/etc/passwd"
    sed -i "s/^postgres:x:$old_gid:/postgres:x:$POSTGRES_UID:/" "$rootfs/etc/group"
    find "$rootfs" -xdev -uid "$old_uid" -exec chown -h "$POSTGRES_UID" {} +
    find "$rootfs" -xdev -gid "$old_gid" -exec chgrp -h "$POSTGRES_UID" {} +
    debian_slim "$rootfs"
    install -m 0755 "$IMAGES_DIR/postgres-entrypoint.sh" "$rootfs/usr/local/bin/sundial-postgres"
    install -d -m 0755 -o "$POSTGRES_UID" -g "$POSTGRES_UID" "$rootfs/var/lib/postgresql/data"
    oci_write "$rootfs" "$archive" "$ref" --entrypoint '["/usr/local/bin/sundial-postgres"]' \
        --user "$POSTGRES_UID:$POSTGRES_UID" --stop-signal SIGINT \
        --env LANG=C.UTF-8 --env PGDATA=/var/lib/postgresql/data/pgdata --env PGHOST=/tmp \
        --env PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
}
