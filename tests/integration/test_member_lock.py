"""The per-member lock on the lab's hub: two joins of the same new member launched together (an AWX job launched
twice), a lock left by a run that died - taken over at once from the same controller, once it expired (or when told to)
from another - and a live run's lock waited for with progress."""

import datetime
import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from fleet_workloads import helm_releases
from kube_helpers import read_or_none, unique, wait_for
from modrun import run_module
from process_tree import kill_tree, stop_tree
from test_playbooks import Hub, assert_left, members_restored_on_failure, playbook, playbook_command  # noqa: F401 pylint: disable=unused-import

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("members_restored_on_failure")]

LOCK_NAMESPACE = "fleetops-system"  # the default (issue 31: the collection's own hub namespace)


def lock_lease(lab, member):
    leases = client.CoordinationV1Api(lab.api_client("hub"))
    return read_or_none(lambda: leases.read_namespaced_lease("fleetops-member-" + member, LOCK_NAMESPACE))


def task_result(run, task):
    """The status line ansible-playbook printed for member2 under ``task``."""
    after = run.output.split(task, 1)[1]
    return next(line.split(":")[0] for line in after.splitlines() if line.endswith("[member2]"))


def test_two_joins_of_the_same_new_member_at_once_both_succeed_and_join_it_once(lab_controllers, tmp_path):
    lab, hub = lab_controllers, Hub(lab_controllers)
    playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)
    assert_left(hub, ["member2"])
    runs_dirs = [tmp_path / "first", tmp_path / "second"]
    for path in runs_dirs:
        path.mkdir()
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(playbook, lab, "join_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=runs_dirs[0])
        time.sleep(1)
        second = pool.submit(playbook, lab, "join_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=runs_dirs[1])
        runs = [first.result(), second.result()]  # each raises unless its run exited 0
    # One run joined member2; the other read it as needing a join too (so it ran its lock task rather than skipping it),
    # waited for the lock, read it again and had nothing left to do.
    assert sorted(run.changed("member2") > 0 for run in runs) == [False, True], (
        [run.recap for run in runs], [line for run in runs for line in run.output.splitlines() if "WARNING" in line or "changed:" in line])
    lock_task = "Lock on the hub each member that needs a step"
    assert [task_result(run, lock_task) for run in runs] == ["ok", "ok"], [run.output[-3000:] for run in runs]

    cluster = hub.fleet_cluster("member2")
    client_id = cluster["spec"]["clientID"]
    registrations = [r for r in hub.fleet_list("clusterregistrations") if r["spec"].get("clientID") == client_id]
    assert len(registrations) == 1, registrations
    assert (cluster.get("status") or {}).get("agent", {}).get("lastSeen")
    assert hub.member_cluster("member2") is not None
    tokens = [t["metadata"]["name"] for t in hub.fleet_list("clusterregistrationtokens")
              if t["metadata"]["name"].startswith("fleetops-join-")]
    assert tokens == []
    assert lock_lease(lab, "member2") is None

    playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)
    assert_left(hub, ["member2"], [client_id])


def test_a_lock_left_by_a_run_that_died_is_taken_over_once_it_expires(lab_controllers):
    lab = lab_controllers
    name = unique("locked")
    item = {"name": name, "kubeconfig": str(lab.kubeconfig), "context": "member2", "hub_kubeconfig": str(lab.kubeconfig),
            "hub_context": "hub", "backends": ["kubefleet"]}

    def states(run_id):
        return {name: {"name": name, "pending": ["kubefleet"], "run_id": run_id}}

    # Long enough that the status and the blocked run below (two module processes, slow on a loaded machine) see it
    # live - with 4 s it once expired before the blocked run read it - and short enough that the takeover waits little.
    died = run_module("member_lock", {"members": [item], "states": states("diedrun001"), "lock_duration": 15,
                                      "run_by": "a run that dies"})
    assert not died.failed and died["locked"] == [name] and died["changed"] is True, died
    lease = lock_lease(lab, name)
    assert lease.spec.holder_identity == "diedrun001" and lease.spec.lease_duration_seconds == 15

    # cluster_status shows who is changing the member.
    status = run_module("fleet_status_info", {"kubeconfig": str(lab.kubeconfig), "context": "hub", "inventory_names": [name]})
    assert status["members"][name]["lock"]["holder"] == "diedrun001" and status["members"][name]["lock"]["by"] == "a run that dies"
    assert any(line.startswith(name) and line.endswith("a run that dies (run diedrun001, until %s)" % status["members"][name]["lock"]["expires"])
               for line in status["table"]), status["table"]

    # The run died without releasing: another run waits, and past its wait_timeout fails naming the holder.
    blocked = run_module("member_lock", {"members": [item], "states": states("nextrun002"), "wait_timeout": 1})
    assert not blocked.failed and blocked["locked"] == [], blocked
    error = blocked["members"][name]["error"]
    assert "%s is being changed by another run (holder diedrun001, run by a run that dies" % name in error
    assert "%s/fleetops-member-%s" % (LOCK_NAMESPACE, name) in error

    taken = run_module("member_lock", {"members": [item], "states": states("nextrun002"), "wait_timeout": 60})
    assert not taken.failed and taken["waited"] == [name] and taken["locked"] == [name], taken
    # Read again under the lock: the member still needs its join, under this run's name.
    state = taken["members"][name]
    assert state["pending"] == ["kubefleet"] and state["run_id"] == "nextrun002" and state["lock"]["holder"] == "nextrun002"
    assert lock_lease(lab, name).spec.holder_identity == "nextrun002"

    # A release by the run that died (it came back) leaves the new holder's lock alone; the holder's own release ends it.
    stale = run_module("member_lock", {"state": "absent", "members": [item], "states": died["members"]})
    assert not stale.failed and stale["released"] == [] and lock_lease(lab, name) is not None
    released = run_module("member_lock", {"state": "absent", "members": [item], "states": taken["members"]})
    assert not released.failed and released["released"] == [name] and released["changed"] is True
    assert lock_lease(lab, name) is None


def test_a_registration_token_whose_run_is_over_is_removed_by_the_hub_tidy_and_a_running_one_s_kept(lab_controllers):
    """Issue 47 (make soak): a run that failed before its revoke step (the hub down, say) released its lock and left
    its registration token; its member needs no step in the next run, so no token step removes it - only the hub
    role's tidy can. A token is tidied once the member lock it was made under is no longer its run's; a token whose
    run still holds its lock stays."""
    lab = lab_controllers
    hub = {"kubeconfig": str(lab.kubeconfig), "context": "hub"}
    runs = {}
    for what in ("over", "running"):
        name, run_id = unique("tidy-" + what), unique(what + "run")
        item = {"name": name, "kubeconfig": str(lab.kubeconfig), "context": "member2", "hub_kubeconfig": str(lab.kubeconfig),
                "hub_context": "hub", "backends": ["rancher_fleet"]}
        taken = run_module("member_lock", {"members": [item], "lock_duration": 600,
                                           "states": {name: {"name": name, "pending": ["rancher_fleet"], "run_id": run_id}}})
        assert not taken.failed and taken["locked"] == [name], taken
        token = run_module("fleet_registration_token", dict(hub, name="fleetops-join-" + run_id, namespace="fleet-default", cluster=name,
                                                            run_id=run_id, ttl="1h", wait=False, member_lock=taken["members"][name]["lock"]))
        assert not token.failed, token.get("msg")
        runs[what] = (item, taken["members"], token["name"])
    fleet = client.CustomObjectsApi(lab.api_client("hub"))

    def tokens():
        return sorted(t["metadata"]["name"] for t in fleet.list_namespaced_custom_object(
            "fleet.cattle.io", "v1alpha1", "fleet-default", "clusterregistrationtokens")["items"])

    try:
        released = run_module("member_lock", {"state": "absent", "members": [runs["over"][0]], "states": runs["over"][1]})
        assert not released.failed and released["released"], released
        assert {runs["over"][2], runs["running"][2]} <= set(tokens())
        checked = run_module("hub_prepare", dict(hub, backends=["rancher_fleet"], backend_namespaces={"rancher_fleet": "fleet-default"}, tidy=True), check=True)
        assert runs["over"][2] in [item["name"] for item in checked["tidied"]["rancher_fleet"]] and runs["over"][2] in tokens()
        tidied = run_module("hub_prepare", dict(hub, backends=["rancher_fleet"], backend_namespaces={"rancher_fleet": "fleet-default"}, tidy=True))
        assert not tidied.failed and tidied.changed, tidied.get("msg")
        reasons = dict((item["name"], item["reason"]) for item in tidied["tidied"]["rancher_fleet"])
        assert reasons.get(runs["over"][2]) == "left by run %s, which is over (its lock is released)" % runs["over"][2][len("fleetops-join-"):]
        assert runs["over"][2] not in tokens() and runs["running"][2] in tokens() and runs["running"][2] not in reasons
    finally:
        run_module("member_lock", {"state": "absent", "members": [runs["running"][0]], "states": runs["running"][1]})
        for _item, _states, token in runs.values():
            run_module("fleet_registration_token", dict(hub, name=token, namespace="fleet-default", state="absent"))


def test_a_join_killed_with_the_hub_down_is_taken_over_at_once_by_the_next_run_from_the_same_controller(lab_controllers, tmp_path):
    """Issue 32 item 8: ansible-playbook killed (an AWX job cancelled, a controller that died) while it changes member2
    and the hub is down, so nothing can release its lock. Once the hub is back, a plain re-run from the same controller
    sees that the holder's process is gone and takes the lock over at once: before, it waited its whole wait_timeout
    (300 s) for a lock that lives three of the killed run's (600 s), and failed.

    The run is frozen before the hub goes down and killed while it is down, as a controller that died then: a run left
    going while the hub was down sometimes had no lock Lease on the hub after the kill (issue 49; its output showed it
    in the role's release step, and the cause was not found), which is not what this test is about."""
    lab, hub = lab_controllers, Hub(lab_controllers)
    playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)
    argv, env = playbook_command(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", "-e", "member_join_wait_timeout=200",
                                 tmp_path=tmp_path)
    with open(str(tmp_path / "killed.log"), "w") as log:
        killed = subprocess.Popen(argv, env=env, cwd=str(tmp_path), stdout=log, stderr=subprocess.STDOUT)
        try:
            lease = wait_for(lambda: lock_lease(lab, "member2"), 300, "the first join to lock member2")
            stop_tree(killed.pid)
            lab.kill("hub-apiserver")
        finally:
            kill_tree(killed.pid)  # the playbook and its workers, which are process groups of their own
            killed.wait()
            lab.heal()  # the hub API server back (also when the test failed before: later tests share this lab)
    killed_output = (tmp_path / "killed.log").read_text()
    assert lease.spec.lease_duration_seconds == 600
    assert json.loads(lease.metadata.annotations["fleetops.registration/holder-process"])["pid"] == killed.pid
    left = lock_lease(lab, "member2")
    assert left is not None and left.spec.holder_identity == lease.spec.holder_identity, \
        "the killed run's lock was released or replaced (%r); its output:\n%s" % (left, killed_output[-4000:])

    run = playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)
    expires = lease.spec.renew_time.timestamp() + lease.spec.lease_duration_seconds
    assert run.changed("member2") > 0 and time.time() < expires  # joined while the killed run's lock was still live
    # The hub role's tidy removed it before the member's lock step (which takes such a lock over itself, as
    # test_a_live_run_s_lock_is_waited_for_with_progress_and_taken_at_once_when_its_process_is_killed shows).
    assert "removed the lock of member2 left by run %s" % lease.spec.holder_identity in run.output
    assert "process %d on " % killed.pid in run.output and "no longer runs" in run.output
    assert lock_lease(lab, "member2") is None
    assert hub.member_cluster("member2") is not None and (hub.fleet_cluster("member2").get("status") or {}).get("agent")
    assert playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path).unchanged(["fleet-hub", "member2"])
    playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)
    assert_left(hub, ["member2"])


