"""Which controller process holds a member lock, and when a run may take the lock from it (issue 32 item 8: a run that
died held the member until its lock expired). Pure decisions and /proc reading over a fake /proc; taking a Lease from a
killed run on a real hub is tested in tests/integration/test_member_lock.py."""

import datetime
import os

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import lock_holder
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import (
    PROCESS_ANNOTATION, LockHeld, MemberLock, describe_lock, held_message, lock_body, take_locks,
)
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock_batch import run_by
from ansible_collections.fleetops.registration.plugins.module_utils.times import utcnow
from test_member_lock_rules import NOW, LeaseHub, clock

HERE = {"host": "ctl-1", "boot_id": "b00t", "pid_namespace": "pid:[4026531836]", "pid": 100, "started": 5000, "job": None}


def holder(**changes):
    identity = dict(HERE, pid=4242, started=7000)
    identity.update(changes)
    return identity


def never_alive(pid, started):
    return False


def always_alive(pid, started):
    return True


def test_a_dead_run_on_this_controller_is_taken_over_at_once():
    assert lock_holder.takeover_reason(holder(), HERE, never_alive) == "its run (process 4242 on ctl-1) no longer runs"


def test_a_live_run_on_this_controller_is_waited_for():
    assert lock_holder.takeover_reason(holder(), HERE, always_alive) is None


@pytest.mark.parametrize("changes", [{"host": "ctl-2"}, {"boot_id": "rebooted"}, {"pid_namespace": "pid:[4026532000]"},
                                     {"pid": None}, {"pid": "4242"}, {"pid": True}, {"host": None}])
def test_a_holder_this_controller_cannot_judge_is_waited_for(changes):
    """Another host, another boot (the PIDs mean other processes), another PID namespace (a container's PIDs), or an
    identity that does not say: whether that process runs cannot be seen from here."""
    assert lock_holder.takeover_reason(holder(**changes), HERE, never_alive) is None


def test_a_lock_that_names_no_process_is_waited_for_and_the_takeover_variable_takes_any():
    assert lock_holder.takeover_reason(None, HERE, never_alive) is None
    assert lock_holder.takeover_reason(holder(host="ctl-2"), HERE, always_alive, takeover=True) == "lock_takeover is set"
    assert lock_holder.takeover_reason(None, HERE, always_alive, takeover=True) == "lock_takeover is set"


def fake_proc(tmp_path, processes):
    """A /proc holding ``{pid: (ppid, start, argv)}``."""
    for pid, (ppid, start, argv) in processes.items():
        (tmp_path / str(pid)).mkdir()
        fields = ["S", str(ppid)] + ["0"] * 17 + [str(start)] + ["0"] * 5
        (tmp_path / str(pid) / "stat").write_text("%d (a (odd) name) %s\n" % (pid, " ".join(fields)))
        (tmp_path / str(pid) / "cmdline").write_text("\0".join(argv) + "\0")
    return str(tmp_path)


PLAYBOOK = ["/usr/bin/python3", "/venv/bin/ansible-playbook", "-i", "hosts", "join_cluster.yml"]


def test_the_run_is_the_ansible_playbook_process_not_its_task_worker_nor_the_module(tmp_path):
    proc = fake_proc(tmp_path, {
        50: (1, 10, ["/bin/bash"]),
        60: (50, 20, PLAYBOOK),                     # the run
        70: (60, 30, PLAYBOOK),                     # the worker ansible-playbook forked for the task (same command line)
        80: (70, 40, ["/bin/sh", "-c", "/usr/bin/python3 /root/.ansible/tmp/ansible-tmp-1/AnsiballZ_member_lock.py"]),
        90: (80, 50, ["/usr/bin/python3", "/root/.ansible/tmp/ansible-tmp-1/AnsiballZ_member_lock.py"]),
    })
    assert lock_holder.run_process(90, proc) == 60
    assert lock_holder.process_stat(60, proc) == (50, 20)  # a command name with spaces and parentheses parses


def test_the_run_under_awx_is_ansible_playbook_under_ansible_runner(tmp_path):
    proc = fake_proc(tmp_path, {
        5: (1, 1, ["/usr/bin/python3", "/usr/bin/ansible-runner", "worker"]),
        6: (5, 2, ["ansible-playbook", "-u", "root", "job.yml"]),
        7: (6, 3, ["ansible-playbook", "-u", "root", "job.yml"]),
        8: (7, 4, ["/usr/bin/python3", "AnsiballZ_member_lock.py"]),
    })
    assert lock_holder.run_process(8, proc) == 6


def test_a_module_run_by_something_else_is_held_by_its_parent(tmp_path):
    proc = fake_proc(tmp_path, {20: (1, 1, ["/usr/bin/python3", "-m", "pytest"]),
                                21: (20, 2, ["/usr/bin/python3", "plugins/modules/member_lock.py", "args.json"])})
    assert lock_holder.run_process(21, proc) == 20
    assert lock_holder.run_process(999, proc) is None


def test_a_process_is_alive_only_while_the_same_process_runs_under_its_pid(tmp_path):
    proc = fake_proc(tmp_path, {60: (1, 20, PLAYBOOK)})
    assert lock_holder.alive(60, 20, proc) is True
    assert lock_holder.alive(60, 21, proc) is False  # the PID was given to a later process
    assert lock_holder.alive(61, 20, proc) is False


