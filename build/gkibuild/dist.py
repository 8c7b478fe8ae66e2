# SPDX-License-Identifier: GPL-2.0
"""Dist stage: assemble out/dist (or out/dist-<variant>) in a temporary
folder and move it into place at the end, so a failed build never leaves a
half-written dist."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from gkibuild import gkimodules, kit, modules
from gkibuild.kernel import Kernel
from gkibuild.modules import ExtModule
from gkibuild.util import write_tarball


def assemble(kernel: Kernel, headers: Path, ext: dict[ExtModule, list[Path]],
	     tools: dict[str, Path], manifest: dict[str, Any]) -> Path:
	final = kernel.layout.dist(kernel.variant)
	tmp = final.with_name(final.name + '.tmp')
	shutil.rmtree(tmp, ignore_errors=True)
	tmp.mkdir(parents=True)
	obj = kernel.obj
	boot = obj / 'arch' / 'arm64' / 'boot'
	for src, name in ((boot / 'Image', 'Image'), (boot / 'Image.lz4', 'Image.lz4'),
			  (obj / 'vmlinux', 'vmlinux'), (obj / 'System.map', 'System.map'),
			  (obj / 'Module.symvers', 'Module.symvers'), (obj / '.config', '.config')):
		shutil.copy2(src, tmp / name)
	write_tarball(headers, 'include', tmp / 'kernel-uapi-headers.tar.gz', hidden=False)
	kit.write(kernel.layout.src, obj, tmp / kit.TARBALL, kernel.env)

	# The GKI modules as a device loads them: without debug info, and
	# signed when the variant signs (signing.py); their debug info ships
	# beside, in unstripped/gki/.
	installed = kernel.install_modules(kernel.obj.parent / 'modinst')
	whole = kernel.in_tree_modules()
	mods = tmp / 'modules'
	gkimodules.stage([installed / ko.relative_to(obj) for ko in whole], kernel.gki_modules(),
			 manifest['kernel_release'], mods / 'gki')
	(tmp / 'unstripped' / 'gki').mkdir(parents=True)
	for ko in whole:
		shutil.copy2(ko, tmp / 'unstripped' / 'gki' / ko.name)
	for mod, kos in ext.items():
		if not kos:
			continue	# not built for this variant (modules.wanted)
		d = mods / mod.dist_dir
		d.mkdir(parents=True)
		for ko in kos:
			shutil.copy2(ko, d / ko.name)
		modules.stage_load(mod, mods, manifest['kernel_release'], tmp / 'System.map')
		uapi = mod.src / 'include' / 'uapi'
		if uapi.is_dir():
			shutil.copytree(uapi, tmp / 'include' / 'uapi', dirs_exist_ok=True)

	for rel, src in tools.items():
		(tmp / rel).parent.mkdir(parents=True, exist_ok=True)
		shutil.copy2(src, tmp / rel)

	manifest['files'] = sorted(str(p.relative_to(tmp)) for p in tmp.rglob('*') if p.is_file())
	(tmp / 'manifest.json').write_text(json.dumps(manifest, indent=2, sort_keys=True) + '\n')

	old = final.with_name(final.name + '.old')
	shutil.rmtree(old, ignore_errors=True)
	if final.exists():
		os.rename(final, old)
	os.rename(tmp, final)
	shutil.rmtree(old, ignore_errors=True)
	return final
