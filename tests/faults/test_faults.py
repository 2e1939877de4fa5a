"""Faults injected into the real lab, each followed by ONE plain re-run of the playbook.

Each test asserts that the re-run converges (exit 0), that the member is really healthy, checked on
the member (agent release deployed, its credential present and accepted by the hub) and on the hub
(Cluster seen after the re-run, MemberCluster Joined with a fresh heartbeat), and that nothing of an
earlier run is left: no registration token, values Secret, ServiceAccount, token Secret, Role or
RoleBinding on the hub; after a leave, nothing of the member on the hub and no namespace the
collection created on the member. One member (member1) joins, to keep the suite short.
"""

import re
import threading
import time

import pytest
from kubernetes import client
from fault_helpers import (
    FLEET, FLEET_AGENT_NS, FLEET_NS, KUBEFLEET, LIMIT, MEMBER, TOKEN_PREFIX, agent_pids, assert_joined_since, joined,
    recap_changed, stamp,
)
from kube_helpers import ignore_404, unique, wait_for
from modrun import run_module
from ansible_collections.fleetops.registration.plugins.module_utils.silence import CLOCK_SLACK_SECONDS

pytestmark = pytest.mark.lab


def test_hub_apiserver_killed_mid_join(lab_controllers, play, sides):
    lab = lab_controllers
    play.converges("leave_cluster.yml", *LIMIT)
    earlier = set(sides.run_tokens())
    run = play.start("join_cluster.yml", *LIMIT)
    try:
        tokens = wait_for(lambda: (set(sides.run_tokens()) - earlier) or run.poll() is not None, 300, "the run's registration token")
        assert tokens is not True, "the join ended before it created a registration token:\n" + play.finish(run)[1][-3000:]
        time.sleep(3)
        assert run.poll() is None, "the join ended before the fault:\n" + play.finish(run)[1][-3000:]
        lab.kill("hub-apiserver")
        fault_at = time.time()
        # still running once the API server is gone, and what it prints from now on is the join going on through the fault
        in_flight, written = run.poll() is None, run.log.stat().st_size
        time.sleep(15)
        lab.start("hub-apiserver")
        code, output = play.finish(run)
        print("join with the hub API server killed for 15 s: exit %d\n%s" % (code, output[-1500:]))
    finally:
        lab.heal()
    assert in_flight, "the join ended as the hub API server was killed, so the fault did not hit a join in flight"
    after = output.encode("utf-8")[written:].decode("utf-8", "replace")
    results = re.findall(r"^(?:ok|changed|fatal|failed|FAILED - RETRYING): \[%s[] ].*$" % MEMBER, after, re.M)
    assert results, "no task of the join reported on %s after the kill (exit %d):\n%s" % (MEMBER, code, after[-3000:])
    try:
        recovered = sides.wait_fleet_handles_tokens(timeout=120)
    except pytest.fail.Exception:
        # Fleet's agentmanagement has stayed blind to the ServiceAccounts it makes for >10 min after such a restart; a
        # restart (the runner restarts a killed container, as a kubelet does) gives it fresh informers.
        lab.kill("hub/cattle-fleet-system/fleet-controller-*/fleet-agentmanagement")
        recovered = 120 + sides.wait_fleet_handles_tokens(timeout=300)
    print("Fleet on the hub handled a new registration token %.0f s after the fault" % recovered)
    rerun = play.converges("join_cluster.yml", *LIMIT)
    assert_joined_since(sides, rerun, fault_at)


def test_agent_release_uninstalled_on_a_joined_member(lab_controllers, play, sides):
    lab = lab_controllers
    joined(play, sides)
    lab.run_helm(MEMBER, "uninstall", "fleet-agent", "--namespace", FLEET_AGENT_NS, "--wait")
    fault_at = time.time()
    rerun = play.converges("join_cluster.yml", *LIMIT)
    assert recap_changed(rerun, MEMBER) > 0, "the re-run reported a member without its agent as unchanged"
    assert_joined_since(sides, rerun, fault_at)


