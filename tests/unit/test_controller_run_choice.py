"""The in-controller run of a read-only module (plugin_utils/controller_run.py): when a task may run there, and that
its options are checked and its result masked as the module process does. Its reads of real clusters are asserted by
tests/integration/test_controller_run.py."""

import datetime
import importlib
import os
import pathlib
import stat
import sys

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.modules import hub_prepare, member_info
from ansible_collections.fleetops.registration.plugins.plugin_utils import controller_run
from ansible_collections.fleetops.registration.plugins.plugin_utils.controller_run import ControllerModule, reason_for_module_process

PYTHON = sys.executable


def reason(connection="local", interpreter=PYTHON, **given):
    given.setdefault("python", PYTHON)
    given.setdefault("has_kubernetes", True)
    given.setdefault("missing_internals", [])
    return reason_for_module_process(connection, interpreter, **given)


def test_a_local_task_on_the_controllers_python_runs_in_the_controller():
    assert reason() is None
    assert reason(interpreter=os.path.join(os.path.dirname(PYTHON), ".", os.path.basename(PYTHON))) is None


@pytest.mark.parametrize("given, expected", [
    (dict(connection="ssh"), "the connection is ssh, not local"),
    (dict(interpreter=None), "ansible_python_interpreter is not the controller's Python"),
    (dict(interpreter="auto_silent"), "ansible_python_interpreter is not the controller's Python"),
    # A virtualenv's python is a link to the base one: the same file, but another environment (site-packages).
    (dict(interpreter=os.path.realpath(PYTHON) + "-other"), "ansible_python_interpreter is not the controller's Python"),
    (dict(become=True), "become"),
    (dict(delegated=True), "delegated"),
    (dict(asynchronous=True), "async"),
    (dict(environment=[{"HTTPS_PROXY": "http://proxy:3128"}]), "environment variables"),
    (dict(has_kubernetes=False), "no kubernetes package"),
])
def test_anything_that_would_make_the_module_process_differ_keeps_it(given, expected):
    assert expected in reason(**given)


def test_this_ansible_core_has_what_the_controller_run_reads_of_its_argument_validation():
    assert controller_run.missing_validator_internals() == []
    assert reason_for_module_process("local", PYTHON, python=PYTHON, has_kubernetes=True) is None


class _Renamed:
    """An ansible-core whose validation result renamed its private attributes (public ones unchanged)."""

    def __init__(self, spec):
        self.spec = spec

    def validate(self, params):
        return type("Result", (), {"validated_parameters": dict(params), "error_messages": [], "no_log_values": set()})()


def test_an_ansible_core_without_those_internals_runs_every_module_as_a_module_process():
    missing = controller_run.missing_validator_internals(_Renamed)
    assert missing == list(controller_run.VALIDATOR_INTERNALS)
    why = reason(missing_internals=missing)
    assert why.startswith("this ansible-core's argument validation result lacks _no_log_values, _warnings, _deprecations")
    assert "module process" in why


def test_an_empty_task_environment_is_no_reason():
    assert reason(environment=[{}]) is None and reason(environment=[]) is None


def test_the_link_a_virtualenv_python_is_counts_as_another_python(tmp_path):
    link = tmp_path / "python"
    link.symlink_to(PYTHON)
    assert "not the controller's Python" in reason(interpreter=str(link))


def controller(module, args, **kwargs):
    return ControllerModule("fleetops.registration." + module.__name__.rsplit(".", 1)[-1], module.module_options(), args, **kwargs)


def test_options_are_checked_as_the_module_checks_them():
    unknown = controller(hub_prepare, {"context": "hub", "bogus": 1}).run(lambda m: {"ran": True})
    assert unknown == {"failed": True, "msg": "Unsupported parameters for (fleetops.registration.hub_prepare) module: bogus. "
                                              "Supported parameters include: %s." % unknown["msg"].split("include: ")[1][:-1]}
    neither = controller(member_info, {"context": "member1"}).run(lambda m: {"ran": True})
    assert neither["failed"] and neither["msg"] == "one of the following is required: name, members"
    wrong = controller(hub_prepare, {"backends": ["ocm"]}).run(lambda m: {"ran": True})
    assert wrong["failed"] and "backends" in wrong["msg"] and "rancher_fleet" in wrong["msg"] and "ran" not in wrong


