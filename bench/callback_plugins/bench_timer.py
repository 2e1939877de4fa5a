# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark callback: one JSON line per host and task (start, end, status, module), for bench/scale.py.

ansible.posix's profile_tasks is not available here (no Galaxy), and it reports per task, not per host. Enable with
ANSIBLE_CALLBACK_PLUGINS=bench/callback_plugins ANSIBLE_CALLBACKS_ENABLED=bench_timer FLEETOPS_BENCH_TIMINGS=<file>.
Only a task's name/state/namespace arguments are recorded, never its other arguments or results.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: bench_timer
type: aggregate
short_description: per-host task timings as JSON lines (fleetops benchmark)
description:
  - Appends one JSON line per host and task to the file named by E(FLEETOPS_BENCH_TIMINGS).
requirements:
  - enable in configuration
'''

import json
import os
import time

from ansible.plugins.callback import CallbackBase

SAFE_ARGS = ('name', 'state', 'namespace')


def _safe_args(result, task_args=None):
    """The recorded arguments: the module's invocation, else (a module that returns none) the task's own literal ones,
    so a fleet_agent state=absent is not taken for an install."""
    args = (result.get('invocation') or {}).get('module_args') or task_args or {}
    return {key: args[key] for key in SAFE_ARGS if isinstance(args.get(key), (str, bool, int)) and '{{' not in str(args[key])}


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'bench_timer'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.path = os.environ.get('FLEETOPS_BENCH_TIMINGS')
        self.started = {}
        self.task_started = {}

    def _write(self, record):
        if not self.path:
            return
        with open(self.path, 'a') as handle:
            handle.write(json.dumps(record, sort_keys=True) + '\n')

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.task_started[task._uuid] = time.time()

    def v2_runner_on_start(self, host, task):
        self.started[(host.get_name(), task._uuid)] = time.time()

    def _record(self, result, status):
        task = result._task
        host = result._host.get_name()
        start = self.started.pop((host, task._uuid), None) or self.task_started.get(task._uuid) or time.time()
        data = result._result or {}
        items = data.get('results') if isinstance(data.get('results'), list) else None
        if status == 'ok' and data.get('changed'):
            status = 'changed'
        record = {'host': host, 'task': task.get_name(), 'action': task.action, 'start': start, 'end': time.time(),
                  'status': status, 'items': len(items) if items is not None else 0, 'attempts': data.get('attempts') or 0,
                  'args': _safe_args(data, task.args)}
        if items is not None:
            record['item_args'] = [_safe_args(item) for item in items if not item.get('skipped')]
        self._write(record)

    def v2_runner_on_ok(self, result):
        self._record(result, 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, 'failed')

    def v2_runner_on_skipped(self, result):
        self._record(result, 'skipped')

    def v2_runner_on_unreachable(self, result):
        self._record(result, 'unreachable')
