# The Python base the runner and operator Dockerfiles build FROM (their PYTHON_IMAGE argument):
# Debian bookworm minbase with python3, venv and the `python` command the Dockerfiles call
# (python:3.11-slim has it; Debian's python3 alone does not), made by debootstrap and slimmed
# (hack/images/debian.sh). With Docker and a registry the same Dockerfiles build from
# python:3.11-slim-bookworm instead.
. "$IMAGES_DIR/debian.sh"
PYTHON_PACKAGES=python3,python3-venv,python-is-python3

image_tools() {
    command -v debootstrap >/dev/null || echo debootstrap
}

image_inputs() {
    debian_inputs "$PYTHON_PACKAGES"
}

image_build() { # image_build ARCHIVE REF WORK
    local archive=$1 ref=$2 rootfs=$3/rootfs
    debian_rootfs "$rootfs" "$PYTHON_PACKAGES"
    debian_slim "$rootfs"
    oci_write "$rootfs" "$archive" "$ref" --cmd '["python3"]' --env LANG=C.UTF-8
}
