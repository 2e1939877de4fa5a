# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A member's diagnosis: the shared rules (pods, events, credential, token expiry, order) and each manager's (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import json

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import diagnosis
from ansible_collections.fleetops.registration.plugins.module_utils.findings import problems
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.manager import MANAGER as KUBEFLEET
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.manager import MANAGER as FLEET

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)


def jwt(**claims):
    def part(data):
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
    return "%s.%s.c2lnbmF0dXJl" % (part({"alg": "RS256"}), part(claims))


def causes(findings):
    return [item["cause"] for item in findings]


def test_token_expiry_reads_the_exp_claim_of_a_jwt_only():
    assert diagnosis.token_expiry(jwt(exp=1795000000, sub="x")) == "2026-11-18T11:06:40Z"
    assert diagnosis.token_expiry(jwt(sub="legacy token, no exp")) is None
    assert diagnosis.token_expiry("not-a-jwt") is None
    assert diagnosis.token_expiry("a.!!!.c") is None
    assert diagnosis.token_expiry(None) is None


@pytest.mark.parametrize("credential,cause", [
    ({"accepted": False, "expires": "2026-11-21T09:00:00Z", "problem": "Unauthorized"}, "token_expired"),
    ({"accepted": None, "problem": "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate"},
     "hub_ca_untrusted"),
    ({"accepted": None, "problem": "cannot reach https://hub:6443: Connection refused"}, "hub_unreachable"),
    ({"accepted": False, "problem": "Unauthorized"}, "credential_rejected"),
    ({"accepted": False, "expires": "2026-11-22T09:00:00Z", "problem": "Unauthorized"}, "credential_rejected"),
    ({"accepted": True, "expires": "2026-11-22T09:00:00Z"}, None),
    ({"accepted": None, "problem": None}, None),
])
def test_credential_problem(credential, cause):
    found = diagnosis.credential_problem(dict(credential, present=True, url="https://hub:6443", where="Secret a/b"), NOW)
    assert (found or {}).get("cause") == cause
    assert diagnosis.credential_problem(dict(credential, present=False), NOW) is None


def pod(name="agent-5d9f7-abcde", phase="Pending", statuses=(), conditions=(), deleting=False):
    metadata = {"name": name, "namespace": "fleet-system"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-21T09:59:00Z"
    return {"metadata": metadata, "status": {"phase": phase, "containerStatuses": list(statuses), "conditions": list(conditions)}}


def container(waiting=None, restarts=0, exit_code=None, ready=False, image="ghcr.io/azure/fleet/member-agent:v0.3.1"):
    status = {"name": "member-agent", "image": image, "restartCount": restarts, "ready": ready, "state": {}}
    if waiting:
        status["state"] = {"waiting": {"reason": waiting, "message": "%s message" % waiting}}
    if exit_code is not None:
        status["lastState"] = {"terminated": {"exitCode": exit_code}}
    return status


@pytest.mark.parametrize("pods,expected", [
    ([pod(statuses=[container("ImagePullBackOff", image="registry.invalid/a:1")])], ["image_pull"]),
    ([pod(statuses=[container("ErrImagePull")])], ["image_pull"]),
    ([pod(phase="Running", statuses=[container("CrashLoopBackOff", restarts=3, exit_code=2)])], ["crash_loop"]),
    ([pod(phase="Running", statuses=[container(None, restarts=1, exit_code=1)])], ["crash_loop"]),
    ([pod(phase="Running", statuses=[container(None, restarts=4, exit_code=0, ready=True)])], []),
    ([pod(conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}])],
     ["unschedulable"]),
    ([pod()], ["pending"]),
    ([pod(statuses=[container("ContainerCreating")])], ["pending"]),
    ([pod(deleting=True, statuses=[container("ErrImagePull")])], []),
    ([pod(phase="Running", statuses=[container(None, ready=True)])], []),
])
def test_pod_findings(pods, expected):
    found = diagnosis.pod_findings(pods)
    assert causes(found) == expected
    for item in found:
        assert "fleet-system/" in item["evidence"] and item["fix"]


def test_a_crash_loop_says_the_exit_code_and_how_to_read_the_log():
    found = diagnosis.pod_findings([pod(phase="Running", statuses=[container("CrashLoopBackOff", restarts=3, exit_code=2)])])
    assert "restarted 3 times, last exit code 2" in found[0]["evidence"]
    assert "kubectl logs -n fleet-system agent-5d9f7-abcde -c member-agent --previous" in found[0]["fix"]


