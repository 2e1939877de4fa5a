"""Run a collection module the way Ansible does (a real process, JSON args), for tests.

The module process gets the same ANSIBLE_MODULE_ARGS envelope Ansible sends,
including check and diff mode, and its JSON result is returned as a dict.
The module file and its module_utils come from the collection as installed
from its tarball (``make collection``), not from the checkout.

Why ``run_module`` is not built on pytest-ansible (which the tests use where it
fits: tests/unit/test_modules_through_ansible.py runs every module by FQCN through
its ``ansible_adhoc`` fixture, and pytest.ini's ``--ansible-unit-inject-only``
puts the installed collection on the import path): its module dispatcher builds
a fixed one-task play, so it cannot run one call in check mode or diff mode
(``--ansible-check`` is a session-wide option that 26.10 does not pass to the
play at all), cannot give a call its own environment or timeout, and returns
only the parsed result. The module tests need all four: 19 calls use check and
diff mode, and the secret-leak assertions read ``raw_output``, the module's exact
stdout and stderr, which Ansible's executor does not hand back.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
COLLECTIONS = REPO / ".cache" / "collections"
INSTALLED = COLLECTIONS / "ansible_collections" / "fleetops" / "registration"
_FRESH = []


def collections_root():
    """The collections path holding the collection as users install it (built and installed from the tarball).

    ``make collection`` rebuilds and reinstalls only when a packaged file changed (a no-op otherwise), so
    a test run right after an edit never tests a stale copy; it runs once per test process.
    """
    mutants = os.environ.get("FLEETOPS_MUTANT_COLLECTIONS")
    if mutants:  # make test-mutations: the staged copy cosmic-ray mutates is what the unit tests import
        return pathlib.Path(mutants)
    if not _FRESH:
        proc = subprocess.run(["make", "-s", "-C", str(REPO), "collection"], capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not (INSTALLED / "MANIFEST.json").is_file():
            raise AssertionError("could not build and install the collection (make collection, rc=%s):\n%s%s"
                                 % (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
        _FRESH.append(True)
    return COLLECTIONS


class ModuleResult(dict):
    @property
    def failed(self):
        return bool(self.get("failed"))

    @property
    def changed(self):
        return bool(self.get("changed"))


class ModuleProcess:
    """A module started as Ansible starts it, in its own task directory (``task_tmp``), as a running process."""

    def __init__(self, name, args, check=False, diff=False, env=None):
        # A private task directory, as Ansible gives each task: a module may delete it, never the system's /tmp.
        self.task_tmp = tempfile.mkdtemp(prefix="modrun-")
        envelope = {"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check, _ansible_diff=diff,
                                                _ansible_tmpdir=self.task_tmp, _ansible_remote_tmp=self.task_tmp,
                                                _ansible_keep_remote_files=False)}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(envelope, handle)
            self.args_path = handle.name
        os.chmod(self.args_path, 0o600)
        process_env = dict(os.environ)
        process_env["PYTHONPATH"] = str(collections_root()) + os.pathsep + process_env.get("PYTHONPATH", "")
        process_env.update(env or {})
        module = INSTALLED / "plugins" / "modules" / (name + ".py")
        self.proc = subprocess.Popen([sys.executable, str(module), self.args_path], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=process_env)

    def finish(self, timeout=600):
        """Wait for the module (killed at ``timeout``); remove the task directory as Ansible does after a task."""
        try:
            return self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise
        finally:
            self.cleanup()

    def cleanup(self):
        if os.path.exists(self.args_path):
            os.unlink(self.args_path)
        shutil.rmtree(self.task_tmp, ignore_errors=True)


def run_module(name, args, check=False, diff=False, env=None, timeout=600):
    """Run plugins/modules/<name>.py with ``args``; return its result (``raw_output`` has the exact stdout)."""
    module = ModuleProcess(name, args, check=check, diff=diff, env=env)
    stdout, stderr = module.finish(timeout)
    try:
        result = ModuleResult(json.loads(stdout))
    except ValueError:
        raise AssertionError("module %s printed no JSON (rc=%s):\nstdout: %s\nstderr: %s" % (name, module.proc.returncode, stdout[-3000:], stderr[-3000:]))
    result["raw_output"] = stdout + stderr
    return result
