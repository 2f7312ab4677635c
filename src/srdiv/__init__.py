"""srdiv: supervised search result diversification in one reproducible pipeline.

The package layout follows the data flow::

    collection -> text (embed, pseudo-docs) -> features -> sampling
               -> train / models -> metrics -> report

Every stage is a ``srdiv <stage>`` command (see :mod:`srdiv.cli`); Snakemake
rules and DVC stages only call those commands.
"""

__version__ = "0.1.0"