def event(reason, stamp="2026-11-21T09:58:00Z", name="member-agent-5d9f7"):
    return {"reason": reason, "type": "Warning", "message": "%s happened" % reason, "lastTimestamp": stamp,
            "involvedObject": {"kind": "ReplicaSet", "namespace": "fleet-system", "name": name}}


def test_event_findings_keep_recent_warnings_that_name_a_cause():
    found = diagnosis.event_findings([event("FailedCreate"), event("FailedMount"), event("Unhealthy"),
                                      event("FailedCreate", stamp="2026-11-20T09:00:00Z")], NOW)
    assert causes(found) == ["pod_rejected", "mount_failed"]
    assert found[0]["evidence"] == "ReplicaSet fleet-system/member-agent-5d9f7: FailedCreate: FailedCreate happened"


def test_findings_are_ordered_root_cause_first_and_one_per_cause():
    found = diagnosis.ordered([diagnosis.finding("crash_loop", "a", "none", "f"), diagnosis.finding("hub_ca_untrusted", "b", "upgrade", "f"),
                               diagnosis.finding("crash_loop", "c", "none", "f")])
    assert [(item["cause"], item["evidence"]) for item in found] == [("hub_ca_untrusted", "b"), ("crash_loop", "a")]
    with pytest.raises(ValueError):
        diagnosis.finding("no_such_cause", "", "none", "")
    with pytest.raises(ValueError):
        diagnosis.finding("silent", "", "no_such_action", "")
    assert len(diagnosis.finding("silent", "x" * 1000, "reregister", "f")["evidence"]) < 500


def deployment(replicas=1, available=1, updated=1, generation=2, observed=2):
    return {"metadata": {"generation": generation}, "spec": {"replicas": replicas, "selector": {"matchLabels": {"b": "2", "a": "1"}}},
            "status": {"availableReplicas": available, "updatedReplicas": updated, "observedGeneration": observed}}


def test_rollout_problem_and_pod_selector():
    assert diagnosis.rollout_problem(deployment()) is None
    assert diagnosis.rollout_problem(None) is None
    assert "no available replica" in diagnosis.rollout_problem(deployment(available=0))
    assert "1 of 2 replicas updated" in diagnosis.rollout_problem(deployment(replicas=2, updated=1, available=1))
    assert "not complete" in diagnosis.rollout_problem(deployment(observed=1))
    surge = deployment()
    surge["status"].update(replicas=2, unavailableReplicas=1)  # the new pod does not start, the old one still serves
    assert "1 of 1 replicas updated, 1 unavailable" in diagnosis.rollout_problem(surge)
    assert "scaled to 0" in diagnosis.rollout_problem(deployment(replicas=0))
    assert diagnosis.pod_selector(deployment()) == "a=1,b=2"
    assert diagnosis.pod_selector({}) is None


KF_IDENTITY = {"kind": "ServiceAccount", "name": "east-1-hub-cluster-access", "namespace": "fleet-system"}
KF_HUB = {"name": "east-1", "labels": {}, "identity": KF_IDENTITY,
          "joined": True, "healthy": True, "ready_to_join": True, "heartbeat_period_seconds": 15, "leaving": False,
          "agent_joined": True, "heartbeat": "2026-11-21T09:59:30Z", "heartbeat_age_seconds": 30, "heartbeat_stale": False,
          "quarantined": False, "conditions_false": []}
KF_MEMBER = {
    "release": {"status": "deployed"}, "hub_url": "https://hub:6443",
    "credential": {"name": "hub-kubeconfig-secret", "namespace": "fleet-hub-credentials", "present": True, "accepted": True,
                   "username": "system:serviceaccount:fleet-system:east-1-hub-cluster-access", "problem": None, "expires": None},
    "deployment": {"name": "member-agent", "namespace": "fleet-system", "present": True, "ready_replicas": 1,
                   "rollout_problem": None, "selector": "app=member-agent"},
}


def kf(hub=None, member=None, **credential):
    hub_view = None if hub is False else dict(KF_HUB, **(hub or {}))
    member_view = dict(KF_MEMBER, **(member or {}))
    member_view["credential"] = dict(KF_MEMBER["credential"], **credential)
    # the causes that make it unhealthy (a test token without an issue time is also due for rotation: maintenance)
    return causes(problems(KUBEFLEET.judge(hub_view, member_view, {"now": NOW, "stale_after": 3600})))


