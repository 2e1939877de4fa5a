"""Command line: ``PYTHONPATH=lab python -m fleetlab {up,status,down,env,build,component,runner}``.

Exit codes: 0 success (``up`` on a running lab changes nothing and exits 0; on a lab that is partly
down it starts what is down and thaws what is frozen); 1 an error with a message on stderr;
``status`` exits 0 when the lab runs, 1 when it is partially running, 3 when
there is none.
"""

import argparse
import json
import sys

from fleetlab import lab
from fleetlab.processes import LabError


def parse(argv):
    """Parse the command line."""
    parser = argparse.ArgumentParser(prog='python -m fleetlab', description='Real Kubernetes clusters with Fleet and KubeFleet controllers, on 127.0.0.1.')
    sub = parser.add_subparsers(dest='command', required=True)
    up = sub.add_parser('up', help='start hub (and hub2) + N member clusters and the controllers')
    up.add_argument('--members', type=int, default=2, help='number of member clusters (default 2)')
    up.add_argument('--hubs', type=int, default=1,
                    help='number of hubs, 1 or 2 (default 1): hub2 is context hub2, inventory host fleet-hub2 in group '
                         'new_hub; on a running one-hub lab, --hubs 2 adds hub2 and leaves the rest running')
    up.add_argument('--without-controllers', action='store_true', help='clusters only: no Fleet/KubeFleet, no agent runner')
    status = sub.add_parser('status', help='show what runs and its resident memory')
    status.add_argument('--json', action='store_true', help='machine-readable output')
    sub.add_parser('down', help='stop everything and remove the lab state')
    sub.add_parser('env', help='print shell exports (KUBECONFIG, PATH with helm and kubectl)')
    build = sub.add_parser('build', help='build (or find in the cache) the lab binaries')
    build.add_argument('names', nargs='*', help='binaries to build (default: all)')
    component = sub.add_parser('component', help='stop, kill, freeze, thaw or start one component (fault injection)')
    component.add_argument('action', choices=['stop', 'kill', 'freeze', 'thaw', 'start'],
                           help='stop: SIGTERM then SIGKILL; kill: SIGKILL; freeze: SIGSTOP; thaw: SIGCONT; '
                                'start: start it again with its ports, certificates and data')
    component.add_argument('name', help='as "status --json" lists them under "components", e.g. hub/kube-apiserver '
                                        '(short: hub-apiserver), etcd, runner, member1/fleet-system/member-agent-*/member-agent')
    rebuild = sub.add_parser('rebuild', help='make a member or a hub again from nothing under the same name, URL and CA '
                                             '(a new kube-system UID; a hub gets its controllers and nothing else)')
    rebuild.add_argument('name', help='the cluster, e.g. member2 or hub')
    rebuild.add_argument('--new-ca', action='store_true', help='with a new CA and certificates (kubeconfig and inventory rewritten)')
    sub.add_parser('runner', help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    """Entry point."""
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        if args.command == 'up':
            if args.members < 0:
                raise LabError('--members must be 0 or more')
            return lab.up(args.members, not args.without_controllers, hubs=args.hubs)
        if args.command == 'down':
            return lab.down()
        if args.command == 'status':
            report = lab.status_report()
            if args.json:
                print(json.dumps(report, indent=2))
            else:
                lab.print_status(report)
            return {'running': 0, 'absent': 3}.get(report['status'], 1)
        if args.command == 'component':
            print(lab.component(args.action, args.name))
            return 0
        if args.command == 'rebuild':
            print(lab.rebuild(args.name, new_ca=args.new_ca))
            return 0
        if args.command == 'env':
            sys.stdout.write(lab.env_exports())
            return 0
        if args.command == 'build':
            from fleetlab import build  # pylint: disable=import-outside-toplevel
            return build.main(args.names)
        if args.command == 'runner':
            from fleetlab import runner  # pylint: disable=import-outside-toplevel
            return runner.main()
    except (LabError, RuntimeError) as exc:
        # RuntimeError: build.BuildError (missing Go, unreachable module, failed build)
        print('fleetlab: %s' % exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print('fleetlab: interrupted', file=sys.stderr)
        return 130
    return 2
