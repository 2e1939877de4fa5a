"""Session fixtures shared by the lab proof tests and the integration tests.

``lab`` (session scope) gives a running lab: it reuses one that already runs (``make lab-up``)
or starts ``hub + 2 members`` (as ``python -m fleetlab up --members 2`` does; the lab directory is
``.lab`` or ``$FLEETOPS_LAB_DIR``). A lab it started is stopped at the end of the session unless
``FLEETOPS_LAB_KEEP`` is set (then it stays up for the next run or for inspection); a lab it reused
is never stopped. A lab that is partly down (a component stopped by an earlier session) is healed.
``Lab.stop/kill/freeze/thaw/start(name)`` inject faults into one component and ``Lab.heal()`` brings
the lab back (see lab/README.md, "Faults"). Two test sessions that find no lab at the same moment share the one the first
starts, and the first to finish stops it: start the lab beforehand (``make lab-up``) or set
``FLEETOPS_LAB_KEEP`` when running sessions in parallel. Tests that need it carry the ``lab`` marker;
``lab_controllers`` additionally requires the Fleet and KubeFleet controllers. Under pytest-xdist (``make test`` runs
two workers) each worker has a lab of its own, in ``<lab dir>-<worker>``.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAB_PATH = REPO / 'lab'
if str(LAB_PATH) not in sys.path:
    sys.path.insert(0, str(LAB_PATH))

MEMBERS = 2

# Each pytest-xdist worker's tests share a lab of their own (fleetlab.paths.worker_lab_dir).
from fleetlab.paths import worker_lab_dir  # noqa: E402  pylint: disable=wrong-import-position

_WORKER_LAB_DIR = worker_lab_dir(os.environ)
if _WORKER_LAB_DIR:
    os.environ['FLEETOPS_LAB_DIR'] = _WORKER_LAB_DIR

# The collection as installed from its tarball (make collection, modrun.collections_root()); set before
# pytest-ansible's --ansible-unit-inject-only (pytest.ini) reads it, and created so its loader accepts the path.
os.environ.setdefault('ANSIBLE_COLLECTIONS_PATH', str(REPO / '.cache' / 'collections'))
(REPO / '.cache' / 'collections').mkdir(parents=True, exist_ok=True)


def pytest_configure(config):
    """Register the ``lab`` marker; install the collection from its tarball before test modules import it."""
    config.addinivalue_line('markers', 'lab: needs the local lab (real kube-apiservers, Fleet and KubeFleet controllers)')
    import modrun  # pylint: disable=import-outside-toplevel
    root = str(modrun.collections_root())
    if root not in sys.path:
        sys.path.insert(0, root)


class Lab:
    """A running lab as tests see it."""

    def __init__(self, state, helm_home):
        from fleetlab import build  # pylint: disable=import-outside-toplevel
        self.helm_home = helm_home
        self._build = build
        self._read(state)

    def _read(self, state):
        self.state = state
        self.kubeconfig = Path(state['kubeconfig'])
        self.inventory = Path(state['inventory'])
        self.contexts = list(state['clusters'])
        self.controllers = state.get('controllers', True)
        self.hub = 'hub'
        self.hubs = [name for name, c in state['clusters'].items() if c['role'] == 'hub']
        self.members = [name for name, c in state['clusters'].items() if c['role'] == 'member']
        self.api_urls = {name: c['url'] for name, c in state['clusters'].items()}
        self.ca_files = {name: Path(c['ca_file']) for name, c in state['clusters'].items()}
        self.helm = state['binaries']['helm']
        self.kubectl = state['binaries']['kubectl']

    def refresh(self):
        """Read the lab's clusters again (after ``lab_hub2`` added a hub to it)."""
        from fleetlab import state  # pylint: disable=import-outside-toplevel
        from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
        self._read(state.load(LabPaths()))

    def fleet_chart(self, name):
        """Path of a Rancher Fleet chart (fleet-crd, fleet, fleet-agent)."""
        return self._build.fleet_chart(name)

    def kubefleet_chart(self, name):
        """Path of a KubeFleet chart (hub-agent, member-agent)."""
        return self._build.kubefleet_chart(name)

    def api_client(self, context):
        """A new kubernetes ApiClient for a lab context (admin)."""
        from kubernetes import config  # pylint: disable=import-outside-toplevel
        return config.new_client_from_config(config_file=str(self.kubeconfig), context=context)

    def agent_processes(self, context):
        """Host processes the agent runner currently runs for a context's pods (from state.json), alive ones only."""
        from fleetlab import processes, state  # pylint: disable=import-outside-toplevel
        from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
        current = state.load(LabPaths()) or {}
        entries = current.get('clusters', {}).get(context, {}).get('agents', [])
        return [e for e in entries if processes.alive(e)]

    # --- fault injection: components by the names ``python -m fleetlab status --json`` lists ---------
    def component(self, action, name, timeout=60):
        """Apply ``action`` (stop, kill, freeze, thaw, start) to a lab component; returns fleetlab's message.

        An agent is in the lab's state once the runner has recorded it, which it does after starting the process
        (CI once met an agent whose pod had just been re-created, running but not yet recorded): a name that matches
        no component yet is looked up again for ``timeout`` seconds.
        """
        from fleetlab import lab as fleetlab_lab  # pylint: disable=import-outside-toplevel
        from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
        from fleetlab.processes import LabError  # pylint: disable=import-outside-toplevel
        deadline = time.monotonic() + timeout
        while True:
            try:
                return fleetlab_lab.component(action, name, LabPaths())
            except LabError as exc:
                if "no lab component named" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(1)

    def stop(self, name):
        """SIGTERM, then SIGKILL after a grace period (e.g. ``lab.stop('hub-apiserver')``)."""
        return self.component('stop', name)

    def kill(self, name):
        """SIGKILL."""
        return self.component('kill', name)

    def freeze(self, name):
        """SIGSTOP (e.g. ``lab.freeze('member1/fleet-system/member-agent-*/member-agent')``)."""
        return self.component('freeze', name)

    def thaw(self, name):
        """SIGCONT."""
        return self.component('thaw', name)

    def start(self, name):
        """Start a stopped component again with its ports, certificates and data; waits until it is ready."""
        return self.component('start', name)

    def rebuild(self, cluster, new_ca=False):
        """Make ``cluster`` (a member, or ``hub``: restored without its etcd, only its controllers back) again from
        nothing under the same name (a new kube-system UID, no agents; same URL, and same PKI unless ``new_ca``)."""
        from fleetlab import lab as fleetlab_lab  # pylint: disable=import-outside-toplevel
        from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
        return fleetlab_lab.rebuild(cluster, LabPaths(), new_ca=new_ca)

    def heal(self):
        """What ``python -m fleetlab up`` does on a lab that is partly down: start what is down, thaw what is frozen."""
        from fleetlab import lab as fleetlab_lab  # pylint: disable=import-outside-toplevel
        from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
        fleetlab_lab.ensure_up(len(self.members), paths=LabPaths())

    def components(self):
        """{name: state} of every component now (state: running, frozen or down)."""
        from fleetlab import control, state  # pylint: disable=import-outside-toplevel
        from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
        return {c['name']: c['state'] for c in control.listing(state.load(LabPaths()) or {})}

    def ca_pem(self, context):
        """The CA certificate of a lab cluster (PEM text)."""
        return self.ca_files[context].read_text()

    def helm_env(self):
        """Environment for running helm against the lab (Helm state in a session temp dir)."""
        env = dict(os.environ)
        env.update({'KUBECONFIG': str(self.kubeconfig), 'KUBECACHEDIR': str(self.helm_home / 'kube-cache'),
                    'HELM_CACHE_HOME': str(self.helm_home / 'cache'),
                    'HELM_CONFIG_HOME': str(self.helm_home / 'config'), 'HELM_DATA_HOME': str(self.helm_home / 'data')})
        return env

    def run_helm(self, context, *args, check=True, timeout=600):
        """Run helm against a context; returns CompletedProcess (text)."""
        proc = subprocess.run([self.helm, '--kube-context', context] + [str(a) for a in args], env=self.helm_env(),
                              capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise AssertionError('helm %s failed (%d): %s' % (' '.join(str(a) for a in args[:3]), proc.returncode, proc.stderr[-2000:]))
        return proc


LAB_FIXTURES = ('lab', 'lab_controllers', 'prepared_hub', 'lab_hub2')

# The slowest test files, slowest first (make test's --durations, serial: 600 s down to 110 s). They are collected first,
# so pytest-xdist (--dist loadfile, in collection order) starts them first and its workers finish at about one time.
SLOWEST_FILES = (
    'tests/faults/test_faults.py', 'tests/integration/test_move_hub.py', 'tests/integration/test_playbooks.py',
    'tests/integration/test_kubefleet_modules.py',
    'tests/integration/test_member_lock.py', 'tests/integration/test_fleet_reliability.py',
    'tests/integration/test_cluster_identity.py', 'tests/lab/test_rancher_fleet.py', 'tests/integration/test_upgrade_waves.py',
    'tests/integration/test_quick_start.py', 'tests/integration/test_fleet_modules.py',
)


def pytest_collection_modifyitems(items):
    """The slowest files first; every file's tests keep their order, and so do the other files."""
    rank = {name: index for index, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split('::')[0], len(rank)))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.lab_test_started = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed lab test keeps the lab's logs (the lab may be torn down before anyone looks) and reports their last lines."""
    outcome = yield
    result = outcome.get_result()
    if result.failed and call.when == 'call':
        item.lab_test_failed = True  # for fixtures that put the shared lab back after a failed test
    if not result.failed or call.when == 'teardown' or not any(f in item.fixturenames for f in LAB_FIXTURES):
        return
    import lab_logs  # pylint: disable=import-outside-toplevel
    from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
    run_dir = item.funcargs.get('tmp_path') if hasattr(item, 'funcargs') else None
    try:
        text = lab_logs.report(item.nodeid, LabPaths().root, getattr(item, 'lab_test_started', 0), run_dir)
    except OSError as exc:
        text = 'could not keep the lab logs: %s' % exc
    result.sections.append(('lab logs', text))


