# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers: names, base64, secret-safe values, merging.

Labels live in ``labels.py``, kubeconfig facts in ``kubeconfig.py``, times and
durations in ``times.py``. Nothing here talks to a cluster.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import re
from urllib.parse import unquote

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.labels import DNS_SUBDOMAIN

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml

# libyaml's loader: a kubeconfig of a dozen clusters takes ~45 ms to parse in pure Python, ~4 ms in C.
_YAML_LOADER = None if yaml is None else (getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader)

REDACTED = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"


def load_yaml(stream):
    """``yaml.safe_load`` with the C loader where PyYAML has one (the same safe types either way)."""
    return yaml.load(stream, Loader=_YAML_LOADER)  # nosec B506 - a SafeLoader


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def validate_dns_label(value, param):
    if not isinstance(value, str) or len(value) > 63 or not _DNS_LABEL.match(value):
        raise ParameterError(
            param, "%r is not a valid name" % (value,),
            "Use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit",
        )
    return value


def validate_dns_subdomain(value, param):
    if not isinstance(value, str) or len(value) > 253 or not DNS_SUBDOMAIN.match(value):
        raise ParameterError(
            param, "%r is not a valid name" % (value,),
            "Use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
        )
    return value


def b64(text):
    if isinstance(text, str):
        text = text.encode("utf-8")
    return base64.b64encode(text).decode("ascii")


def unb64(text, what="value"):
    try:
        return base64.b64decode(text).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise ParameterError(what, "is not base64-encoded UTF-8 text")


def deep_merge(base, override):
    """``override`` laid over a copy of ``base``: mappings merged recursively, everything else replaced."""
    result = copy.deepcopy(base) if base else {}
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


# -- credentials inside options that are not secret as a whole (masked in logs, results, diffs and warnings) ---------

# A URL's password, with or without a scheme (http://user:pw@proxy:3128, user:pw@proxy:3128, --proxy=user:pw@host):
# from the first ':' of a word's user part to the word's last '@' before a host (an image digest, repo:tag@sha256:...,
# is not one).
_URL_PASSWORD = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|(?<![^\s,;=\"'(\[{<]))[^\s:/?#@,;=\"'\[\]{}()<>]*:(?!//)([^\s\"']+)@"
                           r"(?!sha[0-9]+:)(?=[\[A-Za-z0-9])")
# A JSON Web Token (service account tokens, OIDC ID tokens): header and payload are base64 JSON objects.
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
# A key, flag or variable name whose value is a credential (password, apiKey, --client-secret, AWS_SECRET_ACCESS_KEY);
# names of files, Secrets or variables that merely point at one (tokenFile, passwordSecretName, kubeConfigSecret) are not.
_SECRET_NAME = re.compile(r"(password|passwd|passphrase|token|credentials?|api[-_]?key|(access|secret|private|client|signing|"
                          r"encryption|auth)[-_]?key|(basic|proxy)[-_]?auth|bearer|^secret|(client|shared|app|webhook|oauth|"
                          r"consumer|api|jwt|session|signing|encryption|private)[-_]?secret)$", re.IGNORECASE)


def secret_name(name):
    """Whether a key, command-line flag or environment variable named ``name`` holds a credential."""
    name = str(name).strip("-").strip()
    return bool(_SECRET_NAME.search(name)) or (name.isupper() and name.endswith("_SECRET"))


def url_passwords(text):
    """The passwords of the URLs in ``text`` (as written and percent-decoded), with or without a scheme."""
    found = []
    pieces = [text] + (re.split(r"[,;]", text) if re.search(r"[,;]", text) else [])
    for piece in pieces:
        for match in _URL_PASSWORD.finditer(piece):
            found.extend((match.group(1), unquote(match.group(1))))
    return list(dict.fromkeys(found))


def _flag_values(words):
    """Values of secret flags and assignments in a command line (``--token=X``, ``--password X``, ``TOKEN=X``,
    ``Bearer X``)."""
    found = []
    for index, word in enumerate(words):
        name, sep, value = word.partition("=")
        following = words[index + 1] if index + 1 < len(words) else None
        if sep and secret_name(name):
            found.append(value)
        elif not sep and name.startswith("-") and secret_name(name) and following and not following.startswith("-"):
            found.append(following)
        elif word.lower() in ("bearer", "basic") and following:
            found.append(following)
    return found


def credential_parts(text):
    """The credential-shaped parts of a string: URL passwords, JSON Web Tokens, values of secret flags."""
    if not isinstance(text, str):
        return []
    return [part for part in url_passwords(text) + _JWT.findall(text) + _flag_values(text.split()) if part]


def argv_secrets(args):
    """The credentials in an argument list (an exec plugin's ``args``, a container's ``args``): ``--token=X``,
    ``--password X``, URL passwords, tokens."""
    words = [arg for arg in args or [] if isinstance(arg, str)]
    return list(dict.fromkeys(part for part in [p for word in words for p in credential_parts(word)] + _flag_values(words) if part))


def secret_strings(value, key=None, urls_only=False):
    """Every credential-shaped string inside ``value`` (nested mappings and lists), to mask: URL passwords; and, unless
    ``urls_only``, strings under a secret key (``password``, ``apiKey``), ``{name: SECRET_NAME, value: ...}`` items
    (env lists), secret flags in argument lists, JSON Web Tokens."""
    if isinstance(value, str):
        if urls_only:
            return url_passwords(value)
        return credential_parts(value) + ([value] if value and key is not None and secret_name(key) else [])
    found = []
    if isinstance(value, dict):
        if not urls_only and isinstance(value.get("name"), str) and isinstance(value.get("value"), str) and secret_name(value["name"]):
            found.append(value["value"])
        for name, item in value.items():
            found.extend(secret_strings(item, str(name), urls_only))
    elif isinstance(value, (list, tuple)):
        if not urls_only:
            found.extend(argv_secrets(value))
        for item in value:
            found.extend(secret_strings(item, key, urls_only))
    return [item for item in dict.fromkeys(found) if item]
