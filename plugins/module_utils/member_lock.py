# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A per-member lock on the hub: one ``coordination.k8s.io/v1`` Lease per member, held by the run that changes it.

Two runs for the same member (an AWX job launched twice, a schedule overlapping a manual run) would otherwise both
create a registration token, prune each other's, and race on the agent. The run that needs a step for a member takes
that member's Lease first; a second run waits until it is released (or has expired: a run that died releases nothing),
then reads the member again and usually finds nothing left to do. Runs for different members never meet.

A run that died releases nothing either. The lock names the controller process that holds it (lock_holder.py): a run
on the same controller takes over at once from a holder whose process is gone, and any run told to (``lock_takeover``)
takes over a live lock; elsewhere a live lock is waited for until its holder releases it or it expires.

The Lease's holder is the run's ``run_id`` (the label its registration token carries); the annotation says who runs it.
Taking a free lock is one request (a create), releasing it one more; expiry is judged from ``renewTime`` +
``leaseDurationSeconds``. The lock lives three waits; a step that starts a wait's time or more after the lock was taken
renews it first (one request), so a run that is still working keeps its member, and a fast run pays nothing for it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.fleetops.registration.plugins.module_utils.errors import (
    ApiError, FleetOpsError, LockLost, WaitTimeout, opt_in_needed,
)
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import NAMESPACE, Resource
from ansible_collections.fleetops.registration.plugins.module_utils.labels import HUB_NAMESPACE
from ansible_collections.fleetops.registration.plugins.module_utils import lock_holder
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, parse_time, utcnow

LEASE = Resource("coordination.k8s.io/v1", "Lease", "leases")
PREFIX = "fleetops-member-"
MANAGED_BY = "fleetops.registration"
MEMBER_LABEL = "fleetops.registration/member"
HOLDER_ANNOTATION = "fleetops.registration/holder"
# Which controller process holds the lock (lock_holder.this_controller, as JSON).
PROCESS_ANNOTATION = "fleetops.registration/holder-process"
# Controllers' clocks may disagree a little: a lock counts as expired only this long after its own expiry.
SKEW_SECONDS = 5
# The collection's own namespace on the hub (made by hub_prepare and extensions/rbac/hub.yml): its Roles grant the
# hub credential the lock Leases there and no other Lease (the hub controllers' leader election lives in kube-system).
DEFAULT_NAMESPACE = HUB_NAMESPACE
# The longest a lock can live: the collection never writes more (lock_duration is capped), so a Lease named like a lock
# that says more (planted, or written by hand) is judged by this, not left to block the member for days.
MAX_DURATION_SECONDS = 24 * 3600


class NotALock(FleetOpsError):
    """A Lease with a member lock's name that this collection did not write."""


class LockHeld(FleetOpsError):
    """Another run holds the member's lock past our wait; ``lock``: that lock (describe_lock)."""

    lock = None


def lease_name(member):
    return PREFIX + member


def micro_time(value):
    """A datetime as a Lease's MicroTime (``2026-01-02T03:04:05.000000Z``)."""
    return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lock_body(member, holder, description, duration, now, current=None, process=None):
    """The Lease that says ``holder`` changes ``member`` from ``now`` for ``duration`` seconds. ``current``: the Lease
    read before, taken over with its resourceVersion (so two runs cannot both take it). ``process``: the controller
    process of the run (lock_holder.this_controller)."""
    annotations = {HOLDER_ANNOTATION: description}
    if process:
        annotations[PROCESS_ANNOTATION] = lock_holder.encode(process)
    metadata = {
        "name": lease_name(member),
        "labels": {"app.kubernetes.io/managed-by": MANAGED_BY, MEMBER_LABEL: member},
        "annotations": annotations,
    }
    if current is not None:
        metadata["resourceVersion"] = current["metadata"]["resourceVersion"]
    return {
        "apiVersion": LEASE.api_version, "kind": LEASE.kind, "metadata": metadata,
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": int(duration),
                 "acquireTime": micro_time(now), "renewTime": micro_time(now)},
    }


