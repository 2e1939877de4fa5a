# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A leave that waits on the member agent: KubeFleet's hub agent keeps a deleted MemberCluster (its finalizer) until
the member agent has marked the InternalMemberCluster left, and force-deletes it only after --force-delete-wait-time
(15 minutes by default). A join that finds its MemberCluster so while the agent cannot act (scaled to 0, frozen, backed
off, or its Deployment deleted) would wait that long. kubefleet_member_agent's finish_leave lets the agent acknowledge
it: its Deployment made again from its own Helm release, its replica back at once, a restart once the leave has waited
longer than a running agent needs; the workloads stay (the agent's leave only releases its Works on the hub)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.agent_repair import repair_agent
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, FleetOpsError, ParameterError, WaitTimeout
from ansible_collections.fleetops.registration.plugins.module_utils.helm import read_release_history
from ansible_collections.fleetops.registration.plugins.module_utils.helm_records import check_rollback
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import DEPLOYMENT, SECRET, SERVICE_ACCOUNT, credential_check
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import b64
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time, utcnow
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import hub_access
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import MEMBER_CLUSTER
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import desired_hub_secret, desired_service_account, secret_token

# A running agent acknowledges at the InternalMemberCluster's change, within seconds; one that has not by then won't.
LEAVE_GRACE_SECONDS = 20
FORCE_HINT = ("KubeFleet's hub agent force-deletes it after its --force-delete-wait-time (15 minutes by default); "
              "kubefleet_member_cluster state=absent with force_remove_finalizers: true ends it now")


def deleting_since(member_cluster):
    """When the MemberCluster's deletion began, or None when it is not being deleted (or not there)."""
    return parse_time(((member_cluster or {}).get("metadata") or {}).get("deletionTimestamp"))


def unacknowledged(member_cluster, now=None):
    """Why the agent is restarted for the MemberCluster's leave, or None while the leave is younger than
    LEAVE_GRACE_SECONDS (a running agent is given that long) or there is no leave."""
    since = deleting_since(member_cluster)
    if since is None:
        return None
    waited = ((now or utcnow()) - since).total_seconds()
    if waited < LEAVE_GRACE_SECONDS:
        return None
    return "MemberCluster %s has been leaving for %d s and the member agent has not acknowledged it" % (
        member_cluster["metadata"].get("name"), waited)


# The shortest token the API server issues. The leave's identity step deletes the ServiceAccount, which revokes it.
LENT_TOKEN_SECONDS = 600


def _service_account(member_cluster):
    identity = ((member_cluster or {}).get("spec") or {}).get("identity") or {}
    if identity.get("kind") == "ServiceAccount" and identity.get("name") and identity.get("namespace"):
        return identity["namespace"], identity["name"]
    return None


def _refused(agent):
    """Why the hub refuses the token in the agent's Secret, checked at the endpoint the collection gives the agent
    (``hub_access.agent_endpoint``; the token goes nowhere else), or None: accepted, missing, or not known."""
    token = secret_token(agent.kube.get(SECRET, agent.secret_name, agent.secret_namespace))
    try:
        url, ca, insecure = hub_access.agent_endpoint(agent.params)
    except ParameterError:
        return None
    if not token:
        return None
    agent.module.hide(token, b64(token))
    check = credential_check(hub_access.agent_client(url, ca, token, agent.module.tmpdir, insecure=insecure,
                                                     proxy=agent.params.get("hub_proxy")))
    return "the hub refuses the agent's token (%s)" % check["error"] if check["accepted"] is False else None


def lend_token(agent, member_cluster):
    """Why the agent was given a token to acknowledge the leave with, or None. An agent whose token the hub refuses
    (its identity deleted, the token revoked) can never acknowledge, restarted or not: the ServiceAccount the leaving
    MemberCluster names is made again if it is gone (as kubefleet_member_identity makes it, so the leave's identity
    step deletes it), and a token of it living LENT_TOKEN_SECONDS written into the agent's token Secret; the caller
    restarts the agent. A credential that may not make them (403) leaves the leave to the hub's force-delete."""
    account = _service_account(member_cluster)
    if account is None:
        return None
    gone = agent.hub.get(SERVICE_ACCOUNT, account[1], account[0]) is None
    why = ("the identity the MemberCluster names, ServiceAccount %s/%s, is gone, so the hub refuses the agent's token" % account
           if gone else _refused(agent))
    if why is None:
        return None
    why += "; the agent was given a token of %s/%s for %d minutes to acknowledge the leave" % (account + (LENT_TOKEN_SECONDS // 60,))
    if agent.check_mode:
        return why
    try:
        if gone:
            agent.hub.create(SERVICE_ACCOUNT, desired_service_account(account[1], account[0]), account[0])
        answer = agent.hub.request("POST", SERVICE_ACCOUNT.path(account[0], account[1], "token"), body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": LENT_TOKEN_SECONDS}}) or {}
    except ApiError as exc:
        if exc.status != 403:
            raise
        agent.warn("MemberCluster %s is leaving and %s; the hub credential may not give it another, so it cannot acknowledge "
                   "the leave: %s" % (agent.name, why.split(";")[0], FORCE_HINT))
        return None
    token = (answer.get("status") or {}).get("token")
    if not token:
        raise ApiError("the hub answered the TokenRequest for ServiceAccount %s/%s without a token" % account)
    agent.module.hide(token, b64(token))
    _write_token(agent.kube, agent.secret_name, agent.secret_namespace, token)
    return why


def _write_token(member, name, namespace, token):
    secret = desired_hub_secret(name, namespace, token)
    if member.get(SECRET, name, namespace) is None:
        member.create(SECRET, secret, namespace)
    else:
        member.patch(SECRET, name, {"data": secret["data"]}, namespace)


def finish(agent, deployment, member_cluster=None):
    """Let the member agent acknowledge its MemberCluster's leave, and wait until the hub has let it go: the result
    of kubefleet_member_agent's finish_leave. Nothing is done without a leave."""
    if not agent.hub_configured:
        raise ParameterError("finish_leave", "needs the hub connection", "Set hub_kubeconfig or hub_context")
    member_cluster = member_cluster or agent.hub.get(MEMBER_CLUSTER, agent.name)
    if deleting_since(member_cluster) is None:
        return _result(None, None)
    name, namespace = deployment
    member = agent.kube
    restored = restore_agent(agent, deployment) if member.get(DEPLOYMENT, name, namespace) is None else None
    lent = lend_token(agent, member_cluster)
    repaired = repair_agent(member, namespace, name, silent=lent or unacknowledged(member_cluster), dry_run=agent.check_mode)
    repaired = "; ".join(why for why in (restored, repaired) if why) or None
    if agent.check_mode or not agent.params["wait"]:
        return _result(repaired, None)

    def member_cluster_now():
        return agent.hub.get(MEMBER_CLUSTER, agent.name)

    what = "MemberCluster %s to finish its leave" % agent.name
    if not repaired:
        try:
            agent.module.waiter.within(LEAVE_GRACE_SECONDS).until(member_cluster_now, "absent", what)
            return _result(None, agent.name)
        except WaitTimeout:  # the leave has now waited the grace out
            repaired = repair_agent(member, namespace, name, silent=unacknowledged(member_cluster)
                                    or "the member agent did not acknowledge the leave")
    try:
        agent.module.waiter.until(member_cluster_now, "absent", what, FORCE_HINT)
    except FleetOpsError as exc:
        raise agent.changed_before_failure(exc, "changed the member (%s)" % repaired) if repaired else exc
    return _result(repaired, agent.name)


def restore_agent(agent, deployment):
    """Why the agent's Deployment (``deployment``: name, namespace), deleted while its MemberCluster leaves, was made
    again: Helm's rollback of the agent release to its newest revision applies that revision's manifest again, which
    makes what is missing with the same chart and values. Refused (ApiError, as before there was this repair) when no
    deployed release holds it, when the release would send the token elsewhere than the collection configures, or when
    its record lists objects the agent does not cover (helm_records)."""
    name, namespace = agent.release_location()
    history = read_release_history(agent.kube, name, namespace)
    current = history[max(history)] if history else None
    gone = "MemberCluster %s is leaving, and no member agent (%s/%s) runs to acknowledge it" % (agent.name, deployment[1], deployment[0])
    if current is None or current.get("status") != "deployed":
        raise ApiError("%s, nor a deployed release %s/%s to make it again from" % (gone, namespace, name), hint=FORCE_HINT)
    try:
        agent.check_rollback_target(current)
    except ParameterError as exc:
        raise ApiError("%s, and its release %s/%s is not one to make it again from: %s" % (gone, namespace, name, exc.message()),
                       hint=FORCE_HINT)
    check_rollback(agent.kube, name, namespace, agent.release_objects(), current["revision"])
    why = ("the member agent's Deployment %s/%s was gone; Helm %s it again from release %s/%s revision %s so that it "
           "acknowledges the leave" % (deployment[1], deployment[0], "would make" if agent.check_mode else "made", namespace,
                                       name, current["revision"]))
    if agent.check_mode:
        return why
    agent.module.helm().rollback(name, namespace, current["revision"])
    try:
        agent.wait_rolled_out(deployment[1], deployment[0])
    except FleetOpsError as exc:
        raise agent.changed_before_failure(exc, "changed the member (%s)" % why)
    return why


def before_uninstall(agent, deployment):
    """What an uninstall does first, the hub reachable: a MemberCluster that is leaving is let go (``finish``) while
    its agent still runs, for uninstalled it could never acknowledge the leave; one that is not leaving is warned of.
    None when there is nothing to finish."""
    member_cluster = agent.hub.get(MEMBER_CLUSTER, agent.name) if agent.hub_configured else None
    if member_cluster is None:
        return None
    if deleting_since(member_cluster) is None:
        agent.warn("MemberCluster %s still exists on the hub; without its agent the hub can only force the leave after "
                   "--force-delete-wait-time. Remove it first (kubefleet_member_cluster state=absent)" % agent.name)
        return None
    name, namespace = deployment
    member = agent.kube
    if member.get(DEPLOYMENT, name, namespace) is None:
        agent.warn("MemberCluster %s is leaving, and no member agent (%s/%s) runs to acknowledge it: %s" % (
            agent.name, namespace, name, FORCE_HINT))
        return None
    return finish(agent, deployment, member_cluster)


def _result(repaired, left):
    return {"changed": bool(repaired), "repaired": repaired, "reasons": [repaired] if repaired else [], "left": left}
