# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files that hold credentials (keys, kubeconfigs, Helm values): private from the first byte, removed at exit."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import atexit
import os
import shutil
import tempfile
from typing import Optional


def write_private_file(path: str, content: str) -> str:
    """Write ``content`` to ``path`` readable by the owner only (0600) from the first byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(content)
    os.chmod(path, 0o600)
    return path


def private_tempdir(parent: Optional[str] = None) -> str:
    """A 0700 directory (in ``parent``, else the system's) for key material and Helm's files, removed with
    everything in it when the process exits normally."""
    path = tempfile.mkdtemp(prefix="fleetops-", dir=parent)
    atexit.register(shutil.rmtree, path, True)
    return path
