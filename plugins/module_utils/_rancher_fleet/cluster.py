# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_cluster and fleet_cluster_info: a predefined (agent-initiated) or imported (manager-initiated) Cluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings
from ansible_collections.fleetops.registration.plugins.module_utils import hub_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils.batch import ITEMS, run_batch
from ansible_collections.fleetops.registration.plugins.module_utils.cluster_identity import identity_annotations
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import CONFIG_MAP, DEPLOYMENT, NAMESPACE, SECRET, clean, ensure_object
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import kubeconfig_secrets, load_kubeconfig
from ansible_collections.fleetops.registration.plugins.module_utils.labels import (
    MANAGED_BY, MANAGED_BY_LABEL, label_changes, normalize_labels,
)
from ansible_collections.fleetops.registration.plugins.module_utils.module import Runner
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import b64, load_yaml, validate_dns_subdomain
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_DEPLOYMENT, AGENT_NAMESPACE, API_SERVER_CA_KEY, API_SERVER_URL_KEY, API_VERSION, CLUSTER, FLEET_CONFIG_MAP, KUBECONFIG_KEY,
    MANAGE_AGENT_WARNING, OWNER_CLUSTER_LABEL, REGISTRATION,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_env, cluster_namespace, workloads
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_settings import (
    PREVIOUS_FIELDS_ANNOTATION, change_record, env_secret, fields_setting, fleet_setting, recorded_fields, spec_update,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.rules import (
    choose_client_id, desired_cluster, dump_yaml, manage_agent_disabled, portable_kubeconfig, validate_client_id, validate_name,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.views import checked_in, cluster_summary, registration_summary

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml


def run_fleet_cluster(module):
    """fleet_cluster: one Cluster, or each of ``clusters`` over one list of the namespace's Clusters."""
    if module.params.get(ITEMS) is None:
        return ClusterRunner(module).run()
    namespace = validate_name(module.params["namespace"], "namespace")

    def prefetch(kube):
        kube.read_all(CLUSTER, namespace)
        kube.read_all(NAMESPACE, label_selector=cluster_namespace.MANAGED_SELECTOR, forbidden_ok=True)
    return run_batch(module, ClusterRunner, prefetch, check_items=_client_ids_once)


def _client_ids_once(items):
    """Items run side by side, so two that ask for one client ID are refused before either runs."""
    seen = {}
    for index, item in enumerate(items):
        client_id = item.get("client_id")
        if client_id and client_id in seen:
            raise ParameterError("clusters[%d].client_id" % index, "is also given to %s" % seen[client_id],
                                 "Give each cluster its own client ID (or leave it unset to generate one)")
        seen.setdefault(client_id, item["name"])


def _without_record(cluster):
    """The Cluster for a diff: the record of its previous agent fields left out (it may hold an old proxy password)."""
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    if PREVIOUS_FIELDS_ANNOTATION not in annotations:
        return cluster
    annotations = dict((k, v) for k, v in annotations.items() if k != PREVIOUS_FIELDS_ANNOTATION)
    return dict(cluster, metadata=dict(cluster["metadata"], annotations=annotations))


class ClusterRunner(Runner):
    """fleet_cluster: plan (the desired Cluster and Secret) -> apply -> report."""

    def __init__(self, module, params=None):
        super().__init__(module, params)
        self.name = validate_name(self.params["name"], "name")
        self.namespace = validate_name(self.params["namespace"], "namespace")
        if self.params.get("kubeconfig_secret"):
            validate_dns_subdomain(self.params["kubeconfig_secret"], "kubeconfig_secret")
        setting = agent_settings.validate(self.params.get("agent"))
        module.hide(*agent_settings.credential_values(setting))
        self.setting = fleet_setting(setting)[0]
        self.env = env_secret(setting)

    def present(self):
        return self.report(self.apply(self.plan()))

    # -- plan ------------------------------------------------------------------------------------

    def _kubeconfig_text(self):
        """The portable kubeconfig the Secret should hold, or None when none was given."""
        source = self.params.get("cluster_kubeconfig")
        content = self.params.get("cluster_kubeconfig_content")
        if source is None and content is None:
            return None
        if content is not None:
            param = "cluster_kubeconfig_content"
            try:
                config = load_yaml(content)
            except yaml.YAMLError:
                raise ParameterError(param, "is not valid YAML", "Give the text of a kubeconfig file")
            if not isinstance(config, dict):
                raise ParameterError(param, "is not a kubeconfig", "Give the text of a kubeconfig file")
            base_dir = os.getcwd()
        else:
            param = "cluster_kubeconfig"
            if isinstance(source, str) and source.strip().startswith("apiVersion"):
                raise ParameterError(param, "looks like kubeconfig text, not a path", "Pass kubeconfig text as cluster_kubeconfig_content")
            config, base_dir = load_kubeconfig(source, param=param)
        self.module.hide(*kubeconfig_secrets(config))
        doc, warnings = portable_kubeconfig(config, base_dir, self.params.get("cluster_kubeconfig_context"), param)
        self.module.hide(*kubeconfig_secrets(doc))
        for text in warnings:
            self.warn(text)
        return dump_yaml(doc)

    def _secret_desired(self, secret_name, kubeconfig_text):
        data = {KUBECONFIG_KEY: b64(kubeconfig_text)}
        endpoint = hub_endpoint.resolve(self.params)  # only the options: this module's connection is the hub's own
        if endpoint.url:
            data[API_SERVER_URL_KEY] = b64(endpoint.url)
        if endpoint.ca:
            data[API_SERVER_CA_KEY] = b64(endpoint.ca)
        return {
            "metadata": {"name": secret_name, "namespace": self.namespace,
                         "labels": {MANAGED_BY_LABEL: MANAGED_BY, OWNER_CLUSTER_LABEL: self.name}},
            "data": data,
        }

    def _check_client_id_free(self, client_id):
        # A batch's ListedReads scans its one list without copying it for each new Cluster (O(N), not O(N^2) copies).
        for other in getattr(self.kube, "scan", self.kube.list)(CLUSTER, self.namespace):
            meta = other.get("metadata") or {}
            if meta.get("name") != self.name and (other.get("spec") or {}).get("clientID") == client_id:
                raise ParameterError("client_id", "is already used by Cluster %s/%s" % (self.namespace, meta.get("name")),
                                     "Give each cluster its own client ID (or leave client_id unset to generate one); "
                                     "two clusters with one ID would share an identity")

    def _check_referenced_secret(self, secret_name):
        existing = self.kube.get(SECRET, secret_name, self.namespace)
        if not existing or not (existing.get("data") or {}).get(KUBECONFIG_KEY):
            raise ParameterError("kubeconfig_secret", "Secret %s/%s %s" % (
                self.namespace, secret_name, "has no 'value' key" if existing else "does not exist"),
                "Create it with the kubeconfig under the key 'value' (the cluster-api format), or give cluster_kubeconfig")

    def _check_secret_is_ours(self, secret_name):
        """Refuse to write the kubeconfig into an existing Secret the collection did not make for this Cluster: the
        name may come from the live Cluster's spec, which anyone who may edit Clusters sets, and the Secret would be
        overwritten and then deleted with the Cluster."""
        existing = self.kube.get(SECRET, secret_name, self.namespace)
        if existing is not None and self._owned(existing) is None:
            labels = "%s=%s and %s=%s" % (MANAGED_BY_LABEL, MANAGED_BY, OWNER_CLUSTER_LABEL, self.name)
            raise ParameterError(
                "kubeconfig_secret", "Secret %s/%s exists but was not made by this collection for Cluster %s (it lacks the "
                "labels %s), so it is not overwritten" % (self.namespace, secret_name, self.name, labels),
                "Give kubeconfig_secret a name of its own for this Cluster, or, to refer to that Secret as it is, give "
                "kubeconfig_secret without cluster_kubeconfig")

    def plan(self):
        """Everything the run will make, checked before anything is changed."""
        labels = normalize_labels(self.params["labels"], "labels") if self.params.get("labels") is not None else None
        hub_endpoint.resolve(self.params)  # a bad URL or CA fails before any request
        kubeconfig_text = self._kubeconfig_text()
        if (self.params.get(hub_endpoint.URL) or self.params.get(hub_endpoint.CA)) and kubeconfig_text is None:
            raise ParameterError(hub_endpoint.URL, "only applies to a manager-initiated cluster",
                                 "Give cluster_kubeconfig or cluster_kubeconfig_content too, or drop %s/%s" % (hub_endpoint.URL, hub_endpoint.CA))
        if self.params.get("client_id") is not None:
            validate_client_id(self.params["client_id"])
        current = self.kube.get(CLUSTER, self.name, self.namespace)
        current_spec = (current or {}).get("spec") or {}
        client_id, generated = choose_client_id(self.params.get("client_id"), current)
        if client_id != current_spec.get("clientID"):
            self._check_client_id_free(client_id)
        secret_name = self.params.get("kubeconfig_secret")
        if kubeconfig_text is not None and not secret_name:
            secret_name = current_spec.get("kubeConfigSecret") or "%s-kubeconfig" % self.name
        secret = self._secret_desired(secret_name, kubeconfig_text) if kubeconfig_text is not None else None
        if secret is not None:
            self._check_secret_is_ours(secret_name)
        elif secret_name:
            self._check_referenced_secret(secret_name)
        desired, result_labels = desired_cluster(self.name, self.namespace, current, client_id, labels,
                                                 self.params.get("labels_mode"), secret_name,
                                                 identity_annotations(self.params.get("cluster_identity")))
        desired["spec"].update(spec_update(self.setting, current_spec))
        record = change_record(self.setting, current_spec) if current is not None else None
        if record is not None:
            # What the change replaces, for a rollback (fleet_agent rollback_to_revision on an agent Fleet manages).
            self.module.hide(*agent_settings.credential_values(fields_setting(recorded_fields(record))))
            desired["metadata"].setdefault("annotations", {})[PREVIOUS_FIELDS_ANNOTATION] = record
        return {"current": current, "desired": desired, "secret": secret, "secret_name": secret_name, "client_id": client_id,
                "member_kubeconfig": load_yaml(kubeconfig_text) if kubeconfig_text is not None else None,
                "generated": generated, "labels": labels, "result_labels": result_labels}

    # -- apply -------------------------------------------------------------------------------------

    def _write_member_env(self, member_kubeconfig):
        """Manager-initiated registration: Fleet deploys the agent itself, from the Cluster, so the Secret the agent's
        environment is read from is written on the member, through the kubeconfig given, before the Cluster names it
        (agent_env): the reasons."""
        if not self.env or member_kubeconfig is None:
            return []
        member = self.module.kube("cluster_", params={"cluster_kubeconfig": member_kubeconfig})
        try:
            if member.get(NAMESPACE, AGENT_NAMESPACE) is None:
                if self.check_mode:
                    return ["the agent's environment Secret %s/%s was written (predicted)" % (AGENT_NAMESPACE, self.env[0])]
                member.create(NAMESPACE, {"metadata": {"name": AGENT_NAMESPACE, "labels": {MANAGED_BY_LABEL: MANAGED_BY}}})
            return agent_env.write(member, AGENT_NAMESPACE, self.env, member.get(DEPLOYMENT, AGENT_DEPLOYMENT, AGENT_NAMESPACE),
                                   self.check_mode)
        except FleetOpsError as exc:
            exc.msg += (" (agent.env: its values go into a Secret on the member, written through cluster_kubeconfig, so the "
                        "member's API server must be reachable from where the task runs as that kubeconfig says; nothing was "
                        "changed on the hub)")
            raise

    def apply(self, plan):
        plan["agent_env"] = self._write_member_env(plan["member_kubeconfig"])
        secret_outcome = None
        if plan["secret"] is not None:
            secret_outcome = ensure_object(self.kube, SECRET, plan["secret"], check_mode=self.check_mode, hide_data=True,
                                           warn=self.warn)
        try:
            outcome = ensure_object(self.kube, CLUSTER, plan["desired"], check_mode=self.check_mode, warn=self.warn)
        except FleetOpsError as exc:
            if secret_outcome is not None and secret_outcome.before is None and not self.check_mode:
                self.kube.delete(SECRET, plan["secret_name"], self.namespace)
                exc.msg += " (the kubeconfig Secret this run created was deleted again)"
            elif secret_outcome is not None and secret_outcome.changed and not self.check_mode:
                raise self.failed_after_change(
                    exc, " (the kubeconfig Secret %s/%s was updated before the failure)" % (self.namespace, plan["secret_name"]))
            raise
        plan["changed"] = outcome.changed or bool(secret_outcome and secret_outcome.changed) or bool(plan["agent_env"])
        plan["outcome"], plan["secret_outcome"] = outcome, secret_outcome
        if secret_outcome is not None and not self.check_mode:
            plan["changed"] = self._own_secret(plan["secret_name"], outcome.after) or plan["changed"]
        plan["cluster"] = outcome.after
        plan["namespace_repair"] = self._settle_cluster_namespace(outcome.after, plan["changed"])
        plan["changed"] = plan["changed"] or bool(plan["namespace_repair"] and plan["namespace_repair"]["repaired"])
        import_blocked = bool(plan["secret_name"]) and self._import_blocked()
        if import_blocked:
            self.warn(MANAGE_AGENT_WARNING % AGENT_NAMESPACE)
        if self.params.get("wait") and not self.check_mode:
            plan["cluster"] = self._wait_for_checkin(import_blocked, plan["changed"])
        return plan

    def _settle_cluster_namespace(self, cluster, changed):
        """Fleet's namespace for the Cluster, waited for and re-created when an earlier Cluster's is in the way."""
        try:
            return cluster_namespace.NamespaceRepair(self, self.namespace, self.name).run(cluster)
        except FleetOpsError as exc:
            if changed:
                raise self.failed_after_change(exc)
            raise

    def _wait_for_checkin(self, import_blocked, changed):
        try:
            return self.module.waiter.until(
                lambda: self.kube.get(CLUSTER, self.name, self.namespace), checked_in,
                "the agent of Cluster %s/%s to check in" % (self.namespace, self.name),
                (MANAGE_AGENT_WARNING % AGENT_NAMESPACE) if import_blocked else
                "wait_timeout: install the agent (fleet_agent) with this client ID, or for an imported cluster check that "
                "Fleet's controller can reach the cluster through the kubeconfig Secret")
        except FleetOpsError as exc:
            if changed:
                raise self.failed_after_change(exc, " (Cluster %s/%s was created or updated before the wait)" % (self.namespace, self.name))
            raise

    def _import_blocked(self):
        """Whether the hub's Fleet is configured so that it cannot import (best effort: unreadable means no)."""
        try:
            return bool(manage_agent_disabled(self.kube.get(CONFIG_MAP, FLEET_CONFIG_MAP, AGENT_NAMESPACE)))
        except FleetOpsError:
            return False

    def _own_secret(self, secret_name, cluster):
        """Make the kubeconfig Secret owned by the Cluster, so deleting the Cluster by any means removes it."""
        uid = ((cluster or {}).get("metadata") or {}).get("uid")
        if not uid:
            cluster = self.kube.get(CLUSTER, self.name, self.namespace)
            uid = ((cluster or {}).get("metadata") or {}).get("uid")
        secret = self.kube.get(SECRET, secret_name, self.namespace)
        if not uid or not secret:
            return False
        owners = (secret.get("metadata") or {}).get("ownerReferences") or []
        if any(o.get("uid") == uid for o in owners):
            return False
        owners = [o for o in owners if not (o.get("kind") == "Cluster" and o.get("apiVersion") == API_VERSION)]
        owners.append({"apiVersion": API_VERSION, "kind": "Cluster", "name": self.name, "uid": uid})
        self.kube.patch(SECRET, secret_name, {"metadata": {"ownerReferences": owners}}, self.namespace)
        return True

    # -- report ------------------------------------------------------------------------------------

    def report(self, plan):
        current, secret_outcome = plan["current"], plan["secret_outcome"]
        before_labels = ((current or {}).get("metadata") or {}).get("labels")
        result = {
            "changed": plan["changed"],
            "name": self.name, "namespace": self.namespace,
            "client_id": plan["client_id"], "client_id_generated": plan["generated"],
            "kubeconfig_secret": plan["secret_name"],
            "label_changes": label_changes(before_labels, plan["result_labels"]) if plan["labels"] is not None else label_changes({}, {}),
            "cluster": cluster_summary(plan["cluster"] or {}),
            "cluster_namespace_repair": plan["namespace_repair"],
            "agent_env_changes": plan["agent_env"],
        }
        before = {"cluster": _without_record(clean(current) if current else {})}
        after = {"cluster": _without_record(plan["outcome"].after or {})}
        if secret_outcome is not None:
            before["kubeconfig_secret"] = secret_outcome.before or {}
            after["kubeconfig_secret"] = secret_outcome.after or {}
        return self.finish(result, before, after)

    # -- absent ------------------------------------------------------------------------------------

    def _owned_secret(self, name):
        return self._owned(self.kube.get(SECRET, name, self.namespace)) if name else None

    def _owned(self, secret):
        """``secret`` when the collection made it for this Cluster (its labels), else None."""
        labels = ((secret or {}).get("metadata") or {}).get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(OWNER_CLUSTER_LABEL) == self.name:
            return secret
        return None

    def absent(self):
        current = self.kube.get(CLUSTER, self.name, self.namespace)
        spec = (current or {}).get("spec") or {}
        secret_name = spec.get("kubeConfigSecret") or self.params.get("kubeconfig_secret") or "%s-kubeconfig" % self.name
        secret = self._owned_secret(secret_name)
        registrations = []
        if current is not None and spec.get("clientID"):
            registrations = [r for r in self.kube.list(REGISTRATION, self.namespace)
                             if (r.get("spec") or {}).get("clientID") == spec["clientID"]]
        changed = current is not None or secret is not None
        placed = workloads.bundle_deployments(self.kube, ((current or {}).get("status") or {}).get("namespace"), self.name)
        if current is not None:
            self.kube.delete(CLUSTER, self.name, self.namespace, dry_run=self.check_mode)
        if not self.check_mode:
            # Fleet leaves ClusterRegistrations of a removed cluster behind (fleet#1651).
            for reg in registrations:
                self.kube.delete(REGISTRATION, reg["metadata"]["name"], self.namespace)
        if secret is not None:
            self.kube.delete(SECRET, secret_name, self.namespace, dry_run=self.check_mode)
        namespaces_waited = []
        if self.params.get("wait") and not self.check_mode:
            if current is not None:
                self._wait_gone()
            namespaces_waited = self._wait_cluster_namespaces_gone(current, changed)
        result = {
            "changed": changed, "name": self.name, "namespace": self.namespace,
            "client_id": spec.get("clientID"),
            "kubeconfig_secret": secret_name if secret is not None else None,
            "removed_registrations": sorted(r["metadata"]["name"] for r in registrations),
            "removed_cluster_namespaces": namespaces_waited,
            "bundle_deployments": placed,
            "cluster": {},
        }
        before = {"cluster": clean(current) if current else {}}
        if secret is not None:
            before["kubeconfig_secret"] = clean(secret, hide_data=True)
        return self.finish(result, before, {})

    def _wait_cluster_namespaces_gone(self, deleted, changed):
        """Also when the Cluster was gone already: a re-run of a leave that timed out here waits again."""
        try:
            return cluster_namespace.wait_gone(self, self.kube, self.namespace, self.name, cluster_namespace.expected_namespace(deleted))
        except FleetOpsError as exc:
            raise self.failed_after_change(
                exc, " (Cluster %s/%s is deleted; a join under this name before its namespace is gone would not be granted, and a "
                     "re-run of the leave waits again)" % (self.namespace, self.name), changed)

    def _wait_gone(self):
        try:
            self.module.waiter.until(lambda: self.kube.get(CLUSTER, self.name, self.namespace), "absent",
                                     "Cluster %s/%s to be deleted" % (self.namespace, self.name),
                                     "wait_timeout: Fleet's controller removes its finalizer once it has cleaned up; check that it runs")
        except FleetOpsError as exc:
            raise self.failed_after_change(exc, " (its deletion was requested and is still pending)")


class ClusterInfoRunner(Runner):
    """fleet_cluster_info: read-only view of Clusters (and their registrations)."""

    def __init__(self, module):
        super().__init__(module)
        if self.params.get("name") and not self.params.get("namespace"):
            raise ParameterError("namespace", "is required with name", "Give the Cluster's namespace (e.g. fleet-default)")

    def run(self):
        name = self.params.get("name")
        namespace = self.params.get("namespace")
        if name:
            obj = self.kube.get(CLUSTER, name, namespace)
            items = [obj] if obj else []
        else:
            items = self.kube.list(CLUSTER, namespace, label_selector=self.params.get("label_selector"))
        items.sort(key=lambda o: (o["metadata"].get("namespace"), o["metadata"]["name"]))
        clusters = [cluster_summary(o) for o in items]
        if self.params.get("include_registrations"):
            regs = {}
            for ns in sorted(set(c["namespace"] for c in clusters)):
                for reg in self.kube.list(REGISTRATION, ns):
                    summary = registration_summary(reg)
                    regs.setdefault((ns, summary["client_id"]), []).append(summary)
            for item in clusters:
                item["registrations"] = sorted(regs.get((item["namespace"], item["client_id"]), []), key=lambda r: r["created"] or "")
        return {"changed": False, "clusters": clusters}
