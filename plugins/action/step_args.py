# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' step arguments, worked out on the controller from the role wiring table (plugin_utils/role_wiring.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins import action as ansible_action
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.fleetops.registration.plugins.plugin_utils.backends import backend_request
from ansible_collections.fleetops.registration.plugins.plugin_utils.inventory_terms import inventory_terms
from ansible_collections.fleetops.registration.plugins.plugin_utils.summaries import join_summary
from ansible_collections.fleetops.registration.plugins.plugin_utils.waves import agent_releases
from ansible_collections.fleetops.registration.plugins.plugin_utils import role_spec, role_values, role_wiring

display = Display()

_ARGUMENT_SPEC = dict(
    role=dict(type="str", required=True, choices=sorted(role_wiring.SETTINGS)),
    entry=dict(type="str", choices=["main", "rollback"], default="main"),
    served=dict(type="list", elements="str"),
    set_facts=dict(type="bool", default=False),
    validate=dict(type="bool", default=False),
    all_hosts=dict(type="bool", default=False),
    stop_on_any_refusal=dict(type="bool", default=False),
    states_from=dict(type="str"),
    locks_from=dict(type="str"),
)
# The batch's read and the lock's result: the states of every member of the batch, checked for their type here rather
# than by ansible's argument validation, which deep-copies them for every member (most of this task's time at 12).
_BATCH_ARGS = ("states", "locks")


def validated_args(given):
    """The task's arguments: the small ones through ansible's validation, the batch's states by their type only."""
    checked = ArgumentSpecValidator(_ARGUMENT_SPEC).validate(
        dict((k, v) for k, v in given.items() if k not in _BATCH_ARGS))
    problems = [str(error) for error in checked.errors]
    args = dict(checked.validated_parameters)
    for name in _BATCH_ARGS:
        value = given.get(name)
        if value is not None and not isinstance(value, Mapping):
            problems.append("%s must be a dict (the registered result of the member_info or member_lock task), not %s"
                            % (name, type(value).__name__))
        args[name] = value
        if value is not None and args["%s_from" % name]:
            problems.append("%s and %s_from are mutually exclusive: give one" % (name, name))
    if problems:
        raise AnsibleActionFail("Invalid arguments of step_args: %s" % "; ".join(problems))
    args["locks"] = args["locks"] or {}
    return args


def batch_results(args, task_vars):
    """The batch's states and the lock's result: given, or read from the variables states_from and locks_from name
    as they are stored (the registered results of member_info and member_lock)."""
    states, locks = args["states"], args["locks"]
    if args["states_from"]:
        read = task_vars.get(args["states_from"])
        if not isinstance(read, Mapping) or not isinstance(read.get("members"), Mapping):
            raise AnsibleActionFail("states_from: %s is not a registered member_info result with members; name the "
                                    "variable its task registers" % args["states_from"])
        states = read["members"]
    if args["locks_from"]:
        locks = task_vars.get(args["locks_from"]) or {}
        if not isinstance(locks, Mapping):
            raise AnsibleActionFail("locks_from: %s is not a registered member_lock result" % args["locks_from"])
    return states, locks


def after_locks(states, locks):
    """The batch's states and the members this run locked, given member_lock's result (empty or skipped when the run
    locked nothing): a member another run was changing was read again under the lock, so its state is the lock's."""
    return locks.get("members", states), list(locks.get("locked") or [])


def member_done(state, problem, locked):
    """Whether a member of member_join's batch is done once read: it needs no step, its state was read and makes sense,
    and this run locked no member (the release of the locks runs at the role's end, on a host still in the role)."""
    return not problem and not locked and isinstance(state, dict) and "error" not in state and not state.get("pending")


def join_facts(state, host_vars, check_mode, done):
    """The facts member_join sets once it has read a member: the agent releases it runs before any step, and for a
    member that is done its summary (the other members get theirs after their steps)."""
    facts = {"member_join_releases_before": agent_releases(state)}
    if done:
        facts["member_join_summary"] = join_summary(state, host_vars, check_mode)
    return facts


