"""Fixtures of the fault suite: the playbook runner and the two-sided checks (fault_helpers)."""

import pytest

from fault_helpers import Playbook, Sides


@pytest.fixture
def play(prepared_hub, tmp_path):
    """ansible-playbook against the lab's inventory, on a hub the hub role has prepared: the playbooks run with
    --limit member1, which leaves the hub's own play out, and a test may be the first to run on its lab."""
    return Playbook(prepared_hub, tmp_path)


@pytest.fixture
def sides(lab_controllers):
    """The hub and members as the lab's admin sees them, with the suite's health and leftover checks."""
    return Sides(lab_controllers)


@pytest.fixture
def prepared_hub(lab_controllers):
    """The hub as the hub role leaves it (its registration namespaces exist), for tests that call modules directly."""
    from modrun import run_module  # pylint: disable=import-outside-toplevel
    result = run_module("hub_prepare", {"kubeconfig": str(lab_controllers.kubeconfig), "context": "hub",
                                        "namespaces": ["fleet-default", "fleet-system"]})
    assert not result.failed, result.get("msg")
    return lab_controllers