def test_a_join_that_lost_the_member_while_its_agent_checked_in_leaves_the_agent_to_the_run_that_holds_it(lab_controllers, tmp_path):
    """The Rancher Fleet agent's step uninstalls a release it installed when no check-in comes; once another run holds
    the member, that release may be the one the other run relies on. A step that finds the lock taken over after its
    wait for the check-in fails saying so, and the release stays."""
    lab, hub = lab_controllers, Hub(lab_controllers)
    member_api = client.CoreV1Api(lab.api_client("member2"))
    leases = client.CoordinationV1Api(lab.api_client("hub"))
    playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)
    argv, env = playbook_command(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)
    with open(str(tmp_path / "join.log"), "w") as log:
        join = subprocess.Popen(argv, env=env, cwd=str(tmp_path), stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: read_or_none(lambda: member_api.read_namespaced_secret("sh.helm.release.v1.fleet-agent.v1",
                                                                                    "cattle-fleet-system")), 300,
                     "the join to install the fleet-agent release on member2")
            # The agent needs seconds to register and check in; the step is waiting for it now.
            leases.patch_namespaced_lease("fleetops-member-member2", LOCK_NAMESPACE, {"spec": {"holderIdentity": "nextrun004"}})
            assert join.wait(timeout=600) != 0
        finally:
            if join.poll() is None:
                join.kill()
    output = (tmp_path / "join.log").read_text()
    assert "no longer holds the lock %s/fleetops-member-member2 of the member (taken over by run nextrun004" % LOCK_NAMESPACE in output
    assert "release cattle-fleet-system/fleet-agent was installed by this step and is left to that run" in output
    assert "fleet-agent" in helm_releases(lab, "member2", "cattle-fleet-system")
    assert lock_lease(lab, "member2").spec.holder_identity == "nextrun004"  # the failed run released nothing of another's

    leases.delete_namespaced_lease("fleetops-member-member2", LOCK_NAMESPACE)
    playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)  # the member's state for later tests
    assert hub.member_cluster("member2") is not None and (hub.fleet_cluster("member2").get("status") or {}).get("agent")


