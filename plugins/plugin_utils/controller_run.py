# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A module run in the controller's process instead of a module process, where the module would run on the controller
anyway: the connection is local and the host's Python is the controller's (``ansible_python_interpreter: "{{
ansible_playbook_python }}"``, as docs/inventory.md has it), without become, delegation, async or a task environment.

It is the same code with the same options, read by the same argument spec, and its result is masked the same way
(the no_log options, the credentials found in options and results); the result carries no ``invocation``. What it
saves is the module process: ~0.9 s per task (the payload built and started, the collection's imports compiled from
a zip), which is most of a healthy member's re-run and a CPU cost of every hub-side step and agent install. Used by
the action plugins of the modules in IN_CONTROLLER; Helm runs as the same child process either way.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shutil
import subprocess
import sys

from ansible import constants as C
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.common.process import get_bin_path
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash

from ansible_collections.fleetops.registration.plugins.module_utils._deps import HAS_KUBERNETES
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.files import private_tempdir
from ansible_collections.fleetops.registration.plugins.module_utils.masking import invocation_secrets, result_secrets, secret_value_paths
from ansible_collections.fleetops.registration.plugins.module_utils.module import (
    FleetClients, drop_blank_mappings, run_action, unset_empty_strings)
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import credential_parts

display = Display()

# The modules whose action plugin is an InControllerAction (member_lock's calls its module in steps; hub_move and
# step_args have actions of their own).
IN_CONTROLLER = ("fleet_agent", "fleet_cluster", "fleet_cluster_info", "fleet_registration_token", "fleet_status_info",
                 "hub_move_info", "hub_prepare", "kubefleet_member_agent", "kubefleet_member_cluster",
                 "kubefleet_member_cluster_info", "kubefleet_member_identity", "member_info", "member_lock")


# What ControllerModule reads of ansible-core's argument validation result beyond its public API: the values of no_log
# options (to mask them), and the alias warnings and deprecations AnsibleModule would report.
VALIDATOR_INTERNALS = ("_no_log_values", "_warnings", "_deprecations")
_PROBED = {}
# An ansible-playbook process's local temporary directory: tempfile.mkdtemp(prefix="ansible-local-<pid>"), whose
# random part is 8 characters.
LOCAL_TMP = re.compile(r"^ansible-local-(\d+)[a-z0-9_]{8}$")
_SWEPT = []


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_dead_runs(local_tmp, alive=_pid_alive):
    """Remove the private directories (``fleetops-*``: client keys, Helm's kubeconfig) that in-controller modules of a
    run killed with SIGKILL left in that run's ``ansible-local-<pid>...`` directory, beside ``local_tmp`` (this run's):
    nothing removes them otherwise. Only where that PID no longer runs; returns what was removed."""
    parent = os.path.dirname(os.path.normpath(local_tmp or ""))
    try:
        names = os.listdir(parent) if parent else []
    except OSError:
        return []
    removed = []
    for name in names:
        match = LOCAL_TMP.match(name)
        if not match or os.path.join(parent, name) == os.path.normpath(local_tmp) or alive(int(match.group(1))):
            continue
        try:
            children = os.listdir(os.path.join(parent, name))
        except OSError:  # not a directory, or another user's (ANSIBLE_LOCAL_TEMP in a shared place)
            continue
        for child in children:
            if child.startswith("fleetops-"):
                shutil.rmtree(os.path.join(parent, name, child), ignore_errors=True)
                removed.append(os.path.join(name, child))
    return removed


def missing_validator_internals(validator=ArgumentSpecValidator):
    """The VALIDATOR_INTERNALS this ansible-core's validation result lacks (probed once per process and validator): a
    release that renamed them makes every task run its module as a module process rather than fail or leak a value."""
    if validator not in _PROBED:
        checked = validator({"probe": {"type": "str", "no_log": True}}).validate({"probe": "probe-value"})
        _PROBED[validator] = [name for name in VALIDATOR_INTERNALS if not hasattr(checked, name)]
    return _PROBED[validator]


