# Shared by the recipes that start from Debian (python, postgres): a debootstrap minbase root
# filesystem, slimmed the way python:3.11-slim is. Source it; it defines functions only.
DEBIAN_SUITE=bookworm
DEBIAN_MIRROR=${SUNDIAL_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# What a Debian image is made from: suite, package list and this file. The mirror is not
# an input (every mirror serves the same suite); debootstrap output is not bit-for-bit
# repeatable, so a key is built once per machine and then reused.
debian_inputs() { # debian_inputs PACKAGES
    echo "debootstrap --variant=minbase --include=$1 $DEBIAN_SUITE"
    cat "$IMAGES_DIR/debian.sh"
}

debian_rootfs() { # debian_rootfs ROOTFS PACKAGES: debootstrap, quietly (its log on failure)
    local rootfs=$1 packages=$2
    if ! debootstrap --variant=minbase --include="$packages" "$DEBIAN_SUITE" "$rootfs" \
        "$DEBIAN_MIRROR" >"$rootfs.log" 2>&1; then
        tail -20 "$rootfs.log" >&2
        say "debootstrap $DEBIAN_SUITE failed (mirror $DEBIAN_MIRROR; set SUNDIAL_DEBIAN_MIRROR)"
        return 1
    fi
}

# Drops what a container never reads: docs, man pages, locales, apt's caches and lists, logs,
# bytecode (python:slim ships none either), and the build host's identity and resolver.
debian_slim() { # debian_slim ROOTFS
    local rootfs=$1
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin \
        "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
        "$rootfs"/usr/share/locale/* "$rootfs"/usr/share/info/* "$rootfs"/var/log/* \
        "$rootfs"/dev/* "$rootfs"/tmp/* "$rootfs"/var/cache/debconf/*-old \
        "$rootfs"/var/lib/dpkg/*-old "$rootfs"/etc/machine-id "$rootfs"/etc/hostname
    find "$rootfs" -name __pycache__ -prune -exec rm -rf {} +
    : >"$rootfs/etc/resolv.conf"
}