def test_agent_credential_deleted_and_agent_restarted(lab_controllers, play, sides):
    lab = lab_controllers
    joined(play, sides)
    core = sides.core(MEMBER)
    core.delete_namespaced_secret("fleet-agent", FLEET_AGENT_NS)
    pods = core.list_namespaced_pod(FLEET_AGENT_NS, label_selector="app=fleet-agent").items
    assert pods, "no fleet-agent pod on %s" % MEMBER
    for pod in pods:
        ignore_404(lambda p=pod: core.delete_namespaced_pod(p.metadata.name, FLEET_AGENT_NS))
    old_pods = {p.metadata.name for p in pods}
    wait_for(lambda: [e for e in lab.agent_processes(MEMBER) if e.get("container") == "fleet-agent" and e.get("pod") not in old_pods],
             120, "the restarted fleet-agent process")
    fault_at = time.time()
    rerun = play.converges("join_cluster.yml", *LIMIT)
    assert recap_changed(rerun, MEMBER) > 0, "the re-run reported a member without its credential as unchanged"
    assert_joined_since(sides, rerun, fault_at)


def test_a_leave_with_the_member_agent_frozen_restarts_it_and_finishes_in_one_run(lab_controllers, play, sides):
    # The leave's MemberCluster step waited for the hub's cleanup, which waits for the frozen agent to acknowledge:
    # the run timed out. The agent step now restarts an agent that has not acknowledged the leave within 20 s.
    lab = lab_controllers
    joined(play, sides)
    lab.freeze("%s/fleet-system/member-agent-*/member-agent" % MEMBER)
    try:
        leave = play.converges("leave_cluster.yml", *LIMIT, "-e", "member_leave_wait_timeout=90")
    finally:
        for name, state in lab.components().items():
            if state == "frozen" and name.startswith("%s/fleet-system/member-agent-" % MEMBER):
                lab.thaw(name)
    assert "the agent was restarted to acknowledge the leave" in leave, leave[-3000:]
    sides.assert_member_left(MEMBER)
    sides.assert_nothing_left_on_hub()


def test_a_leave_with_the_member_agent_at_0_replicas_lets_it_acknowledge_and_finishes_in_one_run(lab_controllers, play, sides):
    # The leave's MemberCluster step waited for the hub's cleanup, which waits for the member agent to acknowledge:
    # with the agent scaled to 0 it timed out (KubeFleet force-deletes only after 15 minutes). The agent step now waits
    # for the leave before it uninstalls, giving the agent its replica back.
    lab = lab_controllers
    joined(play, sides)
    apps = client.AppsV1Api(lab.api_client(MEMBER))
    apps.patch_namespaced_deployment_scale(*KF_AGENT, {"spec": {"replicas": 0}})
    wait_for(lambda: not _agent_pids(lab, "member-agent"), 120, "the member agent to stop")
    leave = play.converges("leave_cluster.yml", *LIMIT, "-e", "member_leave_wait_timeout=90")
    assert "the agent was restarted to acknowledge the leave" in leave, leave[-3000:]
    sides.assert_member_left(MEMBER)
    sides.assert_nothing_left_on_hub()


def test_registration_token_expired_before_install(prepared_hub, play, sides, tmp_path):
    lab = prepared_hub
    play.converges("leave_cluster.yml", *LIMIT)
    token = unique(TOKEN_PREFIX.rstrip("-"))
    values = tmp_path / "values.yaml"
    hub = {"kubeconfig": str(lab.kubeconfig), "context": "hub"}
    created = run_module("fleet_registration_token", dict(hub, name=token, namespace=FLEET_NS, ttl="20s",
                                                          values_dest=str(values), wait=True))
    assert not created.failed, created.get("msg")
    wait_for(lambda: "%s/%s" % (FLEET_NS, token) not in sides.run_tokens(), 120, "Fleet to delete the expired token %s" % token)
    agent = {"kubeconfig": str(lab.kubeconfig), "context": MEMBER, "helm_binary": lab.helm,
             "chart_ref": str(lab.fleet_chart("fleet-agent")), "hub_api_server_url": lab.api_urls["hub"],
             "hub_api_server_ca": str(lab.ca_files["hub"]), "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub",
             "wait": True, "wait_timeout": 60}
    for given, extra in (("values_file", {"values_file": str(values)}),
                         ("token_name", {"token_name": token, "token_namespace": FLEET_NS})):
        result = run_module("fleet_agent", dict(agent, **extra))
        assert result.failed, "fleet_agent installed with an expired token (%s)" % given
        assert given in result["msg"] and "expire" in result["msg"], result["msg"]
        assert sides.release(MEMBER, "fleet-agent", FLEET_AGENT_NS) is None, "fleet_agent left a release behind (%s)" % given
    fault_at = time.time()
    rerun = play.converges("join_cluster.yml", *LIMIT)
    assert_joined_since(sides, rerun, fault_at)