def test_runs_for_different_members_never_wait_for_each_other(lab):
    """AWX job slices: each slice locks its own members, however long another slice holds its own."""
    first, second = unique("slice"), unique("slice")
    items = [{"name": name, "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"} for name in (first, second)]
    one = run_module("member_lock", {"members": items[:1], "lock_duration": 600})
    other = run_module("member_lock", {"members": items[1:], "wait_timeout": 1})
    assert one["locked"] == [first] and other["locked"] == [second] and other["waited"] == [], other
    for result, item in ((one, items[0]), (other, items[1])):
        released = run_module("member_lock", {"state": "absent", "members": [item], "states": result["members"]})
        assert released["released"] == [item["name"]] and lock_lease(lab, item["name"]) is None


def test_check_mode_takes_no_lock(lab):
    name = unique("locked")
    item = {"name": name, "kubeconfig": str(lab.kubeconfig), "context": "member2", "hub_kubeconfig": str(lab.kubeconfig),
            "hub_context": "hub"}
    result = run_module("member_lock", {"members": [item], "states": {name: {"name": name, "pending": ["kubefleet"],
                                                                             "run_id": "checkrun01"}}}, check=True)
    assert not result.failed and result["locked"] == [] and result["changed"] is False
    assert lock_lease(lab, name) is None


