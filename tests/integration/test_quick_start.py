"""A team's first hour: the README's quick starts, run on the lab as the README has users run them.

The commands come from README.md itself (the quick starts' one sh block, in its order) and so do the inventories
(filled in with the lab's kubeconfig, contexts, hub URL and local charts), on a hub the collection never prepared:
no ``fleetops-system``, no Fleet workspace namespace. A change that breaks the first hour - a check that fails on a
fresh hub, a re-run that changes something, a leave that takes more than its host - fails here.
"""

import os
import subprocess

import pytest
import yaml
from kubernetes import client

from kube_helpers import ignore_404, read_or_none, wait_for
from modrun import run_module
from readme_inventories import readme_quick_start_commands, readme_quick_starts
from test_playbooks import (  # noqa: F401 pylint: disable=unused-import
    FLEET_NS, IDENTITY_NS, Run, condition, hub, least_privilege_hub, members_restored_on_failure, playbook, playbook_command,
)

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("members_restored_on_failure")]

# What the hub role makes on a hub (hub_prepare): the collection's own namespace and Fleet's workspace.
HUB_ROLE_NAMESPACES = (IDENTITY_NS, FLEET_NS)


@pytest.fixture
def fresh_hub(lab_controllers, hub, tmp_path):
    """The lab hub as the collection never prepared it: every lab member left under its lab name, then the namespaces
    the hub role makes deleted (with what a test before left in them). Afterwards, pass or fail, the hub is prepared
    again (hub_prepare), as the later tests of this worker's lab expect it."""
    lab = lab_controllers
    playbook(lab, "leave_cluster.yml", "-e", "fleetops_leave_all=true", tmp_path=tmp_path)
    core = client.CoreV1Api(lab.api_client("hub"))
    for name in HUB_ROLE_NAMESPACES:
        ignore_404(lambda n=name: core.delete_namespace(n))
    for name in HUB_ROLE_NAMESPACES:
        wait_for(lambda n=name: hub.namespace(n) is None, 180, "namespace %s to be deleted from the hub" % name)
    yield lab
    prepared = run_module("hub_prepare", {"kubeconfig": str(lab.kubeconfig), "context": "hub", "namespaces": [FLEET_NS]})
    assert not prepared.failed, prepared.get("msg")
    assert [ns for ns in HUB_ROLE_NAMESPACES if hub.namespace(ns) is None] == [], "hub_prepare left the hub unprepared"


def readme_inventory_on_the_lab(lab, title, path):
    """The README's quick start ``title`` as a user fills it in for the lab: its kubeconfig, contexts (the README's
    members in order on the lab's last members), hub URL and local charts (a path: no repository, no version);
    everything else - host names, labels, fleet managers, connection, interpreter - as the README writes it."""
    inventory = readme_quick_starts()[title]
    common = inventory["all"]["vars"]
    for chart, local in (("fleetops_fleet_agent_chart", lab.fleet_chart("fleet-agent")),
                         ("fleetops_kubefleet_member_agent_chart", lab.kubefleet_chart("member-agent"))):
        if chart in common:
            common[chart] = str(local)
            common.pop(chart + "_version", None)
            common.pop(chart + "_repo_url", None)
    hub_group, members = inventory["all"]["children"]["hub"], inventory["all"]["children"]["members"]
    for host_vars in hub_group["hosts"].values():
        host_vars.update(fleetops_kubeconfig=str(lab.kubeconfig), fleetops_context="hub", fleetops_api_server_url=lab.api_urls["hub"])
    members.setdefault("vars", {})["fleetops_kubeconfig"] = str(lab.kubeconfig)
    for host_vars, context in zip(members["hosts"].values(), reversed(lab.members)):
        host_vars["fleetops_context"] = context
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path, dict(zip(members["hosts"], reversed(lab.members)))


class QuickStart:
    """One README quick start on the lab: its inventory saved as ``inventory.yml`` in ``folder``, where the README's
    commands run as written (``ansible-playbook`` from PATH, the lab's helm as ``helm``)."""

    def __init__(self, lab, title, folder):
        self.lab, self.folder = lab, folder
        self.inventory, self.contexts = readme_inventory_on_the_lab(lab, title, folder / "inventory.yml")
        self.members = list(self.contexts)
        self.backends = set(readme_quick_starts()[title]["all"]["children"]["members"].get("vars", {}).get(
            "fleetops_backends") or ["rancher_fleet", "kubefleet"])

    def run(self, argv, fails=False):
        _argv, env = playbook_command(self.lab, "join_cluster.yml", tmp_path=self.folder)
        env["PATH"] = str(self.lab.kubeconfig.parent / "bin") + os.pathsep + env["PATH"]
        run = Run(subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(self.folder), timeout=900, check=False))
        assert (run.returncode != 0) == fails, "%s with the README's inventory exited %d:\n%s" % (
            " ".join(argv), run.returncode, run.output[-4000:])
        return run

    def leave_all(self):
        """Every member of the quick start out of the hub again (the lab's members are not the README's hosts)."""
        self.run(["ansible-playbook", "-i", "inventory.yml", "fleetops.registration.leave_cluster", "--limit",
                  ",".join(self.members)])


