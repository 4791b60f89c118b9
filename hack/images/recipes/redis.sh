# Redis from Debian's package for in-cluster use (the chart's optional bundled Redis for the
# hot queue, the e2e tests): a debootstrap minbase with redis-server, the Debian redis user
# renumbered to 999:999 (Pods are runAsNonRoot and check a numeric UID), a /data directory it
# owns, and redis-server as the command (the chart passes every setting as an argument: no
# configuration file). Keyed like the Python base.
. "$IMAGES_DIR/debian.sh"
REDIS_PACKAGES=redis-server
REDIS_UID=999

image_tools() {
    command -v debootstrap >/dev/null || echo debootstrap
}

image_inputs() {
    debian_inputs "$REDIS_PACKAGES"
}

image_build() { # image_build ARCHIVE REF WORK
    local archive=$1 ref=$2 rootfs=$3/rootfs old_uid old_gid
    debian_rootfs "$rootfs" "$REDIS_PACKAGES"
    # the package's own configuration and service files serve a host install, not this image
    rm -rf "$rootfs"/etc/redis "$rootfs"/var/lib/redis "$rootfs"/var/log/redis
    chroot "$rootfs" /usr/bin/redis-server --version >/dev/null ||
        die "redis-server does not start in the root filesystem"
    old_uid=$(awk -F: '$1 == "redis" { print $3 }' "$rootfs/etc/passwd")
    old_gid=$(awk -F: '$1 == "redis" { print $3 }' "$rootfs/etc/group")
    [ -n "$old_uid" ] && [ -n "$old_gid" ] || die "redis-server created no redis user"
    sed -i "s/^redis:x:$old_uid:$old_gid:/redis:x:$REDIS_UID:$REDIS_UID:/" "$rootfs/etc/passwd"
    sed -i "s/^redis:x:$old_gid:/redis:x:$REDIS_UID:/" "$rootfs/etc/group"
    find "$rootfs" -xdev -uid "$old_uid" -exec chown -h "$REDIS_UID" {} +
    find "$rootfs" -xdev -gid "$old_gid" -exec chgrp -h "$REDIS_UID" {} +
    debian_slim "$rootfs"
    install -d -m 0755 -o "$REDIS_UID" -g "$REDIS_UID" "$rootfs/data"
    oci_write "$rootfs" "$archive" "$ref" --cmd '["redis-server"]' \
        --user "$REDIS_UID:$REDIS_UID" --env LANG=C.UTF-8
}