# -- each cause an agent repair addresses (issue 32): one plain re-run restores a contact made after it started -------

KF_AGENT = ("member-agent", "fleet-system")
FLEET_AGENT = ("fleet-agent", FLEET_AGENT_NS)
KF_TOKEN = ("hub-kubeconfig-secret", "fleet-hub-credentials")


def _heartbeat(sides):
    return sides.kubefleet_heartbeat(MEMBER)


def _agent_pids(lab, container):
    return agent_pids(lab, MEMBER, container)


def _assert_kubefleet_heartbeat_since(sides, since):
    sides.assert_kubefleet_member_healthy(MEMBER)
    wait_for(lambda: _heartbeat(sides) > since, 60, "%s: a member agent heartbeat made after the re-run started" % MEMBER)


def test_agents_scaled_to_0_are_rolled_out_again(lab_controllers, play, sides):
    lab = lab_controllers
    play.converges("join_cluster.yml", *LIMIT)  # joined (nothing to do when an earlier test left it so)
    apps = client.AppsV1Api(lab.api_client(MEMBER))
    for agent, namespace in (KF_AGENT, FLEET_AGENT):
        apps.patch_namespaced_deployment_scale(agent, namespace, {"spec": {"replicas": 0}})
    wait_for(lambda: not (_agent_pids(lab, "member-agent") | _agent_pids(lab, "fleet-agent")), 120, "both agents to stop")
    fault_at = time.time()
    rerun = play.converges("join_cluster.yml", *LIMIT)
    assert recap_changed(rerun, MEMBER) > 0, "the re-run reported a member whose agents were scaled to 0 as unchanged"
    for agent, namespace in (KF_AGENT, FLEET_AGENT):
        replicas = apps.read_namespaced_deployment(agent, namespace).spec.replicas
        assert replicas == 1, "%s has %s replicas after the re-run" % (agent, replicas)
    _assert_kubefleet_heartbeat_since(sides, fault_at)
    assert_joined_since(sides, rerun, fault_at)


def test_a_member_cluster_deleted_while_its_agent_is_at_0_replicas_is_let_go_and_joined_again_in_one_run(lab_controllers, play, sides):
    # Soak seed 3552 round 5: KubeFleet's hub agent keeps a deleted MemberCluster until the member agent acknowledges
    # the leave (force-deleting it only after 15 minutes); with the agent scaled to 0, both runs timed out waiting.
    lab = lab_controllers
    play.converges("join_cluster.yml", *LIMIT)
    apps = client.AppsV1Api(lab.api_client(MEMBER))
    apps.patch_namespaced_deployment_scale(*KF_AGENT, {"spec": {"replicas": 0}})
    wait_for(lambda: not _agent_pids(lab, "member-agent"), 120, "the member agent to stop")
    before = sides.member_cluster(MEMBER)["metadata"]["uid"]
    sides.hub_custom.delete_cluster_custom_object(*KUBEFLEET, "memberclusters", MEMBER)
    time.sleep(5)
    assert (sides.member_cluster(MEMBER) or {}).get("metadata", {}).get("deletionTimestamp"), "the hub let it go without its agent"
    checked = play.converges("join_cluster.yml", *LIMIT, "--check")  # it failed at the MemberCluster step: "still leaving"
    assert "still leaving the fleet; a real run waits until the hub lets it go" in " ".join(checked.split()), checked[-3000:]
    assert apps.read_namespaced_deployment(*KF_AGENT).spec.replicas == 0, "the check run changed the agent"
    fault_at = time.time()
    rerun = play.converges("join_cluster.yml", *LIMIT)
    assert re.search(r"acknowledge the leave[^\n]*\nchanged: \[%s\]" % MEMBER, rerun), "no step let the leave finish:\n" + rerun[-3000:]
    assert sides.member_cluster(MEMBER)["metadata"]["uid"] != before, "the MemberCluster was not made again"
    assert apps.read_namespaced_deployment(*KF_AGENT).spec.replicas == 1
    _assert_kubefleet_heartbeat_since(sides, fault_at)
    assert_joined_since(sides, rerun, fault_at)