def registered(hub, name):
    """``{manager: registered}`` of a cluster name on the hub: a Fleet Cluster, a MemberCluster."""
    return {"rancher_fleet": hub.fleet_cluster(name) is not None, "kubefleet": hub.member_cluster(name) is not None}


def assert_joined(hub, name, backends):
    if "rancher_fleet" in backends:
        assert (hub.fleet_cluster(name).get("status") or {}).get("agent", {}).get("lastSeen"), "%s never checked in" % name
    if "kubefleet" in backends:
        assert condition(hub.member_cluster(name), "Joined") == "True", hub.member_cluster(name).get("status")
    assert set(manager for manager, there in registered(hub, name).items() if there) == backends


@pytest.mark.parametrize("title", ["Both on one hub", "KubeFleet only", "Rancher Fleet only"])
def test_the_readme_quick_start_runs_as_written_on_a_fresh_hub(fresh_hub, hub, tmp_path, title):
    """Issue 49, item 4 (and item 2 through its first command): the README's commands in the README's order on a hub
    the collection never prepared - the check predicts every step and changes nothing, the join joins, a second run
    changes nothing, the status shows each member, the leave of one host takes out that host alone."""
    lab = fresh_hub
    quick = QuickStart(lab, title, tmp_path)
    check, join, status, leave = readme_quick_start_commands()
    try:
        predicted = quick.run(check[0])
        for name in quick.members:
            assert predicted.changed(name) > 0, predicted.recap
            line = next(text for text in predicted.output.splitlines() if text.strip().startswith('"%s: ' % name))
            assert line.count("agent would register") == len(quick.backends), line
            assert registered(hub, name) == {"rancher_fleet": False, "kubefleet": False}, "the check changed %s" % name
        assert predicted.output.count("--- before") >= len(quick.members), "the check showed no diff"
        assert [ns for ns in HUB_ROLE_NAMESPACES if hub.namespace(ns) is not None] == [], "the check created namespaces"

        joined = quick.run(join[0])
        for name in quick.members:
            assert joined.changed(name) > 0
            assert_joined(hub, name, quick.backends)
        again = quick.run(join[0])
        assert again.unchanged({"fleet-hub"} | set(quick.members)), ("the README says: %s" % join[1], again.recap)

        shown = quick.run(status[0])
        for name in quick.members:
            assert any(text.strip().startswith('"%s ' % name) for text in shown.output.splitlines()), shown.output[-3000:]

        gone = leave[0][leave[0].index("--limit") + 1]
        left = quick.run(leave[0])
        assert left.changed(gone) > 0
        assert registered(hub, gone) == {"rancher_fleet": False, "kubefleet": False}
        assert [r for r in hub.releases(quick.contexts[gone]) if r.startswith(("fleet-agent", "member-agent"))] == []
        for name in quick.members:
            if name != gone:
                assert_joined(hub, name, quick.backends)
    finally:
        quick.leave_all()
    for name in quick.members:
        assert registered(hub, name) == {"rancher_fleet": False, "kubefleet": False}


def test_check_mode_on_a_fresh_hub_with_only_the_shipped_hub_rights_predicts_every_step(request, fresh_hub, hub, tmp_path):
    """Issue 49, item 2: a hub whose admin applied extensions/rbac/hub.yml and nothing else (the collection never ran
    there): a check of the join with that credential predicts every member's steps and changes nothing."""
    lab = fresh_hub
    least = request.getfixturevalue("least_privilege_hub")  # applies hub.yml now, on the fresh hub
    as_joiner = ("-e", '{"fleetops_hub_kubeconfig": "%s", "fleetops_hub_context": "least"}' % least)
    predicted = playbook(lab, "join_cluster.yml", "--check", "--diff", *as_joiner, tmp_path=tmp_path)
    for name in lab.members:
        assert predicted.changed(name) > 0, predicted.recap
        line = next(text for text in predicted.output.splitlines() if text.strip().startswith('"%s: ' % name))
        assert line.count("agent would register") == 2, line
        assert registered(hub, name) == {"rancher_fleet": False, "kubefleet": False}
    core = client.CoreV1Api(lab.api_client("hub"))
    assert [s.metadata.name for s in core.list_namespaced_service_account(IDENTITY_NS).items
            if s.metadata.name.endswith("-hub-cluster-access")] == []
    assert read_or_none(lambda: client.CoordinationV1Api(lab.api_client("hub")).read_namespaced_lease(
        "fleetops-member-member1", IDENTITY_NS)) is None