def test_a_leave_waits_for_the_run_that_holds_the_member_s_lock(lab_controllers, tmp_path):
    lab = lab_controllers
    item = {"name": "member2", "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"}
    joining = run_module("member_lock", {"members": [item], "lock_duration": 600, "run_by": "a join of member2"})
    assert not joining.failed and joining["locked"] == ["member2"], joining
    refused = playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub,member2", "-e", "member_leave_wait_timeout=2",
                       tmp_path=tmp_path, fails=True)
    assert "member2 is being changed by another run (holder %s, run by a join of member2" % (
        joining["members"]["member2"]["lock"]["holder"]) in refused.output
    assert refused.recap["member2"]["changed"] == 0
    assert lock_lease(lab, "member2").spec.holder_identity == joining["members"]["member2"]["lock"]["holder"]

    released = run_module("member_lock", {"state": "absent", "members": [item], "states": joining["members"]})
    assert released["released"] == ["member2"]
    brief = run_module("member_lock", {"members": [item], "lock_duration": 3, "run_by": "a join that died"})
    assert brief["locked"] == ["member2"]
    playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path)
    # The leave took the expired lock over and released it at its end.
    assert lock_lease(lab, "member2") is None


def test_a_step_late_in_a_long_run_renews_the_lock_and_one_whose_lock_was_taken_over_changes_nothing(lab):
    name = unique("renew")
    item = {"name": name, "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"}
    taken = run_module("member_lock", {"members": [item], "lock_duration": 600})
    lock = taken["members"][name]["lock"]
    renewed_at = lock_lease(lab, name).spec.renew_time
    step = {"kubeconfig": str(lab.kubeconfig), "context": "hub", "name": name, "state": "absent"}

    early = run_module("kubefleet_member_identity", dict(step, member_lock=lock))
    assert not early.failed and lock_lease(lab, name).spec.renew_time == renewed_at  # a fast run pays nothing

    late = dict(lock, taken="2000-01-01T00:00:00.000000Z")  # as if taken a long wait ago
    assert not run_module("kubefleet_member_identity", dict(step, member_lock=late)).failed
    assert lock_lease(lab, name).spec.renew_time > renewed_at

    lost = run_module("kubefleet_member_identity", dict(step, member_lock=dict(late, holder="otherrun01")))
    assert lost.failed and "no longer holds the lock %s/fleetops-member-%s" % (LOCK_NAMESPACE, name) in lost["msg"]
    assert "taken over by run %s" % lock["holder"] in lost["msg"]

    # The release still finds its lock after the renewals changed its version.
    released = run_module("member_lock", {"state": "absent", "members": [item], "states": taken["members"]})
    assert released["released"] == [name] and lock_lease(lab, name) is None


