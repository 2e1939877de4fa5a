# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A per-member lock on the hub: one ``coordination.k8s.io/v1`` Lease per member, held by the run that changes it.

Two runs for the same member (an AWX job launched twice, a schedule overlapping a manual run) would otherwise both
create a registration token, prune each other's, and race on the agent. The run that needs a step for a member takes
that member's Lease first; a second run waits until it is released (or has expired: a run that died releases nothing),
then reads the member again and usually finds nothing left to do. Runs for different members never meet.

The Lease's holder is the run's ``run_id`` (the label its registration token carries); the annotation says who runs it.
Taking a free lock is one request (a create); expiry is judged from ``renewTime`` + ``leaseDurationSeconds``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import getpass
import socket

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, FleetOpsError, WaitTimeout
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import Resource
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, HUB_AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.member_batch import ITEMS, item_spec, prepare
from ansible_collections.fleetops.registration.plugins.module_utils.member_state import member_info_argument_spec, new_run_id
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, parse_time, utcnow

LEASE = Resource("coordination.k8s.io/v1", "Lease", "leases")
PREFIX = "fleetops-member-"
MANAGED_BY = "fleetops.registration"
MEMBER_LABEL = "fleetops.registration/member"
HOLDER_ANNOTATION = "fleetops.registration/holder"
# Controllers' clocks may disagree a little: a lock counts as expired only this long after its own expiry.
SKEW_SECONDS = 5
DEFAULT_NAMESPACE = "kube-system"


class LockHeld(FleetOpsError):
    """Another run holds the member's lock past our wait."""


def lease_name(member):
    return PREFIX + member


def micro_time(value):
    """A datetime as a Lease's MicroTime (``2026-01-02T03:04:05.000000Z``)."""
    return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lock_body(member, holder, description, duration, now, current=None):
    """The Lease that says ``holder`` changes ``member`` from ``now`` for ``duration`` seconds. ``current``: the Lease
    read before, taken over with its resourceVersion (so two runs cannot both take it)."""
    metadata = {
        "name": lease_name(member),
        "labels": {"app.kubernetes.io/managed-by": MANAGED_BY, MEMBER_LABEL: member},
        "annotations": {HOLDER_ANNOTATION: description},
    }
    if current is not None:
        metadata["resourceVersion"] = current["metadata"]["resourceVersion"]
    return {
        "apiVersion": LEASE.api_version, "kind": LEASE.kind, "metadata": metadata,
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": int(duration),
                 "acquireTime": micro_time(now), "renewTime": micro_time(now)},
    }


def describe_lock(lease, now=None):
    """``{holder, by, since, expires, live}`` of a lock Lease (None for no Lease or no holder)."""
    spec = (lease or {}).get("spec") or {}
    if not spec.get("holderIdentity"):
        return None
    renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime"))
    expires = renewed + datetime.timedelta(seconds=spec.get("leaseDurationSeconds") or 0) if renewed else None
    annotations = ((lease.get("metadata") or {}).get("annotations")) or {}
    return {
        "holder": spec["holderIdentity"],
        "by": annotations.get(HOLDER_ANNOTATION) or "unknown",
        "since": spec.get("acquireTime"),
        "expires": format_time(expires) if expires else None,
        "live": expires is not None and (now or utcnow()) < expires + datetime.timedelta(seconds=SKEW_SECONDS),
    }


def held_message(member, lock):
    return "%s is being changed by another run (holder %s, run by %s, since %s, expires %s)" % (
        member, lock["holder"], lock["by"], lock["since"], lock["expires"])


def live_locks(kube, namespace, now=None):
    """``{member: describe_lock}`` of the members a run is changing now, read with one LIST; empty when the credential
    may not list Leases there or the namespace does not exist (who holds a lock is shown where it can be)."""
    try:
        leases = kube.list(LEASE, namespace, label_selector="app.kubernetes.io/managed-by=%s,%s" % (MANAGED_BY, MEMBER_LABEL))
    except ApiError as exc:
        if exc.status in (403, 404):
            return {}
        raise
    locks = {}
    for lease in leases:
        member = ((lease.get("metadata") or {}).get("labels") or {}).get(MEMBER_LABEL)
        lock = describe_lock(lease, now)
        if member and lock and lock["live"]:
            locks[member] = dict((key, value) for key, value in lock.items() if key != "live")
    return locks


