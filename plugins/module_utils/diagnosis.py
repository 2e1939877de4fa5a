# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules both managers' tables share, and the presented diagnosis of a member that is not healthy.

The judgement itself is ``findings.py`` (one algorithm) over each manager's rule table (``_kubefleet/judge.py``,
``_rancher_fleet/judge.py``). Here: the shared rows (membership, the credential check made as the agent connects - its
URL, CA and token - and the token's expiry), the helpers the member views use (rollout, pod selector, TLS problem), and
``diagnose``: for a member the findings call unhealthy, the agent's pods and Warning Events read to say why (container
states, scheduling, admission, mounts), each fix ending with what a plain re-run does.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import json

from typing import Any, Callable, Dict, Iterable, List, Optional

from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.findings import Finding, Rule, finding, ordered, problems
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import EVENT, POD
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, parse_time, utcnow

IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable")
CRASH_REASONS = ("CrashLoopBackOff", "RunContainerError", "CreateContainerConfigError", "CreateContainerError")
EVENT_CAUSES = {"FailedCreate": "pod_rejected", "FailedMount": "mount_failed", "FailedScheduling": "unschedulable"}
# The causes read from the agent's pods and events (action none: they say why, the table's findings say what to do).
EXPLAINED_CAUSES = ("image_pull", "unschedulable", "pod_rejected", "mount_failed", "crash_loop", "pending")
RECENT_EVENT_SECONDS = 3600


def explained(cause: str, evidence: str, fix: str) -> Finding:
    """A finding read from the agent's pods or events: it explains why the agent is unhealthy, a re-run does nothing
    about it by itself (the action comes from the findings of the rule table)."""
    if cause not in EXPLAINED_CAUSES + ("not_rolled_out",):
        raise ValueError("not a cause the agent's pods show: %r" % cause)
    return finding(cause, evidence, "none", fix)


def _not_member(kind: str, hub: Optional[Dict[str, Any]], desired: Dict[str, Any]) -> Optional[str]:
    if hub is not None:
        return None
    return "the hub has no %s %s" % (kind, "named %s" % desired["name"] if desired.get("name") else "for the member")


def membership_rules(kind: str, leaving_key: str) -> List[Rule]:
    """The opening rows of both managers' tables: the hub has no ``kind`` object for the member, or is deleting it."""
    return [
        Rule("not_member", "join", lambda hub, member, desired: _not_member(kind, hub, desired), "A re-run of join_cluster.yml joins it."),
        Rule("leaving", "join", lambda view, member, desired: "%s %s is being deleted" % (kind, view.get("name"))
             if view is not None and view.get(leaving_key) else None,
             "A re-run of join_cluster.yml lets the leave finish (where the hub waits on the agent for it, the agent "
             "is given its replica back or restarted), then joins it again."),
    ]


# -- tokens ---------------------------------------------------------------------------------------------------------

def jwt_claims(token: Optional[str]) -> Dict[str, Any]:
    """The payload of a JWT bearer token (``{}`` for a token that is not a JWT).

    Read without verifying the signature: it only tells the user when the token stops working, the hub decides."""
    parts = (token or "").split(".")
    if len(parts) != 3:
        return {}
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)).decode("utf-8"))
    except (ValueError, TypeError, UnicodeDecodeError):
        return {}
    return payload if isinstance(payload, dict) else {}


def token_expiry(token: Optional[str]) -> Optional[str]:
    """The ``exp`` claim of a JWT bearer token as RFC 3339 (None for a token without one, or not a JWT)."""
    try:
        stamp = datetime.datetime.fromtimestamp(int(jwt_claims(token)["exp"]), datetime.timezone.utc)
    except (ValueError, TypeError, KeyError, OverflowError, OSError):
        return None
    return format_time(stamp)


def tls_problem(problem: Optional[str]) -> bool:
    """Whether a connection problem is the server certificate failing verification (a CA that does not match)."""
    lowered = (problem or "").lower()
    return "certificate verify failed" in lowered or "x509" in lowered or "certificate_verify_failed" in lowered