def test_a_fleet_cluster_deleted_under_a_running_agent_is_made_again_and_the_agent_registered_in_one_run(lab_controllers, play, sides):
    # Soak seed 479 round 3: the hub still accepted the agent's credential when the run read the member (Fleet was still
    # deleting the Cluster's namespace, and its ServiceAccount with it), so the join only upgraded the agent with a new
    # token - and the agent, its credential gone with the namespace, never registered again: the run timed out waiting
    # for its check-in. Here the hub's kube-controller-manager (its namespace controller) is stopped until the run has
    # read the member, so the credential is still accepted then, as in the soak. Seed 7301 round 27 also deleted the
    # agent's credential Secret on the member: the running agent keeps what it read, and the join timed out the same
    # way - so it is deleted here too, and the agent's Deployment alone must make the join register it again.
    lab = lab_controllers
    joined(play, sides)
    before = sides.fleet_cluster(MEMBER)["metadata"]["uid"]
    lab.stop("hub/kube-controller-manager")
    try:
        sides.hub_custom.delete_namespaced_custom_object(*FLEET, FLEET_NS, "clusters", MEMBER)
        sides.core(MEMBER).delete_namespaced_secret("fleet-agent", FLEET_AGENT_NS)
        time.sleep(2)  # Fleet's controller starts deleting the Cluster's namespace
        fault_at = time.time()
        run = play.start("join_cluster.yml", *LIMIT, "-e", "member_join_wait_timeout=90")
        wait_for(lambda: "TASK [fleetops.registration.member_join : Lock on the hub" in run.log.read_text() or run.poll() is not None,
                 120, "the run to read the member")
    finally:
        lab.start("hub/kube-controller-manager")
    code, rerun = play.finish(run)
    assert code == 0, rerun[-4000:]
    assert sides.fleet_cluster(MEMBER)["metadata"]["uid"] != before, "the Cluster was not made again"
    assert_joined_since(sides, rerun, fault_at)


def _fleet_last_seen(sides):
    return stamp(((sides.fleet_cluster(MEMBER) or {}).get("status") or {}).get("agent", {}).get("lastSeen")) or 0


def _available_since(apps, agent):
    conditions = apps.read_namespaced_deployment(*agent).status.conditions or []
    times = [c.last_transition_time.timestamp() for c in conditions if c.type == "Available" and c.status == "True"]
    return times[0] if times else None


def test_a_check_in_older_than_the_running_fleet_agent_is_not_counted_as_its_own(lab_controllers, play, sides):
    """Found by make soak (seed 6, round 27): a run restored the Fleet agent, then lost the hub before the agent's first
    check-in (15 s after its start; the next one comes a check-in interval later, 15 min by default). The re-run called
    the member checked in, from the earlier agent's check-in, which Fleet's hour of staleness still accepts. Here the
    new agent is frozen before its first check-in: the re-run must not count the old check-in, and restarts it."""
    lab = lab_controllers
    play.converges("join_cluster.yml", *LIMIT)
    apps = client.AppsV1Api(lab.api_client(MEMBER))
    apps.patch_namespaced_deployment_scale(*FLEET_AGENT, {"spec": {"replicas": 0}})
    wait_for(lambda: not _agent_pids(lab, "fleet-agent"), 120, "the Fleet agent to stop")
    time.sleep(CLOCK_SLACK_SECONDS + 3)  # the last check-in clearly before the new agent, beyond the clocks' slack
    apps.patch_namespaced_deployment_scale(*FLEET_AGENT, {"spec": {"replicas": 1}})
    wait_for(lambda: _agent_pids(lab, "fleet-agent"), 60, "the new Fleet agent process")
    frozen = "%s/%s/fleet-agent-*/fleet-agent" % (MEMBER, FLEET_AGENT_NS)
    lab.freeze(frozen)
    try:
        since = wait_for(lambda: _available_since(apps, FLEET_AGENT), 60, "the Fleet agent Deployment available again")
        assert _fleet_last_seen(sides) < since - CLOCK_SLACK_SECONDS, "the frozen agent checked in before it was frozen: no fault"
        fault_at = time.time()
        rerun = play.converges("join_cluster.yml", *LIMIT)
    finally:
        for name, state in lab.components().items():
            if state == "frozen" and name.startswith("%s/%s/fleet-agent-" % (MEMBER, FLEET_AGENT_NS)):
                lab.thaw(name)
    assert recap_changed(rerun, MEMBER) > 0, "the re-run counted the earlier agent's check-in as the frozen agent's"
    assert "older than the agent that runs now" in rerun, "the re-run did not say why it restarted the agent"
    assert_joined_since(sides, rerun, fault_at)


