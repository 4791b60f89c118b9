# A small tools image for job Pods in tests and examples: Debian's static busybox, one link per
# applet, and a passwd/group that name root and the non-root user 65532 the Pods run as.
image_tools() {
    [ -x /usr/bin/busybox ] && ! ldd /usr/bin/busybox >/dev/null 2>&1 || echo busybox-static
}

image_inputs() {
    sha256sum </usr/bin/busybox
}

image_build() { # image_build ARCHIVE REF WORK
    local archive=$1 ref=$2 work=$3 rootfs=$3/rootfs applet
    mkdir -p "$rootfs"/{bin,etc,tmp,proc,sys,dev,home/nonroot,root}
    cp /usr/bin/busybox "$rootfs/bin/busybox"
    for applet in $(/usr/bin/busybox --list); do
        [ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"
    done
    chmod 1777 "$rootfs/tmp"
    chmod 700 "$rootfs/root"
    chown 65532:65532 "$rootfs/home/nonroot"
    printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' \
        'nonroot:x:65532:65532:nonroot:/home/nonroot:/bin/sh' >"$rootfs/etc/passwd"
    printf '%s\n' 'root:x:0:' 'nonroot:x:65532:' >"$rootfs/etc/group"
    oci_write "$rootfs" "$archive" "$ref" --cmd '["sh"]'
}
