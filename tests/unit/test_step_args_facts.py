"""What step_args sets as host facts (plugins/action/step_args.py): never the request, which carries the inventory's
secret values. Before ansible-core 2.21 an action's facts go to the fact cache (a jsonfile cache, AWX's fact storage),
so the roles read the request from the registered result instead."""

from ansible_collections.fleetops.registration.plugins.action import step_args
from ansible_collections.fleetops.registration.plugins.action.step_args import ActionModule

SECRET = "proxy-password-mk0123456789"


class Facts:
    """What _note_facts hands to _set_facts, and the ansible_facts an ansible-core without VariableLayer would get."""

    def __init__(self):
        self.set = []

    def _set_facts(self, result, facts):
        self.set.append(facts)
        result["ansible_facts"] = facts


def test_the_request_is_never_a_fact():
    for role in ("member_join", "member_leave"):
        recorder, result = Facts(), {"request": {"agent": {"env": {"HTTPS_PROXY": "http://u:%s@proxy:3128" % SECRET}}}}
        ActionModule._note_facts(recorder, result, role, None, {}, set())
        assert recorder.set == [] and "ansible_facts" not in result, role


def test_the_facts_after_the_batch_s_read_hold_no_request_value(monkeypatch):
    monkeypatch.setattr(step_args, "member_done", lambda state, problem, locked: False)
    monkeypatch.setattr(step_args, "join_facts", lambda state, task_vars, check, done: {"member_join_releases_before": {}})
    recorder, result = Facts(), {"request": {"secret_values": SECRET}, "problem": ""}
    ActionModule._note_facts(recorder, result, "member_join", {"managers": {}}, {"inventory_hostname": "m1"}, set())
    assert recorder.set == [{"member_join_releases_before": {}}]
    assert SECRET not in repr(result["ansible_facts"])
