# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's third-party imports, each guarded once, here (as community.crypto's ``_cryptography_dep``).

PyYAML ships with ansible-core. urllib3 comes with the kubernetes package, which is found, not imported: only the
connections that need its loader (exec plugins, auth providers) import it, and a module without it fails with
``missing_required_lib``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from importlib.util import find_spec

__all__ = ["HAS_KUBERNETES", "HTTPHeaderDict", "KUBERNETES_IMPORT_ERROR", "urllib3", "yaml"]

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

try:
    import urllib3
    from urllib3._collections import HTTPHeaderDict  # urllib3 1.26 does not export it at the top
except ImportError:  # pragma: no cover - urllib3 comes with the kubernetes package
    urllib3 = None
    HTTPHeaderDict = None

HAS_KUBERNETES = find_spec("kubernetes") is not None
KUBERNETES_IMPORT_ERROR = None if HAS_KUBERNETES else ImportError("No module named 'kubernetes'")