def describe_lock(lease, now=None):
    """``{holder, by, process, since, expires, live}`` of a lock Lease (None for no Lease or no holder); ``process`` is
    the holder's controller process as recorded (None when not recorded)."""
    spec = (lease or {}).get("spec") or {}
    if not spec.get("holderIdentity"):
        return None
    renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime"))
    duration = spec.get("leaseDurationSeconds")
    duration = min(duration, MAX_DURATION_SECONDS) if isinstance(duration, int) and not isinstance(duration, bool) else 0
    expires = renewed + datetime.timedelta(seconds=max(duration, 0)) if renewed else None
    annotations = ((lease.get("metadata") or {}).get("annotations")) or {}
    return {
        "holder": spec["holderIdentity"],
        "by": annotations.get(HOLDER_ANNOTATION) or "unknown",
        "process": lock_holder.decode(annotations.get(PROCESS_ANNOTATION)),
        "since": spec.get("acquireTime"),
        "expires": format_time(expires) if expires else None,
        "live": expires is not None and (now or utcnow()) < expires + datetime.timedelta(seconds=SKEW_SECONDS),
    }


def is_lock(lease, member):
    """Whether ``lease`` carries the labels this collection writes on ``member``'s lock."""
    labels = ((lease or {}).get("metadata") or {}).get("labels") or {}
    return labels.get("app.kubernetes.io/managed-by") == MANAGED_BY and labels.get(MEMBER_LABEL) == member


def held_message(member, lock):
    process = lock_holder.describe(lock.get("process"))
    return "%s is being changed by another run (holder %s, run by %s%s, since %s, expires %s)" % (
        member, lock["holder"], lock["by"], ", " + process if process else "", lock["since"], lock["expires"])


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
            locks[member] = dict((key, value) for key, value in lock.items() if key not in ("live", "process"))
    return locks


def lock_reference(lock):
    """``namespace/name`` of a lock (the ``member_lock`` option's dict), what objects a run makes under it name."""
    return "%s/%s" % (lock["namespace"], lock["name"]) if lock and lock.get("namespace") and lock.get("name") else None


def abandoned(lease, now=None, here=None, is_alive=lock_holder.alive):
    """Why no run holds the lock Lease ``lease`` any more (None while its holder may still be running): no Lease or no
    holder, expired, or its holder's process gone on this controller (``here``: lock_holder.this_controller). Any run
    takes such a lock over at once."""
    lock = describe_lock(lease, now)
    if lock is None:
        return "its lock is released"
    if not lock["live"]:
        return "its lock expired at %s" % lock["expires"]
    return lock_holder.takeover_reason(lock["process"], here, is_alive) if here else None


def run_over(lease, holder, now=None, here=None, is_alive=lock_holder.alive):
    """Why the run ``holder`` no longer holds the lock Lease ``lease`` (None when it may still be running): abandoned,
    or held by another run."""
    lock = describe_lock(lease, now)
    if lock is not None and lock["holder"] != holder:
        return "its lock is held by run %s now" % lock["holder"]
    return abandoned(lease, now, here, is_alive)


def runs_over(kube, references, now=None):
    """``{(lock reference, holder): why the run is over, or None}`` for each pair, each Lease read once; a Lease that
    cannot be read (a credential without get on Leases there) leaves its runs unknown (None)."""
    here, found, leases = lock_holder.this_controller(), {}, {}
    for reference, holder in references:
        if reference not in leases:
            namespace, _sep, name = reference.partition("/")
            try:
                leases[reference] = (kube.get(LEASE, name, namespace),)
            except FleetOpsError:  # not allowed, or no valid name: unknown
                leases[reference] = None
        found[(reference, holder)] = run_over(leases[reference][0], holder, now, here) if leases[reference] else None
    return found


def tidy_locks(kube, namespace, dry_run=False, now=None, here=None, is_alive=lock_holder.alive):
    """The member locks in ``namespace`` that no run holds any more (``abandoned``), deleted: ``[{name, member, holder,
    reason}]``. Each is deleted in the version read, so a lock a run takes over meanwhile stays; a Lease without the
    labels this collection writes is never touched, and a credential that may not list Leases there tidies nothing.

    A run that died holding a lock leaves it until some run needs its member again; the hub role's tidy removes it
    sooner, so that what a status shows, and what a run from another controller waits for, is only a running run."""
    try:
        leases = kube.list(LEASE, namespace, label_selector="app.kubernetes.io/managed-by=%s,%s" % (MANAGED_BY, MEMBER_LABEL))
    except ApiError as exc:
        if exc.status in (403, 404):
            return []
        raise
    here = here or lock_holder.this_controller()
    removed = []
    for lease in leases:
        metadata = lease.get("metadata") or {}
        member = (metadata.get("labels") or {}).get(MEMBER_LABEL)
        reason = abandoned(lease, now, here, is_alive) if member and metadata.get("name") == lease_name(member) else None
        if reason and _delete_version(kube, namespace, metadata, dry_run):
            annotations = metadata.get("annotations") or {}
            removed.append({"name": metadata["name"], "member": member, "holder": (lease.get("spec") or {}).get("holderIdentity"),
                            "by": annotations.get(HOLDER_ANNOTATION) or "unknown", "reason": reason})
    return removed