def test_kubefleet_findings():
    assert kf() == []
    assert kf(hub=False) == ["not_member"]
    assert kf(hub={"leaving": True}) == ["leaving"]
    assert kf(hub={"heartbeat_age_seconds": 600}) == ["silent"]
    assert kf(hub={"joined": None, "heartbeat": None, "heartbeat_age_seconds": None}) == ["never_checked_in"]
    assert kf(hub={"conditions_false": ["member agent Healthy=False (X): y"]}) == ["hub_reports"]
    assert kf(member={"release": None}, present=False) == ["agent_missing", "credential_missing"]
    assert kf(present=False) == ["credential_missing"]
    assert kf(accepted=False, expires="2026-11-21T09:00:00Z") == ["token_expired"]
    assert kf(username="system:serviceaccount:fleet-system:other") == ["wrong_identity"]
    # the release's own CA, checked without a token at the collection's hub URL, while the collection's CA verifies
    assert kf(member={"configured_ca_problem": "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"}) == ["hub_ca_untrusted"]
    # a heartbeat older than the agent that runs now was its predecessor's (a run restored it, then lost the hub)
    started = dict(KF_MEMBER["deployment"], available_since="2026-11-21T09:59:50Z")
    assert kf(member={"deployment": started}) == ["silent"]
    assert kf(member={"deployment": dict(started, available_since="2026-11-21T09:59:00Z")}) == []


def fleet(hub=None, member=None):
    hub_view = {"name": "east-1", "checked_in": True, "seen_age_seconds": 20, "deleting": False, "ready_status": "True",
                "cluster_namespace_problem": None}
    member_view = {"release": {"status": "deployed"}, "deployment": True, "credential": True, "credential_usable": True,
                   "credential_accepted": True, "credential_error": None, "credential_expires": None, "bootstrap": False,
                   "credential_server": "https://hub:6443"}
    return causes(FLEET.judge(None if hub is False else dict(hub_view, **(hub or {})), dict(member_view, **(member or {})),
                              {"now": NOW, "stale_after": 3600}))


def test_rancher_fleet_findings():
    assert fleet() == []
    # the agent's credential was granted for the Cluster the hub no longer has: it registers again with the new one
    assert fleet(hub=False) == ["not_member", "registration_gone"]
    assert fleet(hub={"deleting": True}) == ["leaving", "registration_gone"]
    # a running agent without its credential Secret keeps the registration it read: it registers again too
    assert fleet(hub=False, member={"credential": False, "bootstrap": True}) == ["not_member", "registration_gone", "credential_missing"]
    assert fleet(hub=False, member={"credential": False, "bootstrap": True, "deployment": False}) == [
        "not_member", "agent_missing", "credential_missing"]
    assert fleet(hub={"checked_in": False}) == ["never_checked_in"]
    assert fleet(hub={"seen_age_seconds": 7200}) == ["silent"]
    # within the hour of Fleet's staleness, but from before the agent that runs now became available
    assert fleet(hub={"last_seen": "2026-11-21T09:59:40Z"}, member={"agent_available_since": "2026-11-21T09:59:55Z"}) == ["silent"]
    assert fleet(hub={"last_seen": "2026-11-21T09:59:58Z"}, member={"agent_available_since": "2026-11-21T09:59:55Z"}) == []
    assert fleet(hub={"ready_status": "False", "ready_message": "NotReady(1) [Bundle x]"}) == ["hub_reports"]
    assert fleet(member={"credential": False, "credential_usable": False}) == ["bootstrap_missing"]
    assert fleet(member={"credential": False, "credential_usable": False, "bootstrap": True}) == ["credential_missing"]
    assert fleet(member={"credential_accepted": None, "credential_error": "certificate verify failed",
                         "expected_server": "https://hub:6443"}) == ["hub_ca_untrusted"]
    # with no hub URL known for the agent its credential was not checked: what the check says is no finding
    assert fleet(member={"credential_accepted": None, "credential_error": "the hub URL is not known"}) == []


