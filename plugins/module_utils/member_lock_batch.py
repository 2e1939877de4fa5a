# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""member_lock's runner: take the locks of a batch's members that need a step (reading again those another run held),
or release them. The lock itself - its Lease, who holds it, when it expires - is member_lock.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import getpass
import os
import socket

from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, HUB_AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils import lock_holder, registry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ConnectionFailure, FleetOpsError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.member_batch import ITEMS, item_spec, prepare
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import (
    MAX_DURATION_SECONDS, LockHeld, MemberLock, lease_name, take_locks,
)
from ansible_collections.fleetops.registration.plugins.module_utils.member_state import member_info_argument_spec, new_run_id
from ansible_collections.fleetops.registration.plugins.module_utils.times import RUN_LIFETIME_WAITS


def lock_duration(params):
    """How long a lock lives without its run: as long as the run's registration token (three of a join's waits), and
    never longer than MAX_DURATION_SECONDS (what a lock Lease may say before it counts as expired)."""
    given = params.get("lock_duration")
    if given is not None and not 0 < given <= MAX_DURATION_SECONDS:
        raise ParameterError("lock_duration", "%r is out of range" % (given,),
                             "Give whole seconds from 1 to %d (a day)" % MAX_DURATION_SECONDS)
    return min(given or RUN_LIFETIME_WAITS * params["wait_timeout"], MAX_DURATION_SECONDS)


def run_by(params, environ=None):
    """Who runs this run: ``run_by``, else the AWX job (AWX sets JOB_ID in a job's environment), else user@host."""
    if params.get("run_by"):
        return params["run_by"]
    job = (os.environ if environ is None else environ).get("JOB_ID")
    if job:
        return "AWX job %s" % job
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return "%s@%s" % (user, socket.gethostname())


def _readers(module, names, member=False):
    """``(readers, errors)`` of member_batch.prepare for the items named ``names`` only; connected to the member too
    when ``member`` (to read it again)."""
    items = [item for item in module.params[ITEMS] if isinstance(item, dict) and item.get("name") in names]
    readers, errors = prepare(module, items, spec=item_spec(merge(AUTH, HUB_AUTH, member_info_argument_spec())), member=member)
    named = []
    for reader in readers:
        try:  # before its Lease is named after it: the fleet managers' own rule, in their words
            for manager in reader.backends or registry.NAMES:
                registry.manager(manager).check_member_name(reader.name)
            named.append(reader)
        except ParameterError as exc:
            errors[reader.name] = exc.message()
    return named, errors


def _lock(module, reader, holder, process=None):
    return MemberLock(reader.hub(), module.params["lock_namespace"], reader.name, holder, run_by(module.params),
                      lock_duration(module.params), process=process, takeover=bool(module.params.get("lock_takeover")))


def took_over_warning(lock):
    """What the run says about a lock it took from another run that held it: whose, and why."""
    other = lock.took_over
    process = lock_holder.describe(other.get("process"))
    return "took over the lock of %s from run %s (run by %s%s, since %s): %s" % (
        lock.member, other["holder"], other["by"], ", " + process if process else "", other["since"], other["reason"])


def _lock_view(lock):
    return {"namespace": lock.namespace, "name": lease_name(lock.member), "holder": lock.holder, "version": lock.version,
            "taken": lock.taken}


def _reread(reader, lock):
    """The member's state read again now that this run holds its lock (another run may have done the work)."""
    try:
        state = reader.run()
    except FleetOpsError as exc:
        state = {"name": reader.name, "error": exc.message()}
    state["run_id"] = lock.holder  # what this run creates carries the lock holder's name
    return state


def _wanted(module):
    """``(states, {member: holder})``: with ``states``, the members that need a step, under their run_id; without, every
    member (a leave), under a new run id each."""
    if module.params["states"] is None:
        names = [item.get("name") for item in module.params[ITEMS] if isinstance(item, dict) and item.get("name")]
        return dict((name, {"name": name}) for name in names), dict((name, new_run_id()) for name in names)
    states = dict(module.params["states"])
    return states, dict((name, state["run_id"]) for name, state in states.items()
                        if isinstance(state, dict) and not state.get("error") and state.get("pending") and state.get("run_id"))