def tidied_message(item, dry_run=False):
    """What a run says of a lock the hub tidy removed: whose, and why (a run died holding it)."""
    return "%s the lock of %s left by run %s (run by %s): %s" % (
        "would remove" if dry_run else "removed", item["member"], item["holder"], item["by"], item["reason"])


def _delete_version(kube, namespace, metadata, dry_run):
    """Delete a Lease if it is still at the version read: whether it was (or, in a dry run, would be)."""
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": metadata["resourceVersion"]}}
    if dry_run:
        options["dryRun"] = ["All"]
    try:
        kube.request("DELETE", LEASE.path(namespace, metadata["name"]), body=options)
    except ApiError as exc:
        # released or taken over since it was read; or a credential that may list the locks but not delete them
        # (an RBAC older than the tidy): the lock stays, as before the tidy, and the hub role goes on
        if exc.status in (403, 404, 409):
            return False
        raise
    return True


class MemberLock:
    """The lock of one member on one hub: ``kube`` the hub client, ``namespace`` where the Leases live. ``process``: this
    run's controller process (lock_holder.this_controller); ``takeover``: take over a live lock of another run too.
    ``took_over``: the lock this run took from a live holder, with the ``reason``."""

    def __init__(self, kube, namespace, member, holder, description, duration, process=None, takeover=False):
        self.kube = kube
        self.namespace = namespace
        self.member = member
        self.holder = holder
        self.description = description
        self.duration = duration
        self.process = process
        self.takeover = takeover
        self.version = None
        self.taken = None
        self.took_over = None

    def _body(self, now, current=None):
        return lock_body(self.member, self.holder, self.description, self.duration, now, current=current, process=self.process)

    def _takeover_reason(self, lock):
        return lock_holder.takeover_reason(lock.get("process"), self.process, lock_holder.alive, self.takeover)

    def _read(self):
        return self.kube.get(LEASE, lease_name(self.member), self.namespace)

    def try_take(self, now=None):
        """``None`` when this run now holds the lock, else the live lock of the other run (``describe_lock``)."""
        now = now or utcnow()
        try:
            self._taken(self.kube.create(LEASE, self._body(now), self.namespace))
            return None
        except ApiError as exc:
            if exc.status == 404 and self._make_namespace():
                return self.try_take(now)
            if exc.status != 409:
                raise self._explain(exc)
        current = self._read()
        if current is not None and not is_lock(current, self.member):
            raise self._not_ours()
        lock = describe_lock(current, now)
        if lock is not None and lock["holder"] == self.holder:
            self._taken(current)
            return None
        reason = self._takeover_reason(lock) if lock is not None and lock["live"] else None
        if lock is not None and lock["live"] and not reason:
            return lock
        # Expired, released, held by nobody, or by a run that died (or we were told to): take over exactly the version read.
        body = self._body(now, current=current)
        try:
            if current is None:
                self._taken(self.kube.create(LEASE, body, self.namespace))
            else:
                self._taken(self.kube.request("PUT", LEASE.path(self.namespace, lease_name(self.member)), body=body))
            if reason:
                self.took_over = dict(lock, reason=reason)
            return None
        except ApiError as exc:
            if exc.status in (404, 409):  # another run took it, or its holder released it, meanwhile
                return describe_lock(self._read(), now) or self.try_take()
            raise self._explain(exc)

    def _make_namespace(self):
        """Create the lock namespace when it is missing (a hub the hub role has not prepared yet, e.g. a leave right
        after an upgrade from the kube-system default): whether it was created. The shipped hub RBAC creates it too, so
        only a credential that may create namespaces ever gets here."""
        if self.kube.get(NAMESPACE, self.namespace) is not None:
            return False
        try:
            self.kube.create(NAMESPACE, {"metadata": {"name": self.namespace, "labels": {"app.kubernetes.io/managed-by": MANAGED_BY}}})
        except ApiError as exc:
            if exc.status == 409:
                return True
            raise opt_in_needed(exc, "create the missing lock namespace %s (apply extensions/rbac/hub.yml, which creates it, "
                                     "or run the hub role)" % self.namespace)
        return True

    def _taken(self, lease):
        self.version = ((lease or {}).get("metadata") or {}).get("resourceVersion")
        self.taken = micro_time(utcnow())

    def release(self, version=None):
        """Delete the lock if this run holds it: the ``version`` this run wrote (one request), else - a step renewed it
        since (each wait that paused does), or another run took it over - the version read if its holder is this run.
        Whether it was ours."""
        given = version is not None
        if not given:
            current = self._read()
            if (describe_lock(current) or {}).get("holder") != self.holder:
                return False
            version = current["metadata"]["resourceVersion"]
        options = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": version}}
        try:
            self.kube.request("DELETE", LEASE.path(self.namespace, lease_name(self.member)), body=options)
        except ApiError as exc:
            if exc.status == 409 and given:
                return self.release()  # renewed by a step since (or taken over): look whose it is now
            if exc.status in (404, 409):
                return False
            raise
        return True

    def _not_ours(self):
        return NotALock(
            "the Lease %s/%s on the hub is not a member lock of this collection (it lacks the labels "
            "app.kubernetes.io/managed-by=%s and %s=%s): it was not taken over and is not waited for"
            % (self.namespace, lease_name(self.member), MANAGED_BY, MEMBER_LABEL, self.member),
            hint="Find out who created it; delete it if nothing uses it, or keep the locks in another namespace (lock_namespace)")

    def _explain(self, exc):
        if exc.status == 403:
            exc.hint = ("The hub credential needs get, create, update, patch and delete on leases (coordination.k8s.io) "
                        "in %s, where the member locks live: bind the Role fleetops-registration-hub there "
                        "(extensions/rbac/hub.yml)" % self.namespace)
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
            "Wait for that run to finish and run again. If it no longer runs (a run on its controller takes its lock "
            "over at once; from elsewhere it is waited for until it expires), take the lock over now: run again with "
            "-e member_join_lock_takeover=true (a leave: member_leave_lock_takeover; the member_lock option "
            "lock_takeover). The lock is the Lease %s/%s on the hub" % (lock.namespace, lease_name(member))))
        failed[member].lock = dict((key, value) for key, value in other.items() if key != "live")
    return sorted(waited - set(failed)), failed


