# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why a member is unhealthy: ``[{cause, evidence, fix}]``, the root cause first.

``member_info`` gives an action (``reregister``, ``install``...); the user still has to find out why the agent never
checked in. The findings here come from what both sides show: the agent's pods and their container states, the
Warning Events of the agent's objects, the credential check made as the agent connects (its URL, CA and token), the
token's expiry, and what the hub reports. Each fleet manager adds its own (``FleetManager.findings``); this module
owns the shared rules, their order and the member reads, which run only for a member that is not healthy.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import json

from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import EVENT, POD
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, parse_time, utcnow

Finding = Dict[str, str]

# Root causes first: a wrong CA makes the agent crash-loop too, and the CA is what to fix.
CAUSES = (
    "not_member", "leaving", "agent_missing", "bootstrap_missing", "credential_missing", "token_expired",
    "hub_ca_untrusted", "hub_unreachable", "credential_rejected", "wrong_identity", "image_pull", "unschedulable",
    "pod_rejected", "mount_failed", "crash_loop", "pending", "not_rolled_out", "hub_reports", "never_checked_in", "silent",
)
IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable")
CRASH_REASONS = ("CrashLoopBackOff", "RunContainerError", "CreateContainerConfigError", "CreateContainerError")
EVENT_CAUSES = {"FailedCreate": "pod_rejected", "FailedMount": "mount_failed", "FailedScheduling": "unschedulable"}
RECENT_EVENT_SECONDS = 3600
MAX_EVIDENCE = 400


def finding(cause: str, evidence: str, fix: str) -> Finding:
    if cause not in CAUSES:
        raise ValueError("unknown cause %r" % cause)
    text = " ".join(str(evidence).split())
    return {"cause": cause, "evidence": text if len(text) <= MAX_EVIDENCE else text[:MAX_EVIDENCE] + "...", "fix": fix}


def ordered(findings: Iterable[Finding]) -> List[Finding]:
    """One finding per cause (the first given), root causes first."""
    seen, kept = set(), []
    for item in findings:
        if item["cause"] not in seen:
            seen.add(item["cause"])
            kept.append(item)
    return sorted(kept, key=lambda item: CAUSES.index(item["cause"]))


def membership_findings(hub: Optional[Dict[str, Any]], kind: str, leaving: bool) -> List[Finding]:
    """The opening of both managers' hub findings: the hub has no ``kind`` object for the member, or is deleting it."""
    if hub is None:
        return [finding("not_member", "the hub has no %s for the member" % kind, "A re-run of join_cluster.yml joins it.")]
    if leaving:
        return [finding("leaving", "%s %s is being deleted" % (kind, hub.get("name")),
                        "Wait for the leave to finish (or run leave_cluster.yml), then re-run join_cluster.yml.")]
    return []


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


def credential_findings(credential: Dict[str, Any], now: Optional[datetime.datetime] = None) -> List[Finding]:
    """From the credential check made as the agent connects: ``{present, accepted, problem, expires, url, where,
    rerun}`` (``where``: the Secret holding it; ``rerun``: what a re-run does about a rejected credential)."""
    if not credential.get("present"):
        return []
    url, problem, rerun = credential.get("url") or "the hub", credential.get("problem") or "", credential.get("rerun") or ""
    expires = parse_time(credential.get("expires"))
    if expires is not None and expires <= (now or utcnow()):
        return [finding("token_expired", "the agent's token in %s expired at %s" % (credential.get("where"), credential["expires"]),
                        "A re-run issues a new credential (%s)." % rerun)]
    if credential.get("accepted") is None and tls_problem(problem):
        return [finding("hub_ca_untrusted", "the CA the agent is configured with does not verify %s: %s" % (url, problem),
                        "Give the agent the CA that signed the hub's serving certificate: the hub host's fleetops_ca_file, else "
                        "the hub kubeconfig's certificate-authority (a TLS-intercepting proxy between member and hub needs its CA).")]
    if credential.get("accepted") is None and problem:
        return [finding("hub_unreachable", "%s cannot be reached as the agent is configured (checked from the controller): %s"
                        % (url, problem), "Check the hub URL the agent uses (fleetops_hub_api_server_url), DNS, firewalls and "
                        "proxy variables on the member; then re-run.")]
    if credential.get("accepted") is False:
        return [finding("credential_rejected", "the hub rejects the agent's token in %s: %s" % (credential.get("where"), problem or "401"),
                        "A re-run issues a new credential (%s)." % rerun)]
    return []