def test_deleted_agent_deployments_are_made_again(lab_controllers, play, sides):
    """Found by make soak: a deleted KubeFleet member-agent Deployment was never made again (its release unchanged, the
    step waited for a rollout of nothing); the re-run upgrades the release, and Helm creates what its manifest holds."""
    lab = lab_controllers
    play.converges("join_cluster.yml", *LIMIT)
    apps = client.AppsV1Api(lab.api_client(MEMBER))
    for agent, namespace in (KF_AGENT, FLEET_AGENT):
        apps.delete_namespaced_deployment(agent, namespace)
    wait_for(lambda: not (_agent_pids(lab, "member-agent") | _agent_pids(lab, "fleet-agent")), 120, "both agents to stop")
    fault_at = time.time()
    rerun = play.converges("join_cluster.yml", *LIMIT)
    assert recap_changed(rerun, MEMBER) > 0, "the re-run reported a member whose agent Deployments were deleted as unchanged"
    for agent, namespace in (KF_AGENT, FLEET_AGENT):
        assert (apps.read_namespaced_deployment(agent, namespace).status.available_replicas or 0) > 0, agent
    _assert_kubefleet_heartbeat_since(sides, fault_at)
    assert_joined_since(sides, rerun, fault_at)


def test_a_frozen_member_agent_is_restarted(lab_controllers, play, sides):
    lab = lab_controllers
    play.converges("join_cluster.yml", *LIMIT)
    # a 10 s heartbeat period makes the heartbeat stale (3 periods) within the test's time; the re-run sets it back
    sides.hub_custom.patch_cluster_custom_object(*KUBEFLEET, "memberclusters", MEMBER, {"spec": {"heartbeatPeriodSeconds": 10}})
    frozen = _agent_pids(lab, "member-agent")
    token = _member_token(sides)
    lab.freeze("%s/fleet-system/member-agent-*/member-agent" % MEMBER)
    try:
        wait_for(lambda: time.time() - _heartbeat(sides) > 40, 120, "the frozen agent's heartbeat to go stale (3 periods)")
        fault_at = time.time()
        rerun = play.converges("join_cluster.yml", *LIMIT)
    finally:
        for name, state in lab.components().items():
            if state == "frozen" and name.startswith("%s/fleet-system/member-agent-" % MEMBER):
                lab.thaw(name)
    assert recap_changed(rerun, MEMBER) > 0, "the re-run reported a member with a frozen agent as unchanged"
    # The hub still accepts its token, so the agent is restarted and keeps it (soak seed 183, round 6: after a hub
    # outage every member's KubeFleet agent was given a new token, though only its heartbeat's back-off was wrong).
    assert _member_token(sides) == token, "the re-run replaced the token of an agent whose token the hub accepts"
    assert "agent repaired (the agent was restarted (rollout restart)" in rerun
    # the restart deleted the frozen agent's pod; its process ends within the pod's grace period (SIGKILL after it)
    wait_for(lambda: not frozen & _agent_pids(lab, "member-agent"), 30, "the frozen member agent process to end")
    _assert_kubefleet_heartbeat_since(sides, fault_at)


def test_a_member_cluster_made_again_while_its_agent_is_frozen_restarts_the_agent_and_joins_in_one_run(lab_controllers, play, sides):
    # Soak seed 8123 round 5: the MemberCluster was deleted (its agent acknowledged the leave), then the agent frozen.
    # The join made the MemberCluster again and left the agent, installed as configured, to join it: both runs waited
    # 150 s. An agent left running that has not joined within 30 s is now restarted.
    lab = lab_controllers
    play.converges("join_cluster.yml", *LIMIT)
    sides.hub_custom.delete_cluster_custom_object(*KUBEFLEET, "memberclusters", MEMBER)
    wait_for(lambda: sides.member_cluster(MEMBER) is None, 120, "the hub to let the MemberCluster go")
    frozen = _agent_pids(lab, "member-agent")
    lab.freeze("%s/fleet-system/member-agent-*/member-agent" % MEMBER)
    try:
        fault_at = time.time()
        rerun = play.converges("join_cluster.yml", *LIMIT, "-e", "member_join_wait_timeout=90")
    finally:
        for name, state in lab.components().items():
            if state == "frozen" and name.startswith("%s/fleet-system/member-agent-" % MEMBER):
                lab.thaw(name)
    wait_for(lambda: not frozen & _agent_pids(lab, "member-agent"), 30, "the frozen member agent process to end")
    _assert_kubefleet_heartbeat_since(sides, fault_at)
    assert_joined_since(sides, rerun, fault_at)


