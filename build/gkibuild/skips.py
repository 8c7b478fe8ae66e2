# SPDX-License-Identifier: GPL-2.0
"""Which skips CI accepts (docs/ci.md, "Skips").

Under CI=true a skipped test is a failure unless its reason names the
kernel options it needs (CONFIG_...) and its variant's .config lacks every
one of them: a test of a feature the variant does not build says so, and
the configuration proves it.  Any other reason (a scratch disk that did not
mount, a tool that was not built, a host test that could not run) is
something CI should have had, so it fails, named.  The halves of two-boot
tests that skip in the other boot never reach the tally (runner.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from gkibuild import kconfig
from gkiqemu import ktap
from gkiqemu.runner import Tally

OPTION = re.compile(r'\bCONFIG_[A-Z0-9_]+\b')


def refusal(name: str, reason: str, configs: Mapping[str, str]) -> str | None:
	"""Why CI refuses the skip of test name (whose first word, before
	':', is its variant), or None when it accepts it; configs: variant
	name -> the text of its .config."""
	options = sorted(set(OPTION.findall(reason)))
	if not options:
		return 'CI accepts a skip only when its reason names the CONFIG_ options it lacks'
	variant = name.split(':', 1)[0]
	config = configs.get(variant)
	if config is None:
		return f'no kernel configuration of {variant!r} shows that {options[0]} is missing'
	opts = kconfig.parse(config)
	present = [o for o in options if opts.get(o) in ('y', 'm')]
	if present:
		return f'{", ".join(present)} is set in the {variant} configuration'
	return None


def enforce(tally: Tally, configs: Mapping[str, str]) -> int:
	"""Turn each skip of tally that CI refuses into a failure saying why,
	printed as the tally prints; returns how many it turned."""
	refused = [(o, why) for o in tally.outcomes if o.status is ktap.Status.SKIP
		   for why in [refusal(o.name, o.detail, configs)] if why]
	for o, why in refused:
		tally.outcomes.remove(o)
		tally.add(o.name, ktap.Status.FAIL, f'skipped under CI ({o.detail}): {why}')
	return len(refused)