def renewal_due(lock, wait_timeout, now=None):
    """Whether a step should renew ``lock`` (member_lock's view of it) before it acts: once a wait's time has passed since
    it was taken. Until then the lock outlives any one step (it lives three waits); from then on each step renews it."""
    taken = parse_time((lock or {}).get("taken"))
    return taken is None or ((now or utcnow()) - taken).total_seconds() >= wait_timeout


# Why a step found its lock gone: at its start, and once it had waited.
LOST_AT_START = ("The run took longer than its lock lives (lock_duration, three times the wait timeout by default), so "
                 "another run may be changing the member; nothing was changed by this step. Run again when that run is done")
LOST_AFTER_WAIT = ("Another run took the member over while this step waited (its own run's process was gone, or the lock "
                   "had expired); the step stopped there and changed nothing after its wait. Run again when that run is done")


def renew(kube, lock, now=None, after_wait=False):
    """Extend ``lock`` from now, in one request that first tests that this run still holds it (a JSON patch).

    A step renews at its start once that is due, and after each wait (``after_wait``): a run whose ansible-playbook was
    killed goes on in its orphaned worker until its step ends, and must not act once another run took the member over."""
    patch = [{"op": "test", "path": "/spec/holderIdentity", "value": lock["holder"]},
             {"op": "add", "path": "/spec/renewTime", "value": micro_time(now or utcnow())}]
    try:
        kube.request("PATCH", LEASE.path(lock["namespace"], lock["name"]), body=patch, content_type="application/json-patch+json")
    except ApiError as exc:
        if exc.status in (404, 422):
            held = describe_lock(kube.get(LEASE, lock["name"], lock["namespace"]))
            raise LockLost("this run no longer holds the lock %s/%s of the member (%s)" % (
                lock["namespace"], lock["name"], "taken over by run %s, run by %s" % (held["holder"], held["by"]) if held else "released"),
                hint=LOST_AFTER_WAIT if after_wait else LOST_AT_START)
        if exc.status == 403:
            exc.hint = ("The hub credential needs patch on leases (coordination.k8s.io) in %s to renew the member lock (a step "
                        "does after each wait, and late in a long run): bind the Role fleetops-registration-hub there "
                        "(extensions/rbac/hub.yml)" % lock["namespace"])
        raise
