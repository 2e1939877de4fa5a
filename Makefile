# fleetops.registration: the main job, the tests and the lab.
#   make demo              join the lab's members into its hub (builds and starts the lab if needed)
#   make test              everything CI runs: unit, sanity, lint (ansible-lint and antsibull-docs), changelog, lab proof
#                          tests, integration tests, molecule scenarios on the current ansible-core (.venv), and
#                          sanity, lint and unit on the oldest ansible-core meta/runtime.yml claims (.venv-oldest: make oldest)
#   make lab-up MEMBERS=N [HUBS=2]  | make lab-status | make lab-down   (HUBS=2: a second hub, hub2)
#   make bench             fleet-size benchmark on a 12-member lab of its own: re-run, joins, memory, 100 hub
#                          clusters against targets (docs/performance.md; not part of make test)
#   make stress-rejoin N=20  leave and join one member N times on a lab of its own, reporting each check-in
#   make kind-demo         the demo on kind clusters (needs kind and Docker; not part of make test)
#   make test-mutations    mutation check of the decision code with cosmic-ray (docs/testing.md; not part of make test)
#   make changelog         CHANGELOG.rst from the changelog fragments (make test checks it is current)

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
MEMBERS ?= 2
HUBS ?= 1
# The virtualenvs' Pythons: hack/controller-python.sh finds them (python3.N on PATH, python3, or under pyenv, active
# or not) and fails naming what to install. The main virtualenv gets the newest Python 3.12-3.14 (ansible-core 2.20
# and later need 3.12 or newer on the controller), the oldest one the oldest Python 3.11-3.13 its ansible-core
# supports, so both ends of the range run. PYTHON=/path/to/python3.N (and PYTHON_OLDEST=...) choose them instead.
PYTHON ?=
PYTHON_OLDEST ?=
VENV := $(CURDIR)/.venv
VENV_OLDEST := $(CURDIR)/.venv-oldest
PY := $(VENV)/bin/python
LAB := PYTHONPATH=$(CURDIR)/lab $(PY) -m fleetlab
COLLECTIONS := $(CURDIR)/.cache/collections
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
# The lab's state directory; FLEETOPS_LAB_DIR moves it (the lab honours it too), e.g. for a second lab.
LAB_DIR := $(or $(FLEETOPS_LAB_DIR),$(CURDIR)/.lab)
export PATH := $(LAB_DIR)/bin:$(VENV)/bin:$(PATH)

.PHONY: demo test venv venv-oldest oldest sanity-oldest lint-oldest unit-oldest collection stress-rejoin soak soak-ci molecule ee-context kind-demo kind-down changelog changelog-lint changelog-check docs-lint lab-build lab-up lab-status lab-down bench unit sanity lint lab-tests test-mutations

# make_venv DIR REQUIREMENTS MIN MAX newest|oldest PYTHON: a virtualenv made anew when its Python is not the one
# chosen (e.g. a .venv of Python 3.11 from before ansible-core 2.21), else updated in place.
define make_venv
	@python=$$(PYTHON="$(6)" bash hack/controller-python.sh $(3) $(4) $(5)) \
	  && if [ -x $(1)/bin/python ] && [ "$$($(1)/bin/python -c 'import sys; print(sys.version_info[:2])')" \
	          = "$$("$$python" -c 'import sys; print(sys.version_info[:2])')" ]; then :; else \
	       echo "$(notdir $(1)): a virtualenv of $$python"; rm -rf $(1); "$$python" -m venv $(1); fi
	$(1)/bin/pip install --quiet --upgrade pip
	$(1)/bin/pip install --quiet -r $(2)
	touch $(1)/.installed
endef

$(VENV)/.installed: requirements-dev.txt hack/controller-python.sh
	$(call make_venv,$(VENV),requirements-dev.txt,3.12,3.14,newest,$(PYTHON))

$(VENV_OLDEST)/.installed: requirements-oldest.txt hack/controller-python.sh
	$(call make_venv,$(VENV_OLDEST),requirements-oldest.txt,3.11,3.13,oldest,$(PYTHON_OLDEST))

venv: $(VENV)/.installed
venv-oldest: $(VENV_OLDEST)/.installed

# The collection as users get it: built into a tarball (galaxy.yml's build_ignore applies) and installed with
# ansible-galaxy into .cache/collections, which ANSIBLE_COLLECTIONS_PATH names for every tool and test, so a
# packaging mistake fails the tests. Rebuilt only when a packaged file changed, was added or was removed
# (about 2 s; a no-op otherwise); tests/modrun.py runs `make collection` too, so a plain pytest run after an edit
# never tests a stale copy.
COLLECTION_DIR := $(COLLECTIONS)/ansible_collections/fleetops/registration
PACKAGED := galaxy.yml README.md LICENSE requirements.txt bindep.txt CHANGELOG.rst plugins roles playbooks meta docs changelogs extensions/awx \
            extensions/rbac
COLLECTION_FILES := $(sort $(wildcard $(shell git ls-files -co --exclude-standard -- $(PACKAGED) 2>/dev/null \
                      || find $(PACKAGED) -type f 2>/dev/null)))
