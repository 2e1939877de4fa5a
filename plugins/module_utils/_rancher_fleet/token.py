# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_registration_token: the token, Fleet's values Secret, the local values.yaml, and pruning."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile

from ansible_collections.fleetops.registration.plugins.module_utils.errors import (
    FleetOpsError, LockLost, ParameterError, WaitTimeout,
)
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import SECRET, clean, ensure_object
from ansible_collections.fleetops.registration.plugins.module_utils.labels import MANAGED_BY, MANAGED_BY_LABEL
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import lock_reference
from ansible_collections.fleetops.registration.plugins.module_utils.module import Runner
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import b64, load_yaml, unb64
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, utcnow
from ansible_collections.fleetops.registration.plugins.module_utils.waiter import Nudge
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import OWNER_CLUSTER_LABEL, TOKEN, VALUES_KEY
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.rules import (
    NO_EXPIRY_HINT, prunable_tokens, same_ttl, secret_belongs_to_token, token_metadata, validate_max_ttl, validate_name, validate_run_id, validate_ttl,
)

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml

# Without its values Secret this long, the token is touched (and again as long again) so that Fleet handles it anew.
NUDGE_SECONDS = 20
NUDGED_ANNOTATION = "fleetops.registration/nudged"
GONE_HINT = ("Fleet deletes a token once its ttl has passed (and one without a ttl when the controller requires one: "
             "FLEET_REGISTRATION_TOKEN_TTL_REQUIRED), and a run with prune: true deletes the tokens other runs left for the "
             "cluster: create a new token with a ttl longer than the run, and let one run at a time change a cluster (the "
             "roles' member lock does)")


def check_values_dest(path):
    """Before anything is created: the directory of ``values_dest`` must exist."""
    if path:
        directory = os.path.dirname(os.path.abspath(os.path.expanduser(path)))
        if not os.path.isdir(directory):
            raise ParameterError("values_dest", "directory %s does not exist" % directory, "Create it first or pick another path")