def test_defaults_apply_and_a_blank_option_counts_as_not_set():
    seen = {}
    result = controller(hub_prepare, {"context": "hub", "namespaces": "", "backend_namespaces": "", "hub_namespace": ""},
                        check_mode=True, diff=True).run(lambda m: seen.update(params=m.params, check=m.check_mode, diff=m._diff) or {})
    assert not result.get("failed"), result
    assert seen["check"] is True and seen["diff"] is True
    assert seen["params"]["backend_namespaces"] == {} and seen["params"]["hub_namespace"] == "fleetops-system"
    assert seen["params"]["backends"] == hub_prepare.argument_spec()["backends"]["default"] and seen["params"]["check_controllers"] is True


def test_secrets_are_masked_in_the_result_and_the_warnings():
    token = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.c2lnbmF0dXJl"
    proxy = "http://user:pr0xy-pass@proxy.example:3128"

    def action(module):
        module.warn("the member answered with %s" % proxy)
        return {"echo": module.params["api_key"], "found": "read %s" % module.params["proxy"], "nested": [{"t": token}]}

    module = controller(member_info, {"name": "member1", "api_key": "key-SECRET-1", "proxy": proxy,
                                      "hub_api_key": token})
    result = module.run(action)
    text = repr(result)
    assert "key-SECRET-1" not in text and "pr0xy-pass" not in text and token not in text
    assert result["echo"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" and len(result["warnings"]) == 1
    assert "invocation" not in result


def test_the_result_is_json_data_as_a_modules_is():
    result = controller(hub_prepare, {"context": "hub"}).run(
        lambda m: {"pair": ("a", "b"), "names": {"b", "a"}, "at": datetime.datetime(2026, 11, 27, 1, 2, 3)})
    assert result == {"pair": ["a", "b"], "names": ["a", "b"], "at": "2026-11-27T01:02:03"}


def test_a_failure_is_reported_as_the_module_reports_it_and_the_private_directory_goes():
    made = []

    def action(module):
        made.append(module.tmpdir)
        assert stat.S_IMODE(os.stat(module.tmpdir).st_mode) == 0o700
        raise ParameterError("labels", "must be a mapping", "Give labels as key=value pairs")

    result = controller(member_info, {"name": "member1"}).run(action)
    assert result["failed"] and result["msg"].startswith("labels") and "key=value" in result["msg"]
    assert made and not os.path.exists(made[0])

    def crash(module):
        raise RuntimeError("boom")

    crashed = controller(member_info, {"name": "member1"}).run(crash)
    assert crashed["failed"] and crashed["msg"] == "unexpected error: boom" and "RuntimeError" in crashed["exception"]


def test_the_modules_run_in_the_controller_are_those_named_and_have_what_it_needs():
    actions = pathlib.Path(controller_run.__file__).parents[1] / "action"
    named = set(path.stem for path in actions.glob("*.py") if "InControllerAction" in path.read_text())
    assert named == set(controller_run.IN_CONTROLLER)
    for name in controller_run.IN_CONTROLLER:
        code = importlib.import_module("ansible_collections.fleetops.registration.plugins.modules." + name)
        assert callable(code.run) and "argument_spec" in code.module_options(), name
    # The bench counts them as no module process (bench/scale_figures.py).
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
    import scale_figures  # pylint: disable=import-outside-toplevel
    assert set(controller_run.IN_CONTROLLER) <= scale_figures.CONTROLLER_ACTIONS


def test_the_controller_runs_helm_as_the_module_process_would():
    """The Helm runner's run_command and get_bin_path (module_utils/helm.py) in the controller: argv without a shell,
    the environment updated, text on standard input with a newline as AnsibleModule adds, nothing when none is given."""
    echo = [PYTHON, "-c", "import os, sys; print(repr(sys.stdin.read()), os.environ['FLEETOPS_T'], os.environ.get('HOME') is not None)"]
    rc, out, err = ControllerModule.run_command(echo, environ_update={"FLEETOPS_T": "set"}, data="values: 1")
    assert (rc, out, err) == (0, "'values: 1\\n' set True\n", "")
    rc, out, dummy = ControllerModule.run_command(echo, environ_update={"FLEETOPS_T": "none"})
    assert (rc, out) == (0, "'' none True\n")
    rc, out, dummy = ControllerModule.run_command(echo, environ_update={"FLEETOPS_T": "empty"}, data="")
    assert (rc, out) == (0, "'' empty True\n")  # as AnsibleModule: empty data is no input, not a lone newline
    rc, dummy, err = ControllerModule.run_command([PYTHON, "-c", "import sys; sys.exit('no release')"])
    assert rc == 1 and "no release" in err
    with pytest.raises(Exception) as failed:
        ControllerModule.run_command(["/nonexistent/helm", "version"])
    assert "could not run /nonexistent/helm" in str(failed.value)
    assert ControllerModule.get_bin_path(os.path.basename(PYTHON)) or ControllerModule.get_bin_path("sh")
    assert ControllerModule.get_bin_path("fleetops-no-such-binary") is None


def test_a_run_killed_with_sigkill_leaves_key_directories_the_next_run_removes(tmp_path):
    """make soak found them: an ansible-playbook SIGKILLed while a module ran in its process left that module's
    private directory (client keys, 0600) in its ansible-local directory. The next run's first module that writes
    key files removes every such directory of a run whose process is gone, and nothing else."""
    mine, dead, live = tmp_path / "ansible-local-4242abcd_e12", tmp_path / "ansible-local-1717x1y2z3w4", tmp_path / "ansible-local-99qwertyui"
    for local in (mine, dead, live):
        (local / "fleetops-k3y5").mkdir(parents=True)
        (local / "fleetops-k3y5" / "hub_client-key-1.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
        (local / "AnsiballZ_member_info.py").write_text("# Ansible's own\n")
    (tmp_path / "unrelated-1717dir").mkdir()
    (tmp_path / "unrelated-1717dir" / "fleetops-keep").mkdir()
    removed = controller_run.sweep_dead_runs(str(mine), alive=lambda pid: pid in (4242, 99))
    assert removed == [os.path.join("ansible-local-1717x1y2z3w4", "fleetops-k3y5")]
    assert not (dead / "fleetops-k3y5").exists() and (dead / "AnsiballZ_member_info.py").exists()
    assert (mine / "fleetops-k3y5").exists() and (live / "fleetops-k3y5").exists() and (tmp_path / "unrelated-1717dir" / "fleetops-keep").exists()
    assert controller_run.sweep_dead_runs(str(tmp_path / "no-such-dir" / "ansible-local-1abcdefgh")) == []


def test_the_sweep_passes_over_what_it_may_not_read(tmp_path, monkeypatch):
    """ANSIBLE_LOCAL_TEMP in a shared place: another user's ansible-local directory (0700) cannot be listed."""
    (tmp_path / "ansible-local-1717x1y2z3w4" / "fleetops-k3y5").mkdir(parents=True)
    (tmp_path / "ansible-local-1818x1y2z3w4").write_text("a file, not a directory")
    listdir = os.listdir

    def guarded(path):
        if str(path).endswith("ansible-local-1717x1y2z3w4"):
            raise PermissionError(13, "Permission denied", str(path))
        return listdir(path)
    monkeypatch.setattr(controller_run.os, "listdir", guarded)
    assert controller_run.sweep_dead_runs(str(tmp_path / "ansible-local-4242abcd_e12"), alive=lambda pid: False) == []
