"""Where the lab keeps its state.

Everything a running lab owns lives under one directory, ``<repo>/.lab`` unless the environment
variable ``FLEETOPS_LAB_DIR`` names another one. ``down`` empties it.
"""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def lab_dir(environ=None):
    """Return the lab state directory (not created)."""
    override = (os.environ if environ is None else environ).get('FLEETOPS_LAB_DIR')
    return Path(override).resolve() if override else REPO_ROOT / '.lab'


def worker_lab_dir(environ):
    """The lab directory of a pytest-xdist worker (``<lab dir>-gw0``, ...), or None outside one.

    The lab tests spend most of their time waiting for agents and controllers, not on the CPU, so ``make test`` runs
    them on two workers; each worker's tests change the lab's state, so each worker has a lab of its own.
    """
    worker = environ.get('PYTEST_XDIST_WORKER')
    if not worker:
        return None
    return '%s-%s' % (lab_dir(environ), worker)


class LabPaths:
    """Named files and directories inside the lab directory."""

    def __init__(self, root=None):
        self.root = Path(root) if root else lab_dir()
        self.state = self.root / 'state.json'
        self.lock = self.root / 'state.lock'
        self.kubeconfig = self.root / 'kubeconfig'
        self.inventory = self.root / 'inventory.yml'
        self.logs = self.root / 'logs'
        self.pki = self.root / 'pki'
        self.etcd_data = self.root / 'etcd'
        self.pods = self.root / 'pods'
        self.bin = self.root / 'bin'
        self.work = self.root / 'work'

    def pki_dir(self, cluster):
        """PKI files of one cluster."""
        return self.pki / cluster

    def log(self, name):
        """Log file of a lab component."""
        return self.logs / (name + '.log')


def write_private(path, data):
    """Write ``data`` (str or bytes) to ``path`` with mode 0600, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name('.' + path.name + '.tmp')
    if isinstance(data, str):
        data = data.encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'wb') as handle:
        handle.write(data)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