def _member_info_kubefleet(lab):
    result = run_module("member_info", {"kubeconfig": str(lab.kubeconfig), "context": MEMBER, "hub_kubeconfig": str(lab.kubeconfig),
                                        "hub_context": "hub", "name": MEMBER, "backends": ["kubefleet"]})
    assert not result.failed, result.get("msg")
    return result["managers"]["kubefleet"]


def _freeze_until_overdue(lab, sides, agent):
    """Freeze the member agent right after a heartbeat, and return once that heartbeat is overdue (10 s period)."""
    wait_for(lambda: time.time() - _heartbeat(sides) < 3, 120, "a heartbeat at the 10 s period")
    lab.freeze(agent)
    frozen_beat = _heartbeat(sides)
    wait_for(lambda: time.time() - frozen_beat > 17, 30, "the frozen agent's heartbeat to be overdue")
    return frozen_beat


def test_an_overdue_heartbeat_is_waited_for_and_judged_silent_when_it_does_not_come(lab_controllers, play, sides):
    # Soak seed 2150 round 3 (a rehearsal of .ci/run): after a hub outage a run called a member healthy from a
    # heartbeat made before the outage, 19 s old at a 10 s period; the agent was backing off and the hub judged it
    # silent moments after the run. A heartbeat older than its period is now waited for until it would be silent.
    lab = lab_controllers
    play.converges("join_cluster.yml", *LIMIT)
    sides.hub_custom.patch_cluster_custom_object(*KUBEFLEET, "memberclusters", MEMBER, {"spec": {"heartbeatPeriodSeconds": 10}})
    agent = "%s/fleet-system/member-agent-*/member-agent" % MEMBER
    thaw = threading.Timer(6, lambda: lab.thaw(agent))
    try:
        _freeze_until_overdue(lab, sides, agent)
        started = time.time()
        state = _member_info_kubefleet(lab)
        waited = time.time() - started
        assert {"cause": "silent", "action": "install"} in [{"cause": f["cause"], "action": f["action"]} for f in state["findings"]], state["findings"]
        assert waited > 8, "member_info judged the overdue agent at once (%.1f s), not once it was silent" % waited
        lab.thaw(agent)
        # heard from within the wait: healthy, from a heartbeat made after the one that was overdue
        frozen_beat = _freeze_until_overdue(lab, sides, agent)
        thaw.start()
        state = _member_info_kubefleet(lab)
        assert not [f for f in state["findings"] if f["action"] in ("install", "reregister")], state["findings"]
        assert stamp(state["hub"]["heartbeat"]) > frozen_beat, "member_info judged the member by its overdue heartbeat"
    finally:
        thaw.cancel()
        for name, component in lab.components().items():
            if component == "frozen" and name.startswith("%s/fleet-system/member-agent-" % MEMBER):
                lab.thaw(name)
    play.converges("join_cluster.yml", *LIMIT)


