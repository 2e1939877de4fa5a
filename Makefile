# fleetops.registration: the main job, the tests and the lab.
#   make demo              join the lab's members into its hub (builds and starts the lab if needed)
#   make test              everything CI runs: unit, sanity, lint, lab proof tests, integration tests
#   make lab-up MEMBERS=N  | make lab-status | make lab-down
#   make bench             lab start-up time and memory against targets

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
MEMBERS ?= 2
PYTHON ?= python3
VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python
LAB := PYTHONPATH=$(CURDIR)/lab $(PY) -m fleetlab
COLLECTIONS := $(CURDIR)/.cache/collections
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
# The lab's state directory; FLEETOPS_LAB_DIR moves it (the lab honours it too), e.g. for a second lab.
LAB_DIR := $(or $(FLEETOPS_LAB_DIR),$(CURDIR)/.lab)
export PATH := $(LAB_DIR)/bin:$(VENV)/bin:$(PATH)

.PHONY: demo test venv collection lab-build lab-up lab-status lab-down bench unit sanity lint lab-tests

$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

collection:
	@mkdir -p $(COLLECTIONS)/ansible_collections/fleetops
	@ln -sfn $(CURDIR) $(COLLECTIONS)/ansible_collections/fleetops/registration

lab-build: venv
	$(LAB) build

lab-up: venv
	$(LAB) up --members $(MEMBERS)

lab-status: venv
	$(LAB) status

lab-down: venv
	$(LAB) down

demo: venv collection lab-build
	$(LAB) up --members $(MEMBERS)
	ansible-playbook -i $(LAB_DIR)/inventory.yml playbooks/join_cluster.yml
	ansible-playbook -i $(LAB_DIR)/inventory.yml playbooks/cluster_status.yml
	$(LAB) status

bench: venv lab-build
	PYTHONPATH=$(CURDIR)/lab $(PY) bench/lab_up.py

unit: venv collection
	PYTHONPATH=$(COLLECTIONS):$(CURDIR)/tests:$(CURDIR)/lab $(PY) -m pytest tests/unit -q

sanity: venv
	bash hack/sanity.sh

lint: venv collection
	ansible-lint --profile production --offline

# Tests get a lab of their own (started by the fixture, stopped afterwards), so a demo lab in .lab/
# is neither disturbed by them nor able to disturb them. TEST_LAB=.lab reuses the demo's lab.
TEST_LAB ?= $(CURDIR)/.cache/test-lab
PYTEST := FLEETOPS_LAB_DIR=$(TEST_LAB) PYTHONPATH=$(COLLECTIONS):$(CURDIR)/tests:$(CURDIR)/lab $(PY) -m pytest -q -rs

lab-tests: venv collection lab-build
	$(PYTEST) tests/lab tests/integration

test: venv collection lab-build sanity lint
	$(PYTEST) tests/unit tests/lab tests/integration tests/faults
