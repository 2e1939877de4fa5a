# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeFleet token rotation: the two token Secret names, which is current, what a rotation revokes, when it is due."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import tokens
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import AgentPlan, desired_hub_secret, plan_agent
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ReleasePlan
from ansible_collections.fleetops.registration.plugins.module_utils.rotation import rotation_reasons
from ansible_collections.fleetops.registration.plugins.module_utils.times import age_seconds

NOW = datetime.datetime(2026, 11, 21, 10, 0, 0, tzinfo=datetime.timezone.utc)


def secret(name, created):
    return {"metadata": {"name": name, "creationTimestamp": created}}


def test_an_identity_has_two_token_secret_names():
    assert tokens.slots("east-1-hub-cluster-access-token") == ("east-1-hub-cluster-access-token", "east-1-hub-cluster-access-token-2")
    with pytest.raises(ParameterError, match="token_secret_name"):
        tokens.slots("mine-2")
    with pytest.raises(ParameterError, match="too long"):
        tokens.slots("a" * 252)


def test_the_newest_token_secret_is_current_and_the_others_are_revoked_after_a_rotation():
    first, second = secret("t", "2026-11-01T00:00:00Z"), secret("t-2", "2026-11-20T00:00:00Z")
    assert tokens.current([first, None]) is first and tokens.older([first, None]) == []
    assert tokens.current([first, second]) is second and tokens.older([first, second]) == [first]
    again = secret("t", "2026-11-21T00:00:00Z")  # the rotation after that issues the first name again
    assert tokens.current([again, second]) is again and tokens.older([again, second]) == [second]
    assert tokens.current([None, None]) is None
    assert tokens.free_slot(("t", "t-2"), [first, None]) == "t-2"
    assert tokens.free_slot(("t", "t-2"), [None, second]) == "t"
    assert tokens.free_slot(("t", "t-2"), [first, second]) is None  # under way: reuse the newer one


@pytest.mark.parametrize("credential, desired, due", [
    ({"present": True, "accepted": True, "issued": "2026-10-01T00:00:00Z"}, {"credential_max_age": 720 * 3600}, "more than"),
    ({"present": True, "accepted": True, "issued": "2026-11-20T00:00:00Z"}, {"credential_max_age": 720 * 3600}, None),
    ({"present": True, "accepted": True, "issued": None}, {"credential_max_age": 720 * 3600}, "no recorded issue time"),
    ({"present": True, "accepted": True, "issued": "2026-11-20T00:00:00Z"}, {"rotate": True}, "asked for"),
    ({"present": True, "accepted": True, "issued": None}, {}, None),
    ({"present": True, "accepted": False, "issued": None}, {"rotate": True}, None),  # rejected: a re-registration instead
    ({"present": False}, {"rotate": True}, None),
])
def test_rotation_is_due_when_asked_or_when_the_token_is_too_old(credential, desired, due):
    reasons = rotation_reasons(credential.get("present"), credential.get("accepted"), age_seconds(credential.get("issued"), NOW),
                               desired, "the member agent's token")
    assert (reasons[0] if reasons else None) == due or (due and due in reasons[0])


def test_the_members_copy_records_where_and_when_the_token_was_issued_and_a_new_annotation_alone_does_not_restart():
    source = secret("t-2", "2026-11-20T00:00:00Z")
    desired = desired_hub_secret("hub-kubeconfig-secret", "fleet-hub-credentials", "tok", source)
    assert desired["metadata"]["annotations"] == {tokens.ISSUED_ANNOTATION: "2026-11-20T00:00:00Z", tokens.SOURCE_ANNOTATION: "t-2"}
    unchanged = ReleasePlan("none", [])
    older_copy = desired_hub_secret("hub-kubeconfig-secret", "fleet-hub-credentials", "tok")
    plan = plan_agent(older_copy, desired, unchanged)
    assert isinstance(plan, AgentPlan) and plan.secret_action == "update" and not plan.restart and not plan.token_changed
    rotated = plan_agent(desired_hub_secret("hub-kubeconfig-secret", "fleet-hub-credentials", "old"), desired, unchanged)
    assert rotated.restart and rotated.token_changed
