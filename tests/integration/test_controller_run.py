"""member_info and hub_prepare run in the controller's process where the module would run on the controller anyway
(the lab's inventory: a local connection on ansible_playbook_python), and as a module process otherwise: the same
answers from the same clusters, check mode kept, and the same failure for a bad option."""

import json
import subprocess
import uuid

import pytest
from kubernetes import client

from kube_helpers import ignore_404, read_or_none
from test_playbooks import Run, playbook_command

pytestmark = pytest.mark.lab

PLAY = """
- name: Each module in the controller, then as a module process (a task environment keeps the module process)
  hosts: fleet-hub
  gather_facts: false
  module_defaults:
    group/fleetops.registration.fleetops:
      kubeconfig: "{{ fleetops_kubeconfig }}"
  vars:
    member: {context: member1, hub_kubeconfig: "{{ fleetops_kubeconfig }}", hub_context: hub, name: member1}
  tasks:
    - name: Prepare the hub in check mode
      fleetops.registration.hub_prepare: {context: hub, namespaces: ["%(namespace)s"], tidy: true}
      check_mode: true
      register: hub_in_controller
    - name: Prepare the hub in check mode as a module process
      fleetops.registration.hub_prepare: {context: hub, namespaces: ["%(namespace)s"], tidy: true}
      check_mode: true
      environment: {FLEETOPS_TEST: module process}
      register: hub_as_module
    - name: Read member1
      fleetops.registration.member_info: "{{ member }}"
      register: member_in_controller
    - name: Read member1 as a module process
      fleetops.registration.member_info: "{{ member }}"
      environment: {FLEETOPS_TEST: module process}
      register: member_as_module
    - name: Give an option member_info does not have
      fleetops.registration.member_info: "{{ member | combine({'bogus': 1}) }}"
      register: bogus_in_controller
      ignore_errors: true
    - name: Give an option member_info does not have to the module process
      fleetops.registration.member_info: "{{ member | combine({'bogus': 1}) }}"
      environment: {FLEETOPS_TEST: module process}
      register: bogus_as_module
      ignore_errors: true
    - name: Keep the results for the test
      ansible.builtin.copy:
        dest: "%(out)s"
        mode: "0600"
        content: "{{ {'hub': [hub_in_controller, hub_as_module], 'member': [member_in_controller, member_as_module],
                      'bogus': [bogus_in_controller, bogus_as_module]} | to_json }}"
"""


def _judgement(result):
    return dict((name, (state["action"], state["healthy"], sorted(f["cause"] for f in state["findings"])))
                for name, state in result["managers"].items())


def test_the_controller_and_the_module_process_give_the_same_answers(lab_controllers, tmp_path):
    lab = lab_controllers
    core = client.CoreV1Api(lab.api_client("hub"))
    namespace = "ctl-%s" % uuid.uuid4().hex[:6]
    out = tmp_path / "results.json"
    book = tmp_path / "play.yml"
    book.write_text(PLAY % {"namespace": namespace, "out": out})
    argv, env = playbook_command(lab, str(book), "-vvv", tmp_path=tmp_path)
    try:
        run = Run(subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600, check=False))
        assert run.recap.get("fleet-hub", {}).get("failed") == 0, run.output[-6000:]
        results = json.loads(out.read_text())
        # Which way each ran: three tasks in the controller, three as module processes, for the reason given.
        for module in ("hub_prepare", "member_info"):
            assert "fleetops.registration.%s runs in the controller's process" % module in run.output
        assert run.output.count("runs as a module process: the task sets environment variables") == 3, run.output[-6000:]

        in_controller, as_module = results["hub"]
        assert not in_controller.get("failed") and "invocation" not in in_controller
        for result in (in_controller, as_module):
            assert result["changed"] is True and result["created_namespaces"] == [namespace]
        keys = set(as_module) - {"invocation"}
        assert dict((k, in_controller.get(k)) for k in keys) == dict((k, as_module[k]) for k in keys)
        assert read_or_none(lambda: core.read_namespace(namespace)) is None, "check mode created the namespace"

        in_controller, as_module = results["member"]
        assert not in_controller.get("failed") and not as_module.get("failed"), (in_controller, as_module)
        assert _judgement(in_controller) == _judgement(as_module) and in_controller["identity"] == as_module["identity"]
        assert in_controller["changed"] is False and in_controller["labels"] == as_module["labels"]

        in_controller, as_module = results["bogus"]
        assert in_controller["failed"] and as_module["failed"]
        assert in_controller["msg"].startswith("Unsupported parameters for (fleetops.registration.member_info) module: bogus")
        assert in_controller["msg"] == as_module["msg"]
    finally:
        ignore_404(lambda: core.delete_namespace(namespace))
