"""Pod spec -> host process: the pure half of the translation (no API, no files).

Image to binary, ``$(VAR)`` expansion, the container's environment from ``env``/``envFrom``
(Secret and ConfigMap data come from callables, so this module never talks to a cluster),
downward-API fields, resource fields, the command line with the per-binary ``HOST_SETTINGS``,
and the rewriting of mount paths to host paths. ``sandbox.PodSandbox`` supplies the files.
"""

import math
import os
import re


class NotReadyYet(Exception):
    """A container cannot be configured yet (missing Secret/ConfigMap key): retried later."""


# Fleet's agent timing in the lab. The check-in interval (Fleet's default is 15m) is the hub's agentCheckinInterval and
# the bootstrap agent's CHECKIN_INTERVAL. The leader-election retry period replaces the chart's 10s: an agent that
# replaces another (Fleet adopting the bootstrap agent) takes the released Lease at its next retry, so the lab's joins
# wait seconds, not a retry period, for it. Empty: as the chart sets it.
CHECKIN_INTERVAL = os.environ.get('FLEETOPS_LAB_CHECKIN_INTERVAL', '5s')
ELECTION_RETRY_PERIOD = os.environ.get('FLEETOPS_LAB_ELECTION_RETRY_PERIOD', '2s')

# Host-process adjustments per binary (name as in build.ensure_binaries):
#   env:        set (overrides the container's value)
#   env_default: set only when the container does not set it
#   flags:      replace or append --flag=value
#   path_flags: append --flag=<default path> when absent, so the mount mapping applies to it
HOST_SETTINGS = {
    'fleetcontroller': {'env': {'FLEET_METRICS_BIND_ADDRESS': '0', 'FLEET_HEALTHPROBE_BIND_ADDRESS': '0',
                                'GITOPS_METRICS_BIND_ADDRESS': '0', 'HELMOPS_METRICS_BIND_ADDRESS': '0'}},
    'fleetagent': {'env': {'FLEET_AGENT_METRICS_BIND_ADDRESS': '0', 'FLEET_AGENT_PROBE_BIND_ADDRESS': '0',
                           'FLEET_AGENT_PPROF_DISABLED': 'true',
                           **({'CATTLE_ELECTION_RETRY_PERIOD': ELECTION_RETRY_PERIOD} if ELECTION_RETRY_PERIOD else {})},
                   'env_default': {'CHECKIN_INTERVAL': CHECKIN_INTERVAL}},
    'hubagent': {'flags': {'--metrics-bind-address': '0', '--health-probe-bind-address': '0'}},
    'memberagent': {'flags': {'--metrics-bind-address': '0', '--health-probe-bind-address': '0',
                              '--hub-metrics-bind-address': '0', '--hub-health-probe-bind-address': '0'}},
    'authtoken': {'path_flags': {'--file-path': '/config/token'}},
}


def image_repository(image):
    """Repository part of an image reference, normalised (no tag/digest, no docker.io/library)."""
    ref = image.split('@', 1)[0]
    slash = ref.rfind('/')
    colon = ref.rfind(':')
    if colon > slash:
        ref = ref[:colon]
    for prefix in ('docker.io/library/', 'docker.io/', 'index.docker.io/'):
        if ref.startswith(prefix):
            ref = ref[len(prefix):]
            break
    return ref


def _registry_path(repo):
    """The repository without its registry host (a first part with a dot, a port or ``localhost``)."""
    first, _sep, rest = repo.partition('/')
    return rest if rest and ('.' in first or ':' in first or first == 'localhost') else repo


def lookup_binary(image, image_binaries):
    """Binary name for an image (None if unknown); tolerates a registry prefix on either side, and another registry
    with the same path (a mirror, as the agent setting's image_registry gives)."""
    repo = image_repository(image)
    table = {image_repository(key): value for key, value in image_binaries.items()}
    if repo in table:
        return table[repo]
    for key, value in table.items():
        if repo.endswith('/' + key) or key.endswith('/' + repo) or _registry_path(repo) == _registry_path(key):
            return value
    return None


_VAR_REF = re.compile(r'\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)')


def expand(value, env):
    """Kubernetes ``$(VAR)`` expansion: defined vars are substituted, ``$$`` escapes, others stay."""
    def repl(match):
        if match.group(0) == '$$':
            return '$'
        name = match.group(1)
        return env[name] if name in env else match.group(0)
    return _VAR_REF.sub(repl, value)


def rewrite_paths(value, mounts):
    """Replace mount paths (at a path boundary) in ``value`` by their host paths."""
    for mount_path, host_path in mounts:
        pattern = r'(?:(?<=^)|(?<=[=:,\s]))' + re.escape(mount_path.rstrip('/')) + r'(?=$|[/\s,:;])'
        value = re.sub(pattern, lambda _m, hp=host_path: hp, value)
    return value


def _drop_flag(argv, bare):
    cleaned = [argv[0]]
    skip = False
    for arg in argv[1:]:
        if skip:
            skip = False
            continue
        name = arg.split('=', 1)[0].lstrip('-') if arg.startswith('-') else None
        if name == bare:
            if '=' not in arg:
                skip = True
            continue
        cleaned.append(arg)
    return cleaned


def apply_flags(argv, flags):
    """Drop existing ``--flag``/``-flag`` (with ``=value`` or a separate value) and append ``--flag=value``."""
    result = list(argv)
    for flag, value in flags.items():
        result = _drop_flag(result, flag.lstrip('-')) + ['%s=%s' % (flag, value)]
    return result


