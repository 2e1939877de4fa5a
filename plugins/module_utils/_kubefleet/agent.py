# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubefleet_member_agent: the member's token Secret and the member-agent Helm release.

``present`` reads both sides, lets ``rules.plan_agent`` decide (pure), applies the plan, waits for the
hub to see the agent, and reports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

from ansible_collections.fleetops.registration.plugins.module_utils.agent_flow import AgentFlow
from ansible_collections.fleetops.registration.plugins.module_utils.errors import (
    ApiError, FleetOpsError, NotFoundError, ParameterError,
)
from ansible_collections.fleetops.registration.plugins.module_utils import leases
from ansible_collections.fleetops.registration.plugins.module_utils.agent_repair import repair_agent
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ChartSource, ReleasePlan
from ansible_collections.fleetops.registration.plugins.module_utils.helm import release_view as public_release
from ansible_collections.fleetops.registration.plugins.module_utils.helm_records import AgentObjects, guarded_uninstall
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import DEPLOYMENT, NAMESPACE, SECRET, clean
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import REDACTED, validate_dns_subdomain
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import contact, hub_access, joining, leave, tokens, workloads
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.agent_settings import with_setting
from ansible_collections.fleetops.registration.plugins.module_utils.silence import judged_silent
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.judge import RULES
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.release_move import ReleaseMove
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import (
    AGENT_LEASE_NAMESPACE, AGENT_LEASES, AGENT_POD_SELECTOR, DEFAULT_HUB_SECRET_NAMESPACE, MEMBER_CLUSTER, TOKEN_REVISION_ANNOTATION,
    chart_fullname, default_service_account, default_token_secret, validate_member_name,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import (
    agent_configuration, agent_values, configuration_drift, desired_hub_secret, desired_namespace, made_by_collection,
    plan_agent, release_plan, release_view, secret_token, service_account_username, token_location, wanted_configuration,
)
from ansible_collections.fleetops.registration.plugins.module_utils.module import Runner, values_with_secrets
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import (
    hub_view, member_agent_heartbeat,
)

HELM_OWNER = "meta.helm.sh/release-name", "meta.helm.sh/release-namespace"


class MemberAgent(AgentFlow, Runner):
    """The member side: the hub token Secret and the member-agent Helm release."""

    def __init__(self, module):
        super().__init__(module)
        p = self.params
        self.name = validate_member_name(p["name"])
        self.release_name = p["release_name"]
        self.release_namespace = p["release_namespace"]
        self.agent_namespace = p["agent_namespace"]
        self.secret_name = p["secret_name"]
        self.secret_namespace = p["secret_namespace"]
        validate_dns_subdomain(self.secret_name, "secret_name")
        if self.release_namespace == self.agent_namespace:
            raise ParameterError("release_namespace", "must differ from agent_namespace (%s)" % self.agent_namespace,
                                 "The member-agent chart creates agent_namespace itself; keep the release record elsewhere (default: %s)"
                                 % DEFAULT_HUB_SECRET_NAMESPACE)
        if self.secret_namespace == self.agent_namespace:
            raise ParameterError("secret_namespace", "must differ from agent_namespace (%s)" % self.agent_namespace,
                                 "The member-agent chart creates agent_namespace itself; keep the token in a namespace of its own "
                                 "(default: %s)" % DEFAULT_HUB_SECRET_NAMESPACE)
        self.sa_name = p["service_account_name"] or default_service_account(self.name)
        self.token_secret_name = p["token_secret_name"] or default_token_secret(self.sa_name)
        self.released_leases = []
        self.setting = self.agent_setting()
        self.records = None

    @property
    def hub(self):
        return self.module.kube("hub_")

    # -- what the agent needs ---------------------------------------------------

    def hub_token(self):
        """``(token, its hub Secret or None)``: the identity's current token, given or read from the hub (waiting until
        it is filled); ``(None, None)`` in check mode before it exists."""
        if self.params["token"]:
            return self.params["token"], None
        if not self.hub_configured:
            raise ParameterError("token", "no token given and no hub connection to read it from",
                                 "Give token, or a hub connection (hub_kubeconfig, hub_context or hub_host) so the token is read from the "
                                 "identity Secret on the hub")
        namespace = self.params["identity_namespace"]
        secret = tokens.current([self.hub.get(SECRET, name, namespace) for name in tokens.slots(self.token_secret_name)])
        name = secret["metadata"]["name"] if secret else self.token_secret_name
        what = "the token of Secret %s/%s on the hub" % (namespace, name)
        if self.check_mode and not secret_token(secret):
            self.assume_created_earlier("the hub has no filled token Secret %s/%s yet" % (namespace, name))
            return None, None
        if secret is None:
            raise ParameterError(
                "name", "the hub has no identity token Secret %s/%s for member %s" % (namespace, name, self.name),
                "Create the identity first with fleetops.registration.kubefleet_member_identity",
            )
        if not secret_token(secret) and self.params["wait"]:
            secret = self.module.waiter.until(lambda: self.hub.get(SECRET, name, namespace), "service_account_token", what)
        token = secret_token(secret)
        if not token:
            raise ApiError("%s is still empty" % what, hint="Run kubefleet_member_identity with wait: true first")
        self.module.hide(token, secret["data"]["token"])
        return token, secret

    def check_member_cluster(self):
        """With hub access: the MemberCluster must exist and not be leaving (else the agent can never join)."""
        if not self.hub_configured:
            return None
        member = self.hub.get(MEMBER_CLUSTER, self.name)
        leaving = leave.deleting_since(member) is not None
        if (member is None or leaving) and self.check_mode:  # the join's MemberCluster step makes it (again)
            self.assume_created_earlier("MemberCluster %s is still leaving" % self.name if leaving else
                                        "the hub has no MemberCluster named %s yet" % self.name)
            return None
        if member is None:
            raise ParameterError("name", "the hub has no MemberCluster named %s" % self.name,
                                 "Create it first with fleetops.registration.kubefleet_member_cluster")
        if leaving:
            raise ApiError("MemberCluster %s is leaving the fleet" % self.name,
                           hint="Wait until it is gone, create it again, then install the agent")
        return member

    def heard_from(self):
        """check_member_cluster's MemberCluster carrying the newest heartbeat the hub keeps of the agent (contact.py):
        the agent is judged silent, and a later heartbeat waited for, by the same record member_info judges by."""
        member_cluster = self.check_member_cluster()  # None without hub access: then no hub client is made
        return contact.newest_contact(self.hub, self.name, member_cluster) if member_cluster is not None else None

    def preflight(self, url, ca, token):
        """Reach the hub at ``url`` with the CA and token the member agent will use; return the identity seen."""
        client = hub_access.agent_client(url, ca, token, self.module.tmpdir, insecure=self.params["hub_insecure_skip_tls_verify"],
                                         proxy=self.params.get("hub_proxy"))
        username = hub_access.preflight(client, url)
        expected = service_account_username(self.params["identity_namespace"], self.sa_name)
        if username and not self.params["token"] and username != expected:
            self.warn("the hub sees the token as %s, expected %s" % (username, expected))
        return username

    def chart(self):
        """The chart and ``(name, version)`` by the core's one chart-version rule; a remote chart needs a pinned version."""
        chart = ChartSource(self.params["chart_ref"], self.params["chart_repo_url"], self.params["chart_version"])
        name, version = chart.identity()
        if not version:
            raise ParameterError("chart_version", "a chart from a repository or OCI registry needs a pinned version",
                                 "Set chart_version; nothing is looked up on the web")
        return chart, name, version

    def values(self, url, ca, chart):
        p = self.params
        return with_setting(agent_values(
            self.name, url, ca, agent_namespace=self.agent_namespace, secret_name=self.secret_name,
            secret_namespace=self.secret_namespace, image_repository=p["image_repository"], image_tag=p["image_tag"],
            refresh_token_repository=p["refresh_token_image_repository"], refresh_token_tag=p["refresh_token_image_tag"],
            pull_policy=p["image_pull_policy"], insecure=p["hub_insecure_skip_tls_verify"], log_verbosity=p["log_verbosity"],
            extra=values_with_secrets(p),
        ), self.setting, chart.local_values())

    def _release(self):
        """The release as Helm's storage holds it (no helm process), or None; where it is: ``self.records``."""
        self.records = ReleaseMove(self.kube, self.release_name, self.release_namespace, self.release_objects())
        return self.records.release()

    def _move_records(self):
        """Move the release's records out of the namespace earlier versions kept them in (release_move): the reason,
        or None when there is nothing to move. Check mode only predicts it."""
        if not self.records.pending:
            if not self.check_mode:
                self.records.finish()
            return None
        reason = self.records.describe()
        if not self.check_mode:
            try:
                self.records.apply()
            except FleetOpsError as exc:
                raise self.changed_before_failure(exc, "began to move the release (%s)" % reason)
        return reason

    # -- present ------------------------------------------------------------------

    def present(self):
        url, ca, _insecure = hub_access.agent_endpoint(self.params)
        chart, chart_name, chart_version = self.chart()
        member_cluster = self.heard_from()
        previous_heartbeat = member_agent_heartbeat(member_cluster)
        token, source = self.hub_token()
        preflight = None
        if self.params["preflight"] and token is not None:
            preflight = {"hub_url": url, "username": self.preflight(url, ca, token)}
        prior = self._release()
        missing = [ns for ns in dict.fromkeys((self.release_namespace, self.secret_namespace)) if self._settled_namespace(ns) is None]
        self._check_agent_namespace()
        secret = self.kube.get(SECRET, self.secret_name, self.secret_namespace)
        desired_values = self.values(url, ca, chart)
        desired_secret = desired_hub_secret(self.secret_name, self.secret_namespace, token, source) if token else None
        deployment = chart_fullname(self.release_name)
        gone = None
        if prior and self.kube.get(DEPLOYMENT, deployment, self.agent_namespace) is None:
            gone = "%s/%s" % (self.agent_namespace, deployment)
        plan = plan_agent(secret, desired_secret, release_plan(prior, chart_name, chart_version, desired_values, gone),
                          missing, self._moved_token(prior))
        self.check_release_records(plan.release.action)
        if self.records.pending:  # a refused move must find the member as it was: before any namespace is made
            self.records.check()
        for namespace in plan.create_namespaces:
            self.kube.create(NAMESPACE, desired_namespace(namespace), dry_run=self.check_mode)
        moved = self._move_records()
        current = dict(prior, namespace=self.release_namespace) if moved else prior
        secret_after = self._apply_secret(plan, secret, desired_secret)
        release = self._apply_release(plan, token, chart, (chart_name, chart_version), desired_values, current)
        if plan.stale_secret:
            self.kube.delete(SECRET, plan.stale_secret[1], plan.stale_secret[0], dry_run=self.check_mode)
        restarted = bool(plan.restart and not self.check_mode and self._restart_agent(token))
        setting = self.reconcile_agent_setting(self.agent_namespace, chart_fullname(self.release_name), self.setting)
        rolling = plan.release.action == ReleasePlan.UPGRADE or setting["patched"] or restarted
        silent = self.params.get("silent") or (judged_silent(RULES, hub_view(member_cluster)) if member_cluster else None)
        repair = repair_agent(self.kube, self.agent_namespace, chart_fullname(self.release_name), rolling=rolling, silent=silent,
                              dry_run=self.check_mode, last_contact=previous_heartbeat)
        reasons = ([moved] if moved else []) + plan.reasons + setting["drift"] + ([repair] if repair else [])
        changed = plan.changed or setting["patched"] or bool(repair or moved)
        member = None
        if self.waits_for_agent():
            # after any step the agent must serve its current pods: a Helm release left unchanged proves nothing
            self._wait_rolled_out(reasons, changed)
            if restarted:  # the old pod's heartbeats until it was gone were made with the old token
                previous_heartbeat = member_agent_heartbeat(self.heard_from()) or previous_heartbeat
            member, late = joining.wait_joined(self, changed, reasons, previous_heartbeat)
            if late:  # an agent left running that did not join
                changed, repair, reasons = True, late, reasons + [late]
        result = {
            "changed": changed, "agent_setting": setting, "release": public_release(release), "repaired": repair,
            "chart_values": desired_values, "reasons": reasons,
            "chart": {"name": chart_name, "version": chart_version},
            "secret": {"name": self.secret_name, "namespace": self.secret_namespace},
            "removed_secrets": ["%s/%s" % plan.stale_secret] if plan.stale_secret else [],
            "hub_url": url, "preflight": preflight, "agent_restarted": restarted, "member": member,
            "released_leases": self.released_leases,
        }
        before = {"secret": clean(secret, hide_data=True), "release": release_view(prior, (prior or {}).get("values"))}
        after = {"secret": secret_after or {}, "release": release_view(release, desired_values)}
        if plan.token_changed:
            after["secret"] = dict(after["secret"], data={"token": REDACTED + " (changed)"})
        return self.finish(result, before, after)

    def _moved_token(self, prior):
        """``(old, new)`` token locations when the installed release reads a collection-made token elsewhere."""
        old, new = token_location((prior or {}).get("values")), (self.secret_namespace, self.secret_name)
        if old is None or old == new or not made_by_collection(self.kube.get(SECRET, old[1], old[0])):
            return None
        return old, new

    def _apply_secret(self, plan, secret, desired):
        """Write the token Secret as planned (a server-side dry run in check mode); return it for the diff."""
        if plan.secret_action == "predict" or (self.check_mode and self.secret_namespace in plan.create_namespaces):
            # (a server-side dry run cannot write into a namespace that a dry run "created")
            predicted = dict(desired_hub_secret(self.secret_name, self.secret_namespace, "unknown"), apiVersion="v1", kind="Secret")
            return clean(predicted, hide_data=True)
        if plan.secret_action == "create":
            return clean(self.kube.create(SECRET, desired, self.secret_namespace, dry_run=self.check_mode), hide_data=True)
        if plan.secret_action == "update":
            return clean(self.kube.patch(SECRET, self.secret_name, plan.secret_patch, self.secret_namespace,
                                         dry_run=self.check_mode), hide_data=True)
        return clean(secret, hide_data=True)

    def _apply_release(self, plan, token, chart, chart_id, values, prior):
        """Run Helm as planned; in check mode predict the release from the plan (the core's one check-mode strategy)."""
        if plan.release.action == "none":
            return prior
        chart_name, chart_version = chart_id
        if self.check_mode:
            return dict(public_release(prior) or {}, name=self.release_name, namespace=self.release_namespace, chart=chart_name,
                        chart_version=chart_version, status="deployed (predicted)")
        helm = self.module.helm(secrets=[token] if token else [])
        try:
            helm.upgrade_install(self.release_name, chart, self.release_namespace, values, create_namespace=False)
        except FleetOpsError as exc:
            done = ["created namespace %s" % namespace for namespace in plan.create_namespaces] + (
                ["wrote Secret %s/%s" % (self.secret_namespace, self.secret_name)] if plan.secret_action in ("create", "update") else [])
            if done:
                raise self.changed_before_failure(exc, "%s on the member" % " and ".join(done))
            raise
        return self._release()

    # -- rollback_to_revision (AgentFlow.rollback) ------------------------------------

    def run(self):
        if self.params.get("rollback_to_revision") is not None and self.params["state"] == "present":
            return self.rollback()
        if self.params.get("finish_leave") and self.params["state"] == "present":
            return self.finish(leave.finish(self, (chart_fullname(self.release_name), self.agent_namespace)))
        return super().run()

    def release_location(self):
        """Where the release is now: its records may still wait to move (release_move)."""
        if self.records is None:
            self._release()
        return self.release_name, self.records.namespace

    def release_objects(self):
        """What the member-agent chart makes (helm_records.AgentObjects): all Helm may act on."""
        return AgentObjects(self.agent_namespace, (chart_fullname(self.release_name),))

    def check_rollback_target(self, target):
        """A revision is a Secret on the member, which anyone who may write Secrets there can forge: rolling back to
        one whose hub URL, CA, TLS check or token Secret is not what the collection configures would have the agent
        send its token elsewhere, so it is refused."""
        wanted = wanted_configuration(hub_access.agent_endpoint(self.params), self.secret_namespace, self.secret_name, self.name)
        drift = configuration_drift(agent_configuration(target.get("values")), wanted)
        if drift:
            raise ParameterError(
                "rollback_to_revision", "revision %s configures the member agent differently from what the collection gives "
                "it: %s" % (target.get("revision"), "; ".join(drift)),
                "Roll back to a revision this collection installed with the current hub options, or re-run the join, "
                "which installs the agent with them")

    def agent_contact(self, _target):
        return member_agent_heartbeat(self.heard_from())

    def wait_after_rollback(self, plan, _target, heartbeat):
        if plan.changes:
            self._wait_rolled_out(plan.reasons)
        member = joining.wait_joined(self, plan.changes, plan.reasons, heartbeat)[0]
        return {"member": member, "released_leases": self.released_leases}

    def _wait_rolled_out(self, reasons, changed=True):
        try:
            self.wait_rolled_out(self.agent_namespace, chart_fullname(self.release_name))
        except FleetOpsError as exc:
            if changed:
                raise self.changed_before_failure(exc, "changed the member (%s)" % "; ".join(reasons))
            raise

    def _settled_namespace(self, name):
        """The namespace, or None when it does not exist or is being deleted (a previous leave): then, with ``wait``,
        only once it is gone, as nothing can be made in it meanwhile."""
        namespace = self.kube.get(NAMESPACE, name)
        if namespace is None or not (namespace.get("metadata") or {}).get("deletionTimestamp"):
            return namespace
        if self.check_mode and self.params["wait"]:
            self.warn("check mode: namespace %s on the member is still being deleted (a previous leave); "
                      "a real run waits until it is gone" % name)
        elif not self.params["wait"]:
            raise ApiError("namespace %s on the member is still being deleted" % name,
                           hint="Wait until it is gone (a previous leave), then re-run")
        else:
            self.module.waiter.until(lambda: self.kube.get(NAMESPACE, name), "absent",
                                     "namespace %s on the member to finish deleting" % name)
        return None

    def _check_agent_namespace(self):
        """The chart templates agent_namespace; Helm cannot take over one it did not create."""
        namespace = self._settled_namespace(self.agent_namespace)
        if namespace is None:
            return
        metadata = namespace.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        owners = {(self.release_name, self.release_namespace), self.release_location()}  # (a move may have begun)
        if tuple(annotations.get(key) for key in HELM_OWNER) not in owners:
            raise ParameterError(
                "agent_namespace", "namespace %s already exists on the member and is not part of Helm release %s/%s" % (
                    self.agent_namespace, self.release_location()[1], self.release_name),
                "The member-agent chart creates that namespace itself: remove the namespace, or set agent_namespace to an unused name "
                "(an agent installed by join.sh lives in release default/member-agent)",
            )

    def _restart_agent(self, token):
        """The refresh-token sidecar reads the Secret only every few hours: roll the Deployment on a new token.

        The pod template records a fingerprint of the token, so every new token changes it (a fixed value would roll
        the agent on the first rotation only, and a later one would revoke the token the running agent still uses)."""
        revision = hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]
        patch = {"spec": {"template": {"metadata": {"annotations": {TOKEN_REVISION_ANNOTATION: revision}}}}}
        try:
            self.kube.patch(DEPLOYMENT, chart_fullname(self.release_name), patch, self.agent_namespace)
        except NotFoundError:
            return False
        return True

    # -- absent -------------------------------------------------------------------

    def absent(self):
        finished = leave.before_uninstall(self, (chart_fullname(self.release_name), self.agent_namespace)) or {}
        prior = self._release()
        release = public_release(prior)
        applied = workloads.read_applied_works(self.kube)
        secret = self.kube.get(SECRET, self.secret_name, self.secret_namespace)
        moved = self._moved_token(prior)
        keeping = applied if self.params.get("workloads") != "remove" else []
        owned = workloads.release_applied_objects(self.kube, keeping, self.check_mode) if release is not None else []
        if owned:
            self.warn("The credential may not patch %s: they still belong to their AppliedWork, and go with it if the "
                      "agent's chart deletes the AppliedWork CRD. Grant patch on them to keep them" % ", ".join(owned))
        if release is not None and not self.check_mode:
            guarded_uninstall(self.kube, self.module.helm(), self.release_name, self.records.namespace, self.release_objects())
            if self.records.pending:
                self.records.discard_copies()
        if secret is not None:
            self.kube.delete(SECRET, self.secret_name, self.secret_namespace, dry_run=self.check_mode)
        if moved:  # an agent installed before the token had a namespace of its own
            self.kube.delete(SECRET, moved[0][1], moved[0][0], dry_run=self.check_mode)
        removed = self._remove_namespaces()
        going = ([self.agent_namespace] if release is not None else []) + removed
        if going and not self.check_mode and self.params["wait"]:
            try:
                self.module.waiter.until(
                    lambda: [ns for ns in going if self.kube.get(NAMESPACE, ns) is not None] or None, "absent",
                    "namespaces %s on the member to be deleted after the leave" % ", ".join(going),
                    "kube-controller-manager finishes namespace deletion; check for objects with finalizers in them",
                )
            except FleetOpsError as exc:
                raise self.changed_before_failure(exc, "uninstalled release %s/%s" % (self.records.namespace, self.release_name))
        removed_leases = self._remove_agent_leases()
        removing = applied if self.params.get("workloads") == "remove" else []
        try:
            workloads.remove_applied_works(self.kube, self.module.waiter, removing, self.check_mode)
        except FleetOpsError as exc:
            raise self.changed_before_failure(exc, "uninstalled the agent and deleted its AppliedWorks")
        result = {"changed": release is not None or secret is not None or bool(moved or removed or removed_leases or removing)
                  or bool(finished.get("repaired")), "left": finished.get("left"), "repaired": finished.get("repaired"),
                  "release": None, "secret": {"name": self.secret_name, "namespace": self.secret_namespace},
                  "removed_namespaces": removed, "removed_leases": removed_leases,
                  "workloads": {"action": self.params.get("workloads") or "keep",
                                "applied_works": [workloads.work_view(work) for work in applied]}}
        before = {"secret": clean(secret, hide_data=True), "release": release_view(release, None)}
        return self.finish(result, before, {"secret": {}, "release": {}})

    def _remove_agent_leases(self):
        """The agent's leader-election Leases (in kube-system, not in a namespace the leave deletes), once no agent pod is
        left to hold them. Best effort: without RBAC on them they stay, as they did before."""
        try:
            return leases.remove_orphaned(self.kube, AGENT_LEASE_NAMESPACE, AGENT_LEASES, self.agent_namespace,
                                          AGENT_POD_SELECTOR, dry_run=self.check_mode)
        except FleetOpsError as exc:
            self.warn("the agent's leader-election Leases in %s stay: %s" % (AGENT_LEASE_NAMESPACE, exc.msg))
            return []

    def _remove_namespaces(self):
        """The token's namespace and the release record's (unless O(keep_release_namespace)), each when this collection
        made it and it holds no Secret but the token, service account tokens and this release's records."""
        keep = self.params.get("keep_release_namespace")
        candidates = [ns for ns in dict.fromkeys((self.release_namespace, self.secret_namespace))
                      if not (keep and ns == self.release_namespace)]
        removed = []
        for name in candidates:
            namespace = self.kube.get(NAMESPACE, name)
            if not made_by_collection(namespace) or (namespace.get("metadata") or {}).get("deletionTimestamp"):
                continue
            others = [s for s in self.kube.list(SECRET, name) if not self._removable_secret(s, name)]
            if others:
                self.warn("namespace %s stays: it holds other Secrets (%s)" % (
                    name, ", ".join(sorted(s["metadata"]["name"] for s in others)[:5])))
                continue
            self.kube.delete(NAMESPACE, name, dry_run=self.check_mode)
            removed.append(name)
        return removed

    def _removable_secret(self, secret, namespace):
        """Whether ``secret`` goes with the namespace on a leave: the token, a service account token, this release's
        records (the uninstall deletes them; check mode has not run it)."""
        metadata = secret.get("metadata") or {}
        if secret.get("type") == "kubernetes.io/service-account-token":
            return True
        if (namespace, metadata.get("name")) == (self.secret_namespace, self.secret_name):
            return True
        labels = metadata.get("labels") or {}
        return namespace == self.release_namespace and labels.get("owner") == "helm" and labels.get("name") == self.release_name