def internals_reason(missing=None):
    """Why no task can run in the controller's process with this ansible-core, or None. ``missing``: the internals
    missing (missing_validator_internals() when not given)."""
    missing = missing_validator_internals() if missing is None else missing
    if not missing:
        return None
    return ("this ansible-core's argument validation result lacks %s, which a run in the controller's process reads "
            "(every task of the collection runs its module as a module process: slower, the same results)" % ", ".join(missing))


def reason_for_module_process(connection, interpreter, become=False, delegated=False, asynchronous=False,
                              environment=None, python=sys.executable, has_kubernetes=HAS_KUBERNETES, missing_internals=None):
    """Why the task must run its module as a module process; None when it may run in the controller's process.
    ``missing_internals``: missing_validator_internals() (asked here when not given)."""
    internals = internals_reason(missing_internals)
    if internals:
        return internals
    if connection != "local":
        return "the connection is %s, not local" % connection
    if become:
        return "the task uses become"
    if delegated:
        return "the task is delegated"
    if asynchronous:
        return "the task is async"
    if any(environment or []):
        return "the task sets environment variables"
    if not isinstance(interpreter, str) or os.path.normpath(interpreter) != os.path.normpath(python):
        return "the host's ansible_python_interpreter is not the controller's Python (%s)" % python
    if not has_kubernetes:
        return "the controller's Python has no kubernetes package"
    return None


class ControllerModule(FleetClients):
    """What a module's runner uses of FleetModule, in the controller: ``params`` validated by the module's argument
    spec, ``check_mode``, ``no_log`` (the task's), ``warn()``, the clients, the waiter, Helm and the secrets found
    (``hide()``), and a private directory of its own that run() removes."""

    def __init__(self, name, options, args, check_mode=False, diff=False, no_log=False, tmp_parent=None):
        self._name = name
        self.argument_spec = merge(AUTH, options["argument_spec"])
        self.check_mode = check_mode
        self._diff = diff
        self.no_log = no_log
        self._clients = {}
        self._waiter = None
        self._helm = None
        self._tmp_parent = tmp_parent
        self._fleet_tmpdir = None
        self.no_log_values = set()
        self.warnings = []
        self.deprecations = []
        params = dict(args)
        drop_blank_mappings(params, self.argument_spec)
        self.hide(*invocation_secrets(params, [key for key, option in self.argument_spec.items() if option.get("no_log")]))
        constraints = dict((key, value) for key, value in options.items() if key != "argument_spec")
        checked = ArgumentSpecValidator(self.argument_spec, **constraints).validate(params)
        self.no_log_values.update(checked._no_log_values)
        self.invalid = self._validation_error(checked)
        self.params = checked.validated_parameters
        unset_empty_strings(self.params, self.argument_spec)
        for both in checked._warnings:
            self.warn("Both option %s and its alias %s are set." % (both["option"], both["alias"]))
        self.deprecations.extend(dict((key, value) for key, value in deprecation.items() if value)
                                 for deprecation in checked._deprecations)

    def _validation_error(self, checked):
        """The failure AnsibleModule gives for invalid options (its first error), or None."""
        if not checked.error_messages:
            return None
        msg = checked.errors.msg
        if isinstance(checked.errors[0], UnsupportedError):
            msg = "Unsupported parameters for (%s) module: %s" % (self._name, msg)
        return dict(failed=True, msg=msg)

    @property
    def tmpdir(self):
        if self._fleet_tmpdir is None:
            if not _SWEPT:  # once per ansible-playbook process, before its first key file
                _SWEPT.append(sweep_dead_runs(self._tmp_parent))
            self._fleet_tmpdir = private_tempdir(self._tmp_parent)
        return self._fleet_tmpdir

    def warn(self, warning):
        self.hide(*credential_parts(warning))
        self.warnings.append(warning)

    @staticmethod
    def get_bin_path(arg):
        """AnsibleModule.get_bin_path: ``arg`` on PATH (or sbin), None when it is nowhere."""
        try:
            return get_bin_path(arg)
        except ValueError:
            return None

    @staticmethod
    def run_command(args, environ_update=None, data=None):
        """AnsibleModule.run_command as the Helm runner calls it: ``args`` without a shell, the controller's environment
        updated with ``environ_update``, ``data`` (when not empty) and a newline on standard input, else nothing;
        ``(rc, stdout, stderr)``."""
        try:
            done = subprocess.run(args, input=data + "\n" if data else None, capture_output=True, check=False,
                                  stdin=None if data else subprocess.DEVNULL, env=dict(os.environ, **(environ_update or {})),
                                  encoding="utf-8", errors="surrogateescape")
        except OSError as exc:
            raise FleetOpsError("could not run %s: %s" % (args[0], exc))
        return done.returncode, done.stdout, done.stderr

    def run(self, action):
        """``action(self)``'s result as the module would return it (masked, with its warnings), or its failure's;
        the private directory is gone once it returns."""
        try:
            result = self.invalid or run_action(self, action)
        finally:
            if self._fleet_tmpdir:
                shutil.rmtree(self._fleet_tmpdir, ignore_errors=True)
        self.hide(*result_secrets(result, secret_value_paths(self.params)))
        if self.warnings:
            result["warnings"] = list(result.get("warnings") or []) + self.warnings
        if self.deprecations:
            result["deprecations"] = self.deprecations
        # As a module's JSON gives it: sets and tuples as lists, times as text.
        return remove_values(json.loads(json.dumps(result, default=_json_default)), self.no_log_values)