def write_values_file(path, content, check_mode=False):
    """Write ``content`` to ``path`` with mode 0600; return True if the file changed (content or mode)."""
    check_values_dest(path)
    path = os.path.abspath(os.path.expanduser(path))
    directory = os.path.dirname(path)
    if os.path.isfile(path):
        with open(path, "rb") as handle:
            same = handle.read() == content.encode("utf-8")
        mode_ok = (os.stat(path).st_mode & 0o777) == 0o600
        if same and mode_ok:
            return False
        if same and not check_mode:
            os.chmod(path, 0o600)
            return True
    if check_mode:
        return True
    fd, tmp = tempfile.mkstemp(prefix=".values-", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(content)
        os.replace(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


class TokenRunner(Runner):
    """fleet_registration_token."""

    def __init__(self, module):
        super().__init__(module)
        self.name = validate_name(self.params["name"], "name") if self.params.get("name") else None
        self.namespace = validate_name(self.params["namespace"], "namespace")
        self.ttl = validate_ttl(self.params.get("ttl"), max_ttl=validate_max_ttl(self.params.get("max_ttl")))
        self.run_id = validate_run_id(self.params.get("run_id"))
        check_values_dest(self.params.get("values_dest"))
        self.cluster = validate_run_id(self.params.get("cluster"), "cluster")
        if self.params.get("prune_grace") is not None and self.params["prune_grace"] < 0:
            raise ParameterError("prune_grace", "must not be negative", "Give the age in seconds a token of another run must reach")

    def run(self):
        if self.name is None:
            result = {"changed": False, "name": None, "namespace": self.namespace, "token": {}}
        else:
            result = super(TokenRunner, self).run()
        if self.params.get("prune"):
            result["pruned"] = self.prune()
            result["changed"] = result["changed"] or bool(result["pruned"])
        return result

    def report(self, changed, token, before, after):
        status = (token or {}).get("status") or {}
        metadata = (token or {}).get("metadata") or {}
        result = {
            "changed": changed, "name": self.name, "namespace": self.namespace,
            "ttl": ((token or {}).get("spec") or {}).get("ttl"),
            "expires": status.get("expires"),
            "secret_name": status.get("secretName") or None,
            "run_id": (metadata.get("labels") or {}).get("fleetops.registration/run"),
            "token": clean(token) if token else {},
        }
        return self.finish(result, clean(before) if before else {}, clean(after) if after else {})

    # -- present ---------------------------------------------------------------------------------

    def plan(self, current):
        """The token as it should be (pure given the live one)."""
        desired = {"metadata": token_metadata(self.name, self.namespace, current, self.run_id, self.ttl, cluster=self.cluster,
                                              lock=self._lock_reference()), "spec": {}}
        if self.ttl is not None:
            live_ttl = ((current or {}).get("spec") or {}).get("ttl")
            desired["spec"]["ttl"] = live_ttl if current and same_ttl(live_ttl, self.ttl) else self.ttl
        return desired

    def _lock_reference(self):
        """The member lock this run holds while the token lives (``member_lock`` taken for this ``run_id``), recorded on
        the token so that a hub tidy can tell once the run is over (RancherFleet.tidy_hub)."""
        lock = self.params.get("member_lock") or {}
        return lock_reference(lock) if self.run_id and lock.get("holder") == self.run_id else None

    def present(self):
        current = self.kube.get(TOKEN, self.name, self.namespace)
        if current is None and self.ttl is None:
            raise ParameterError("ttl", "a new registration token needs a ttl: without one it never expires", NO_EXPIRY_HINT)
        outcome = ensure_object(self.kube, TOKEN, self.plan(current), check_mode=self.check_mode, warn=self.warn)
        result = self.report(outcome.changed, outcome.after, current, outcome.after)
        if self.check_mode and current is None:
            result["secret_name"] = self.name
            if self.params.get("values_dest"):
                result["values_dest_changed"] = result["changed"] = True
            return result
        try:
            secret, token = self._values_secret(outcome.after)
        except FleetOpsError as exc:
            if current is None and not self.check_mode:
                self._roll_back(exc)
            raise
        result.update(self.report(result["changed"], token, current, outcome.after))
        if secret is None:
            if self.params.get("return_values") or self.params.get("values_dest"):
                raise ParameterError("wait", "Fleet has not written the token's values Secret yet",
                                     "Set wait: true (the default) to wait for it, or run again", changed=result["changed"])
            return result
        return self._deliver(result, secret)

    def _roll_back(self, exc):
        """A token this run created whose values never came: delete it, or say that it could not and how to."""
        if isinstance(exc, LockLost):
            # Another run holds the member now; its prune removes this run's token.
            self.failed_after_change(exc, " (this run created ClusterRegistrationToken %s/%s, left to that run)" % (self.namespace, self.name))
            return
        try:
            self.kube.delete(TOKEN, self.name, self.namespace)
            exc.msg += " (the token this run created was deleted again)"
        except FleetOpsError as failure:
            exc.msg += (" - and the ClusterRegistrationToken %s/%s this run created could NOT be deleted (%s): delete it with "
                        "fleet_registration_token state=absent, or kubectl -n %s delete clusterregistrationtoken %s; a later run "
                        "with prune: true removes it too" % (self.namespace, self.name, failure.msg, self.namespace, self.name))
            self.failed_after_change(exc)

    def _deliver(self, result, secret):
        """Hand the values out as asked (returned, or written 0600), masking the token everywhere else."""
        result["secret_name"] = secret["metadata"]["name"]
        text = unb64(secret["data"][VALUES_KEY], "values")
        try:
            token_value = (load_yaml(text) or {}).get("token")
        except (yaml.YAMLError, AttributeError):
            token_value = None
        if self.params.get("return_values"):
            result["values_yaml"] = text
            if not self.module.no_log:
                self.warn("return_values is set: the result holds the registration token; add no_log: true to this task")
        else:
            self.module.hide(text, token_value, b64(token_value) if token_value else None)
        if self.params.get("values_dest"):
            dest_changed = write_values_file(self.params["values_dest"], text, self.check_mode)
            result["values_dest"] = os.path.abspath(os.path.expanduser(self.params["values_dest"]))
            result["values_dest_changed"] = dest_changed
            result["changed"] = result["changed"] or dest_changed
        return result

    def _values_secret(self, token):
        """Fleet's values Secret for the token (waited for when ``wait``), and the token as last read."""
        state = {"token": token}

        def fetch():
            live = self.kube.get(TOKEN, self.name, self.namespace)
            if live is None:
                raise ParameterError(
                    "ttl", "ClusterRegistrationToken %s/%s is gone: it was deleted while the module waited for its Secret"
                    % (self.namespace, self.name), GONE_HINT)
            state["token"] = live
            name = ((live.get("status") or {}).get("secretName")) or self.name
            secret = self.kube.get(SECRET, name, self.namespace)
            return secret if secret_belongs_to_token(secret, live) else None

        if not self.params.get("wait"):
            return fetch(), state["token"]
        # Fleet goes on with a token once it sees the ServiceAccount it made for it; an event lost then (a watch broken
        # around a hub API server restart) left the token without values. A touch makes Fleet handle the token again.
        nudge = Nudge(self._touch_token, NUDGE_SECONDS, clock=self.module.waiter.clock)

        def fetch_nudging():
            secret = fetch()
            if secret is None and not self.check_mode:
                nudge()
            return secret
        try:
            secret = self.module.waiter.until(
                fetch_nudging, lambda s: s is not None, "the values Secret of ClusterRegistrationToken %s/%s" % (self.namespace, self.name),
                "wait_timeout: Fleet's controller writes the Secret once kube-controller-manager has filled the token's "
                "ServiceAccount Secret; check that fleet-controller (agentmanagement) runs and that nothing (a ResourceQuota on "
                "secrets, say) blocks Secrets in namespace %s, or raise wait_timeout" % self.namespace)
        except WaitTimeout as exc:
            raise WaitTimeout(exc.msg, exc.hint, param="wait_timeout")
        return secret, state["token"]

    def _touch_token(self):
        self.kube.patch(TOKEN, self.name, {"metadata": {"annotations": {NUDGED_ANNOTATION: format_time(utcnow())}}}, self.namespace)

    # -- absent, prune -------------------------------------------------------------------------

    def absent(self):
        current = self.kube.get(TOKEN, self.name, self.namespace)
        changed = False
        if current is not None:
            self.kube.delete(TOKEN, self.name, self.namespace, dry_run=self.check_mode)
            changed = True
            if self.params.get("wait") and not self.check_mode:
                try:
                    self.module.waiter.until(lambda: self.kube.get(TOKEN, self.name, self.namespace), "absent",
                                             "ClusterRegistrationToken %s/%s to be deleted" % (self.namespace, self.name))
                except FleetOpsError as exc:
                    raise self.failed_after_change(exc, " (its deletion was requested and is still pending)")
        result = self.report(changed, None, current, None)
        dest = self.params.get("values_dest")
        if dest:
            path = os.path.abspath(os.path.expanduser(dest))
            result["values_dest"] = path
            if os.path.exists(path):
                if not self.check_mode:
                    os.unlink(path)
                result["values_dest_changed"] = True
                result["changed"] = True
        return result

    def prune(self):
        """Delete this collection's tokens in the namespace that expired or that another run left: ``[{name, reason}]``."""
        selector = "%s=%s" % (MANAGED_BY_LABEL, MANAGED_BY)
        if self.cluster:
            selector += ",%s=%s" % (OWNER_CLUSTER_LABEL, self.cluster)
        tokens = self.kube.list(TOKEN, self.namespace, label_selector=selector)
        keep = self.name if self.params["state"] == "present" else None
        pruned = []
        for name, reason in prunable_tokens(tokens, keep, self.run_id, self.params.get("prune_grace")):
            self.kube.delete(TOKEN, name, self.namespace, dry_run=self.check_mode)
            pruned.append({"name": name, "reason": reason})
        return pruned
