# SPDX-License-Identifier: GPL-2.0
"""The KMI and its ABI gate, one concern a module:

- kmi.py: the symbol lists in symbol_lists/ and their union, the KMI; the
  strict check of a build's exports, what modules need, 'symbols update'.
- symvers.py: Module.symvers, read strictly and written.
- abidiff.py: libabigail's abidw and abidiff, run hermetically, and
  abidiff's report sorted into what the gate decides on.
- changes.py: abidiff's report and the Module.symvers tables merged into
  one list of changes, each a break, an enum change or an addition.
- breaks.py: abi/allowed_breaks, the breaks taken on purpose.
- short.py: report.short, the check a person reads in a minute.
- gate.py: the baseline in abi/, the check of a build against it, the
  gate's decision (decide), 'abi update' and abi.prop.
- compare.py: 'abi compare', another source or compiler checked against
  the baseline.
"""
