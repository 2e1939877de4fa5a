# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  chart_ref:
    description:
      - The chart to install, as a local chart directory or C(.tgz), an C(oci://) reference, or a chart name
        together with O(chart_repo_url).
      - Nothing is looked up on the web unless given here; air-gapped sites point this at a mirror or a local copy.
    type: str
  chart_repo_url:
    description:
      - URL of the Helm repository that holds O(chart_ref).
    type: str
  chart_version:
    description:
      - Chart version to install from a repository or OCI registry. Pin it for repeatable runs.
      - A local chart's version is read from its C(Chart.yaml).
    type: str
  helm_binary:
    description:
      - Path to the helm binary (Helm 3 or 4). Defaults to the first C(helm) on E(PATH).
    type: path
notes:
  - Values reach Helm through a temporary file readable only by its owner, never on the command line.
  - Helm uses the same credentials as the Kubernetes options; when they are not a plain kubeconfig file, a private
    temporary kubeconfig is derived from them for the duration of the task.
'''