def credential_problem(credential: Dict[str, Any], now: Optional[datetime.datetime] = None) -> Optional[Dict[str, str]]:
    """``{cause, evidence}`` of what the credential check made as the agent connects shows (None: nothing wrong).
    ``credential``: ``{present, accepted, problem, expires, url, where, noun}`` (``where``: the Secret holding it;
    ``noun``: how the evidence names the credential)."""
    if not credential.get("present"):
        return None
    url, problem, noun = credential.get("url") or "the hub", credential.get("problem") or "", credential.get("noun") or "the agent's token"
    expires = parse_time(credential.get("expires"))
    if expires is not None and expires <= (now or utcnow()):
        return {"cause": "token_expired", "evidence": "%s in %s expired at %s" % (noun, credential.get("where"), credential["expires"])}
    if credential.get("accepted") is None and tls_problem(problem):
        return {"cause": "hub_ca_untrusted", "evidence": "the hub CA %s is checked with does not verify the hub's certificate at %s: %s" % (
            noun, url, problem)}
    if credential.get("accepted") is None and problem:
        return {"cause": "hub_unreachable", "evidence": "%s cannot be reached as the agent is configured (checked from the controller): %s"
                % (url, problem)}
    if credential.get("accepted") is False:
        return {"cause": "credential_rejected", "evidence": "the hub rejects %s in %s (%s)" % (noun, credential.get("where"), problem or "401")}
    return None


CA_FIX = ("Give the agent the CA that signed the hub's serving certificate: the hub host's fleetops_ca_file, else the hub "
          "kubeconfig's certificate-authority (a TLS-intercepting proxy between member and hub needs its CA).")
UNREACHABLE_FIX = ("Check the hub URL the agent uses (fleetops_hub_api_server_url), DNS, firewalls and proxy variables on the member; "
                   "then re-run.")


class CredentialRules:
    """The rows of the credential check, shared by both managers' tables: ``read(member)`` gives ``credential_problem``'s
    argument, ``actions`` the action of each cause in this manager, ``reissue`` what its re-run does about a credential."""

    CAUSES = ("token_expired", "hub_ca_untrusted", "hub_unreachable", "credential_rejected")
    reads = "secrets"  # the credential is a Secret on the member

    def __init__(self, read: Callable[[Dict[str, Any]], Dict[str, Any]], actions: Dict[str, str], reissue: str) -> None:
        self.read, self.actions, self.reissue = read, actions, reissue
        self.fixes = {"token_expired": "A re-run issues a new credential (%s)." % reissue, "hub_ca_untrusted": CA_FIX,
                      "hub_unreachable": UNREACHABLE_FIX, "credential_rejected": "A re-run issues a new credential (%s)." % reissue}

    def apply(self, hub, member, desired) -> List[Finding]:
        if not member:
            return []
        found = credential_problem(self.read(member), desired.get("now"))
        if found is None:
            return []
        return [finding(found["cause"], found["evidence"], self.actions[found["cause"]], self.fixes[found["cause"]])]


# -- the agent's pods and their events --------------------------------------------------------------------------------

def _waiting(status: Dict[str, Any]) -> Dict[str, Any]:
    return (status.get("state") or {}).get("waiting") or {}


def _container_finding(pod_name: str, namespace: str, status: Dict[str, Any]) -> Optional[Finding]:
    waiting, name = _waiting(status), status.get("name")
    where = "pod %s/%s container %s" % (namespace, pod_name, name)
    if waiting.get("reason") in IMAGE_PULL_REASONS:
        return explained("image_pull", "%s: %s: %s" % (where, waiting["reason"], waiting.get("message") or status.get("image")),
                         "The member cannot pull %s: mirror it to a registry the member reaches and point the agent there "
                         "(fleetops_agent_values: image repository, imagePullSecrets), or fix the registry's credentials or proxy. "
                         "A re-run reinstalls the agent with the chart's image only when its release needs it." % status.get("image"))
    last = (status.get("lastState") or {}).get("terminated") or {}
    if waiting.get("reason") in CRASH_REASONS or (status.get("restartCount") and last.get("exitCode") and not status.get("ready")):
        return explained("crash_loop", "%s restarted %s times, last exit code %s%s" % (
            where, status.get("restartCount") or 0, last.get("exitCode"), " (%s)" % waiting["reason"] if waiting.get("reason") else ""),
            "Read why it exits: kubectl logs -n %s %s -c %s --previous (a wrong hub URL, CA or token shows there)."
            % (namespace, pod_name, name))
    return None


