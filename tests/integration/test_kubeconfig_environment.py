"""join_cluster as kubectl users work: $KUBECONFIG names the hub's and the members' kubeconfig files, the inventory
names contexts only (no kubeconfig path, no hub URL or CA), and both fleet managers join (issue 32)."""

import os
import subprocess

import pytest
import yaml

from test_playbooks import FLEET_NS, Hub, Run, assert_left, condition, playbook, playbook_command

pytestmark = pytest.mark.lab

MEMBER = "member1"


def kubeconfig_part(full, contexts, path):
    """The lab kubeconfig's ``contexts`` (with their clusters and users) as a file of their own."""
    chosen = [c for c in full["contexts"] if c["name"] in contexts]
    clusters = set(c["context"]["cluster"] for c in chosen)
    users = set(c["context"]["user"] for c in chosen)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": contexts[0], "contexts": chosen,
        "clusters": [c for c in full["clusters"] if c["name"] in clusters],
        "users": [u for u in full["users"] if u["name"] in users]}))
    os.chmod(str(path), 0o600)
    return str(path)


def contexts_only_inventory(lab, path):
    """The lab's inventory without a kubeconfig path, and without the hub's URL and CA for the agents (the hub's
    context gives them): each host keeps its fleetops_context."""
    inventory = yaml.safe_load(lab.inventory.read_text())
    for group in inventory["all"]["children"].values():
        for host in group["hosts"].values():
            for name in ("fleetops_kubeconfig", "fleetops_api_server_url", "fleetops_ca_file"):
                host.pop(name, None)
    text = yaml.safe_dump(inventory)
    assert "kubeconfig" not in text
    path.write_text(text)
    return str(path)


def test_join_cluster_reaches_hub_and_members_through_kubeconfig_with_contexts_only(lab_controllers, tmp_path):
    lab = lab_controllers
    hub = Hub(lab)
    playbook(lab, "leave_cluster.yml", "--limit", MEMBER, tmp_path=tmp_path)
    assert_left(hub, [MEMBER])

    full = yaml.safe_load(lab.kubeconfig.read_text())
    files = [kubeconfig_part(full, ["hub"], tmp_path / "hub.yaml"),
             kubeconfig_part(full, ["member1", "member2"], tmp_path / "members.yaml")]
    argv, env = playbook_command(lab, "join_cluster.yml", "--limit", "fleet-hub," + MEMBER, tmp_path=tmp_path)
    argv[argv.index("-i") + 1] = contexts_only_inventory(lab, tmp_path / "inventory.yml")
    env["KUBECONFIG"] = os.pathsep.join(files)
    env.pop("K8S_AUTH_KUBECONFIG", None)
    env["HOME"] = str(tmp_path / "home")  # no ~/.kube/config to fall back on
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=900, check=False)
    join = Run(proc)
    assert join.returncode == 0, join.output[-4000:]
    assert join.changed(MEMBER) > 0

    cluster = hub.fleet_cluster(MEMBER)
    assert cluster["status"]["agent"]["lastSeen"], "the Fleet agent never checked in"
    mc = hub.member_cluster(MEMBER)
    agent = [a for a in mc["status"].get("agentStatus") or [] if a["type"] == "MemberAgent"]
    assert agent and [c["status"] for c in agent[0]["conditions"] if c["type"] == "Joined"] == ["True"]
    assert condition(mc, "ReadyToJoin") == "True"
    assert "%s: rancher_fleet %s/%s: agent registered, checked in" % (MEMBER, FLEET_NS, MEMBER) in join.output
    assert "kubefleet %s: agent installed/updated, joined" % MEMBER in join.output