def lock_members(module):
    """member_lock state=present: lock every member of ``states`` that needs a step (every member without ``states``);
    read again those that waited, when there is a state to renew."""
    states, wanted = _wanted(module)
    read_again = module.params["states"] is not None
    if module.check_mode or not wanted:
        return {"changed": False, "members": states, "locked": [], "waited": [], "took_over": [], "held": {}}
    readers, errors = _readers(module, wanted, member=read_again)
    process = lock_holder.this_controller()
    locks = dict((reader.name, (reader, _lock(module, reader, wanted[reader.name], process))) for reader in readers)
    waiter = module.waiter
    if module.params.get("wait_step"):
        waiter.timeout = min(waiter.timeout, module.params["wait_step"])
    waited, failed = take_locks([lock for _reader, lock in locks.values()], waiter)
    took_over = sorted(name for name, (_reader, lock) in locks.items() if lock.took_over and name not in failed)
    for name in took_over:
        module.warn(took_over_warning(locks[name][1]))
    # A lock taken from another run: that run may have done (part of) the work, so the member is read again too; so is
    # one this task waited for in an earlier call (read_again: the action's steps).
    taken = set(locks) - set(failed)
    waited = sorted(set(waited) | set(took_over) | (set(module.params.get("read_again") or []) & taken))
    held = dict((name, exc.lock) for name, exc in failed.items() if isinstance(exc, LockHeld) and exc.lock)
    for name, message in errors.items():
        states[name] = {"name": name, "error": message}
    for name, exc in failed.items():
        states[name] = {"name": name, "error": exc.message()}
    released = set()
    for name in (waited if read_again else []):
        reader, lock = locks[name]
        states[name] = _reread(reader, lock)
        if states[name].get("error") or not states[name].get("pending"):
            lock.release(lock.version)
            released.add(name)
    locked = sorted(name for name in locks if name not in failed and name not in released)
    for name in locked:
        states[name] = dict(states[name], lock=_lock_view(locks[name][1]))
    return {"changed": bool(locked), "members": states, "locked": locked, "waited": waited, "took_over": took_over,
            "held": held}


def release_retrying(lock, version, waiter):
    """Release ``lock``, retrying while the hub cannot be reached: a run that failed because the hub went away still
    frees its members once the hub is back (within the waiter's time), so the plain re-run does not wait for the lock
    to expire. Whether the lock was this run's."""
    outcome = {}

    def attempt():
        try:
            outcome["released"] = lock.release(version)
            return True
        except ConnectionFailure as exc:
            outcome["error"] = exc
            return False

    waiter.until(attempt, lambda done: done, "the hub to come back, to release the lock of %s" % lock.member)
    return outcome["released"]


def release_members(module):
    """member_lock state=absent: release the locks ``states`` (member_lock's own ``members`` result) say this run holds."""
    held = dict((name, state["lock"]) for name, state in (module.params["states"] or {}).items()
                if isinstance(state, dict) and isinstance(state.get("lock"), dict) and state["lock"].get("holder"))
    if module.check_mode or not held:
        return {"changed": False, "released": []}
    readers, errors = _readers(module, held)
    released = []
    for reader in readers:
        try:
            if release_retrying(_lock(module, reader, held[reader.name]["holder"]), held[reader.name].get("version"), module.waiter):
                released.append(reader.name)
        except FleetOpsError as exc:
            # The run's work is done; a lock it cannot delete (KubeFleet's guard rail denies deletes in kube- namespaces
            # to users that are not ServiceAccounts or system:masters) only delays the next run until it expires.
            errors[reader.name] = exc.message()
    for name, message in sorted(errors.items()):
        module.warn("could not release the lock of %s (it expires on its own): %s" % (name, message))
    return {"changed": bool(released), "released": sorted(released)}