def has_flag(argv, flag):
    """True if ``flag`` is given in ``argv``."""
    bare = flag.lstrip('-')
    return any(arg.startswith('-') and arg.split('=', 1)[0].lstrip('-') == bare for arg in argv[1:])


def quantity(text):
    """Parse a Kubernetes resource quantity to a float."""
    suffixes = {'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30, 'Ti': 2 ** 40, 'Pi': 2 ** 50, 'Ei': 2 ** 60,
                'n': 1e-9, 'u': 1e-6, 'm': 1e-3, 'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18}
    text = str(text)
    for suffix in sorted(suffixes, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * suffixes[suffix]
    return float(text)


def field_value(pod, path):
    """Value of a downward-API fieldRef of ``pod``."""
    meta = pod['metadata']
    match = re.match(r"metadata\.(labels|annotations)\['(.*)'\]$", path)
    if match:
        return (meta.get(match.group(1)) or {}).get(match.group(2), '')
    if path in ('metadata.labels', 'metadata.annotations'):
        return '\n'.join('%s="%s"' % kv for kv in sorted((meta.get(path.split('.')[1]) or {}).items()))
    values = {'metadata.name': meta['name'], 'metadata.namespace': meta['namespace'], 'metadata.uid': meta['uid'],
              'spec.serviceAccountName': pod['spec'].get('serviceAccountName') or 'default',
              'spec.nodeName': pod['spec'].get('nodeName') or '',
              'status.hostIP': '127.0.0.1', 'status.hostIPs': '127.0.0.1',
              'status.podIP': '127.0.0.1', 'status.podIPs': '127.0.0.1'}
    return values.get(path, '')


def resource_field(container, ref):
    """Value of a resourceFieldRef (limits fall back to a generous host value)."""
    kind, _sep, resource = ref['resource'].partition('.')
    section = (container.get('resources') or {}).get(kind) or {}
    raw = section.get(resource)
    divisor = quantity(ref.get('divisor') or '1')
    if raw is None:
        raw = os.cpu_count() if resource == 'cpu' else 8 * 2 ** 30
    return str(int(math.ceil(quantity(raw) / divisor)))


def _key_ref(ref, data, kind):
    """(found, value) of a secretKeyRef/configMapKeyRef; raises NotReadyYet for a missing required key."""
    if ref['key'] in data:
        return True, data[ref['key']].decode(errors='replace')
    if not ref.get('optional'):
        raise NotReadyYet('key "%s" not in %s "%s"' % (ref['key'], kind, ref['name']))
    return False, None


def container_env(pod, container, secret_data, configmap_data):
    """The container's environment from ``envFrom`` and ``env`` as a kubelet computes it.

    ``secret_data(name, optional)`` and ``configmap_data(name, optional)`` return ``{key: bytes}``
    (``{}`` for an optional one that is absent) or raise NotReadyYet.
    """
    env = {}
    for source in container.get('envFrom') or []:
        if 'configMapRef' in source:
            ref = source['configMapRef']
            data = configmap_data(ref.get('name'), ref.get('optional'))
        else:
            ref = source.get('secretRef') or {}
            data = secret_data(ref.get('name'), ref.get('optional'))
        for key, value in data.items():
            env[(source.get('prefix') or '') + key] = value.decode(errors='replace')
    for item in container.get('env') or []:
        value_from = item.get('valueFrom')
        found, value = True, None
        if value_from is None:
            value = expand(item.get('value') or '', env)
        elif 'fieldRef' in value_from:
            value = field_value(pod, value_from['fieldRef']['fieldPath'])
        elif 'resourceFieldRef' in value_from:
            value = resource_field(container, value_from['resourceFieldRef'])
        elif 'secretKeyRef' in value_from:
            ref = value_from['secretKeyRef']
            found, value = _key_ref(ref, secret_data(ref['name'], ref.get('optional')), 'secret')
        elif 'configMapKeyRef' in value_from:
            ref = value_from['configMapKeyRef']
            found, value = _key_ref(ref, configmap_data(ref['name'], ref.get('optional')), 'configmap')
        else:
            found = False
        if found:
            env[item['name']] = value
    return env


def host_argv(container, env, binary_path, binary_name):
    """``[binary] + command[1:] + args`` expanded, with the binary's ``HOST_SETTINGS`` flags."""
    command = [expand(c, env) for c in container.get('command') or []]
    args = [expand(a, env) for a in container.get('args') or []]
    argv = [str(binary_path)] + command[1:] + args
    settings = HOST_SETTINGS.get(binary_name, {})
    for flag, default in settings.get('path_flags', {}).items():
        if not has_flag(argv, flag):
            argv.append('%s=%s' % (flag, default))
    return apply_flags(argv, settings.get('flags', {}))


def host_env(env, mounts, binary_name, fixed):
    """The process environment: mount paths rewritten, ``HOST_SETTINGS`` env applied, then ``fixed``
    (PATH, HOME, HOSTNAME, TMPDIR, KUBECONFIG) on top."""
    settings = HOST_SETTINGS.get(binary_name, {})
    result = {k: rewrite_paths(v, mounts) for k, v in env.items()}
    for key, value in settings.get('env_default', {}).items():
        result.setdefault(key, value)
    result.update(settings.get('env', {}))
    result.update(fixed)
    return result
