# SPDX-License-Identifier: GPL-2.0
"""Module signing: the key the GKI's own modules are signed with.

A release engineer provides the key: $GKI_SIGNING_KEY names a PEM file
holding the private key and its X.509 certificate, what the kernel's
CONFIG_MODULE_SIG_KEY takes.  Without it, a throwaway key is made on first
use in out/keys/ and kept there for every later build of this checkout: it
is never committed and never shipped (the dist holds the signed modules and,
in vmlinux, the certificate, not the key).

The fragments set CONFIG_MODULE_SIG_KEY to KEY, a path relative to the
object folder, and the build copies the key there before make: .config,
and so every compile, is the same whatever the key.  `repro` signs both of
its builds with one key, so that their modules are bit-identical.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gkibuild.util import GkiError, info, write_if_changed

ENV = 'GKI_SIGNING_KEY'
KEY = 'gki-signing-key.pem'		# CONFIG_MODULE_SIG_KEY, in the object folder
BEGIN_KEY = b'-----BEGIN PRIVATE KEY-----'
BEGIN_CERT = b'-----BEGIN CERTIFICATE-----'

# openssl req's answers for the throwaway key: as certs/default_x509.genkey,
# named so that the kernel's keyring says whose key signed a module.
GENKEY = """\
[ req ]
default_bits = 4096
distinguished_name = req_distinguished_name
prompt = no
string_mask = utf8only
x509_extensions = myexts

[ req_distinguished_name ]
O = GKI build
CN = Throwaway GKI module signing key (not for release)

[ myexts ]
basicConstraints=critical,CA:FALSE
keyUsage=digitalSignature
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
"""


def throwaway(out: Path) -> Path:
	"""The path of the checkout's throwaway key under out/."""
	return out / 'keys' / KEY


def check_key(path: Path) -> None:
	"""A key file must hold an unencrypted private key and a certificate:
	sign-file and extract-cert read both from it."""
	try:
		data = path.read_bytes()
	except OSError as e:
		raise GkiError(f'{ENV}={path}: cannot read the signing key: {e.strerror}') from None
	missing = [what for what, marker in (('an unencrypted private key', BEGIN_KEY),
					      ('a certificate', BEGIN_CERT)) if marker not in data]
	if missing:
		raise GkiError(f'{path}: a module signing key is one PEM file with '
			       f'{" and ".join(missing)} in it (BUILD.md, "Module signing")')


def generate(path: Path) -> None:
	"""Make a throwaway RSA key and its self-signed certificate at path."""
	path.parent.mkdir(parents=True, exist_ok=True)
	conf = path.with_name('x509.genkey')
	conf.write_text(GENKEY)
	tmp = path.with_name(path.name + '.tmp')
	old = os.umask(0o077)
	try:
		res = subprocess.run(['openssl', 'req', '-new', '-nodes', '-utf8', '-sha256',
				      '-days', '36500', '-batch', '-x509', '-config', str(conf),
				      '-outform', 'PEM', '-out', str(tmp), '-keyout', str(tmp)],
				     capture_output=True, text=True)
	finally:
		os.umask(old)
	if res.returncode:
		tmp.unlink(missing_ok=True)
		raise GkiError(f'openssl could not make a signing key: {res.stderr.strip()[-300:]}')
	tmp.rename(path)
	info(f'made a throwaway module signing key: {path} (set {ENV} to sign with yours)')


def key(out: Path) -> Path:
	"""The key to sign with: $GKI_SIGNING_KEY, or the throwaway key of
	out/, made now if it does not exist."""
	given = os.environ.get(ENV)
	if given:
		path = Path(given).resolve()
		check_key(path)
		return path
	path = throwaway(out)
	if not path.exists():
		generate(path)
	check_key(path)
	return path


def install(path: Path, obj: Path) -> None:
	"""Copy the key to obj/KEY, where CONFIG_MODULE_SIG_KEY points; a
	copy that is already the same is left alone, so that kbuild does not
	extract the certificate again."""
	old = os.umask(0o077)
	try:
		write_if_changed(obj / KEY, path.read_bytes())
	finally:
		os.umask(old)


def sign(obj: Path, ko: Path, dest: Path) -> Path:
	"""A copy of ko at dest, signed as the build in obj signs its own
	modules (its key, certificate and hash, with its sign-file)."""
	config = (obj / 'include' / 'config' / 'auto.conf').read_text()
	algo = next((line.split('=', 1)[1].strip('"') for line in config.splitlines()
		     if line.startswith('CONFIG_MODULE_SIG_HASH=')), None)
	if not algo:
		raise GkiError(f'{obj}: this build does not sign modules (no CONFIG_MODULE_SIG_HASH)')
	dest.parent.mkdir(parents=True, exist_ok=True)
	tmp = dest.with_name(dest.name + '.tmp')
	tmp.write_bytes(ko.read_bytes())
	res = subprocess.run([str(obj / 'scripts' / 'sign-file'), algo, str(obj / KEY),
			      str(obj / 'certs' / 'signing_key.x509'), str(tmp)],
			     capture_output=True, text=True)
	if res.returncode:
		tmp.unlink(missing_ok=True)
		raise GkiError(f'sign-file {ko} failed: {res.stderr.strip()[-300:]}')
	tmp.rename(dest)
	return dest
