"""A KubeFleet member's identity ServiceAccount deleted on the hub, followed by ONE plain run of the playbook: a join
registers the member again, a leave still lets the agent acknowledge it (fault_helpers says what is asserted)."""

import time

import pytest
from fault_helpers import LIMIT, MEMBER, assert_joined_since, joined
from kube_helpers import read_or_none

pytestmark = pytest.mark.lab

# The API server keeps a token it authenticated for this long (its token cache), then asks again.
TOKEN_CACHE_SECONDS = 10


def _delete_identity(sides):
    """Delete the ServiceAccount member1's MemberCluster names, its token used just before (as a heartbeat does):
    ``(identity, uid, token)``."""
    identity = sides.member_cluster(MEMBER)["spec"]["identity"]
    uid = sides.hub_core.read_namespaced_service_account(identity["name"], identity["namespace"]).metadata.uid
    token = sides.secret_value(MEMBER, "fleet-hub-credentials", "hub-kubeconfig-secret", "token")
    sides.whoami(sides.token_client(token))
    sides.hub_core.delete_namespaced_service_account(identity["name"], identity["namespace"])
    return identity, uid, token


def test_a_kubefleet_identity_deleted_on_the_hub_is_made_again_and_the_member_registered_in_one_run(lab_controllers, play, sides):
    # Soak seed 7301 rounds 4, 40 and 50: the hub's API server keeps a token it authenticated for 10 s, so a run that read
    # the member just after the identity ServiceAccount was deleted found the agent's token accepted and changed nothing;
    # the agent was refused a few seconds later.
    joined(play, sides)
    identity, before, _token = _delete_identity(sides)
    fault_at = time.time()
    rerun = play.converges("join_cluster.yml", *LIMIT)
    assert "does not exist on the hub" in rerun, "the run did not see the identity gone:\n" + rerun[-3000:]
    again = sides.hub_core.read_namespaced_service_account(identity["name"], identity["namespace"])
    assert again.metadata.uid != before, "the identity was not made again"
    assert_joined_since(sides, rerun, fault_at)  # the member's token is of the new identity and accepted


def test_a_leave_with_the_kubefleet_identity_deleted_lends_the_agent_a_token_and_finishes_in_one_run(lab_controllers, play, sides):
    # Found with the test above on the earlier code: its run left the agent with a token the hub refused, and the next
    # leave waited 300 s for an acknowledgement the agent could not send (the hub force-deletes after 15 minutes).
    joined(play, sides)
    identity, _uid, token = _delete_identity(sides)
    time.sleep(TOKEN_CACHE_SECONDS + 2)
    with pytest.raises(Exception):
        sides.whoami(sides.token_client(token))  # the agent is cut off: no fault without this
    leave = play.converges("leave_cluster.yml", *LIMIT, "-e", "member_leave_wait_timeout=120")
    assert "the agent was restarted to acknowledge the leave" in leave, leave[-3000:]  # with a token it lent
    sides.assert_member_left(MEMBER)
    sides.assert_nothing_left_on_hub()
    account = (identity["name"], identity["namespace"])
    assert read_or_none(lambda: sides.hub_core.read_namespaced_service_account(*account)) is None, "the lent identity was left"
