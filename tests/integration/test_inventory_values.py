"""Issue 49, item 3: bad values are refused first - the real ansible-playbook, no lab.

The inventory's hub and member kubeconfigs point at an address nothing listens on (https://127.0.0.1:1): a run that
tried to read any cluster would say so (``cannot reach``, connection refused). A value a module would refuse must stop
the run at its first task instead, naming the inventory variable and the value. A control run with good values gets
past the check and fails only where the hub is first read.
"""

import json
import subprocess
import types

import pytest
import yaml

from test_playbooks import Run, playbook_command  # how the suite runs ansible-playbook

UNREACHABLE = "https://127.0.0.1:1"
# What a run that tried to reach a cluster prints.
CONTACT = ("cannot reach", "Connection refused", "Failed to establish", "127.0.0.1:1")


def _inventory(tmp_path, member=None, hub=None, predefined=None):
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "hub",
        "clusters": [{"name": name, "cluster": {"server": UNREACHABLE, "insecure-skip-tls-verify": True}}
                     for name in ("hub", "member2")],
        "users": [{"name": "admin", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}} for name in ("hub", "member2")]}))
    kubeconfig.chmod(0o600)
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                 "fleetops_kubeconfig": str(kubeconfig), "fleetops_fleet_agent_chart": "fleet-agent",
                 "fleetops_fleet_agent_chart_repo_url": "https://rancher.github.io/fleet-helm-charts/",
                 "fleetops_fleet_agent_chart_version": "0.16.0"},
        "children": {
            "hub": {"hosts": {"fleet-hub": dict({"fleetops_context": "hub"}, **(hub or {}))}},
            "members": {"hosts": {"member2": dict({"fleetops_context": "member2"}, **(member or {}))}},
            "predefined": {"hosts": dict((name, {}) for name in predefined or [])}}}}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    return types.SimpleNamespace(inventory=path)


def _run(tmp_path, inventory, playbook, *args):
    argv, env = playbook_command(inventory, playbook, *args, tmp_path=tmp_path)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300, check=False)
    return Run(proc)


def _tasks(output):
    return [line for line in output.splitlines() if line.startswith("TASK [")]


def _no_contact(run):
    contacted = [text for text in CONTACT if text in run.output]
    assert not contacted, "a cluster was contacted (%s):\n%s" % (contacted, run.output[-4000:])


def test_join_refuses_a_cluster_name_that_is_no_kubernetes_name_before_any_cluster_is_read(tmp_path):
    """The issue's case: fleetops_cluster_name Member_2 fails at the first task, naming the variable and the value."""
    run = _run(tmp_path, _inventory(tmp_path, member={"fleetops_cluster_name": "Member_2"}), "join_cluster.yml")
    assert run.returncode != 0, run.output[-4000:]
    assert "fleetops_cluster_name" in run.output and "'Member_2' is not a valid name" in run.output, run.output[-4000:]
    assert "member2: name (from fleetops_cluster_name, or the inventory host name (member_join_cluster_name)): " \
           "'Member_2' is not a valid name. Use lower-case letters" in run.output, run.output[-4000:]
    assert len(_tasks(run.output)) == 1 and "PLAY [Prepare the hub]" not in run.output, run.output[-4000:]
    assert run.recap == {"member2": {"ok": 0, "changed": 0, "unreachable": 0, "failed": 1}}, run.output[-4000:]
    _no_contact(run)


def test_join_names_every_refused_value_of_the_member_and_of_its_hub(tmp_path):
    inventory = _inventory(tmp_path, member={"fleetops_labels": {"env": "dev test"}, "fleetops_kubefleet_namespace": "Fleet_NS"},
                           hub={"fleetops_api_server_url": "http://hub.example.com:6443"})
    run = _run(tmp_path, inventory, "join_cluster.yml", "-e", "member_join_lock_namespace=Locks")
    assert run.returncode != 0 and len(_tasks(run.output)) == 1, run.output[-4000:]
    for said in ("labels (from fleetops_labels (member_join_labels)): invalid value for label 'env'",
                 "identity_namespace (from fleetops_kubefleet_namespace (member_join_kubefleet_identity_namespace)): "
                 "'Fleet_NS' is not a valid name",
                 "hub_api_server_url (from the hub host's fleetops_api_server_url (member_join_hub_api_server_url)): "
                 "'http://hub.example.com:6443' (from hub_api_server_url) is not an https:// URL",
                 "lock_namespace (from member_join_lock_namespace): 'Locks' is not a valid name"):
        assert said in run.output, (said, run.output[-4000:])
    _no_contact(run)


