# The sandbox image: hack/images/pause.c, linked statically, as /pause, run as 65535.
image_tools() {
    command -v gcc >/dev/null || echo gcc
    command -v strip >/dev/null || echo binutils
    [ -e "$(gcc -print-file-name=libc.a 2>/dev/null)" ] || echo libc6-dev
}

image_inputs() {
    cat "$IMAGES_DIR/pause.c"
    gcc --version | head -1
}

image_build() { # image_build ARCHIVE REF WORK
    local archive=$1 ref=$2 work=$3
    mkdir -p "$work/rootfs"
    gcc -Os -static -o "$work/rootfs/pause" "$IMAGES_DIR/pause.c"
    strip "$work/rootfs/pause"
    oci_write "$work/rootfs" "$archive" "$ref" --entrypoint '["/pause"]' --user 65535:65535
}