def identity_waiting_for_its_token(lab, name, lock, take_over=None):
    """kubefleet_member_identity with ``lock`` for ``name``, its wait for the token held up (the hub's
    kube-controller-manager frozen) until the step has made its token Secret; ``take_over(lease)`` runs then."""
    core = client.CoreV1Api(lab.api_client("hub"))
    step = {"kubeconfig": str(lab.kubeconfig), "context": "hub", "name": name, "member_lock": lock, "wait_timeout": 120,
            "token_lifetime": "never", "allow_non_expiring_token": True}  # a legacy token Secret, which kube-controller-manager fills
    lab.freeze("hub-controller-manager")
    try:
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(run_module, "kubefleet_member_identity", step)
            wait_for(lambda: read_or_none(lambda: core.read_namespaced_secret(name + "-hub-cluster-access-token", LOCK_NAMESPACE)),
                     120, "the step to make its token Secret")
            before = lock_lease(lab, name)
            if take_over:
                take_over(before)
            lab.thaw("hub-controller-manager")
            return waiting.result(timeout=240), before
    finally:
        lab.heal()


def test_a_step_acts_after_a_wait_only_while_its_run_still_holds_the_member(lab):
    """A run whose ansible-playbook was killed goes on in its worker (Ansible's workers run in sessions of their own)
    until its task ends; once the next run took the member over, that step must not act on what it waited for (the
    killed join's token task pruned the next run's token). Each wait that paused renews the lock, or stops the step."""
    leases = client.CoordinationV1Api(lab.api_client("hub"))
    core = client.CoreV1Api(lab.api_client("hub"))
    kept, lost = unique("waited"), unique("waited")
    items = [{"name": name, "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"} for name in (kept, lost)]
    taken = run_module("member_lock", {"members": items, "lock_duration": 600})
    assert sorted(taken["locked"]) == sorted([kept, lost]), taken

    done, before = identity_waiting_for_its_token(lab, kept, taken["members"][kept]["lock"])
    assert not done.failed and done["changed"] and done["token_secret"]["token_ready"], done
    assert lock_lease(lab, kept).spec.renew_time > before.spec.renew_time  # renewed after the wait, not due at the start

    def take_over(lease):
        leases.patch_namespaced_lease(lease.metadata.name, LOCK_NAMESPACE, {"spec": {"holderIdentity": "nextrun003"}})

    stopped, _before = identity_waiting_for_its_token(lab, lost, taken["members"][lost]["lock"], take_over)
    assert stopped.failed and stopped["changed"] is True, stopped
    assert "no longer holds the lock %s/fleetops-member-%s of the member (taken over by run nextrun003" % (LOCK_NAMESPACE, lost) in stopped["msg"]
    assert "left to that run" in stopped["msg"] and "changed nothing after its wait" in stopped["msg"]
    # What the step made stays for the run that holds the member now (it may already use them).
    assert read_or_none(lambda: core.read_namespaced_service_account(lost + "-hub-cluster-access", LOCK_NAMESPACE)) is not None
    assert read_or_none(lambda: core.read_namespaced_secret(lost + "-hub-cluster-access-token", LOCK_NAMESPACE)) is not None

    for name in (kept, lost):
        assert not run_module("kubefleet_member_identity", {"kubeconfig": str(lab.kubeconfig), "context": "hub", "name": name,
                                                            "state": "absent"}).failed
        leases.delete_namespaced_lease("fleetops-member-" + name, LOCK_NAMESPACE)


