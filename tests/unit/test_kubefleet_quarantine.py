"""Quarantine on join (KubeFleet): the taint's rules and what counts as a verified member (pure)."""

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import registry
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_status import member_row
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, utcnow
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import QUARANTINE_TAINT
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import quarantined, taints_with_quarantine
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import quarantine_problems

MAINTENANCE = {"key": "maintenance", "value": "true", "effect": "NoSchedule"}


def member(taints=None, joined="True", healthy="True", properties=True):
    status = {"conditions": [{"type": "Joined", "status": joined}],
              "agentStatus": [{"type": "MemberAgent", "conditions": [{"type": "Healthy", "status": healthy}],
                               "lastReceivedHeartbeat": format_time(utcnow())}]}
    if properties:
        status["properties"] = {"kubernetes-fleet.io/node-count": {"value": "3"}}
    return {"metadata": {"name": "edge-01"}, "spec": {"taints": taints or []}, "status": status}


@pytest.mark.parametrize("current, taints, quarantine, expected", [
    (None, None, "hold", [QUARANTINE_TAINT]),  # a new member joins quarantined
    (None, [MAINTENANCE], "hold", [MAINTENANCE, QUARANTINE_TAINT]),
    (member(), None, "hold", None),  # verified earlier: not quarantined again
    (member([QUARANTINE_TAINT]), None, "hold", None),  # still quarantined: kept, nothing to write
    (member([QUARANTINE_TAINT]), [MAINTENANCE], "hold", [MAINTENANCE, QUARANTINE_TAINT]),  # a user's taints keep it
    (member([MAINTENANCE, QUARANTINE_TAINT]), None, "lift", [MAINTENANCE]),
    (member([QUARANTINE_TAINT]), [], None, [QUARANTINE_TAINT]),  # taints: [] does not lift it
    (member([MAINTENANCE]), [QUARANTINE_TAINT], None, []),  # nor does a user's list add it
    (member(), None, "lift", None),
    (None, None, None, None),
])
def test_only_the_quarantine_option_adds_or_lifts_the_taint(current, taints, quarantine, expected):
    assert taints_with_quarantine(current, taints, quarantine) == expected


def test_a_member_is_verified_once_joined_healthy_and_reporting():
    assert quarantine_problems(member()) == []
    resource_usage_only = member(properties=False)
    resource_usage_only["status"]["resourceUsage"] = {"observationTime": "2026-11-25T00:00:00Z"}
    assert quarantine_problems(resource_usage_only) == []
    assert quarantine_problems(member(joined="False", healthy="Unknown", properties=False)) == [
        "it has not joined", "the member agent has not reported it healthy",
        "the member agent has reported no properties or resource usage"]
    assert quarantine_problems(member(healthy="False")) == ["the member agent reports it unhealthy"]
    assert quarantine_problems(None) and not quarantined(None)


def test_a_quarantined_member_needs_the_member_object_step_and_shows_in_the_status():
    kubefleet = registry.manager("kubefleet")
    held = member([QUARANTINE_TAINT])
    view = kubefleet.hub_view(held)
    state = kubefleet.decide("edge-01", view, None, {})
    assert state.action == "relabel" and "quarantined" in state.reasons[0] and state.as_dict()["steps"]["member_object"]
    assert member_row(kubefleet, view)["state"] == "quarantined"
    assert kubefleet.decide("edge-01", kubefleet.hub_view(member()), None, {}).action == "none"