class ActionModule(ActionBase):
    """See the module fleetops.registration.step_args."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        args = validated_args(self._task.args)
        role = args["role"]
        # The files the values name are the modules' to read on this machine only over a local connection.
        local_files = getattr(self._connection, "transport", None) == "local"
        if args["all_hosts"]:
            return self._check_all_hosts(result, role, task_vars, local_files, args["stop_on_any_refusal"])
        get = self._getter(task_vars)
        if args["validate"]:
            errors = role_spec.variable_errors(role, args["entry"], get, role_wiring.MISSING)
            if errors:
                result.update(failed=True, msg=errors)
                return result
        found = role_wiring.settings(role, get, self._hub_getter(task_vars), backend_request, served=args.get("served"))
        if args["validate"] and args["entry"] == "main":
            refused = role_values.refusal(role, found, local_files=local_files)
            if refused:  # before any cluster is read
                result.update(failed=True, msg=refused)
                return result
        result.update(changed=False, settings=found)
        if role == "member_leave":
            result["task_files"] = role_wiring.leave_task_files(found)
        if args.get("entry") == "rollback":
            result["args"] = role_wiring.module_args(role_wiring.ROLLBACK_ARGS, found)
            return result
        request = "member_info" if role == "member_join" else "member_lock"
        result["request"] = role_wiring.module_args({request: role_wiring.MODULE_ARGS[role][request]}, found)[request]
        state = None
        states, locked = after_locks(*batch_results(args, task_vars))
        if states is not None:
            state = states.get(found["cluster_name"]) or {}
            found = role_wiring.with_state(role, found, state)
            result["state"] = state
            result["args"] = role_wiring.module_args(role_wiring.MODULE_ARGS[role], found)
            result["lift_quarantine"] = role_wiring.lift_quarantine(found, state)
        if role == "member_leave":
            # Which member-side steps run: the agents stay when they serve another hub now (move_hub.yml).
            result.update(agents=not found["keep_agents"], identity=found["kubefleet_remove_identity"])
        problem = role_wiring.inventory_problem(role, found, state)
        result["problem"] = inventory_terms(problem, role) if problem else ""
        if args["set_facts"]:
            self._note_facts(result, role, state, task_vars, locked)
        return result

    def _check_all_hosts(self, result, role, task_vars, local_files, stop_on_any):
        """all_hosts: every host of the play checked; the result is shown, so it holds no settings (credentials)."""
        hosts = task_vars.get("ansible_play_hosts_all") or []
        getters = role_values.host_getter(role, task_vars, self._templar.template)
        refused = role_values.play_refusals(role, hosts, getters, self._hub_getter(task_vars), local_files)
        message = role_values.play_refusal(refused)
        result.update(changed=False, refused=sorted(refused))
        if role_values.play_stops(refused, hosts, stop_on_any):
            result.update(failed=True, msg=message)
        elif refused:
            result.update(msg="%d of %d hosts refused; each fails at its first task, the others go on" % (len(refused), len(hosts)))
            display.warning("refused before any cluster is read (each fails at its first task):\n%s" % message)
        else:
            result["msg"] = "the values of every host can be used"
        return result

    def _note_facts(self, result, role, state, task_vars, locked):
        """The role's facts, set here rather than by set_fact tasks: a task less per host. After the batch's read
        (member_join) ``done`` and join_facts, and for a member that is done its line in the job's statistics, as
        set_stats would add it. The request (the inventory's values, secret ones included) is never a fact: before
        ansible-core 2.21 an action's facts go to the fact cache, so the roles read it from the registered result."""
        if state is None or role != "member_join":
            return
        result["done"] = member_done(state, result["problem"], locked)
        facts = join_facts(state, task_vars, bool(task_vars.get("ansible_check_mode")), result["done"])
        self._set_facts(result, facts)
        if result["done"]:
            host = task_vars.get("inventory_hostname")
            result["ansible_stats"] = {"data": {"fleetops_members": {host: facts["member_join_summary"]}},
                                       "per_host": False, "aggregate": True}

    def _set_facts(self, result, facts):
        """At set_fact's precedence where ansible-core lets an action say so (2.21 and later), else as host facts."""
        layer = getattr(ansible_action, "VariableLayer", None)
        if layer is not None and hasattr(self, "register_host_variables"):
            self.register_host_variables(facts, layer.EPHEMERAL_FACT)
        else:
            result["ansible_facts"] = facts

    def _getter(self, task_vars):
        templated = {}  # the argument check and the settings read the same role variables

        def get(name):
            if name not in task_vars:
                return role_wiring.MISSING
            if name not in templated:
                templated[name] = self._templar.template(task_vars[name])
            return templated[name]
        return get

    @staticmethod
    def _hub_getter(task_vars):
        hostvars = task_vars.get("hostvars") or {}
        read = {}  # hostvars[host] works out all of the host's variables again on every access

        def hub_get(host, name):
            if host not in hostvars:
                return role_wiring.MISSING
            if host not in read:
                read[host] = hostvars[host]
            variables = read[host]
            return variables[name] if name in variables else role_wiring.MISSING
        return hub_get