HOLDER_PLAYBOOK = """
- name: Lock a member, then hold it (a run busy changing it)
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Lock the member
      fleetops.registration.member_lock:
        members: [{name: "{{ member }}", hub_kubeconfig: "{{ hub_kubeconfig }}", hub_context: hub}]
        lock_duration: 600
        wait_timeout: "{{ wait | d(300) }}"
        lock_takeover: "{{ takeover | d(false) }}"
      register: locks
    - name: Note the result
      ansible.builtin.copy:
        content: "{{ locks | to_json }}"
        dest: "{{ result_file }}"
        mode: "0600"
    - name: Hold it
      ansible.builtin.pause:
        seconds: "{{ hold }}"
      when: hold is defined
"""


def lock_run(lab, tmp_path, name, label, *extra, background=False):
    """ansible-playbook locking ``name``: ``(process, result file)`` in the background, else ``(run, result)``."""
    (tmp_path / "lock.yml").write_text(HOLDER_PLAYBOOK)
    result = tmp_path / (label + ".json")
    args = ["-e", "member=%s hub_kubeconfig=%s result_file=%s" % (name, lab.kubeconfig, result)] + list(extra)
    if background:
        argv, env = playbook_command(lab, str(tmp_path / "lock.yml"), *args, tmp_path=tmp_path)
        with open(str(tmp_path / (label + ".log")), "w") as log:
            return subprocess.Popen(argv, env=env, cwd=str(tmp_path), stdout=log, stderr=subprocess.STDOUT), result
    run = playbook(lab, str(tmp_path / "lock.yml"), *args, tmp_path=tmp_path)
    return run, json.loads(result.read_text())


def test_a_live_run_s_lock_is_waited_for_with_progress_and_taken_at_once_when_its_process_is_killed(lab, tmp_path):
    name = unique("held")
    holder, _result = lock_run(lab, tmp_path, name, "holder", "-e", "hold=600", background=True)
    try:
        lease = wait_for(lambda: lock_lease(lab, name), 120, "the holder to lock %s" % name)
        # The lock names the run's ansible-playbook process, not the worker or module process of its lock task (gone by now).
        assert json.loads(lease.metadata.annotations["fleetops.registration/holder-process"])["pid"] == holder.pid
        run, blocked = lock_run(lab, tmp_path, name, "blocked", "-e", "wait=30")
        assert blocked["locked"] == [] and list(blocked["held"]) == [name], blocked
        progress = "%s is being changed by another run (holder %s, run by " % (name, lease.spec.holder_identity)
        assert progress in run.output and ", process %d on " % holder.pid in run.output, run.output[-3000:]
        assert " s left of 30" in run.output  # a line while it waited, not a silent wait
        assert "member_join_lock_takeover=true" in blocked["members"][name]["error"]
    finally:
        kill_tree(holder.pid)
        holder.wait()
    started = time.monotonic()
    taken = run_module("member_lock", {"members": [{"name": name, "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"}]})
    assert taken["took_over"] == [name] and taken["locked"] == [name] and time.monotonic() - started < 60, taken
    assert "took over the lock of %s from run %s" % (name, lease.spec.holder_identity) in taken["raw_output"]
    assert "its run (process %d on " % holder.pid in taken["raw_output"] and "no longer runs" in taken["raw_output"]
    item = {"name": name, "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"}
    run_module("member_lock", {"state": "absent", "members": [item], "states": taken["members"]})
    assert lock_lease(lab, name) is None


