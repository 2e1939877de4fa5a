# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_agent: the fleet-agent Helm release on a member, from a token's values: plan -> preflight -> apply -> report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

from ansible_collections.fleetops.registration.plugins.module_utils import hub_endpoint, placement_guard
from ansible_collections.fleetops.registration.plugins.module_utils.agent_flow import AgentFlow, LeaseReleasingPoll
from ansible_collections.fleetops.registration.plugins.module_utils.agent_repair import repair_agent
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ConnectionFailure, FleetOpsError, LockLost, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.files import write_private_file
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ChartSource, ReleasePlan, release_view
from ansible_collections.fleetops.registration.plugins.module_utils.helm_records import guarded_uninstall
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import DEPLOYMENT, NAMESPACE, SECRET
from ansible_collections.fleetops.registration.plugins.module_utils.labels import MANAGED_BY, MANAGED_BY_LABEL
from ansible_collections.fleetops.registration.plugins.module_utils.module import Runner, values_with_secrets
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import b64, unb64
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import adoption, cluster_namespace, workload_guard
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_rollback import ManagedAgentRollback
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_rotation import (
    REGISTERED, REINSTALLED, CredentialRotation, registers_in_place,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_env
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_settings import chart_values, env_secret, fleet_setting
from ansible_collections.fleetops.registration.plugins.module_utils.silence import judged_silent
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.judge import RULES
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.leave import AgentRemoval
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.member import read_member, release_departed_lease
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.preflight import check_token_object, preflight
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_DEPLOYMENT, AGENT_NAMESPACE, AGENT_RELEASE, API_SERVER_CA_KEY, API_SERVER_URL_KEY, CLUSTER, TOKEN, VALUES_KEY,
    agent_objects,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.rules import (
    build_agent_values, check_release_identity, checked_in_since, parse_values, plan_agent, redact_values,
    secret_belongs_to_token,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.views import cluster_summary, hub_view

CHECKIN_HINT = ("look at the agent's logs on the member (kubectl -n cattle-fleet-system logs -l app=fleet-agent); a wrong "
                "apiServerURL/apiServerCA or an expired token are the usual causes")

IGNORED_SETTING = ("%s: Rancher Fleet keeps no such setting per Cluster, so its agent does not get it (pull secrets: the fleet "
                   "chart's imagePullSecrets on the hub; a priority class: the Cluster's agentSchedulingCustomization)")


def _hub_hint(exc):
    """A hub connection failure naming the options that reach the hub."""
    return ConnectionFailure(exc.msg, "Check hub_kubeconfig, hub_context and hub_host: the hub's API server must be reachable "
                                      "from where the task runs", **exc.details)


def _source(source):
    """Where a value came from, as the result's ``sources`` says it: an option is ``parameter``."""
    return "parameter" if source in (hub_endpoint.URL, hub_endpoint.CA) else source


class AgentRunner(AgentFlow, AgentRemoval, ManagedAgentRollback, CredentialRotation, Runner):
    """fleet_agent."""

    def __init__(self, module):
        super().__init__(module)
        check_release_identity(self.params.get("release_namespace"), self.params.get("release_name"))
        self.namespace = AGENT_NAMESPACE
        self.release = AGENT_RELEASE
        self.predicted = False  # the token's values are a check-mode assumption
        setting = self.agent_setting()
        self.setting, ignored = fleet_setting(setting)
        self.env = env_secret(setting)
        if ignored and self.params.get("state", "present") == "present":
            self.warn(IGNORED_SETTING % ", ".join("agent.%s" % key for key in ignored))

    # -- the hub -----------------------------------------------------------------------------------

    def _hub(self, verb, *args):
        try:
            return getattr(self.module.kube("hub_"), verb)(*args)
        except ConnectionFailure as exc:
            raise _hub_hint(exc)

    def _token_values_from_file(self):
        path = os.path.expanduser(self.params["values_file"])
        if not os.path.isfile(path):
            if self.check_mode:
                return self._assume("values file %s does not exist yet" % path)
            raise ParameterError("values_file", "%s does not exist" % path,
                                 "Write it with fleet_registration_token's values_dest, or read the values from the hub with token_name")
        with open(path) as handle:
            text = handle.read()
        values = parse_values(text, "values_file")
        self._hide_values(values)
        return values

    def _assume(self, what):
        """Check mode on a fresh target: the token's values do not exist yet; predict with placeholders."""
        self.assume_created_earlier(what)
        self.predicted = True
        return {"token": "predicted", "tokenName": self.params.get("token_name") or "predicted",
                "clusterNamespace": self.params.get("token_namespace")}

    def token_values(self):
        """The registration values (a dict) from values_file or from the token's Secret on the hub."""
        if self.params.get("values_file"):
            return self._token_values_from_file()
        name, namespace = self.params["token_name"], self.params.get("token_namespace")
        if not self.hub_configured:
            raise ParameterError("hub_kubeconfig", "reading token %s/%s needs access to the hub" % (namespace, name),
                                 "Set hub_kubeconfig or hub_context (found in $KUBECONFIG, as kubectl finds it) or hub_host, "
                                 "or give values_file instead")
        token = self._hub("get", TOKEN, name, namespace)
        if token is None and self.check_mode:
            return self._assume("ClusterRegistrationToken %s/%s does not exist on the hub" % (namespace, name))
        check_token_object(token, namespace, name)
        secret = self._hub("get", SECRET, ((token.get("status") or {}).get("secretName")) or name, namespace)
        if not secret_belongs_to_token(secret, token):
            if self.check_mode:
                return self._assume("token %s/%s has no values Secret yet" % (namespace, name))
            raise ParameterError("token_name", "token %s/%s has no values Secret yet" % (namespace, name),
                                 "Run fleet_registration_token with wait: true first, so Fleet has written the Secret")
        text = unb64(secret["data"][VALUES_KEY], "values")
        self.module.hide(text)
        values = parse_values(text, "token_name")
        self._hide_values(values)
        return values

    def _hide_values(self, values):
        """Mask the token of ``values`` everywhere; return the strings Helm must scrub from its messages."""
        token = (values or {}).get("token")
        if not token:
            return []
        self.module.hide(token, b64(token))
        return [token, b64(token)]

    # -- plan --------------------------------------------------------------------------------------

    def desired(self):
        """``(chart values, where apiServerURL/apiServerCA came from)``."""
        token_values = self.token_values()
        extra = values_with_secrets(self.params)
        for key in ("token", "tokenName"):
            if key in extra:
                raise ParameterError("values", "must not set %s" % key, "The registration token comes from token_name or values_file")
        endpoint = hub_endpoint.resolve(self.params, token_values.get(API_SERVER_URL_KEY), token_values.get(API_SERVER_CA_KEY), "token")
        values = chart_values(build_agent_values(token_values, extra, endpoint.url, endpoint.ca, self.params.get("labels"),
                                                 self.params.get("client_id")), self.setting)
        return values, {"api_server_url": _source(endpoint.url_source), "api_server_ca": _source(endpoint.ca_source)}

    def plan(self):
        if not self.params.get("chart_ref"):
            raise ParameterError("chart_ref", "is required with state=present",
                                 "Give a local chart directory or .tgz (e.g. from the rancher/fleet Go module's charts/fleet-agent), "
                                 "an oci:// reference, or fleet-agent with chart_repo_url")
        chart = ChartSource(self.params["chart_ref"], self.params.get("chart_repo_url"), self.params.get("chart_version"))
        values, sources = self.desired()
        chart_name, chart_version = chart.identity()
        facts = read_member(self.module.kube())
        for release in facts["releases"].values():
            self._hide_values(release.get("values"))
        release = facts["release"]
        health = {"deployment": facts["deployment"] is not None, "credential": facts["credential"] is not None,
                  "bootstrap": facts["bootstrap"] is not None}
        plan = plan_agent(release, chart_name, chart_version, values, health)
        if self.predicted and plan.action == ReleasePlan.NONE:
            plan = ReleasePlan(ReleasePlan.UPGRADE, ["values would come from a token that check mode did not create"])
        rotating = bool(self.params.get("rotate_credential")) and registers_in_place(facts, values)
        reinstall = bool(self.params.get("rotate_credential")) and not rotating and \
            bool(facts["release"] or facts["adopted"] or facts["credential"] is not None)
        if reinstall:
            plan = ReleasePlan(ReleasePlan.INSTALL, ["the new registration names another hub or client ID than the agent's"])
        elif plan.changes and facts["adopted"] and facts["deployment"] is not None and rotating:
            plan = ReleasePlan(ReleasePlan.NONE)  # the new token goes into the bootstrap Secret (agent_rotation.py)
        elif plan.changes and facts["adopted"] and facts["deployment"] is not None:
            # Fleet (manageAgent, its default) has adopted the agent as its own release: upgrades are Fleet's job now,
            # and a Helm upgrade of fleet-agent would fight it over the objects' ownership. Only while that agent runs:
            # with its Deployment gone (e.g. fleet-agent uninstalled, which removes the objects both releases name),
            # nothing on the member would ever redeploy it, so fleet-agent is installed again and Fleet adopts it anew.
            self.warn("the agent on this cluster is managed by Fleet (release %s), so fleet-agent was not changed (%s); "
                      "Fleet upgrades its agents itself, and the registration values only matter for a new registration"
                      % (facts["adopted"][0], ", ".join(plan.reasons)))
            plan = ReleasePlan(ReleasePlan.NONE)
        return {"chart": chart, "chart_version": chart_version, "values": values, "sources": sources, "facts": facts,
                "release": release, "plan": plan, "rotating": rotating, "reinstall": reinstall}

    # -- rollback_to_revision (AgentFlow.rollback) -------------------------------------------------

    def run(self):
        if self.params.get("rollback_to_revision") is not None and self.params.get("state") == "present":
            facts = read_member(self.module.kube())
            if facts["adopted"] and facts["deployment"] is not None:
                # Fleet redeploys its agent from the Cluster's agent fields: those are what goes back.
                return self.rollback_managed(facts)
            return self.rollback()
        return super().run()

    def release_location(self):
        return self.release, self.namespace

    def release_objects(self):
        return agent_objects(self.namespace)

    def hide_release_values(self, releases):
        for release in releases:
            self._hide_values((release or {}).get("values"))

    def agent_contact(self, target):
        """``(finder of the agent's Cluster, its last check-in)`` before the rollback (the revision's clientID)."""
        find_cluster = self._agent_cluster_finder(target.get("values") or {})
        previous = find_cluster()
        return find_cluster, parse_time((((previous or {}).get("status") or {}).get("agent") or {}).get("lastSeen"))

    def wait_after_rollback(self, plan, _target, contact):
        cluster, lease = self._wait_for_checkin(contact[0], contact[1] if plan.changes else None, plan)
        return {"cluster": cluster, "released_lease": lease}

    # -- apply -------------------------------------------------------------------------------------

    def present(self):
        state = self.plan()
        removed = self._guard_workloads(state)
        if not state["reinstall"] or self.check_mode:
            return dict(self._present(state), **removed)
        self.remove_for_new_registration(state["facts"])
        try:
            return dict(self._present(dict(self.plan(), reinstalled=True)), **removed)
        except FleetOpsError as exc:
            raise self.changed_before_failure(exc, "uninstalled the agent to install it afresh for the new registration "
                                                   "(a re-run installs it)")

    def _guard_workloads(self, state):
        """Fail before anything changes when the agent would register with a hub that does not place every bundle it
        deployed on the member (workload_guard); ``{"workloads_removed": [...]}`` when allowed to go on. The bundles the
        hub places must have their BundleDeployments for a predefined Cluster before the agent connects."""
        plan, release = state["plan"], state["release"] or {}
        if not self.hub_configured or not workload_guard.registers_anew(
                plan.action if plan.changes else None, release.get("values"), state["values"], state["rotating"], state["reinstall"]):
            return {}
        cluster = self._known_cluster(state["values"])
        namespace = state["values"].get("clusterNamespace") or self.params.get("token_namespace")
        served = workload_guard.served_bundles(self.module.kube())
        unplaced = workload_guard.unplaced(self.module.kube("hub_"), namespace, served, cluster, self.params.get("labels"))
        removed = {}
        if unplaced:
            listed = placement_guard.listing(unplaced)
            if not self.params.get("allow_workload_removal"):
                raise FleetOpsError("the agent would register with the hub at %s, which does not place what it deployed on the "
                                    "member, so it would remove it: %s. Nothing was changed" % (state["values"].get("apiServerURL"), listed),
                                    placement_guard.FIX)
            self.warn("allow_workload_removal: the agent registers with a hub that does not place %s; it removes them" % listed)
            removed = {"workloads_removed": unplaced}
        refused = set(item["name"] for item in unplaced)
        placed = [name for name in served if "%s/%s" % (namespace, name) not in refused]
        if placed and cluster is not None and not self.check_mode:
            self._wait_deployed(cluster, placed)
        return removed

    def _wait_deployed(self, cluster, bundles):
        """Wait until the hub's controller has made a BundleDeployment of each of ``bundles`` for the predefined
        ``cluster``: the agent, once connected, removes the release of a bundle it finds none of."""
        meta, hub = cluster["metadata"], self.module.kube("hub_")
        where = "%s/%s" % (meta.get("namespace"), meta["name"])
        try:
            self.module.waiter.until(lambda: workload_guard.undeployed(hub, hub.get(CLUSTER, meta["name"], meta.get("namespace")), bundles),
                                     lambda missing: not missing,
                                     "the hub to deploy %s to Cluster %s before the agent connects" % (", ".join(bundles), where),
                                     "wait_timeout: look at the hub's fleet-controller (it makes a BundleDeployment per bundle "
                                     "and Cluster), or at the bundles' targets")
        except FleetOpsError as exc:
            exc.msg += ("; still no BundleDeployment of %s, and the agent would remove what it runs of those. Nothing was "
                        "changed" % ", ".join(getattr(exc, "last", None) or bundles))
            raise

    def _present(self, state):
        plan = state["plan"]
        self.check_release_records(plan.action)
        if plan.changes and self.params.get("preflight") and not self.predicted:
            state["hub_user"] = preflight(state["values"], state["sources"],
                                          "values_file" if self.params.get("values_file") else "token_name",
                                          proxy=values_with_secrets(self.params).get("proxy") or None)
        find_cluster = previous = None
        if self.waits_for_agent():
            find_cluster = self._agent_cluster_finder(state["values"])
            previous = find_cluster()
        env = self._write_env_secret()
        if plan.changes and not self.check_mode:
            self.apply(state, previous if find_cluster is not None else self._known_cluster(state["values"]))
        result = self.report(state)
        setting = self.reconcile_agent_setting(self.namespace, AGENT_DEPLOYMENT, self.setting)
        seen = hub_view(previous) if previous else {}
        rolling = plan.changes or setting["patched"] or state["rotating"]  # a rotation replaces the pods
        silent = self.params.get("silent") or (judged_silent(RULES, seen) if previous else None)
        repair = repair_agent(self.module.kube(), self.namespace, AGENT_DEPLOYMENT, silent, rolling, dry_run=self.check_mode,
                              last_contact=seen.get("last_seen"))
        result.update(agent_setting=setting, changed=result["changed"] or setting["patched"] or bool(repair or env), repaired=repair,
                      fleet_spec_installed=bool(state.get("fleet_spec_installed")),
                      reasons=result["reasons"] + env + setting["drift"] + ([repair] if repair else []))
        if state.get("reinstalled"):
            result.update(changed=True, reasons=[REINSTALLED] + result["reasons"])
        if state["rotating"] and not self.check_mode:
            result.update(self.rotate_registration(state, find_cluster), changed=True, reasons=result["reasons"] + [REGISTERED])
        elif state["rotating"]:
            result.update(changed=True, reasons=result["reasons"] + [REGISTERED])
        elif find_cluster is not None:
            # The previous agent's check-in must not count as the new one's (a re-registration would look done).
            seen_before = parse_time((((previous or {}).get("status") or {}).get("agent") or {}).get("lastSeen")) \
                if plan.changes or repair else None
            if repair:
                self._wait_repaired(result["reasons"])
            result["cluster"], result["released_lease"] = self._wait_for_checkin(find_cluster, seen_before, plan)
        return result

    def _wait_repaired(self, reasons):
        try:
            self.wait_rolled_out(self.namespace, AGENT_DEPLOYMENT)
        except FleetOpsError as exc:
            raise self.changed_before_failure(exc, "changed the member (%s)" % "; ".join(reasons))

    def _write_env_secret(self):
        """The Secret the agent's environment is read from, written before Helm (agent_env): the reasons; [] without
        ``agent.env``."""
        if not self.env:
            return []
        kube = self.module.kube()
        if not self.check_mode:
            self._ensure_namespace()
        elif kube.get(NAMESPACE, self.namespace) is None:
            return ["the agent's environment Secret %s/%s was written (predicted)" % (self.namespace, self.env[0])]
        return agent_env.write(kube, self.namespace, self.env, kube.get(DEPLOYMENT, AGENT_DEPLOYMENT, self.namespace), self.check_mode)

    def _uninstall(self, helm):
        guarded_uninstall(self.module.kube(), helm, self.release, self.namespace, self.release_objects())

    def _ensure_namespace(self):
        """cattle-fleet-system, created (and labelled as the collection's) before Helm; a terminating one is waited out."""
        kube = self.module.kube()
        current = kube.get(NAMESPACE, self.namespace)
        if current is not None and (current.get("metadata") or {}).get("deletionTimestamp"):
            self.module.waiter.until(lambda: kube.get(NAMESPACE, self.namespace), "absent",
                                     "namespace %s (being deleted) to go before the agent is installed again" % self.namespace,
                                     "wait_timeout: something keeps namespace %s from being deleted; look at its finalizers" % self.namespace)
            current = None
        if current is None:
            kube.create(NAMESPACE, {"metadata": {"name": self.namespace, "labels": {MANAGED_BY_LABEL: MANAGED_BY}}})

    def apply(self, state, cluster=None):
        helm = self.module.helm(secrets=self._hide_values(state["values"]))
        try:
            self._ensure_namespace()
            helm.upgrade_install(self.release, state["chart"], self.namespace, state["values"], create_namespace=True,
                                 post_renderer=self._adoption_post_renderer(state, cluster, helm))
        except FleetOpsError as exc:
            if state["plan"].action == ReleasePlan.INSTALL and helm.release(self.release, self.namespace):
                # A first install that failed leaves a failed release behind; remove it so a re-run starts clean.
                self._uninstall(helm)
                exc.msg += " (the failed release was uninstalled again)"
            elif state["plan"].action == ReleasePlan.UPGRADE:
                raise self.failed_after_change(exc, " (release %s/%s may have been changed before the failure)" % (self.namespace, self.release))
            raise
        state["release"] = helm.release(self.release, self.namespace)

    def _known_cluster(self, values):
        """The hub's Cluster for the agent's client ID without a wait (for ``adoption``), or None."""
        if not self.hub_configured:
            return None
        try:
            return self._agent_cluster_finder(values)()
        except FleetOpsError:
            return None  # no client ID to tell it by, or no access to the hub's Clusters: the chart's Deployment

    def _adoption_post_renderer(self, state, cluster, helm):
        """Helm's post-renderer giving the agent Deployment the spec Fleet's adoption deploys (``adoption``), when the
        hub's Cluster (predefined, or joined before) has its agent Bundle; else none (the chart's Deployment). Not
        with Helm 4, whose post-renderers are plugins only: the adoption then replaces the pod, as before."""
        if cluster is None or not helm.runs_post_renderer_executables:
            return ()
        spec = adoption.read_spec(self.module.kube("hub_"), cluster, state["values"])
        if spec is None:
            return ()
        self.module.hide(*adoption.cluster_env_values(spec))
        script, spec_file = adoption.post_renderer_files(self.module.tmpdir, spec, write_private_file)
        state["fleet_spec_installed"] = True
        return (sys.executable, script, spec_file, AGENT_DEPLOYMENT)

    def _agent_cluster_finder(self, values):
        """A function returning the hub's Cluster this agent registers as (by client ID), or None."""
        client_id = values.get("clientID")
        if not client_id:
            kube_system = self.module.kube().get(NAMESPACE, "kube-system")
            client_id = ((kube_system or {}).get("metadata") or {}).get("uid")
        namespace = values.get("clusterNamespace")
        if not client_id or not namespace:
            raise ParameterError("wait", "cannot tell which Cluster the agent registers as", "Set client_id, or wait: false")

        def fetch():
            for cluster in self._hub("list", CLUSTER, namespace):
                if (cluster.get("spec") or {}).get("clientID") == client_id:
                    return cluster
            return None

        fetch.description = "the hub to see the agent with client ID %s check in to namespace %s" % (client_id, namespace)
        return fetch

    def _wait_for_checkin(self, fetch, seen_before, plan):
        """``(cluster, released lease holder)`` after a check-in (after a change: newer than the old agent's last one);
        roll a fresh install back if none comes. Fleet replaces the bootstrap agent's pod before it checks in, so the
        departed agent's Lease is released meanwhile."""
        poll = LeaseReleasingPoll(fetch, self._release_departed_lease,
                                  enabled=bool(plan.changes and self.params.get("release_departed_lease", True)))
        try:
            cluster = self.module.waiter.until(poll, lambda c: checked_in_since(c, seen_before), fetch.description,
                                               "wait_timeout: " + CHECKIN_HINT)
        except LockLost as exc:
            if plan.changes:  # the run that holds the member now may have installed this very release: it stays
                raise self.failed_after_change(exc, " (release %s/%s was %s by this step and is left to that run)" % (
                    self.namespace, self.release, "installed" if plan.action == ReleasePlan.INSTALL else "changed"))
            raise
        except FleetOpsError as exc:
            exc.msg += self._namespace_cause(getattr(exc, "last", None))
            if plan.changes:
                raise self.failed_after_change(exc, self._after_failed_checkin(plan))
            raise
        return cluster_summary(cluster), (poll.released[-1] if poll.released else None)

    def _release_departed_lease(self):
        holder = release_departed_lease(self.module.kube(), self.namespace)
        return [holder] if holder else []

    def _namespace_cause(self, cluster):
        """Why Fleet never granted the agent, when it is the Cluster's namespace on the hub (else "")."""
        meta = (cluster or {}).get("metadata") or {}
        if not meta:
            return ""
        try:
            found = cluster_namespace.read_problem(self.module.kube("hub_"), cluster, meta.get("namespace"), meta.get("name"))
        except FleetOpsError:
            return ""
        if found is None:
            return ""
        return ("; Cluster %s/%s is not joinable: %s. Run fleet_cluster for it (it waits for the namespace and makes Fleet "
                "create it), then install the agent again" % (meta.get("namespace"), meta.get("name"), cluster_namespace.describe(found)))

    def _after_failed_checkin(self, plan):
        if plan.action != ReleasePlan.INSTALL:
            return " (release %s/%s was %s and left so; a re-run retries)" % (
                self.namespace, self.release, "rolled back" if plan.action == ReleasePlan.ROLLBACK else "upgraded")
        if self.params.get("keep_failed_install"):
            return " (the release this run installed was kept, as keep_failed_install asks)"
        try:
            self._uninstall(self.module.helm())
        except FleetOpsError as failure:
            return (" (the release this run installed could NOT be uninstalled: %s; remove it with fleet_agent state=absent)"
                    % failure.msg)
        return " (the release this run installed was uninstalled again; keep_failed_install: true keeps it for debugging)"

    # -- report ------------------------------------------------------------------------------------

    def report(self, state):
        plan, live = state["plan"], (state["facts"]["release"] or {}).get("values")
        before = state["facts"]["release"]
        after_release = state["release"] if not (self.check_mode and plan.changes) else dict(
            release_view(before) or {"name": self.release, "namespace": self.namespace},
            chart_version=state["chart_version"], status="deployed (predicted)")
        result = {
            "changed": plan.changes, "action": plan.action, "reasons": plan.reasons,
            "release": release_view(after_release) or {"name": self.release, "namespace": self.namespace},
            "fleet_managed_releases": state["facts"]["adopted"],
            "chart_version": state["chart_version"],
            "chart_values": redact_values(state["values"]),
            "sources": state["sources"],
        }
        if state.get("hub_user") is not None:
            result["preflight_user"] = state["hub_user"]
        diff_before = {"chart_version": before.get("chart_version"), "status": before.get("status"),
                       "values": redact_values(live)} if before else {}
        diff_after = {"chart_version": state["chart_version"] or (before or {}).get("chart_version"),
                      "status": "deployed", "values": redact_values(state["values"], live)}
        return self.finish(result, diff_before, diff_after)