COLLECTION_LIST := $(CURDIR)/.cache/collection-files
$(shell mkdir -p $(CURDIR)/.cache && (echo '$(COLLECTION_FILES)' | cmp -s - $(COLLECTION_LIST) || echo '$(COLLECTION_FILES)' > $(COLLECTION_LIST)))

# (Only needs the venv to exist: a venv older than requirements-dev.txt is refreshed by the targets that run tools.)
$(VENV)/bin/ansible-galaxy:
	$(MAKE) venv

$(COLLECTION_DIR)/.installed: $(COLLECTION_LIST) $(COLLECTION_FILES) | $(VENV)/bin/ansible-galaxy
	@rm -rf $(CURDIR)/.cache/dist && mkdir -p $(CURDIR)/.cache/dist $(COLLECTIONS)
	@if [ -L $(COLLECTION_DIR) ]; then rm $(COLLECTION_DIR); fi  # the symlink to the checkout older Makefiles made
	@$(VENV)/bin/ansible-galaxy collection build --force --output-path $(CURDIR)/.cache/dist $(CURDIR) >/dev/null
	@$(VENV)/bin/ansible-galaxy collection install --offline --force -p $(COLLECTIONS) $(CURDIR)/.cache/dist/*.tar.gz >/dev/null
	@touch $@
	@echo "collection: installed $$(basename $(CURDIR)/.cache/dist/*.tar.gz) into $(COLLECTIONS)"

collection: $(COLLECTION_DIR)/.installed

# Changelog: fragments in changelogs/fragments (antsibull-changelog lint checks them); CHANGELOG.rst is the release
# notes of the galaxy.yml version, generated from the fragments and the plugins' docs in a staged copy, so the
# fragments stay until the real release (antsibull-changelog release in the checkout) consumes them. While no release
# is recorded, the staged fragments' entries against earlier versions are left out (hack/changelog_first_release.py):
# the first release's notes say what it offers, not how it differs from development snapshots nobody had.
VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)
CHANGELOG_STAGE := $(CURDIR)/.cache/changelog/ansible_collections/fleetops/registration
CHANGELOG_LOG := $(CURDIR)/.cache/changelog/release.log

changelog-lint: venv
	antsibull-changelog lint

$(CHANGELOG_STAGE)/CHANGELOG.rst: changelog-lint
	@rm -rf $(CURDIR)/.cache/changelog && mkdir -p $(CHANGELOG_STAGE)
	@git ls-files -co --exclude-standard -z -- galaxy.yml changelogs plugins meta roles | xargs -0 cp --parents -t $(CHANGELOG_STAGE)
	@$(PY) hack/changelog_first_release.py $(CHANGELOG_STAGE)
	@cd $(CHANGELOG_STAGE) && antsibull-changelog release --version $(VERSION) --date 1970-01-01 >$(CHANGELOG_LOG) 2>&1 \
	  || { cat $(CHANGELOG_LOG); echo "antsibull-changelog release failed (exit status above)"; exit 1; }
	@grep -v release_summary $(CHANGELOG_LOG) || true  # only its note that the release has no summary is left out
	@test -s $@ || { echo "antsibull-changelog release produced no CHANGELOG.rst (run it with -v in $(CHANGELOG_STAGE))"; exit 1; }

changelog: $(CHANGELOG_STAGE)/CHANGELOG.rst
	cp $< CHANGELOG.rst

changelog-check: $(CHANGELOG_STAGE)/CHANGELOG.rst
	@cmp -s $< CHANGELOG.rst || { echo "CHANGELOG.rst does not match changelogs/ and the plugins: run 'make changelog' and commit it"; diff -u CHANGELOG.rst $< | head -40; exit 1; }

# The AWX execution environment's build context (Containerfile) from extensions/awx/execution-environment.yml;
# no container engine needed (tests/unit/test_execution_environment.py runs the same in make test).
ee-context: venv
	rm -rf $(CURDIR)/.cache/ee-context
	ansible-builder create -f extensions/awx/execution-environment.yml -c $(CURDIR)/.cache/ee-context --output-filename Containerfile

# The demo's playbooks on kind clusters (needs kind and a running Docker; says so and fails without them). Not part
# of make test: CI has no container engine. docs/kind.md describes it; kind-down deletes the clusters.
kind-demo: venv collection
	bash hack/kind-demo.sh

kind-down:
	bash hack/kind-demo.sh down

lab-build: venv
	$(LAB) build

lab-up: venv
	$(LAB) up --members $(MEMBERS) --hubs $(HUBS)

lab-status: venv
	$(LAB) status

lab-down: venv
	$(LAB) down

demo: venv collection lab-build
	$(LAB) up --members $(MEMBERS)
	ansible-playbook -i $(LAB_DIR)/inventory.yml playbooks/join_cluster.yml
	ansible-playbook -i $(LAB_DIR)/inventory.yml playbooks/cluster_status.yml
	$(LAB) status

# Fleet-size benchmark on a lab of its own (.cache/bench-lab, 12 members): figures in .cache/bench/scale.json
# (docs/performance.md). BENCH_ARGS="--only rerun --members 4 --keep-lab" for one stage on a smaller lab.
bench: venv collection lab-build
	$(PY) bench/scale.py $(BENCH_ARGS)

# Leave and join one member N times in a row on a lab of its own (.cache/stress-lab), some joins right after a hub
# API server restart; fails when a run fails or a check-in is slower than the bench allows. Not part of make test.
N ?= 20
stress-rejoin: venv collection lab-build
	$(PY) bench/stress_rejoin.py --cycles $(N) $(STRESS_ARGS)

# Chaos soak on a lab of its own (.cache/soak-lab, hub + 3 members): N rounds of random faults drawn from SEED, each
# followed by plain joins judged by the soak's own reads (bench/soak.py); ONLY=<round> replays one round. Figures in
# .cache/soak/soak.json. soak-ci: the short soak make test ends with (a fixed seed, six rounds, nine kinds, ~5 min).
SEED ?= 1
# No lab-build before it: the soak pins the collection first, then its lab builds what is missing (on a fresh machine
# ~25 minutes of Go builds), so the rounds run the code of the moment `make soak` was typed.
soak: venv collection
	$(PY) bench/soak.py --rounds $(N) --seed $(SEED) $(if $(ONLY),--only $(ONLY))

SOAK_CI_SEED ?= 6164
SOAK_CI_ROUNDS ?= 6
soak-ci: venv collection lab-build
	$(PY) bench/soak.py --rounds $(SOAK_CI_ROUNDS) --seed $(SOAK_CI_SEED)

unit: venv collection
	PYTHONPATH=$(COLLECTIONS):$(CURDIR)/tests:$(CURDIR)/lab $(PY) -m pytest tests/unit -q

# Mutation check (not part of make test): cosmic-ray mutates staged copies of the decision code and runs, per mutated
# file, the unit tests that execute it against each mutant, on 2 workers; prints the score per file and the survivors
# (hack/mutations.py, docs/testing.md). 1,281 mutants: 15-20 minutes on the 2-CPU machine.
test-mutations: venv
	$(PY) hack/mutations.py

sanity: venv collection
	bash hack/sanity.sh

lint: venv collection docs-lint
	ansible-lint --profile production --offline

# The plugins' and roles' docs as a docsite renders them (markup, references between options, schema):
# antsibull-docs copies the files git knows (committed or not ignored) into a collection tree of its own.
docs-lint: venv
	antsibull-docs lint-collection-docs --plugin-docs .

# The oldest ansible-core meta/runtime.yml's requires_ansible claims (requirements-oldest.txt), in a virtualenv of its
# own: ansible-test sanity, ansible-lint and the unit tests. The lab suite runs on the current ansible-core only.
oldest: sanity-oldest lint-oldest unit-oldest

sanity-oldest: venv-oldest collection
	VENV=$(VENV_OLDEST) STAGE=$(CURDIR)/.cache/sanity-oldest bash hack/sanity.sh

lint-oldest: venv-oldest collection
	PATH=$(VENV_OLDEST)/bin:$$PATH ansible-lint --profile production --offline

unit-oldest: venv-oldest collection
	PATH=$(VENV_OLDEST)/bin:$$PATH PYTHONPATH=$(COLLECTIONS):$(CURDIR)/tests:$(CURDIR)/lab $(VENV_OLDEST)/bin/python -m pytest tests/unit -q

# Tests get a lab of their own (started by the fixture, stopped afterwards), so a demo lab in .lab/
# is neither disturbed by them nor able to disturb them. TEST_LAB=.lab TEST_WORKERS=0 reuses the demo's lab.
# The lab tests wait for agents and controllers far more than they use the CPU, so TEST_WORKERS pytest-xdist workers
# run them, each on a lab of its own (<TEST_LAB>-gw0, ...). A test file goes to one worker whole (its tests share
# state), the slowest files first (tests/conftest.py) so that the workers finish together; TEST_WORKERS=0: one process.
TEST_LAB ?= $(CURDIR)/.cache/test-lab
TEST_WORKERS ?= 2
PYTEST := FLEETOPS_LAB_DIR=$(TEST_LAB) PYTHONPATH=$(COLLECTIONS):$(CURDIR)/tests:$(CURDIR)/lab $(PY) -m pytest -q -rs \
	-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lab-tests: venv collection lab-build
	$(PYTEST) tests/lab tests/integration

# molecule scenarios for the roles (extensions/molecule): one lab of their own (hub + 1 member in
# .cache/molecule/lab) for hub, member_join and member_leave; converge, idempotence, verify on both sides.
MOLECULE := mkdir -p $(CURDIR)/.cache/molecule/inventory \
	&& ln -sfn ../lab/inventory.yml $(CURDIR)/.cache/molecule/inventory/lab.yml && molecule test --all

molecule: venv collection lab-build
	$(MOLECULE)

test: venv collection lab-build sanity lint changelog-check oldest
	$(PYTEST) --durations=40 tests/lab tests/integration tests/faults tests/unit
	$(MOLECULE)
	$(MAKE) soak-ci
