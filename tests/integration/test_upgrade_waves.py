"""Agent upgrades in waves (playbooks/upgrade_agents.yml) on the lab's two members, KubeFleet only: a change whose new
agent never starts stops at the canary, which is rolled back to the revision it ran and is healthy again, while the
second member is not touched; then a good change rolls out to both."""

import json
import time

import pytest

from test_playbooks import Hub, condition, playbook

pytestmark = pytest.mark.lab

MEMBERS = ("member1", "member2")
KUBEFLEET_ONLY = {"fleetops_backends": ["kubefleet"], "member_join_kubefleet_heartbeat_period_seconds": 15}


def extra(**more):
    return "-e", json.dumps(dict(KUBEFLEET_ONLY, **more))


def history(lab, member):
    """``[(revision, status, description)]`` of the member-agent release."""
    proc = lab.run_helm(member, "history", "member-agent", "--namespace", "default", "--output", "json")
    return [(item["revision"], item["status"], item["description"]) for item in json.loads(proc.stdout)]


def user_values(lab, member):
    proc = lab.run_helm(member, "get", "values", "member-agent", "--namespace", "default", "--output", "json")
    return json.loads(proc.stdout)


def test_a_broken_canary_is_rolled_back_and_stops_the_wave_then_a_good_change_rolls_out(lab_controllers, tmp_path):
    lab, hub = lab_controllers, Hub(lab_controllers)
    limit = ("--limit", "fleet-hub," + ",".join(MEMBERS))
    playbook(lab, "leave_cluster.yml", *limit, *extra(), tmp_path=tmp_path)
    playbook(lab, "join_cluster.yml", *limit, *extra(), tmp_path=tmp_path)
    try:
        before = dict((member, (history(lab, member), user_values(lab, member))) for member in MEMBERS)

        # A setting the new agent dies of (klog refuses --v=not-a-number): its pod never becomes ready, while the old
        # agent pod keeps running and heartbeating - only the rollout wait tells the upgrade failed.
        started = time.monotonic()
        broken = playbook(lab, "upgrade_agents.yml", *extra(member_join_kubefleet_agent_values={"logVerbosity": "not-a-number"},
                                                            member_join_wait_timeout=45), tmp_path=tmp_path, fails=True)
        broken_seconds = time.monotonic() - started
        assert set(broken.recap) == {"member1"}, broken.recap  # the canary batch only: member2 was never in a batch
        assert broken.recap["member1"]["failed"] == 1
        assert "to roll out its new pods" in broken.output
        revisions = history(lab, "member1")
        assert revisions[-1][1] == "deployed" and revisions[-1][2] == "Rollback to %d" % before["member1"][0][-1][0], revisions
        assert user_values(lab, "member1") == before["member1"][1]
        assert condition(hub.member_cluster("member1"), "Joined") == "True"
        assert (history(lab, "member2"), user_values(lab, "member2")) == before["member2"]
        assert '"member1": "rolled back: kubefleet rolled back' in broken.output
        assert '"member2": "untouched' in broken.output

        good = playbook(lab, "upgrade_agents.yml", *extra(member_join_kubefleet_agent_values={"logVerbosity": 3}), tmp_path=tmp_path)
        assert set(good.recap) == set(MEMBERS) and all(good.changed(member) > 0 for member in MEMBERS), good.recap
        for member in MEMBERS:
            assert user_values(lab, member)["logVerbosity"] == 3
            assert history(lab, member)[-1][1] == "deployed"
            assert condition(hub.member_cluster(member), "Joined") == "True"
            assert '"%s": "upgraded: kubefleet upgraded' % member in good.output
        print("broken canary wave: %.0f s" % broken_seconds)
    finally:
        playbook(lab, "leave_cluster.yml", *limit, *extra(), tmp_path=tmp_path)