def test_leave_refuses_the_member_at_its_first_step_before_the_hub_is_read(tmp_path):
    run = _run(tmp_path, _inventory(tmp_path, member={"fleetops_cluster_name": "Member_2"}), "leave_cluster.yml",
               "--limit", "member2")
    assert run.returncode != 0, run.output[-4000:]
    assert "name (from fleetops_cluster_name, or the inventory host name (member_leave_cluster_name)): 'Member_2' is not a " \
           "valid name" in run.output, run.output[-4000:]
    assert not [task for task in _tasks(run.output) if "Find the fleet managers the hub serves" in task], run.output[-4000:]
    _no_contact(run)


def test_predefine_refuses_a_cluster_name_before_the_hub_is_prepared(tmp_path):
    run = _run(tmp_path, _inventory(tmp_path, predefined=["edge-1", "Edge_2"]), "predefine_clusters.yml")
    assert run.returncode != 0, run.output[-4000:]
    assert "fleetops_cluster_name of Edge_2: 'Edge_2' is not a valid name" in run.output, run.output[-4000:]
    assert len(_tasks(run.output)) == 1, run.output[-4000:]
    _no_contact(run)


@pytest.mark.parametrize("playbook", ["join_cluster.yml", "move_hub.yml"])
def test_good_values_pass_the_check_and_the_run_goes_on_to_read_the_hub(tmp_path, playbook):
    """The control: the check takes a good inventory, and only reading the (unreachable) hub fails."""
    inventory = _inventory(tmp_path, member={"fleetops_labels": {"env": "dev"}})
    run = _run(tmp_path, inventory, playbook, "-e", "fleetops_new_hub=fleet-hub")
    assert run.returncode != 0, run.output[-4000:]
    assert "ok: [member2]" in run.output and "cannot reach" in run.output, run.output[-4000:]


def test_one_refused_member_does_not_stop_the_others(tmp_path):
    """A typo on one member of a fleet: the check names it and lets the run go on for the others (the refused member
    fails alone at its first task, which tests/integration/test_playbooks.py shows on the lab); a move stops."""
    inventory = _inventory(tmp_path)
    text = yaml.safe_load(inventory.inventory.read_text())
    text["all"]["children"]["members"]["hosts"]["member1"] = {"fleetops_context": "member2", "fleetops_cluster_name": "Member_1"}
    inventory.inventory.write_text(yaml.safe_dump(text))
    run = _run(tmp_path, inventory, "join_cluster.yml")
    assert "refused before any cluster is read" in run.output and "member1: name (from fleetops_cluster_name" in run.output, \
        run.output[-4000:]
    assert "PLAY [Prepare the hub]" in run.output, run.output[-4000:]
    text["all"]["children"]["new_hub"] = {"hosts": {"fleet-hub2": {"fleetops_context": "hub"}}}
    inventory.inventory.write_text(yaml.safe_dump(text))
    move = _run(tmp_path, inventory, "move_hub.yml")
    assert move.returncode != 0 and "member1: name (from fleetops_cluster_name" in move.output, move.output[-4000:]
    assert len(_tasks(move.output)) == 1, move.output[-4000:]
    _no_contact(move)


def test_a_survey_answer_is_data_never_a_template_that_runs(tmp_path):
    """A survey answer that holds Jinja, passed as AWX passes one (an extra var marked ``!unsafe``, AWX's default
    ``ALLOW_JINJA_IN_EXTRA_VARS: template``), is refused as the value it is: no code of the collection evaluates it, so
    the lookup in it never runs on the controller. (A plain ``-e`` is the operator's own input, which Ansible templates.)"""
    marker = tmp_path / "templated"
    answers = tmp_path / "answers.yml"
    answers.write_text("member_join_fleet_token_ttl: !unsafe %s\n" % json.dumps("{{ lookup('pipe', 'touch %s') }}" % marker))
    run = _run(tmp_path, _inventory(tmp_path), "join_cluster.yml", "-e", "@%s" % answers)
    assert not marker.exists(), "the survey answer was evaluated as a template:\n" + run.output[-4000:]
    assert run.returncode != 0 and "ttl (from member_join_fleet_token_ttl): \"{{ lookup('pipe'" in run.output, run.output[-4000:]
    assert "is not a duration Fleet accepts" in run.output, run.output[-4000:]
    _no_contact(run)
