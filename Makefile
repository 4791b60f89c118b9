# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: test demo lint unit integration cluster realnode e2e clean venv images dist lock chart-readme

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

## Sundial on a local Kubernetes cluster: PostgreSQL, the cluster, the chart, the operator and a
## runner, examples/demo applied and shown live; Ctrl-C removes it all. The first run builds the
## cluster's binaries (12-18 min, once). DEMO_ARGS: --kube-context=NAME, --until-first-runs, --seconds N.
demo: $(VENV)/.installed
	hack/ensure-postgres
	$(PY) -m sundial.localdev.demo $(DEMO_ARGS)

## The whole suite, as CI runs it: lint, types, layers and every test tier, e2e/ last. The
## cluster tier runs with lint, unit and integration beside it (hack/test-tiers says why).
test: $(VENV)/.installed
	hack/ensure-postgres
	hack/ensure-redis
	hack/ensure-promtool
	PY=$(PY) MAKE=$(MAKE) hack/test-tiers

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench e2e
	$(VENV)/bin/ruff format --check src tests bench e2e
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

unit: $(VENV)/.installed
	$(PY) -m pytest tests/unit

integration: $(VENV)/.installed
	hack/ensure-postgres
	hack/ensure-redis
	$(PY) -m pytest tests/integration

cluster: $(VENV)/.installed
	hack/ensure-promtool
	$(PY) -m pytest tests/cluster

## The real-node tier alone (root; packages and images are set up by the tests themselves).
realnode: $(VENV)/.installed
	hack/ensure-postgres
	$(PY) -m pytest tests/cluster/realnode

## The user stories end to end (e2e/): the local cluster with its real node, the chart, kubectl
## only (root; skips saying what is missing). SUNDIAL_E2E_KUBECONFIG=path|current: your cluster.
e2e: $(VENV)/.installed
	$(PY) -m pytest e2e --durations=10

## The container images (pause, busybox, python, postgres, runner, operator) as OCI archives,
## built here without a registry and cached by content; prints the path of an env file naming them.
images:
	hack/images/build $(IMAGES)

## A release into dist/: wheel and sdist, the chart packaged with the project's version, the
## operator and runner images as OCI archives with their digests, an SBOM, SHA256SUMS.
## DIST_ARGS: --no-images.
dist: $(VENV)/.installed
	$(PY) -m sundial.localdev.dist $(DIST_ARGS)

## requirements.lock from pyproject.toml: every run-time package and the build backend, pinned
## with the hashes of their files, which the images install from (--require-hashes), and the
## redis extra (the hot queue: a runner or operator given --hot-queue-url needs it). Run it
## after changing a dependency (LOCK_ARGS=--upgrade: every pin to its newest); pip-tools lives in
## a venv of its own under ~/.cache.
LOCK_TOOLS ?= $(HOME)/.cache/sundial/pip-tools-7.7.0
lock:
	test -x $(LOCK_TOOLS)/bin/pip-compile || { $(PYTHON) -m venv $(LOCK_TOOLS) && $(LOCK_TOOLS)/bin/pip install -q pip-tools==7.7.0; }
	CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_TOOLS)/bin/pip-compile --quiet $(LOCK_ARGS) --extra redis \
		--generate-hashes --strip-extras --allow-unsafe --all-build-deps \
		--no-emit-index-url --no-emit-find-links --output-file requirements.lock pyproject.toml

## charts/sundial/README.md's table of every value, from values.yaml and its `# --` comments
## (a unit test fails while it is stale).
chart-readme: $(VENV)/.installed
	$(PY) -m sundial.localdev.chart_readme

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
