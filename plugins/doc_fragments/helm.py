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
      - May not begin with C(-) (Helm would read it as an option; write C(./-name) for such a directory) nor hold a
        password (log in to an OCI registry with C(helm registry login) and give O(helm_registry_config)).
    type: str
  chart_repo_url:
    description:
      - URL of the Helm repository that holds O(chart_ref).
      - A repository that needs a login takes it in the URL (C(https://user:password@charts.example.com/)). The
        credentials never reach Helm's command line (which other users of the host can read in C(/proc)); the module
        writes them into a Helm repository config (C(--repository-config)), mode C(0600), in the task's directory,
        which Ansible removes after the task, and lets Helm fetch the repository's index from there.
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
  helm_registry_config:
    description:
      - Path to Helm's registry configuration (the credentials of C(helm registry login)) for charts in a private OCI
        registry. Defaults to Helm's own (E(HELM_REGISTRY_CONFIG), else the one in Helm's configuration directory).
    type: path
  helm_repository_config:
    description:
      - Path to Helm's repository configuration (C(repositories.yaml), with the credentials of C(helm repo add)) for
        charts from a private chart repository. Defaults to Helm's own (E(HELM_REPOSITORY_CONFIG), else the one in
        Helm's configuration directory).
    type: path
notes:
  - Values reach Helm through its standard input (C(--values -)), never a file or the command line, so a module killed
    while Helm runs (a cancelled AWX job, an out-of-memory kill) leaves no copy of them (the agent's registration token)
    on disk.
  - Helm uses the same credentials as the Kubernetes options; when they are not a plain kubeconfig file, a private
    kubeconfig (mode C(0600)) is derived from them in the task's directory, which Ansible removes after the task, also
    when the module was killed. (With pipelining Ansible makes no task directory, and the module's own directory is then
    removed when the module exits, which a killed module cannot do.)
  - Helm runs with your Helm configuration (registry logins, repositories), so private charts work as they do with
    C(helm); only its cache is private to the task.
  - Helm's release storage must be Kubernetes Secrets (Helm's default). With E(HELM_DRIVER) set to another driver the
    task fails, because the collection reads Helm's release records from those Secrets.
'''