def test_a_member_read_without_its_secrets_is_judged_on_the_rest_and_never_called_missing_what_was_not_read():
    """Issue 46 item 3: the view role reads no Secret on the member, so the release and the agents' credentials are not
    known (null): no row that reads them fires, the hub's rows and the Deployment's still do."""
    unread = {"release": None, "unread": ["secrets"]}
    kf_unread = dict(unread, credential=None, configured=None)
    assert causes(KUBEFLEET.judge(dict(KF_HUB), dict(KF_MEMBER, **kf_unread), {"now": NOW, "stale_after": 3600})) == []
    assert kf(member=kf_unread) == [], "the token is not read, so it is not called missing"
    assert kf(member=dict(kf_unread, deployment={"name": "member-agent", "namespace": "fleet-system", "present": False}),
              ) == ["agent_missing"]
    assert kf(hub={"heartbeat_age_seconds": 600}, member=kf_unread) == ["silent"]
    fleet_unread = dict(unread, credential=None, credential_usable=None, bootstrap=None, credential_accepted=None)
    assert fleet(member=fleet_unread) == []
    assert fleet(member=dict(fleet_unread, deployment=False)) == ["agent_missing"]
    assert fleet(hub={"checked_in": False}, member=fleet_unread) == ["never_checked_in"]
    # the same views with the Secrets read: a missing release and credential are findings
    assert fleet(member={"release": None, "credential": None, "credential_usable": None, "bootstrap": None}) == [
        "agent_missing", "bootstrap_missing"]


def test_both_managers_name_their_own_object_when_the_member_is_not_or_no_longer_one():
    for manager, kind, leaving in ((KUBEFLEET, "MemberCluster", {"leaving": True}),
                                   (FLEET, "Cluster", {"deleting": True, "checked_in": True})):
        assert [f["evidence"] for f in manager.hub_findings(None)] == ["the hub has no %s for the member" % kind]
        assert [f["evidence"] for f in manager.decide("east-1", None, None, {}).findings] == ["the hub has no %s named east-1" % kind]
        gone = manager.hub_findings(dict(leaving, name="east-1"))
        assert gone[0]["cause"] == "leaving" and gone[0]["evidence"] == "%s east-1 is being deleted" % kind, gone


def test_a_healthy_member_is_not_diagnosed_and_each_fix_says_what_a_rerun_does():
    healthy = KUBEFLEET.decide("east-1", dict(KF_HUB), dict(KF_MEMBER), {"now": NOW})
    assert healthy.healthy and diagnosis.diagnose(KUBEFLEET, None, healthy, NOW) == []
    member = dict(KF_MEMBER, credential=dict(KF_MEMBER["credential"], accepted=False, expires="2026-11-21T09:00:00Z"))
    broken = KUBEFLEET.decide("east-1", dict(KF_HUB), member, {"now": NOW})
    found = diagnosis.diagnose(KUBEFLEET, None, broken, NOW)
    assert broken.action == "reregister" and causes(found) == ["token_expired"]
    assert "expired at 2026-11-21T09:00:00Z" in found[0]["evidence"]
    assert found[0]["fix"].endswith("A plain re-run registers the member again: new credential, agent reinstalled (action reregister).")
    stuck = KUBEFLEET.decide("east-1", dict(KF_HUB), dict(KF_MEMBER, deployment=dict(
        KF_MEMBER["deployment"], rollout_problem="the agent Deployment has no available replica")), {"now": NOW})
    assert not stuck.healthy and causes(diagnosis.diagnose(KUBEFLEET, None, stuck, NOW)) == ["agent_unavailable"]


def test_the_agent_pods_are_read_only_for_a_member_that_is_not_healthy():
    class Member:
        def __init__(self):
            self.reads = []

        def list(self, resource, namespace=None, **kwargs):
            self.reads.append(resource.kind)
            return []
    fleet_hub = {"name": "edge", "checked_in": True, "seen_age_seconds": 5, "ready_status": "True"}
    fleet_member = {"deployment": True, "release": {"status": "deployed"}, "credential": True, "credential_usable": True,
                    "credential_accepted": True}
    member = Member()
    fine = FLEET.decide("edge", fleet_hub, fleet_member, {"now": NOW})
    assert fine.healthy and diagnosis.diagnose(FLEET, member, fine, NOW) == [] and member.reads == []
    busy = FLEET.decide("edge", dict(fleet_hub, ready_status="False", ready_message="NotReady(1) [Bundle app]"), fleet_member, {"now": NOW})
    assert not busy.healthy and busy.action == "none"
    assert causes(diagnosis.diagnose(FLEET, member, busy, NOW)) == ["hub_reports"] and member.reads == ["Pod", "Event"]