# -- the agent's pods and their events --------------------------------------------------------------------------------

def _waiting(status: Dict[str, Any]) -> Dict[str, Any]:
    return (status.get("state") or {}).get("waiting") or {}


def _container_finding(pod_name: str, namespace: str, status: Dict[str, Any]) -> Optional[Finding]:
    waiting, name = _waiting(status), status.get("name")
    where = "pod %s/%s container %s" % (namespace, pod_name, name)
    if waiting.get("reason") in IMAGE_PULL_REASONS:
        return finding("image_pull", "%s: %s: %s" % (where, waiting["reason"], waiting.get("message") or status.get("image")),
                       "The member cannot pull %s: mirror it to a registry the member reaches and point the agent there "
                       "(fleetops_agent_values: image repository, imagePullSecrets), or fix the registry's credentials or proxy. "
                       "A re-run reinstalls the agent with the chart's image only when its release needs it." % status.get("image"))
    last = (status.get("lastState") or {}).get("terminated") or {}
    if waiting.get("reason") in CRASH_REASONS or (status.get("restartCount") and last.get("exitCode") and not status.get("ready")):
        return finding("crash_loop", "%s restarted %s times, last exit code %s%s" % (
            where, status.get("restartCount") or 0, last.get("exitCode"), " (%s)" % waiting["reason"] if waiting.get("reason") else ""),
            "Read why it exits: kubectl logs -n %s %s -c %s --previous (a wrong hub URL, CA or token shows there)."
            % (namespace, pod_name, name))
    return None


def _scheduling_finding(pod_name: str, namespace: str, pod: Dict[str, Any]) -> Optional[Finding]:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return finding("unschedulable", "pod %s/%s is not scheduled: %s" % (
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
            found.append(finding("pending", "pod %s/%s is Pending%s" % (
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
        found.append(finding(cause, evidence, fix))
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


def diagnose(manager, member, state, stale_after: Optional[int] = None, now: Optional[datetime.datetime] = None) -> List[Finding]:
    """The findings for ``state`` (a manager's MemberState), root cause first; [] when the member is healthy and its
    agent runs as it should. ``member``: a KubeClient of the member (its agent's pods are read only here, only when
    something is wrong). The last finding's fix says what a plain re-run does."""
    found = manager.findings(state.name, state.hub, state.member, now, stale_after)
    trouble = manager.agent_trouble(state.member)
    if state.healthy and not found and not trouble:
        return []
    workload = manager.agent_workload(state.member)
    # The pods say why an agent is unhealthy or not rolled out; those of a healthy agent whose member only the hub reports
    # on (e.g. a Fleet Cluster whose own bundles are not ready) are not worth two LISTs.
    if workload is not None and member is not None and (not state.healthy or trouble):
        read = read_agent_pods(member, *workload)
        found += pod_findings(read["pods"]) + event_findings(read["events"], now)
        found += [finding("not_rolled_out", problem, "kubectl describe pod -n %s -l %s on the member says more." % workload)
                  for problem in read["problems"]]
    if trouble:
        found.append(finding("not_rolled_out", trouble, ROLLOUT_FIX.get(trouble.split(" replicas")[0], ROLLOUT_FIX[None]) % (
            workload or ("<agent namespace>",))[0]))
    found = ordered(found)
    return [dict(item, fix="%s %s" % (item["fix"], RERUN[state.action])) for item in found]


def first(findings: Optional[Iterable[Finding]]) -> Optional[Finding]:
    """The first finding, for a table or a summary line (None when there is none)."""
    findings = list(findings or [])
    return findings[0] if findings else None
