# The operator image: operator/Dockerfile, unchanged (see hack/images/dockerfile.sh).
DOCKERFILE=operator/Dockerfile
. "$IMAGES_DIR/dockerfile.sh"
