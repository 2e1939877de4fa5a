"""The lab's component control (fleetlab.control): names, resolution, states and the heal plan.

Processes here are real ``sleep`` processes started the way the lab starts its components (own
process group), so freeze/thaw/kill and the state read from /proc are the real thing.
"""

import subprocess
import time

import pytest

from fleetlab import control, processes
from fleetlab.processes import LabError


@pytest.fixture
def sleeper():
    procs = []

    def start(name, **extra):
        proc = subprocess.Popen(['sleep', '60'], start_new_session=True)
        procs.append(proc)
        return processes.record(name, proc, **extra)
    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def _state(etcd, apiserver, kcm, runner, agent):
    return {'etcd': etcd, 'runner': runner,
            'clusters': {'hub': {'processes': [apiserver, kcm], 'agents': []},
                         'member1': {'processes': [], 'agents': [agent]}}}


def test_component_names_come_from_the_state_file(sleeper):
    agent = sleeper('fleet-system/member-agent-5f7c9-x2x8q/member-agent', container='member-agent')
    state = _state(sleeper('etcd'), sleeper('kube-apiserver'), sleeper('kube-controller-manager'), sleeper('runner'), agent)
    names = [c['name'] for c in control.components(state)]
    assert names == ['etcd', 'runner', 'hub/kube-apiserver', 'hub/kube-controller-manager',
                     'member1/fleet-system/member-agent-5f7c9-x2x8q/member-agent']
    assert {c['name']: c['state'] for c in control.listing(state)}['etcd'] == 'running'


@pytest.mark.parametrize('given, resolved', [
    ('hub-apiserver', 'hub/kube-apiserver'),
    ('hub-controller-manager', 'hub/kube-controller-manager'),
    ('hub/kube-apiserver', 'hub/kube-apiserver'),
    ('member1/fleet-system/member-agent-*/member-agent', 'member1/fleet-system/member-agent-5f7c9-x2x8q/member-agent'),
    ('runner', 'runner'),
])
def test_resolve_exact_short_and_pattern(sleeper, given, resolved):
    agent = sleeper('fleet-system/member-agent-5f7c9-x2x8q/member-agent', container='member-agent')
    state = _state(sleeper('etcd'), sleeper('kube-apiserver'), sleeper('kube-controller-manager'), sleeper('runner'), agent)
    assert control.resolve(state, given)['name'] == resolved


def test_resolve_names_the_choices_when_unknown_or_ambiguous(sleeper):
    state = _state(sleeper('etcd'), sleeper('kube-apiserver'), sleeper('kube-controller-manager'), sleeper('runner'),
                   sleeper('ns/p/c', container='c'))
    with pytest.raises(LabError, match='no lab component named "member9-apiserver"; the lab has: etcd, runner, hub/kube-apiserver'):
        control.resolve(state, 'member9-apiserver')
    with pytest.raises(LabError, match='names 2 components'):
        control.resolve(state, 'hub/kube-*')


def test_freeze_thaw_kill_and_the_heal_plan(sleeper):
    etcd, apiserver, kcm, runner = sleeper('etcd'), sleeper('kube-apiserver'), sleeper('kube-controller-manager'), sleeper('runner')
    agent = sleeper('ns/p/c', container='c')
    state = _state(etcd, apiserver, kcm, runner, agent)
    by_name = {c['name']: c for c in control.components(state)}
    control.freeze(by_name['hub/kube-controller-manager'])
    assert control.process_state(kcm) == 'frozen'  # at once: freeze returns once the process is stopped
    for name in ('runner', 'hub/kube-apiserver', 'etcd', 'member1/ns/p/c'):
        control.kill(by_name[name])
    assert control.process_state(apiserver) == 'down'
    down, frozen = control.heal_plan(state)
    # agents are the runner's to restart; the rest in start order: storage, API server, runner
    assert [c['name'] for c in down] == ['etcd', 'hub/kube-apiserver', 'runner']
    assert [c['name'] for c in frozen] == ['hub/kube-controller-manager']
    control.thaw(by_name['hub/kube-controller-manager'])
    time.sleep(0.2)
    assert control.process_state(kcm) == 'running'
    with pytest.raises(LabError, match='not running'):
        control.freeze(by_name['etcd'])


def test_up_refuses_to_heal_a_lab_that_never_finished_starting(tmp_path, sleeper):
    from fleetlab import lab, state
    from fleetlab.paths import LabPaths
    paths = LabPaths(tmp_path / 'lab')
    gone = subprocess.Popen(['true'])
    gone.wait()
    current = {'members': 1, 'etcd': sleeper('etcd'), 'runner': processes.record('runner', gone),
               'clusters': {'hub': {'processes': [], 'agents': []}}}
    state.save(paths, current)
    assert lab.lab_status(paths)[0] == 'partial'
    with pytest.raises(LabError, match='never finished starting .*not running: runner.*fleetlab down'):
        lab.ensure_up(1, paths=paths)


def test_each_pytest_xdist_worker_gets_a_lab_directory_of_its_own(tmp_path):
    from fleetlab.paths import REPO_ROOT, worker_lab_dir
    assert worker_lab_dir({}) is None
    assert worker_lab_dir({'FLEETOPS_LAB_DIR': str(tmp_path / 'lab')}) is None
    assert worker_lab_dir({'FLEETOPS_LAB_DIR': str(tmp_path / 'lab'), 'PYTEST_XDIST_WORKER': 'gw1'}) == str(tmp_path / 'lab-gw1')
    assert worker_lab_dir({'PYTEST_XDIST_WORKER': 'gw0'}) == str(REPO_ROOT / '.lab-gw0')


def test_a_restart_whose_port_is_still_held_is_tried_again(tmp_path, monkeypatch):
    """Right after a kill the port can be held for a moment: the restart is tried again, not left down; any other
    failure is reported at once."""
    log = tmp_path / 'apiserver.log'
    monkeypatch.setattr(time, 'sleep', lambda seconds: None)

    class Cluster:
        name, apiserver_log = 'hub', str(log)

        def __init__(self, failures, reason='bind: address already in use'):
            self.failures, self.reason, self.started = failures, reason, []

        def start_apiserver(self):
            failing = len(self.started) < self.failures
            log.write_text(self.reason + '\n' if failing else 'serving\n')
            proc = subprocess.Popen(['sh', '-c', 'exit 1' if failing else 'sleep 60'], start_new_session=True)
            self.started.append(proc)
            return proc

        def apiserver_ready(self):
            return log.read_text() == 'serving\n'

    restarter = object.__new__(control.Restarter)
    held = Cluster(failures=2)
    entry = restarter._start_cluster_process(held, 'kube-apiserver')  # pylint: disable=protected-access
    assert len(held.started) == 3 and entry['pid'] == held.started[-1].pid
    held.started[-1].kill()
    held.started[-1].wait()
    broken = Cluster(failures=5, reason='unknown flag --no-such-flag')
    with pytest.raises(processes.ComponentFailed, match='unknown flag'):
        restarter._start_cluster_process(broken, 'kube-apiserver')  # pylint: disable=protected-access
    assert len(broken.started) == 1
