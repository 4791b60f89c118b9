# The runner image: runner/Dockerfile, unchanged (see hack/images/dockerfile.sh).
DOCKERFILE=runner/Dockerfile
. "$IMAGES_DIR/dockerfile.sh"
