# Shared by the recipes built from the project's Dockerfiles (runner, operator): buildah builds
# the Dockerfile unchanged, FROM the local Python base (its PYTHON_IMAGE argument), in a context
# copied from the files git tracks, so untracked junk never enters an image or its key. buildah's
# storage is under the cache (--root/--runroot): nothing machine-wide changes. Source it.
IMAGE_NEEDS=(python)
BUILDAH_DIR="$IMAGE_CACHE/buildah"
# The image a Dockerfile builds FROM, and the build argument naming it (a recipe may change
# both, as recipes/examples.sh does: FROM the runner image).
BASE_IMAGE=python
BASE_ARG=PYTHON_IMAGE

image_tools() {
    command -v buildah >/dev/null || echo buildah
    # buildah's RUN steps need an OCI runtime; Debian's buildah does not pull one in.
    command -v runc >/dev/null || command -v crun >/dev/null || echo runc
    command -v git >/dev/null || echo git
}

# The tracked files a Dockerfile build can see (.dockerignore narrows it to these anyway).
context_files() {
    git -C "$REPO_ROOT" ls-files -z -- .dockerignore requirements.lock pyproject.toml README.md src "$DOCKERFILE" |
        while IFS= read -r -d '' file; do
            [ -f "$REPO_ROOT/$file" ] && printf '%s\0' "$file"
        done
}

image_inputs() {
    cat "$IMAGES_DIR/dockerfile.sh"
    # contents as they are in the work tree, so an uncommitted edit is built (and keyed)
    (cd "$REPO_ROOT" && context_files | LC_ALL=C sort -z | xargs -0 sha256sum)
}

run_buildah() {
    buildah --root "$BUILDAH_DIR/storage" --runroot "$BUILDAH_DIR/run" \
        --storage-driver "${SUNDIAL_BUILDAH_DRIVER:-overlay}" "$@"
}

dockerfile_build() { # dockerfile_build ARCHIVE REF WORK
    local archive=$1 ref=$2 work=$3 base mounts=()
    base=$(ref "$BASE_IMAGE")
    mkdir -p "$work/context" "$BUILDAH_DIR"
    (cd "$REPO_ROOT" && context_files | tar --null -T - -cf -) | tar -xf - -C "$work/context"
    # A TLS-intercepting proxy's CA, and pip's setting that trusts it, must reach the RUN pip
    # install step; bind them read-only where the host has them (docs/adr/0018).
    [ -d /etc/ssl/certs ] && mounts+=(-v /etc/ssl/certs:/etc/ssl/certs:ro)
    [ -f /etc/pip.conf ] && mounts+=(-v /etc/pip.conf:/etc/pip.conf:ro)
    # one buildah build at a time: they share the storage, and the clean-up below is global
    exec 7>"$IMAGE_CACHE/locks/buildah.lock"
    flock 7
    local status=0 stale
    run_buildah pull -q "oci-archive:$(archive_of "$BASE_IMAGE")" >/dev/null &&
        run_buildah bud --quiet --pull=never --network host --layers=false "${mounts[@]}" \
            --build-arg "$BASE_ARG=$base" -f "$DOCKERFILE" -t "$ref" "$work/context" \
            >"$work/build.log" 2>&1 &&
        run_buildah push -q "$ref" "oci-archive:$archive:$ref" >/dev/null &&
        "$PYTHON" "$OCI_WRITER" "$archive" --rename --name "$ref" || status=$?
    # temporary containers and the built image go, even after a failure; the base stays in
    # buildah's storage, so the next build skips most of its pull
    run_buildah rm --all >/dev/null 2>&1 || true
    run_buildah rmi "$ref" >/dev/null 2>&1 || true
    [ "$BASE_IMAGE" = python ] || run_buildah rmi "$base" >/dev/null 2>&1 || true
    # Python bases of earlier keys are never built on again
    for stale in $(run_buildah images --format '{{.Name}}:{{.Tag}}' | grep '^localhost/sundial/python:' | grep -vxF "$base"); do
        run_buildah rmi "$stale" >/dev/null 2>&1 || true
    done
    exec 7>&-
    if [ "$status" != 0 ]; then
        [ -f "$work/build.log" ] && tail -30 "$work/build.log" >&2
        say "building $DOCKERFILE with buildah failed (rc $status)"
        return "$status"
    fi
}

image_build() { dockerfile_build "$@"; }