def test_a_heartbeat_the_hub_agent_has_not_copied_yet_is_not_silence(lab_controllers, play, sides):
    # After a hub outage the hub agent copies the member agent's heartbeat from its InternalMemberCluster onto the
    # MemberCluster tens of seconds late (39 s at a 10 s period on the lab), while the agent heartbeats; soak seed 2150
    # round 3's re-run restarted such an agent. With the hub agent frozen, only the InternalMemberCluster's is fresh.
    lab = lab_controllers
    play.converges("join_cluster.yml", *LIMIT)
    sides.hub_custom.patch_cluster_custom_object(*KUBEFLEET, "memberclusters", MEMBER, {"spec": {"heartbeatPeriodSeconds": 10}})
    wait_for(lambda: time.time() - _heartbeat(sides) < 3, 120, "a heartbeat at the 10 s period")
    pods = {p.metadata.name for p in sides.core(MEMBER).list_namespaced_pod(KF_AGENT[1]).items}
    hub_agent = "hub/fleet-system/hub-agent-*/hub-agent"
    lab.freeze(hub_agent)
    try:
        copied = _heartbeat(sides)
        wait_for(lambda: time.time() - copied > 35, 60, "the MemberCluster's heartbeat copy to be older than 3 periods")
        state = _member_info_kubefleet(lab)
    finally:
        lab.thaw(hub_agent)
    assert not [f for f in state["findings"] if f["cause"] == "silent"], state["findings"]
    assert stamp(state["hub"]["heartbeat"]) > copied + 10, "member_info judged the member by the hub agent's stale copy"
    assert {p.metadata.name for p in sides.core(MEMBER).list_namespaced_pod(KF_AGENT[1]).items} == pods
    play.converges("join_cluster.yml", *LIMIT)


def _member_token(sides):
    """The member agent's hub token (the Secret the collection writes on the member)."""
    return sides.core(MEMBER).read_namespaced_secret("hub-kubeconfig-secret", "fleet-hub-credentials").data["token"]


def _agent_pods_started(sides):
    """Start times (epoch seconds) of the member agent's pods that are not being deleted."""
    pods = sides.core(MEMBER).list_namespaced_pod(KF_AGENT[1]).items
    return [pod.status.start_time.timestamp() for pod in pods if pod.metadata.name.startswith(KF_AGENT[0] + "-")
            and pod.metadata.deletion_timestamp is None and pod.status.start_time]


def test_member_agent_token_deleted_or_rejected(lab_controllers, play, sides):
    play.converges("join_cluster.yml", *LIMIT)
    core = sides.core(MEMBER)
    # deleted on the member: the agent keeps the token it read, so only the Secret and a restart show the repair
    before = _agent_pids(lab_controllers, "member-agent")
    core.delete_namespaced_secret(*KF_TOKEN)
    fault_at = time.time()
    rerun = play.converges("join_cluster.yml", *LIMIT)
    assert recap_changed(rerun, MEMBER) > 0, "the re-run reported a member without its token Secret as unchanged"
    assert sides.secret_value(MEMBER, KF_TOKEN[1], KF_TOKEN[0], "token"), "the token Secret was not written again"
    _assert_kubefleet_heartbeat_since(sides, fault_at)
    # The join issues a new token and revokes the identity's older ones: an agent still holding the one it read at its
    # start would be refused at its next heartbeat (the soak, seed 6 round 28). Its pod must have started again after
    # the new token was written, and the old process ended.
    issued = stamp(core.read_namespaced_secret(*KF_TOKEN).metadata.annotations["fleetops.registration/token-issued"])
    started = _agent_pods_started(sides)
    assert started and min(started) >= issued - 1, "the member agent was not restarted with the token written at %s" % issued
    wait_for(lambda: not before & _agent_pids(lab_controllers, "member-agent"), 30, "the agent process with the old token to end")
    # rejected by the hub: the hub Secret the token is bound to deleted, which revokes it
    source = core.read_namespaced_secret(KF_TOKEN[0], KF_TOKEN[1]).metadata.annotations["fleetops.registration/token-secret"]
    revoked = sides.secret_value(MEMBER, KF_TOKEN[1], KF_TOKEN[0], "token")
    sides.hub_core.delete_namespaced_secret(source, "fleetops-system")
    wait_for(lambda: read_whoami(sides, revoked) == 401, 60, "the hub to reject the revoked token")
    fault_at = time.time()
    rerun = play.converges("join_cluster.yml", *LIMIT)
    assert recap_changed(rerun, MEMBER) > 0, "the re-run reported a member whose token the hub rejects as unchanged"
    assert sides.secret_value(MEMBER, KF_TOKEN[1], KF_TOKEN[0], "token") != revoked, "no new token was issued"
    _assert_kubefleet_heartbeat_since(sides, fault_at)


def read_whoami(sides, token):
    """The HTTP status of a SelfSubjectReview made with ``token`` (200 when the hub accepts it)."""
    try:
        sides.whoami(sides.token_client(token))
    except client.exceptions.ApiException as exc:
        return exc.status
    return 200
