# The example handlers' image: examples/handlers/Dockerfile, FROM the runner image, with
# examples/handlers/*.py in /app and SUNDIAL_HANDLERS naming them. It is how a user builds a
# handler image, and what the demo, the e2e tests and the chart's runner run locally (the
# runner image alone registers no handler). Built by buildah like runner/operator.
DOCKERFILE=examples/handlers/Dockerfile
. "$IMAGES_DIR/dockerfile.sh"
IMAGE_NEEDS=(runner)
BASE_IMAGE=runner
BASE_ARG=RUNNER_IMAGE

# Only the handlers' directory is the build context (the Dockerfile's COPY paths are in it).
context_files() {
    git -C "$REPO_ROOT" ls-files -z -- examples/handlers |
        while IFS= read -r -d '' file; do
            [ -f "$REPO_ROOT/$file" ] && printf '%s\0' "$file"
        done
}