@pytest.fixture
def lab_controllers(lab):
    """The lab, which must run the Fleet and KubeFleet controllers (not started with --without-controllers)."""
    if not lab.controllers:
        pytest.fail('the running lab was started --without-controllers; run "make lab-down" and let the tests start one')
    return lab


@pytest.fixture(scope='session')
def lab():
    """The running lab (started if needed; stopped at the end only if this fixture started it and FLEETOPS_LAB_KEEP is unset)."""
    from fleetlab import lab as fleetlab_lab  # pylint: disable=import-outside-toplevel
    from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
    from fleetlab.processes import LabError  # pylint: disable=import-outside-toplevel
    paths = LabPaths()
    try:
        started = fleetlab_lab.ensure_up(MEMBERS, paths=paths)
    except (LabError, RuntimeError) as exc:  # RuntimeError: build.BuildError
        pytest.fail('could not start the lab: %s' % exc)
    status, state, _dead = fleetlab_lab.lab_status(paths)
    assert status == 'running', 'the lab is %s (see %s/logs)' % (status, paths.root)
    if state['members'] < MEMBERS:
        pytest.fail('the running lab in %s has %d members; the tests need %d: run "make lab-down" and let the tests start one'
                    % (paths.root, state['members'], MEMBERS))
    with tempfile.TemporaryDirectory(prefix='fleetops-helm-') as helm_home:
        yield Lab(state, Path(helm_home))
    if started and not os.environ.get('FLEETOPS_LAB_KEEP'):
        fleetlab_lab.down(paths)


