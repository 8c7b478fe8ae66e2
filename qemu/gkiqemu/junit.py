# SPDX-License-Identifier: GPL-2.0
"""The run's outcomes as JUnit XML, for CI systems that show test results:
one <testsuite> per part of the run (host, each variant), one <testcase>
per outcome, with the failure or skip text the console line gives."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

# How each ktap.Status value is told in JUnit: the element inside the
# <testcase>, or None for a pass.
_ELEMENT = {'PASS': None, 'SKIP': 'skipped', 'FAIL': 'failure', 'MISSING': 'failure',
	    'CRASHED': 'failure'}


class Result(Protocol):
	name: str
	status: object		# a ktap.Status (its .value is the word)
	detail: str


def _split(name: str) -> tuple[str, str, str]:
	"""'release: boot_smoke: case' -> ('release', 'release.boot_smoke',
	'case'): the suite, the class, the case."""
	parts = name.split(': ')
	if len(parts) == 1:
		return 'gki', 'gki', name
	return parts[0], '.'.join(parts[:-1]), parts[-1]


def document(outcomes: Iterable[Result]) -> ET.Element:
	"""<testsuites> for outcomes; an unknown status is a failure."""
	root = ET.Element('testsuites')
	suites: dict[str, ET.Element] = {}
	for o in outcomes:
		word = getattr(o.status, 'value', str(o.status))
		suite, cls, case = _split(o.name)
		if suite not in suites:
			suites[suite] = ET.SubElement(root, 'testsuite', name=suite)
		tc = ET.SubElement(suites[suite], 'testcase', classname=cls, name=case)
		kind = _ELEMENT.get(word, 'failure')
		if kind:
			message = f'{word}: {o.detail}' if o.detail else word
			el = ET.SubElement(tc, kind, message=message, type=word)
			el.text = o.detail
	for el in [root, *suites.values()]:
		cases = list(el.iter('testcase'))
		el.set('tests', str(len(cases)))
		el.set('failures', str(sum(c.find('failure') is not None for c in cases)))
		el.set('skipped', str(sum(c.find('skipped') is not None for c in cases)))
		el.set('errors', '0')
	return root


def write(outcomes: Iterable[Result], path: Path) -> None:
	"""Write the document to path, whole or not at all."""
	tree = ET.ElementTree(document(outcomes))
	ET.indent(tree)
	path.parent.mkdir(parents=True, exist_ok=True)
	tmp = path.with_name(path.name + '.tmp')
	tree.write(tmp, encoding='utf-8', xml_declaration=True)
	tmp.replace(path)
