# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubefleet_member_cluster (join and leave through the hub's MemberCluster) and kubefleet_member_cluster_info."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.batch import ITEMS, run_batch
from ansible_collections.fleetops.registration.plugins.module_utils.cluster_identity import identity_annotations
from ansible_collections.fleetops.registration.plugins.module_utils.errors import (
    ApiError, FleetOpsError, LockLost, NotFoundError, ParameterError, WaitTimeout,
)
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import NAMESPACE, SERVICE_ACCOUNT, clean
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FORCED_LEAVE_ROLE, forced_leave_needed
from ansible_collections.fleetops.registration.plugins.module_utils.module import Runner
from ansible_collections.fleetops.registration.plugins.module_utils.labels import label_changes, normalize_labels
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import (
    MEMBER_CLUSTER, MEMBER_CLUSTER_FINALIZER, WORK, default_service_account, member_namespace, validate_heartbeat,
    validate_member_name,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import (
    for_diff, identity_subject, member_cluster_changes, normalize_taints, quarantined, spec_changes, taints_with_quarantine,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import (
    describe_member, joined_with_heartbeat, label_selector, member_ready_to_join, quarantine_problems, utcnow,
)

# For users of the module and of the member_leave role alike (roles expose module options as variables).
STUCK_LEAVE_HINT = (
    "The member agent must acknowledge the leave, or the hub agent force-deletes after its --force-delete-wait-time "
    "(15m by default). For a leave stuck on finalizers (Azure/fleet#881), set the kubefleet_member_cluster option "
    "force_remove_finalizers: true (the member_leave role exposes it as the variable member_leave_kubefleet_force)"
)


def _labels_of(obj):
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _leaving(obj):
    return bool(((obj or {}).get("metadata") or {}).get("deletionTimestamp"))


def run_member_cluster(module):
    """kubefleet_member_cluster: one MemberCluster, or each of ``clusters`` over one list of the hub's MemberClusters
    (and of the identities' ServiceAccounts, when they are checked)."""
    if module.params.get(ITEMS) is None:
        return MemberCluster(module).run()

    def prefetch(kube):
        kube.read_all(MEMBER_CLUSTER)
        if module.params["validate_identity"] and module.params["identity_kind"] == "ServiceAccount":
            kube.read_all(SERVICE_ACCOUNT, module.params["identity_namespace"])
    return run_batch(module, MemberCluster, prefetch)


class MemberCluster(Runner):
    """The hub's MemberCluster: join (present) and leave (absent)."""

    def __init__(self, module, params=None):
        super().__init__(module, params)
        self.name = validate_member_name(self.params["name"])

    def _identity(self):
        kind = self.params["identity_kind"]
        name = self.params["identity_name"] or (default_service_account(self.name) if kind == "ServiceAccount" else None)
        namespace = self.params["identity_namespace"] if kind == "ServiceAccount" else None
        return identity_subject(kind, name, namespace)

    def _check_identity(self, identity):
        if identity["kind"] != "ServiceAccount" or not self.params["validate_identity"]:
            return
        if self.kube.get(SERVICE_ACCOUNT, identity["name"], identity["namespace"]) is not None:
            return
        account = "ServiceAccount %s/%s" % (identity["namespace"], identity["name"])
        if self.check_mode:
            self.assume_created_earlier("the hub has no %s yet (kubefleet_member_identity makes it)" % account)
            return
        raise ParameterError(
            "identity_name", "%s does not exist on the hub" % account,
            "Create it first with fleetops.registration.kubefleet_member_identity, or set validate_identity: false",
        )

    def _current(self):
        """``(the live MemberCluster, whether the server would refuse its creation now)``: one still leaving is waited out
        (or refused) before joining again; check mode predicts what a real run does once the leave is done."""
        current = self.kube.get(MEMBER_CLUSTER, self.name)
        if not _leaving(current):
            return current, False
        if self.check_mode:  # a dry-run create would be refused while the old one is there
            self.warn("MemberCluster %s is still leaving the fleet; a real run waits until the hub lets it go, then creates "
                      "it again" % self.name)
            return None, True
        if not self.params["wait"]:
            raise ApiError("MemberCluster %s is still leaving the fleet" % self.name,
                           hint="Wait until it is gone (state: absent with wait: true) before joining it again")
        self._wait_gone("the previous MemberCluster %s to finish leaving before joining again" % self.name)
        return None, False

    def present(self):
        heartbeat = validate_heartbeat(self.params["heartbeat_period_seconds"])
        taints = normalize_taints(self.params["taints"])
        labels = None if self.params["labels"] is None else normalize_labels(self.params["labels"])
        identity = self._identity()
        self._check_identity(identity)
        current, predicted_only = self._current()
        quarantine = self.params.get("quarantine")
        problems = self._verify(current) if quarantine == "lift" and quarantined(current) else []
        if problems:
            quarantine = None  # not verified: the taint stays, and the task fails once the rest is applied
        taints = taints_with_quarantine(current, taints, quarantine)
        body, patch = member_cluster_changes(current, self.name, identity, heartbeat, taints, labels, self.params["labels_mode"],
                                             identity_annotations(self.params.get("cluster_identity")))
        after = current
        if body is not None:
            after = body if predicted_only else self.kube.create(MEMBER_CLUSTER, body, dry_run=self.check_mode)
        elif patch is not None:
            after = self.kube.patch(MEMBER_CLUSTER, self.name, patch, dry_run=self.check_mode)
        changed = body is not None or patch is not None
        if not self.check_mode and self.params["wait"] and not problems:
            try:
                after = self._wait_present()
            except (WaitTimeout, LockLost) as exc:
                if changed:
                    raise self.changed_before_failure(exc, "%s MemberCluster %s" % (
                        "created" if body is not None else "updated", self.name))
                raise
        result = {"changed": changed, "member_cluster": clean(after), "member": describe_member(after),
                  "label_changes": label_changes(_labels_of(current), _labels_of(after)),
                  "spec_changes": spec_changes(current, after),
                  "quarantine": {"held": quarantined(after), "problems": problems}}
        if problems and self.check_mode:
            self.warn("check mode: MemberCluster %s would stay quarantined: %s" % (self.name, "; ".join(problems)))
        elif problems:
            raise FleetOpsError("MemberCluster %s stays quarantined: %s" % (self.name, "; ".join(problems)),
                                "Look at the member agent (kubefleet_member_agent, its logs on the member) and run again; "
                                "the quarantine is lifted once the member is verified", **result)
        return self.finish(result, for_diff(current), for_diff(after))

    def _verify(self, current):
        """Why the quarantined member is not verified, after waiting for it within wait_timeout when ``wait``."""
        if self.check_mode or not self.params["wait"]:
            return quarantine_problems(current)
        try:
            self.module.waiter.until(lambda: self.kube.get(MEMBER_CLUSTER, self.name), lambda obj: not quarantine_problems(obj),
                                     "MemberCluster %s to be verified" % self.name)
            return []
        except WaitTimeout as exc:
            return quarantine_problems(exc.last)

    def _wait_present(self):
        if self.params["wait_for"] == "joined":
            what = "MemberCluster %s to be Joined with a member agent heartbeat" % self.name
            predicate = joined_with_heartbeat
            hint = ("Install the member agent on the member (kubefleet_member_agent) and check that it reaches the hub; "
                    "or wait_for: ready_to_join")
        else:
            what = "the hub agent to make MemberCluster %s ReadyToJoin" % self.name
            predicate = member_ready_to_join
            hint = "Check that the KubeFleet hub agent runs on the hub"
        return self.module.waiter.until(lambda: self.kube.get(MEMBER_CLUSTER, self.name), predicate, what, hint)

    # -- leave ------------------------------------------------------------------

    def _leftovers(self):
        return self.kube.get(MEMBER_CLUSTER, self.name), self.kube.get(NAMESPACE, member_namespace(self.name))

    def _wait_gone(self, what, waiter=None):
        waiter = waiter or self.module.waiter
        return waiter.until(self._leftovers, lambda pair: pair[0] is None and pair[1] is None, what, STUCK_LEAVE_HINT)

    def absent(self):
        current, namespace = self._leftovers()
        deleted = False
        if current is not None and not _leaving(current):
            self.kube.delete(MEMBER_CLUSTER, self.name, dry_run=self.check_mode)
            deleted = True
        forced = []
        if not self.check_mode and self.params["wait"] and (current is not None or namespace is not None):
            forced = self._wait_left(deleted)
        result = {"changed": deleted or bool(forced), "member_cluster": {}, "namespace": member_namespace(self.name),
                  "forced": forced}
        if current is not None:
            result["member"] = describe_member(current)
        return self.finish(result, for_diff(current), {})

    def _wait_left(self, deleted):
        what = "MemberCluster %s and namespace %s to be removed by the hub" % (self.name, member_namespace(self.name))
        if not self.params["force_remove_finalizers"]:
            self._report_timeout(lambda: self._wait_gone(what), deleted, [])
            return []
        try:
            self._wait_gone(what, self.module.waiter.within(float(self.params["force_grace_period"])))
            return []
        except WaitTimeout:
            pass
        except LockLost as exc:
            raise self._stopped(exc, deleted, [])
        forced = self._remove_finalizers()
        self._report_timeout(lambda: self._wait_gone(what + " after removing finalizers"), deleted, forced)
        return forced

    def _stopped(self, exc, deleted, forced):
        """``exc``, marked as a failure after a change when this run deleted the MemberCluster or removed finalizers."""
        did = ["deleted MemberCluster %s (the hub finishes the leave by itself)" % self.name] if deleted else []
        did += ["removed finalizers: %s" % "; ".join(forced)] if forced else []
        return self.changed_before_failure(exc, " and ".join(did)) if did else exc

    def _report_timeout(self, wait, deleted, forced):
        """Run ``wait``; on a timeout say what is still there, and that this run changed things when it did."""
        try:
            wait()
        except LockLost as exc:
            raise self._stopped(exc, deleted, forced)
        except WaitTimeout as exc:
            current, namespace = exc.last or (None, None)
            left = []
            if current is not None:
                left.append("MemberCluster %s (finalizers: %s)" % (
                    self.name, ", ".join((current.get("metadata") or {}).get("finalizers") or []) or "none"))
            if namespace is not None:
                try:
                    works = "%d" % len(self._works_with_finalizers())
                except ApiError as denied:
                    if denied.status != 403:
                        raise
                    works = "unknown (listing Works needs the role %s in that namespace)" % FORCED_LEAVE_ROLE
                left.append("namespace %s (%s, %s Work(s) with finalizers)" % (
                    member_namespace(self.name), (namespace.get("status") or {}).get("phase"), works))
            error = WaitTimeout("%s; still there: %s" % (exc.msg, "; ".join(left) or "nothing"), exc.hint, last=None)
            raise self._stopped(error, deleted, forced)

    def _works_with_finalizers(self):
        try:
            works = self.kube.list(WORK, member_namespace(self.name))
        except NotFoundError:
            return []
        return [w for w in works if (w.get("metadata") or {}).get("finalizers")]

    def _remove_finalizers(self):
        """Strip the finalizers the gone member agent would have cleared (Azure/fleet#881); return what was done. The
        Works and the member's namespace need the forced leave's role: a 403 there fails naming it."""
        done = []
        try:
            self._force_works_and_namespace(done)
        except ApiError as exc:
            raise forced_leave_needed(exc, "force the leave of %s (%s)" % (self.name, "; ".join(done) or "nothing done yet"),
                                      member_namespace(self.name))
        if done:
            self.warn("forced the leave of %s by removing finalizers: %s" % (self.name, "; ".join(done)))
        return done

    def _force_works_and_namespace(self, done):
        namespace_name = member_namespace(self.name)
        for work in self._works_with_finalizers():
            name = work["metadata"]["name"]
            self.kube.patch(WORK, name, {"metadata": {"finalizers": None}}, namespace_name)
            done.append("Work %s/%s" % (namespace_name, name))
        current = self.kube.get(MEMBER_CLUSTER, self.name)
        finalizers = ((current or {}).get("metadata") or {}).get("finalizers") or []
        if MEMBER_CLUSTER_FINALIZER in finalizers:
            rest = [f for f in finalizers if f != MEMBER_CLUSTER_FINALIZER]
            try:
                self.kube.patch(MEMBER_CLUSTER, self.name, {"metadata": {"finalizers": rest or None}})
                done.append("MemberCluster %s" % self.name)
            except NotFoundError:
                pass
        namespace = self.kube.get(NAMESPACE, namespace_name)
        if namespace is not None and not _leaving(namespace):
            # Owned by the MemberCluster, so the garbage collector would delete it; do not wait for that.
            self.kube.delete(NAMESPACE, namespace_name)
            done.append("namespace %s deleted" % namespace_name)


class MemberClusterInfo(Runner):
    """Read-only: one or all MemberClusters, summarised."""

    def run(self):
        kube = self.module.kube()
        name = self.params["name"]
        selector = label_selector(self.params["labels"], self.params["label_selector"])
        if selector:
            items = kube.list(MEMBER_CLUSTER, label_selector=selector)
            items = [i for i in items if not name or (i.get("metadata") or {}).get("name") == name]
        elif name:
            obj = kube.get(MEMBER_CLUSTER, name)
            items = [obj] if obj is not None else []
        else:
            items = kube.list(MEMBER_CLUSTER)
        now = utcnow()
        members = sorted((describe_member(item, now) for item in items), key=lambda m: m["name"])
        return {"changed": False, "members": members}