class Hub:
    """A second hub of the lab as tests see it: its kubeconfig context, inventory host and group, URL and CA."""

    def __init__(self, lab, name, components_before=None, components_after=None):
        self.lab = lab
        # {name: pid} of the lab's own processes and hub controllers just before and after the fixture added the hub
        self.components_before = components_before or {}
        self.components_after = components_after or {}
        self.name = self.context = name
        self.host = 'fleet-' + name
        self.group = 'new_hub'
        self.api_url = lab.api_urls[name]
        self.ca_file = lab.ca_files[name]

    def api_client(self):
        """A new kubernetes ApiClient for the hub (admin)."""
        return self.lab.api_client(self.context)


@pytest.fixture(scope='session')
def lab_hub2(lab):
    """The session lab with a second hub, ``hub2`` (context ``hub2``, inventory host ``fleet-hub2`` in group
    ``new_hub``), with its own Fleet controller and KubeFleet hub agent. Added to the running lab on first use (as
    ``python -m fleetlab up --hubs 2`` does: nothing else restarts), so only sessions with a test that asks for it pay
    for it; it stays until the lab stops. ``lab`` sees it too (``lab.hubs``, ``lab.contexts``) once it is added."""
    from fleetlab import lab as fleetlab_lab  # pylint: disable=import-outside-toplevel
    from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
    from fleetlab.processes import LabError  # pylint: disable=import-outside-toplevel
    if not lab.controllers:
        pytest.fail('the running lab was started --without-controllers; run "make lab-down" and let the tests start one')
    before = _pids()
    try:
        fleetlab_lab.ensure_up(len(lab.members), paths=LabPaths(), hubs=2)
    except (LabError, RuntimeError) as exc:
        pytest.fail('could not add hub2 to the lab: %s' % exc)
    lab.refresh()
    assert 'hub2' in lab.hubs, lab.state['clusters'].keys()
    return Hub(lab, 'hub2', before, _pids())


def _pids():
    """{name: pid} of the lab's own running processes and the hubs' controllers (members' agents come and go with
    what tests do to them)."""
    from fleetlab import control, state  # pylint: disable=import-outside-toplevel
    from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
    current = state.load(LabPaths()) or {}
    hubs = {name for name, c in current.get('clusters', {}).items() if c['role'] == 'hub'}
    return {c['name']: c['pid'] for c in control.listing(current)
            if c['state'] == 'running' and (c['kind'] != 'agent' or c['cluster'] in hubs)}
