# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent Deployment rolled out again where it does not serve, whatever Helm thinks of the release.

Neither agent chart sets ``replicas``, so a Helm upgrade leaves an agent scaled to 0 at 0, and a release that Helm
finds unchanged leaves a frozen or stuck agent as it is. ``repair_plan`` (pure) says what rolls the agent out again:
its replica restored, or a rollout restart (what ``kubectl rollout restart`` does: a new pod template annotation);
the agent modules apply it and then wait for the rollout and for a contact with the hub made after it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, Optional, Tuple

from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import ROLLOUT_FIX, rollout_problem
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import DEPLOYMENT
from ansible_collections.fleetops.registration.plugins.module_utils.silence import available_since, unheard_since_start
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, parse_time, utcnow

RESTARTED_ANNOTATION = "kubectl.kubernetes.io/restartedAt"
# Where a restart rolls out new pods that can come up; an image that cannot be pulled stays so after it (the wait
# that follows fails naming it).
STUCK_PREFIX = "the agent Deployment has no available replica"
# An agent that has had no available replica for less than this is starting (just installed, or rolled out by an
# earlier step or run that did not wait), not stuck: a restart would only start it over.
STARTING_SECONDS = 90


def restart_patch(now=None) -> Dict[str, Any]:
    """The merge patch of a rollout restart."""
    stamp = format_time(now or utcnow())
    return {"spec": {"template": {"metadata": {"annotations": {RESTARTED_ANNOTATION: stamp}}}}}


def stuck(deployment: Optional[Dict[str, Any]], now=None) -> bool:
    """The rollout stopped: the Deployment's progress deadline passed, or no replica has been available for longer
    than an agent takes to start (the Available condition's last transition)."""
    conditions = ((deployment or {}).get("status") or {}).get("conditions") or []
    if any(c.get("type") == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded" for c in conditions):
        return True
    if not (rollout_problem(deployment) or "").startswith(STUCK_PREFIX):
        return False
    available = next((c for c in conditions if c.get("type") == "Available"), {})
    since = parse_time(available.get("lastTransitionTime"))
    return since is not None and ((now or utcnow()) - since).total_seconds() > STARTING_SECONDS


def repair_plan(deployment: Optional[Dict[str, Any]], silent: Optional[str] = None, rolling: bool = False,
                now=None) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """``(merge patch, why)`` that rolls the agent Deployment out again, or ``(None, None)``.

    ``silent``: why the hub says the agent stopped reporting (its process may run but do nothing); ``rolling``: this
    run already rolls new pods out (a Helm upgrade, a new token), which a restart would only repeat. A Deployment
    scaled to 0 gets its one replica back in any case (the charts set none; nothing else would)."""
    if not deployment or ((deployment.get("metadata") or {}).get("deletionTimestamp")):
        return None, None
    if (deployment.get("spec") or {}).get("replicas", 1) == 0:
        return {"spec": {"replicas": 1}}, "the agent Deployment was scaled to 0 replicas: its replica was restored"
    if rolling:
        return None, None
    if silent:
        return restart_patch(now), "the agent was restarted (rollout restart): %s" % silent
    if stuck(deployment, now):
        return restart_patch(now), "the agent was restarted (rollout restart): %s" % rollout_problem(deployment)
    return None, None


def repair_agent(member, namespace: str, name: str, silent: Optional[str] = None, rolling: bool = False,
                 dry_run: bool = False, last_contact: Optional[str] = None) -> Optional[str]:
    """Apply ``repair_plan`` to the agent Deployment ``namespace/name`` on the ``member`` (a KubeClient); return why, or None
    when it needed nothing (a server-side dry run in check mode). ``last_contact``: the hub's record of the agent's
    last contact; one older than the agent that runs now is silence too (silence.unheard_since_start)."""
    deployment = member.get(DEPLOYMENT, name, namespace)
    silent = silent or unheard_since_start(last_contact, available_since(deployment))
    patch, why = repair_plan(deployment, silent, rolling)
    if patch is None:
        return None
    member.patch(DEPLOYMENT, name, patch, namespace, dry_run=dry_run)
    return why


def needs_rollout(problem: Optional[str]) -> bool:
    """Whether ``diagnosis.rollout_problem``'s word on the agent Deployment calls for the agent step (which repairs it
    with ``repair_plan``): scaled to 0, or no replica available. A rollout still under way is left to finish."""
    return bool(problem) and problem.startswith(("the agent Deployment is scaled to 0", STUCK_PREFIX))


def rollout_fix(problem: Optional[str], namespace: Optional[str]) -> str:
    """What a re-run does about an agent that does not serve (``needs_rollout``), and what is left to the operator."""
    key = "the agent Deployment is scaled to 0" if (problem or "").startswith("the agent Deployment is scaled to 0") else None
    return ROLLOUT_FIX[key] % (namespace or "<agent namespace>")
