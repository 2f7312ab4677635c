"""Training objectives (losses), one per module; importing this package registers every one in
``srdiv.registry.OBJECTIVES`` (the names ``params.yaml`` rows give as ``objective``)."""

from srdiv.objectives import list_pairwise, mle  # noqa: F401  (DSSA/DESA list-pairwise; ListMLE / R-LTR MLE)
from srdiv.objectives import pamm, reinforce  # noqa: F401  (PAMM, MDP-DIV REINFORCE)
from srdiv.objectives import daletor  # noqa: F401  (DALETOR smooth metric and softmax objectives)