def _scheduling_finding(pod_name: str, namespace: str, pod: Dict[str, Any]) -> Optional[Finding]:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return explained("unschedulable", "pod %s/%s is not scheduled: %s" % (
                namespace, pod_name, condition.get("message") or condition.get("reason")),
                "Let the agent fit a node: tolerations, node selector or smaller resource requests in the agent's values "
                "(fleetops_agent_values), or free a node.")
    return None


def pod_findings(pods: Iterable[Dict[str, Any]]) -> List[Finding]:
    """Findings from the agent's pods: an image that cannot be pulled, a crash loop, a pod no node takes or runs."""
    found = []
    for pod in pods:
        metadata, status = pod.get("metadata") or {}, pod.get("status") or {}
        if metadata.get("deletionTimestamp"):
            continue
        name, namespace = metadata.get("name"), metadata.get("namespace")
        statuses = status.get("containerStatuses") or []
        found += [item for item in (_container_finding(name, namespace, s) for s in statuses) if item]
        scheduling = _scheduling_finding(name, namespace, pod)
        if scheduling:
            found.append(scheduling)
        elif status.get("phase", "Pending") == "Pending" and not any(_waiting(s).get("reason") in IMAGE_PULL_REASONS for s in statuses):
            found.append(explained("pending", "pod %s/%s is Pending%s" % (
                namespace, name, ": " + "; ".join(_waiting(s).get("reason") or "" for s in statuses) if statuses else " and no node has started it"),
                "Check the member's nodes and the pod's events: kubectl describe pod -n %s %s." % (namespace, name)))
    return found


def event_findings(events: Iterable[Dict[str, Any]], now: Optional[datetime.datetime] = None) -> List[Finding]:
    """Findings from recent Warning Events of the agent's objects (Deployment, ReplicaSets, pods)."""
    found = []
    for event in events:
        cause = EVENT_CAUSES.get(event.get("reason"))
        stamp = parse_time(event.get("lastTimestamp") or event.get("eventTime") or (event.get("metadata") or {}).get("creationTimestamp"))
        if cause is None or (stamp is not None and ((now or utcnow()) - stamp).total_seconds() > RECENT_EVENT_SECONDS):
            continue
        involved = event.get("involvedObject") or {}
        evidence = "%s %s/%s: %s: %s" % (involved.get("kind"), involved.get("namespace"), involved.get("name"), event.get("reason"),
                                         event.get("message"))
        fix = {"pod_rejected": "The member refuses the agent's pods (quota, pod security, admission): let them in, then re-run.",
               "mount_failed": "A volume the agent mounts is missing (its hub credential Secret?): give it back, or register the "
                               "member again.",
               "unschedulable": "Let the agent fit a node: tolerations, node selector or resources in the agent's values "
                                "(fleetops_agent_values)."}[cause]
        found.append(explained(cause, evidence, fix))
    return found


def read_agent_pods(member, namespace: str, selector: str) -> Dict[str, List[Dict[str, Any]]]:
    """``{pods, events, problems}``: the agent's pods and the namespace's Warning Events about the agent's objects
    (``selector``'s pods, and objects named like them). Two LISTs; a read the member's credential may not make is
    reported in ``problems``, not raised."""
    read = {"pods": [], "events": [], "problems": []}
    try:
        read["pods"] = member.list(POD, namespace, label_selector=selector)
    except FleetOpsError as exc:
        read["problems"].append("the agent's pods could not be read: %s" % exc.msg)
    try:
        events = member.list(EVENT, namespace, field_selector="type=Warning")
        names = set((pod.get("metadata") or {}).get("name") for pod in read["pods"])
        prefixes = tuple(sorted(set(name.rsplit("-", 2)[0] for name in names if name)))
        read["events"] = [event for event in events if _about(event, names, prefixes)]
    except FleetOpsError as exc:
        read["problems"].append("the agent's events could not be read: %s" % exc.msg)
    return read