def test_the_hub_tidy_removes_a_killed_run_s_lock_and_an_expired_one_and_keeps_those_that_may_still_run(lab, tmp_path):
    """Issue 47 (seed 7's soak): a SIGKILLed join's lock stayed on the hub until it expired, as no later run needed its
    member; from another controller a run for it would have waited that long. The hub role's tidy now removes it."""
    from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import lock_body
    from ansible_collections.fleetops.registration.plugins.module_utils.times import utcnow
    names = dict((what, unique("tidy-" + what)) for what in ("killed", "elsewhere", "expired"))
    leases = client.CoordinationV1Api(lab.api_client("hub"))
    args = {"kubeconfig": str(lab.kubeconfig), "context": "hub", "backends": ["kubefleet"], "tidy": True}
    assert not run_module("hub_prepare", args).failed  # the lock namespace (on a fresh lab), and the locks before, tidied
    other = {"host": "controller-b", "boot_id": "0f0f0f0f-0000-4000-8000-000000000000", "pid_namespace": "pid:[4026531836]",
             "pid": 4242, "started": 1000}
    leases.create_namespaced_lease(LOCK_NAMESPACE, lock_body(names["elsewhere"], "otherrun02", "AWX job 78", 600, utcnow(), process=other))
    an_hour_ago = utcnow() - datetime.timedelta(hours=1)
    leases.create_namespaced_lease(LOCK_NAMESPACE, lock_body(names["expired"], "otherrun03", "AWX job 79", 60, an_hour_ago, process=other))

    def tidied(result):
        assert not result.failed, result.get("msg")
        return dict((item["member"], item) for item in result["tidied_locks"] if item["member"] in names.values())

    holder, _result = lock_run(lab, tmp_path, names["killed"], "holder", "-e", "hold=600", background=True)
    try:
        lease = wait_for(lambda: lock_lease(lab, names["killed"]), 120, "the holder to lock %s" % names["killed"])
        first = tidied(run_module("hub_prepare", args))
        assert list(first) == [names["expired"]] and first[names["expired"]]["holder"] == "otherrun03", first
        assert first[names["expired"]]["reason"].startswith("its lock expired at ")
        assert lock_lease(lab, names["expired"]) is None and lock_lease(lab, names["killed"]) is not None
        kill_tree(holder.pid)
        holder.wait()
        predicted = tidied(run_module("hub_prepare", args, check=True))
        assert list(predicted) == [names["killed"]] and lock_lease(lab, names["killed"]) is not None, predicted
        result = run_module("hub_prepare", args)
        removed = tidied(result)
        assert list(removed) == [names["killed"]] and removed[names["killed"]]["holder"] == lease.spec.holder_identity
        assert removed[names["killed"]]["reason"].startswith("its run (process %d on " % holder.pid)
        assert lock_lease(lab, names["killed"]) is None
        assert "removed the lock of %s left by run %s" % (names["killed"], lease.spec.holder_identity) in str(result["warnings"])
        assert lock_lease(lab, names["elsewhere"]).spec.holder_identity == "otherrun02"  # may still run: waited for, kept
        assert tidied(run_module("hub_prepare", args)) == {}
    finally:
        if holder.poll() is None:
            kill_tree(holder.pid)
            holder.wait()
        for name in names.values():
            read_or_none(lambda name=name: leases.delete_namespaced_lease("fleetops-member-" + name, LOCK_NAMESPACE))


def test_a_lock_from_another_controller_is_waited_for_unless_the_run_is_told_to_take_it_over(lab, tmp_path):
    from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import lock_body
    from ansible_collections.fleetops.registration.plugins.module_utils.times import utcnow
    name = unique("elsewhere")
    # As a run on another controller (an AWX job's container, now gone) leaves it: its process cannot be seen from here.
    other = {"host": "controller-b", "boot_id": "0f0f0f0f-0000-4000-8000-000000000000", "pid_namespace": "pid:[4026531836]",
             "pid": 4242, "started": 1000, "job": "77"}
    body = lock_body(name, "otherrun01", "AWX job 77", 600, utcnow(), process=other)
    client.CoordinationV1Api(lab.api_client("hub")).create_namespaced_lease(LOCK_NAMESPACE, body)

    _run, blocked = lock_run(lab, tmp_path, name, "blocked", "-e", "wait=2")
    assert blocked["locked"] == [] and blocked["took_over"] == [], blocked
    assert "process 4242 on controller-b, AWX job 77" in blocked["members"][name]["error"]
    run, taken = lock_run(lab, tmp_path, name, "taken", "-e", "wait=2", "-e", "takeover=true")
    assert taken["locked"] == [name] and taken["took_over"] == [name], taken
    assert "took over the lock of %s from run otherrun01" % name in run.output and "lock_takeover is set" in run.output
    assert lock_lease(lab, name).spec.holder_identity == taken["members"][name]["lock"]["holder"]
    item = {"name": name, "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"}
    run_module("member_lock", {"state": "absent", "members": [item], "states": taken["members"]})
    assert lock_lease(lab, name) is None