def _plain(args):
    """A task's arguments as the module would receive them (JSON data), or None when they are not JSON data."""
    try:
        return json.loads(json.dumps(args))
    except (TypeError, ValueError):
        return None


def _json_default(value):
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


class InControllerAction(ActionBase):
    """The action of a module in IN_CONTROLLER: the module's code in the controller's process where the module would
    run there anyway (reason_for_module_process), else the module as usual.

    A subclass names the module (``MODULE``, as in the task) and its python module (``CODE``), which has
    ``module_options()`` (AnsibleModule's keyword arguments but the auth options) and ``run(module)``.
    """

    _supports_check_mode = True
    _supports_async = True
    MODULE = None
    CODE = None

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        wrap_async = self._task.async_val
        result = merge_hash(result, self._module_result(self._task.args, task_vars or {}, wrap_async=wrap_async))
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _module_result(self, args, task_vars, wrap_async=False):
        """The module's result for ``args``: its code run in the controller's process where the module would run on the
        controller anyway, else a module process (an action that calls the module in steps calls this for each)."""
        plain = _plain(args)
        reason = "its arguments are not plain data" if plain is None else self._reason_for_module_process(task_vars)
        if reason is None:
            display.vvv("%s runs in the controller's process" % self.MODULE)
            module = ControllerModule(self.MODULE, self.CODE.module_options(), plain, check_mode=bool(self._task.check_mode),
                                      diff=bool(self._task.diff), no_log=bool(self._task.no_log or C.DEFAULT_NO_LOG),
                                      tmp_parent=C.DEFAULT_LOCAL_TMP)
            return module.run(self.CODE.run)
        if internals_reason():  # the user would want to know why every task got slower
            display.warning("%s runs as a module process: %s" % (self.MODULE, internals_reason()))
        display.vvv("%s runs as a module process: %s" % (self.MODULE, reason))
        return self._execute_module(module_name=self.MODULE, module_args=args, task_vars=task_vars, wrap_async=wrap_async)

    def _reason_for_module_process(self, task_vars):
        interpreter = task_vars.get("ansible_python_interpreter")
        if isinstance(interpreter, str):
            interpreter = self._templar.template(interpreter)
        return reason_for_module_process(
            getattr(self._connection, "transport", None), interpreter, become=self._play_context.become,
            delegated=bool(self._task.delegate_to), asynchronous=bool(self._task.async_val),
            environment=self._task.environment)
