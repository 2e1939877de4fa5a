# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' step arguments, worked out on the controller from the role wiring table (plugin_utils/role_wiring.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.fleetops.registration.plugins.filter.backends import backend_request
from ansible_collections.fleetops.registration.plugins.filter.inventory_terms import inventory_terms
from ansible_collections.fleetops.registration.plugins.plugin_utils import role_wiring

_ARGUMENT_SPEC = dict(
    role=dict(type="str", required=True, choices=sorted(role_wiring.SETTINGS)),
    entry=dict(type="str", choices=["main", "rollback"], default="main"),
    states=dict(type="dict"),
    served=dict(type="list", elements="str"),
)


class ActionModule(ActionBase):
    """See the module fleetops.registration.step_args."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=_ARGUMENT_SPEC)
        role = args["role"]
        found = role_wiring.settings(role, self._getter(task_vars), self._hub_getter(task_vars), backend_request,
                                     served=args.get("served"))
        result.update(changed=False, settings=found)
        if role == "member_leave":
            result["task_files"] = role_wiring.leave_task_files(found)
        if args.get("entry") == "rollback":
            result["args"] = role_wiring.module_args(role_wiring.ROLLBACK_ARGS, found)
            return result
        request = "member_info" if role == "member_join" else "member_lock"
        result["request"] = role_wiring.module_args({request: role_wiring.MODULE_ARGS[role][request]}, found)[request]
        state = None
        if args["states"] is not None:
            state = args["states"].get(found["cluster_name"]) or {}
            found = role_wiring.with_state(role, found, state)
            result["state"] = state
            result["args"] = role_wiring.module_args(role_wiring.MODULE_ARGS[role], found)
            result["lift_quarantine"] = role_wiring.lift_quarantine(found, state)
        problem = role_wiring.inventory_problem(role, found, state)
        result["problem"] = inventory_terms(problem, role) if problem else ""
        return result

    def _getter(self, task_vars):
        def get(name):
            if name not in task_vars:
                return role_wiring.MISSING
            return self._templar.template(task_vars[name])
        return get

    @staticmethod
    def _hub_getter(task_vars):
        hostvars = task_vars.get("hostvars") or {}

        def hub_get(host, name):
            if host not in hostvars:
                return role_wiring.MISSING
            variables = hostvars[host]
            return variables[name] if name in variables else role_wiring.MISSING
        return hub_get