def test_this_controller_names_the_host_boot_process_and_awx_job():
    here = lock_holder.this_controller({"JOB_ID": "42"})
    assert here["pid"] == os.getppid() and isinstance(here["started"], int)  # pytest runs no ansible: the parent
    assert len(here["boot_id"]) == 36 and here["pid_namespace"].startswith("pid:[") and here["job"] == "42"
    assert lock_holder.alive(here["pid"], here["started"]) and lock_holder.decode(lock_holder.encode(here)) == here
    assert lock_holder.decode("not json") is None and lock_holder.decode('"a string"') is None
    assert run_by({}, {"JOB_ID": "42"}) == "AWX job 42" and run_by({"run_by": "me"}, {"JOB_ID": "42"}) == "me"


def live_lease(process, now=NOW):
    body = lock_body("edge-07", "deadrun001", "root@ctl-1", 900, now - datetime.timedelta(seconds=30), process=process)
    body["metadata"]["resourceVersion"] = "7"
    return body


def test_a_lock_records_its_process_and_the_held_message_names_it():
    lock = describe_lock(live_lease(holder(job="42")), NOW)
    assert lock["process"] == holder(job="42") and lock["live"] is True
    assert "(holder deadrun001, run by root@ctl-1, process 4242 on ctl-1, AWX job 42, since" in held_message("edge-07", lock)
    assert lock_holder.decode(live_lease(HERE)["metadata"]["annotations"][PROCESS_ANNOTATION]) == HERE


def test_try_take_takes_a_live_lock_from_a_dead_run_of_this_controller_and_waits_for_a_live_one():
    here = lock_holder.this_controller({})
    mine = dict(here, pid=os.getpid(), started=lock_holder.process_stat(os.getpid())[1])
    dead = dict(mine, started=mine["started"] - 1)  # this PID, but not the process that took the lock: it died

    hub = LeaseHub(live_lease(dead))
    lock = MemberLock(hub, "fleetops-system", "edge-07", "nextrun002", "me@ctl-1", 900, process=here)
    assert lock.try_take(NOW) is None
    assert hub.writes[-1]["spec"]["holderIdentity"] == "nextrun002" and hub.writes[-1]["metadata"]["resourceVersion"] == "7"
    assert lock.took_over["holder"] == "deadrun001" and "no longer runs" in lock.took_over["reason"]

    hub = LeaseHub(live_lease(mine))
    other = MemberLock(hub, "fleetops-system", "edge-07", "nextrun002", "me@ctl-1", 900, process=here).try_take(NOW)
    assert other["holder"] == "deadrun001" and hub.writes == []
    taken = MemberLock(hub, "fleetops-system", "edge-07", "nextrun002", "me@ctl-1", 900, process=here, takeover=True)
    assert taken.try_take(NOW) is None and taken.took_over["reason"] == "lock_takeover is set"


def test_the_failure_after_the_wait_names_the_takeover_variable():
    lock = MemberLock(LeaseHub(live_lease(holder(host="ctl-2"), utcnow())), "fleetops-system", "edge-07", "nextrun002", "me", 900,
                      process=HERE)
    waited, failed = take_locks([lock], clock())
    message = failed["edge-07"].message()
    assert isinstance(failed["edge-07"], LockHeld) and waited == []
    assert "process 4242 on ctl-2" in message and "member_join_lock_takeover=true" in message
    assert "member_leave_lock_takeover" in message and "lock_takeover" in message


def test_the_task_waits_in_steps_short_first_then_half_minutes_never_past_its_time():
    from ansible_collections.fleetops.registration.plugins.action.member_lock import steps_left
    assert steps_left(deadline=300, now=0, first=True) == 5
    assert steps_left(deadline=300, now=5, first=False) == 30
    assert steps_left(deadline=300, now=290, first=False) == 10
    assert steps_left(deadline=300, now=300, first=False) == 1  # the module reads 0 as its default wait


def test_the_steps_results_add_up_to_one_task_result_and_each_step_says_who_holds_what():
    from ansible_collections.fleetops.registration.plugins.action.member_lock import merge_attempts, progress_lines
    lock = {"holder": "other", "by": "root@ctl-2", "process": holder(host="ctl-2"), "since": "t0", "expires": "t1"}
    first = {"changed": True, "members": {"a": {"lock": {}}, "b": {"error": "b is being changed"}}, "locked": ["a"],
             "waited": [], "took_over": [], "held": {"b": lock}, "warnings": ["w1"]}
    second = {"changed": True, "members": {"b": {"lock": {}}}, "locked": ["b"], "waited": ["b"], "took_over": [],
              "held": {}}
    merged = merge_attempts(merge_attempts(None, first), second)
    assert merged["members"] == {"a": {"lock": {}}, "b": {"lock": {}}} and merged["locked"] == ["a", "b"]
    assert merged["waited"] == ["b"] and merged["held"] == {} and merged["warnings"] == ["w1"] and merged["changed"]
    assert progress_lines({"b": lock}, 295, 300) == [
        "b is being changed by another run (holder other, run by root@ctl-2, process 4242 on ctl-2, since t0, expires t1); "
        "waiting for it, 295 s left of 300"]
