# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steps of playbook move_hub.yml, on the controller: which hubs, where the member's move stands
(hub_move_info), what the roles get for each direction, the check after the join, and the run's summary.
The decisions are module_utils/hub_move.py's; the roles read what a step gives them through role_wiring.MOVE_STEP."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.fleetops.registration.plugins.plugin_utils.backends import backend_request
from ansible_collections.fleetops.registration.plugins.module_utils import hub_move, placement_guard, registry
from ansible_collections.fleetops.registration.plugins.plugin_utils import role_wiring

_ARGUMENT_SPEC = dict(
    step=dict(type="str", required=True, choices=["guard", "read", "back", "check", "failed", "moved_back", "stop", "summary"]),
)
MODULE = "fleetops.registration.hub_move_info"
MEMBER_INFO = "fleetops.registration.member_info"
# The playbook's notes (register names in move_hub.yml).
FAILURE = "move_hub__failure"
BACK = "move_hub__back"
GUARD = "move_hub__guard"
ALLOW_REMOVAL = "fleetops_allow_workload_removal"
OLD_HUB_LOST = "fleetops_old_hub_lost"
# How long the KubeFleet leave of the hub a member left waits for an acknowledgement no agent will give.
FORCE_GRACE_PERIOD = 5


class ActionModule(ActionBase):
    """See the module fleetops.registration.hub_move."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=_ARGUMENT_SPEC)
        step = args["step"]
        if step == "summary":
            return dict(result, **self._summary(task_vars))
        if step == "read":
            return dict(result, **self._read(task_vars))
        if step == "guard":
            return dict(result, **self._guard(task_vars))
        current = self._var(task_vars, role_wiring.MOVE_STEP)
        if not isinstance(current, dict) or "before" not in current:
            raise AnsibleActionFail("hub_move step=%s runs after step=read (registered as %s)" % (step, role_wiring.MOVE_STEP))
        if step == "back":
            before = current["before"]
            if before.get("left_on_old_hub"):
                raise AnsibleActionFail("%s=true: the old hub %s cannot be reached, so the member is not moved back; it "
                                        "stays as the new hub has it" % (OLD_HUB_LOST, current["old_hub"]["host"]))
            return dict(result, changed=False, before=before, old_hub=current["old_hub"], new_hub=current["new_hub"],
                        roles=hub_move.role_steps(current["old_hub"], current["new_hub"], before["join"], before["join"],
                                                  FORCE_GRACE_PERIOD))
        if step == "check":
            return dict(result, **self._check(task_vars, current))
        if step == "failed":
            failed = self._var(task_vars, "ansible_failed_result") or {}
            return dict(result, changed=False, why=failed.get("msg") or "the move failed")
        if step == "moved_back":
            return dict(result, changed=False, ok=True)
        failure = (self._var(task_vars, FAILURE) or {}).get("why")
        back = self._var(task_vars, BACK) or {}
        after = "moved back to %s" % current["old_hub"]["host"] if back.get("ok") else \
            "the move back to %s failed too: %s" % (current["old_hub"]["host"], back.get("why"))
        result.update(failed=True, msg="%s - %s; the move stops after this batch" % (failure, after))
        return result

    def _var(self, task_vars, name):
        return self._templar.template(task_vars[name]) if name in task_vars else None

    def _getter(self, task_vars):
        def get(name):
            return self._var(task_vars, name) if name in task_vars else role_wiring.MISSING
        return get

    def _hub(self, task_vars, host):
        variables = (task_vars.get("hostvars") or {}).get(host) or {}
        return {"host": host, "kubeconfig": variables.get("fleetops_kubeconfig") or "",
                "context": variables.get("fleetops_context") or ""}

    def _guard(self, task_vars):
        """Refuse the member's move, before anything changes, when the new hub would not place what its agents serve."""
        found, old_hub, new_hub = self._hubs(task_vars)
        reading = self._module(task_vars, found, old_hub, new_hub, wait=False, guard=True)
        unplaced = reading.get("unplaced") or []
        if not unplaced:
            return {"changed": False, "unplaced": [], "msg": "the new hub places everything the member's agents serve"}
        message = placement_guard.refusal(found["cluster_name"], new_hub["host"], unplaced)
        if not role_wiring.as_bool(self._var(task_vars, ALLOW_REMOVAL)):
            return {"failed": True, "changed": False, "unplaced": unplaced, "msg": message}
        self._display.warning("%s=true: the move goes on, and the member's agents will remove %s" % (
            ALLOW_REMOVAL, ", ".join("%s %s" % (item["manager"], item["name"]) for item in unplaced)))
        return {"changed": False, "unplaced": unplaced, "removal_allowed": True}

    def _hubs(self, task_vars):
        get = self._getter(task_vars)
        if get("fleetops_hub_kubeconfig") not in (role_wiring.MISSING, None, "") or \
                get("fleetops_hub_context") not in (role_wiring.MISSING, None, ""):
            raise AnsibleActionFail("fleetops_hub_kubeconfig/fleetops_hub_context name one hub for every role, but a move "
                                    "needs two: unset them (an AWX hub credential, say); move_hub.yml connects to each hub "
                                    "with its inventory host's fleetops_kubeconfig and fleetops_context")
        try:
            old_host, new_host = hub_move.hub_hosts(get("groups"), self._var(task_vars, "fleetops_new_hub"),
                                                    self._var(task_vars, "member_join_hub_host"))
        except ValueError as exc:
            raise AnsibleActionFail(str(exc))
        found = role_wiring.settings("member_join", get, lambda host, name: role_wiring.MISSING, backend_request)
        return found, self._hub(task_vars, old_host), self._hub(task_vars, new_host)

    def _read(self, task_vars):
        found, old_hub, new_hub = self._hubs(task_vars)
        reading = self._module(task_vars, found, old_hub, new_hub, wait=False)
        before = dict((key, reading.get(key)) for key in ("phase", "join", "leave", "left_on_old_hub", "settled", "managers", "phases"))
        before["name"] = found["cluster_name"]
        return {"changed": False, "before": before, "old_hub": old_hub, "new_hub": new_hub, "leaving": bool(before["leave"]),
                "roles": hub_move.role_steps(new_hub, old_hub, before["join"], before["leave"], FORCE_GRACE_PERIOD)}

    def _module(self, task_vars, found, old_hub, new_hub, wait, timeout=None, guard=False):
        backends = found["backends"] or list(registry.NAMES)
        module_args = {"name": found["cluster_name"], "backends": backends, "fleet_namespace": found["fleet_namespace"],
                       "kubeconfig": new_hub["kubeconfig"], "context": new_hub["context"],
                       "old_hub_kubeconfig": old_hub["kubeconfig"], "old_hub_context": old_hub["context"], "wait": wait}
        if guard:
            labels = found.get("labels") or {}
            module_args.update(guard=True, labels=dict((str(key), str(value)) for key, value in labels.items()))
        if timeout:
            module_args["wait_timeout"] = int(timeout)
        if role_wiring.as_bool(self._var(task_vars, OLD_HUB_LOST)):
            module_args.update(self._running(task_vars, found, new_hub, backends))
            del module_args["old_hub_kubeconfig"], module_args["old_hub_context"]
        reading = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        if reading.get("failed"):
            raise AnsibleActionFail(reading.get("msg") or "hub_move_info failed", result=reading)
        return reading

    def _running(self, task_vars, found, new_hub, backends):
        """hub_move_info's options for an evacuation (fleetops_old_hub_lost): what runs on the member stands for the old
        hub - member_info, read from the member (its hub side from the new hub)."""
        info = self._execute_module(module_name=MEMBER_INFO, task_vars=task_vars, module_args={
            "name": found["cluster_name"], "backends": backends, "fleet_namespace": found["fleet_namespace"],
            "kubeconfig": found.get("kubeconfig") or None, "context": found.get("context") or None,
            "hub_kubeconfig": new_hub["kubeconfig"], "hub_context": new_hub["context"]})
        if info.get("failed"):
            raise AnsibleActionFail("%s=true: what runs on member %s could not be read from it: %s" % (
                OLD_HUB_LOST, found["cluster_name"], info.get("msg")), result=info)
        try:
            return hub_move.lost_hub_options(info.get("managers") or {})
        except ValueError as exc:
            raise AnsibleActionFail("%s=true: member %s: %s" % (OLD_HUB_LOST, found["cluster_name"], exc))

    def _check(self, task_vars, current):
        if self._task.check_mode:
            # Nothing was joined: there is no takeover to wait for.
            return {"changed": False, "settled": None, "msg": "check mode: the new hub's takeover is checked in a real run"}
        get = self._getter(task_vars)
        found = role_wiring.settings("member_join", get, lambda host, name: role_wiring.MISSING, backend_request)
        found["backends"] = current["before"]["join"]
        timeout = get("fleetops_move_wait_timeout")
        timeout = found["wait_timeout"] if timeout in (role_wiring.MISSING, None, "") else timeout
        reading = self._module(task_vars, found, current["old_hub"], current["new_hub"], wait=True, timeout=timeout)
        return {"changed": False, "settled": reading.get("settled"), "managers": reading.get("managers")}

    def _summary(self, task_vars):
        hostvars = task_vars.get("hostvars") or {}
        results = {}
        for host in task_vars.get("ansible_play_hosts_all") or []:
            variables = hostvars[host] if host in hostvars else {}
            current = variables.get(role_wiring.MOVE_STEP) if role_wiring.MOVE_STEP in variables else None
            before = current.get("before") if isinstance(current, dict) else None
            failure = (variables.get(FAILURE) or {}).get("why") if FAILURE in variables else None
            back = variables.get(BACK) if BACK in variables else None
            moved_back = None if not isinstance(back, dict) or back.get("skipped") else (True if back.get("ok") else back.get("why"))
            guard = variables.get(GUARD) if GUARD in variables else None
            removed = guard.get("unplaced") if isinstance(guard, dict) and guard.get("removal_allowed") else None
            results[host] = hub_move.member_outcome(before, failure, moved_back, removed)
        lines = dict((host, item["line"]) for host, item in results.items())
        return {"changed": False, "results": results, "lines": lines,
                "ansible_stats": {"data": {"fleetops_moves": results}, "per_host": False, "aggregate": True}}
