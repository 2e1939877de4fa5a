"""``.lab/state.json``: what a running lab consists of.

Schema (version 1)::

    {"version": 1, "members": N, "hubs": 1|2, "lab_dir": ..., "kubeconfig": ..., "inventory": ...,
     "etcd":   {"name", "pid", "pgid", "start", "port", "peer_port"},
     "runner": {"name", "pid", "pgid", "start"},
     "clusters": {"hub": {"role": "hub", "context": "hub", "url": ..., "port": ..., "etcd_prefix": ...,
                          "ca_file": ...,
                          "processes": [{"name": "kube-apiserver", "pid", "pgid", "start"}, ...],
                          "agents": [{"name": "<ns>/<pod>/<container>", "pid", "pgid", "start",
                                      "binary", "namespace", "pod", "container"}, ...]},
                  "member1": {...}, "hub2": {"role": "hub", ...}}}

``processes`` are the cluster's control plane, ``agents`` the host processes the agent runner
realised from that cluster's pods (kept up to date by the runner). Summing the RSS of both per
cluster gives a cluster's memory; etcd and the runner are shared by all clusters.
``hubs`` counts the hubs that finished starting (absent: 1); ``hub2`` is in ``clusters`` from the moment it is
being added (see ``hubs.py``). Read-modify-write happens under an exclusive ``flock`` on ``.lab/state.lock``.
"""

import contextlib
import fcntl
import json

from fleetlab.paths import write_private

VERSION = 1


def load(paths):
    """The state dict, or None if there is no lab state."""
    try:
        with open(paths.state, encoding='utf-8') as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None
    except ValueError:
        return None


def save(paths, state):
    """Write the state atomically (0600: it names key files)."""
    write_private(paths.state, json.dumps(state, indent=2, sort_keys=True) + '\n')


@contextlib.contextmanager
def locked(paths):
    """Exclusive lock for a read-modify-write of the state file."""
    paths.root.mkdir(parents=True, exist_ok=True)
    with open(paths.lock, 'a', encoding='utf-8') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def update(paths, func):
    """Apply ``func(state)`` to the stored state under the lock (no-op if there is none)."""
    with locked(paths):
        current = load(paths)
        if current is None:
            return None
        func(current)
        save(paths, current)
        return current


def all_processes(state):
    """Every recorded process: (cluster or None, entry)."""
    result = []
    for key in ('etcd', 'runner'):
        if state.get(key):
            result.append((None, state[key]))
    for name, cluster in state.get('clusters', {}).items():
        for entry in cluster.get('processes', []) + cluster.get('agents', []):
            result.append((name, entry))
    return result