def _about(event: Dict[str, Any], names: set, prefixes: tuple) -> bool:
    name = (event.get("involvedObject") or {}).get("name") or ""
    return name in names or bool(prefixes and name.startswith(prefixes))


def pod_selector(deployment: Optional[Dict[str, Any]]) -> Optional[str]:
    """The label selector string of a Deployment's pods (its ``matchLabels``), or None."""
    labels = (((deployment or {}).get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join("%s=%s" % item for item in sorted(labels.items())) or None


def rollout_problem(deployment: Optional[Dict[str, Any]]) -> Optional[str]:
    """Why the agent Deployment is not serving its current pod template (None when it is; also None when it is
    missing, which the managers' own reasons cover)."""
    if not deployment:
        return None
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    wanted = spec.get("replicas", 1)
    if wanted == 0:
        return "the agent Deployment is scaled to 0 replicas"
    if (status.get("availableReplicas") or 0) < 1:
        return "the agent Deployment has no available replica"
    updated = status.get("updatedReplicas") or 0
    if (status.get("observedGeneration") or 0) < ((deployment.get("metadata") or {}).get("generation") or 0) or updated < wanted or \
            (status.get("replicas") or 0) > updated or status.get("unavailableReplicas"):
        return "the agent Deployment's rollout is not complete (%s of %s replicas updated, %s unavailable)" % (
            updated, wanted, status.get("unavailableReplicas") or 0)
    return None


# What a re-run does about an agent Deployment that does not serve (agent_repair.repair_plan), and what is left to the
# operator: a restart does not make an image pullable or a crashing agent work.
ROLLOUT_FIX = {
    "the agent Deployment is scaled to 0": "A re-run restores its replica (the agent charts set none, so Helm alone would not; "
                                           "kubectl -n %s get deployment shows it).",
    None: "A re-run restarts an agent whose pods are not available (rollout restart) and fails naming the cause when they "
          "still cannot come up; kubectl -n %s get deployment,replicaset,pod on the member shows which pods wait, the other "
          "findings say why.",
}

RERUN = {
    "none": "A plain re-run changes nothing for it (the member's action is none).",
    "relabel": "A plain re-run only updates the member object on the hub (action relabel).",
    "reconfigure": "A plain re-run puts the agent setting on the member object and the agent again (action reconfigure).",
    "rotate": "A plain re-run rotates the agent's credential without the member dropping out (action rotate).",
    "upgrade": "A plain re-run upgrades the agent (action upgrade).",
    "install": "A plain re-run installs the agent again (action install).",
    "reregister": "A plain re-run registers the member again: new credential, agent reinstalled (action reregister).",
    "join": "A plain re-run joins the member (action join).",
}


def diagnose(manager, member, state, now: Optional[datetime.datetime] = None) -> List[Finding]:
    """The presented diagnosis of ``state`` (a manager's judged MemberState): the findings that make it unhealthy, root
    cause first, one per cause; [] for a healthy member. ``member``: a KubeClient of the member - for an unhealthy member
    the agent's pods and Warning Events are read (two LISTs) and what they show is added, to say why. Each fix ends
    with what a plain re-run does (the member's action)."""
    found = problems(state.findings)
    if not found:
        return []
    workload = manager.agent_workload(state.member)
    if workload is not None and member is not None:
        read = read_agent_pods(member, *workload)
        found += pod_findings(read["pods"]) + event_findings(read["events"], now)
        found += [explained("not_rolled_out", problem, "kubectl describe pod -n %s -l %s on the member says more." % workload)
                  for problem in read["problems"]]
    return [dict(item, fix="%s %s" % (item["fix"], RERUN[state.action])) for item in ordered(found)]
