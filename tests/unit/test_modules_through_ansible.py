"""Every module of the installed collection, run through Ansible's own executor with pytest-ansible.

tests/modrun.py runs a module file as a process (see there why); this runs each module by its FQCN through
pytest-ansible's ``ansible_adhoc`` (Ansible's plugin loader, AnsiballZ packaging with the module_utils it imports,
the local connection), as a playbook task would. A module that imports something the tarball lacks, or a plugin
the loader cannot resolve, fails here without a cluster.
"""

import os
import pathlib
import subprocess
import sys

import pytest
import yaml

from modrun import INSTALLED, collections_root

collections_root()
MODULES = sorted(p.stem for p in (INSTALLED / "plugins" / "modules").glob("*.py") if not p.stem.startswith("_"))


@pytest.fixture(scope="module")
def localhost(request, tmp_path_factory):
    """pytest-ansible's host manager for localhost, with this Python (it has the kubernetes client)."""
    inventory = tmp_path_factory.mktemp("inventory") / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    plugin = request.config.pluginmanager.getplugin("ansible")
    return plugin.initialize(request.config, request, inventory=str(inventory), connection="local",
                             host_pattern="localhost").localhost


def run(localhost, module, **args):
    return getattr(localhost, "fleetops.registration." + module)(**args)["localhost"]


def test_the_installed_collection_has_the_modules():
    assert "hub_prepare" in MODULES and len(MODULES) >= 9, MODULES


@pytest.mark.parametrize("module", MODULES)
def test_module_resolves_packages_and_checks_its_arguments(localhost, module):
    result = run(localhost, module, fleetops_no_such_option=1)
    assert result.get("failed"), result
    # The module's own argument validation answered (required options first, then the unknown one), so Ansible
    # found, packaged and ran it; a packaging fault ends in an import error or a deserialization failure instead.
    validation = ("Unsupported parameters", "missing required arguments", "any of the following are missing",
                  "one of the following is required")
    assert any(text in result["msg"] for text in validation), result["msg"]
    assert "module_stderr" not in result, result


def test_an_unreachable_hub_is_reported_with_its_address_through_the_executor(localhost, tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:9", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "x", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))
    result = run(localhost, "hub_prepare", kubeconfig=str(kubeconfig))
    assert result.get("failed") and "127.0.0.1:9" in result["msg"], result
    assert "not-a-real-token" not in str(result)


def test_a_batch_refuses_task_level_options_every_cluster_would_share(localhost):
    result = run(localhost, "fleet_cluster", namespace="fleet-default", clusters=[{"name": "a"}, {"name": "b"}],
                 client_id="same-for-all", kubeconfig="/nonexistent")
    assert result.get("failed") and "mutually exclusive" in result["msg"] and "client_id" in result["msg"], result["msg"]


def test_the_former_name_fleet_status_runs_fleet_status_info_with_a_deprecation_warning(tmp_path):
    """meta/runtime.yml routes fleet_status to fleet_status_info: Ansible runs the new module and warns."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_root()), ANSIBLE_DEPRECATION_WARNINGS="true",
               ANSIBLE_LOCAL_TEMP=str(tmp_path), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible"), "localhost", "-c", "local",
                           "-e", "ansible_python_interpreter=%s" % sys.executable,
                           "-m", "fleetops.registration.fleet_status", "-a", "fleetops_no_such_option=1"],
                          capture_output=True, text=True, env=env, check=False, timeout=120, stdin=subprocess.DEVNULL)
    output = proc.stdout + proc.stderr
    # fleet_status_info's own argument validation answered (it names that module's options)
    assert "Unsupported parameters" in output and "inventory_names" in output, output
    assert "fleet_status is now fleet_status_info" in " ".join(output.split()), output
    assert "DEPRECATION WARNING" in output, output
