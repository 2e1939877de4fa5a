# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""member_lock's action: the module's wait for locks other runs hold, in steps, each followed by a line on the console
that says who holds which member and how long the run still waits (a module cannot print while it runs, and a silent
wait of several minutes looks like a hang). The locking itself is the module's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import held_message
from ansible_collections.fleetops.registration.plugins.modules import member_lock
from ansible_collections.fleetops.registration.plugins.plugin_utils.controller_run import InControllerAction

display = Display()

MODULE = "fleetops.registration.member_lock"
# The first step is short (who holds a member is shown soon), the later ones longer (a line every half minute).
FIRST_STEP = 5
STEP = 30
LIST_KEYS = ("locked", "waited", "took_over")


def steps_left(deadline, now, first):
    """Seconds the next call may wait (its wait_step): up to a step, at least one. The call keeps the task's
    wait_timeout, which also sets how long a lock lives."""
    return max(1, int(min(FIRST_STEP if first else STEP, deadline - now)))


def merge_attempts(merged, result):
    """The task's result so far (None before the first call) with one more call's, which was about the members still
    held by other runs after the calls before."""
    if merged is None:
        return dict(result)
    merged = dict(merged)
    merged["members"] = dict(merged.get("members") or {}, **(result.get("members") or {}))
    for key in LIST_KEYS:
        merged[key] = sorted(set(merged.get(key) or []) | set(result.get(key) or []))
    merged["held"] = result.get("held") or {}
    merged["changed"] = bool(merged.get("changed") or result.get("changed"))
    warnings = (merged.get("warnings") or []) + (result.get("warnings") or [])
    if warnings:
        merged["warnings"] = warnings
    return merged


def progress_lines(held, left, total):
    return ["%s; waiting for it, %d s left of %d" % (held_message(member, lock), left, total)
            for member, lock in sorted(held.items())]


class ActionModule(InControllerAction):
    """Each call of the module runs in the controller's process where the module would run on the controller anyway
    (plugin_utils/controller_run.py), else as a module process."""

    _supports_check_mode = True
    _supports_async = False
    MODULE = MODULE
    CODE = member_lock

    def run(self, tmp=None, task_vars=None):
        result = ActionBase.run(self, tmp, task_vars)  # not InControllerAction.run: the calls below are this action's
        del tmp
        args = dict(self._task.args)
        try:
            if args.get("state", "present") != "present" or self._task.check_mode:
                return dict(result, **self._module_result(args, task_vars))
            return dict(result, **self._lock_in_steps(args, task_vars))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)

    def _lock_in_steps(self, args, task_vars):
        total = int(args.get("wait_timeout") or 300)
        deadline = time.monotonic() + total
        merged, call_args = None, args
        while True:
            wait = steps_left(deadline, time.monotonic(), merged is None)
            outcome = self._module_result(dict(call_args, wait_step=wait), task_vars)
            if outcome.get("failed"):
                return outcome
            merged = merge_attempts(merged, outcome)
            held = outcome.get("held") or {}
            left = int(deadline - time.monotonic())
            if not held or left <= 0:
                return merged
            for line in progress_lines(held, left, total):
                display.display("%s: %s" % (self._task.get_name(), line))
            # Again for the members still held only; those it waited for are read again once taken.
            states = args.get("states")
            call_args = dict(args, read_again=sorted(held))
            if states is not None:
                call_args["states"] = dict((name, states[name]) for name in held if name in states)
            else:
                call_args["members"] = [item for item in args.get("members") or [] if isinstance(item, dict) and item.get("name") in held]