class MemberLock:
    """The lock of one member on one hub: ``kube`` the hub client, ``namespace`` where the Leases live."""

    def __init__(self, kube, namespace, member, holder, description, duration):
        self.kube = kube
        self.namespace = namespace
        self.member = member
        self.holder = holder
        self.description = description
        self.duration = duration
        self.version = None

    def _read(self):
        return self.kube.get(LEASE, lease_name(self.member), self.namespace)

    def try_take(self, now=None):
        """``None`` when this run now holds the lock, else the live lock of the other run (``describe_lock``)."""
        now = now or utcnow()
        try:
            self._taken(self.kube.create(LEASE, lock_body(self.member, self.holder, self.description, self.duration, now),
                                         self.namespace))
            return None
        except ApiError as exc:
            if exc.status != 409:
                raise self._explain(exc)
        current = self._read()
        lock = describe_lock(current, now)
        if lock is not None and lock["holder"] == self.holder:
            self._taken(current)
            return None
        if lock is not None and lock["live"]:
            return lock
        # Expired, released or held by nobody: take it over, exactly the version read.
        body = lock_body(self.member, self.holder, self.description, self.duration, now, current=current)
        try:
            if current is None:
                self._taken(self.kube.create(LEASE, body, self.namespace))
            else:
                self._taken(self.kube.request("PUT", LEASE.path(self.namespace, lease_name(self.member)), body=body))
            return None
        except ApiError as exc:
            if exc.status in (404, 409):  # another run took it, or its holder released it, meanwhile
                return describe_lock(self._read(), now) or self.try_take()
            raise self._explain(exc)

    def _taken(self, lease):
        self.version = ((lease or {}).get("metadata") or {}).get("resourceVersion")

    def release(self, version=None):
        """Delete the lock if this run holds it: the ``version`` this run wrote (one request; a lock taken over since has
        another), else the version read if its holder is this run. Whether it was ours."""
        if version is None:
            current = self._read()
            if (describe_lock(current) or {}).get("holder") != self.holder:
                return False
            version = current["metadata"]["resourceVersion"]
        options = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": version}}
        try:
            self.kube.request("DELETE", LEASE.path(self.namespace, lease_name(self.member)), body=options)
        except ApiError as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True

    def _explain(self, exc):
        if exc.status == 403:
            exc.hint = ("The hub credential needs get, create, update and delete on leases (coordination.k8s.io) in %s, "
                        "where the member locks live (extensions/rbac/hub.yml)" % self.namespace)
        elif exc.status == 404:
            exc.hint = "The lock namespace %s does not exist on the hub: create it or choose another (lock_namespace)" % self.namespace
        return exc


def take_locks(locks, waiter):
    """Take every one of ``locks`` (MemberLock), waiting side by side for those another run holds, within ``waiter``'s
    time. Returns ``(waited, failed)``: the members whose lock had to be waited for (and is now taken), and
    ``{member: FleetOpsError}`` for those not taken (LockHeld past the wait, or the request's own error)."""
    held, failed = {}, {}

    def attempt(lock):
        try:
            other = lock.try_take()
        except FleetOpsError as exc:
            held.pop(lock.member, None)
            failed[lock.member] = exc
            return
        if other is None:
            held.pop(lock.member, None)
        else:
            held[lock.member] = (lock, other)

    def still_held():
        for lock, _other in list(held.values()):
            attempt(lock)
        return held

    for lock in locks:
        attempt(lock)
    waited = set(held)
    if held:
        try:
            waiter.until(still_held, lambda left: not left, "the locks of %s" % ", ".join(sorted(held)))
        except WaitTimeout:
            pass
    for member, (lock, other) in held.items():
        failed[member] = LockHeld(held_message(member, other), hint=(
            "Wait for that run to finish (or, if it died, for its lock to expire) and run again; the lock is the Lease "
            "%s/%s on the hub" % (lock.namespace, lease_name(member))))
    return sorted(waited - set(failed)), failed


def lock_argument_spec():
    return dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        members=dict(type="list", elements="dict", required=True),
        states=dict(type="dict"),
        lock_namespace=dict(type="str", default=DEFAULT_NAMESPACE),
        lock_duration=dict(type="int"),
        run_by=dict(type="str"),
        wait_timeout=dict(type="int", default=300),
        wait_sleep=dict(type="int", default=2),
    )


def lock_duration(params):
    """How long a lock lives without its run: as long as the run's registration token (three of a join's waits)."""
    return params.get("lock_duration") or 3 * params["wait_timeout"]


def run_by(params):
    if params.get("run_by"):
        return params["run_by"]
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return "%s@%s" % (user, socket.gethostname())


def _readers(module, names, member=False):
    """``(readers, errors)`` of member_batch.prepare for the items named ``names`` only; connected to the member too
    when ``member`` (to read it again)."""
    items = [item for item in module.params[ITEMS] if isinstance(item, dict) and item.get("name") in names]
    return prepare(module, items, spec=item_spec(merge(AUTH, HUB_AUTH, member_info_argument_spec())), member=member)


def _lock(module, reader, holder):
    return MemberLock(reader.hub(), module.params["lock_namespace"], reader.name, holder, run_by(module.params),
                      lock_duration(module.params))


def _lock_view(lock):
    return {"namespace": lock.namespace, "name": lease_name(lock.member), "holder": lock.holder, "version": lock.version}


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
        return {"changed": False, "members": states, "locked": [], "waited": []}
    readers, errors = _readers(module, wanted, member=read_again)
    locks = dict((reader.name, (reader, _lock(module, reader, wanted[reader.name]))) for reader in readers)
    waited, failed = take_locks([lock for _reader, lock in locks.values()], module.waiter)
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
    return {"changed": bool(locked), "members": states, "locked": locked, "waited": waited}


def release_members(module):
    """member_lock state=absent: release the locks ``states`` (member_lock's own ``members`` result) say this run holds."""
    held = dict((name, state["lock"]) for name, state in (module.params["states"] or {}).items()
                if isinstance(state, dict) and isinstance(state.get("lock"), dict) and state["lock"].get("holder"))
    if module.check_mode or not held:
        return {"changed": False, "released": []}
    readers, errors = _readers(module, held)
    released = sorted(reader.name for reader in readers
                      if _lock(module, reader, held[reader.name]["holder"]).release(held[reader.name].get("version")))
    for name, message in sorted(errors.items()):
        module.warn("could not release the lock of %s (it expires on its own): %s" % (name, message))
    return {"changed": bool(released), "released": released}
