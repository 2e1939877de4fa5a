"""The lab's PKI: one CA per cluster, a serving certificate, an admin client certificate and a
service-account signing key.

Each cluster gets its own CA and its own service-account key, so a credential or a CA bundle
meant for one cluster does not work against another one (the collection must pass the right one).
Keys are ECDSA P-256 (fast to generate; accepted by kube-apiserver for TLS and for service-account
tokens). Private keys are written 0600.
"""

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fleetlab.paths import write_private

VALIDITY = datetime.timedelta(days=365)
SERVICE_IP = '10.0.0.1'


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _name(common_name, org=None):
    attrs = []
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def _builder(subject, issuer, public_key):
    now = datetime.datetime.now(datetime.timezone.utc)
    return (x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY))


class ClusterPKI:
    """Files of one cluster's PKI, created by ``create``."""

    def __init__(self, directory, cluster):
        self.dir = directory
        self.cluster = cluster
        self.ca_cert = directory / 'ca.crt'
        self.ca_key = directory / 'ca.key'
        self.serving_cert = directory / 'apiserver.crt'
        self.serving_key = directory / 'apiserver.key'
        self.admin_cert = directory / 'admin.crt'
        self.admin_key = directory / 'admin.key'
        self.sa_key = directory / 'sa.key'
        self.sa_pub = directory / 'sa.pub'

    def create(self):
        """Generate every file (overwrites)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        ca_key = _key()
        ca_name = _name('fleetops-lab-%s-ca' % self.cluster)
        ca_cert = (_builder(ca_name, ca_name, ca_key.public_key())
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                                crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
                   .sign(ca_key, hashes.SHA256()))
        write_private(self.ca_key, _key_pem(ca_key))
        self.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))

        sans = [x509.DNSName('localhost'), x509.DNSName('kubernetes'), x509.DNSName('kubernetes.default'),
                x509.DNSName('kubernetes.default.svc'), x509.DNSName('kubernetes.default.svc.cluster.local'),
                x509.IPAddress(ipaddress.ip_address('127.0.0.1')), x509.IPAddress(ipaddress.ip_address(SERVICE_IP))]
        self._leaf(ca_key, ca_cert, _name('kube-apiserver'), ExtendedKeyUsageOID.SERVER_AUTH,
                   self.serving_cert, self.serving_key, sans)
        self._leaf(ca_key, ca_cert, _name('fleetops-lab-admin', 'system:masters'), ExtendedKeyUsageOID.CLIENT_AUTH,
                   self.admin_cert, self.admin_key)

        sa_key = _key()
        write_private(self.sa_key, _key_pem(sa_key))
        self.sa_pub.write_bytes(sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                                 serialization.PublicFormat.SubjectPublicKeyInfo))
        return self

    @staticmethod
    def _leaf(ca_key, ca_cert, subject, usage, cert_path, key_path, sans=None):
        key = _key()
        builder = (_builder(subject, ca_cert.subject, key.public_key())
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                                crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        write_private(key_path, _key_pem(key))
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
