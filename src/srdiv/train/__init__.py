"""Training: the fold protocol, the trainer and the objectives; importing this package registers every
objective in ``srdiv.registry.OBJECTIVES`` (the names ``params.yaml`` rows give as ``objective``)."""

from srdiv.train import list_pairwise, mle  # noqa: F401  (DSSA/DESA list-pairwise; ListMLE / R-LTR MLE)
from srdiv.train import pamm, reinforce  # noqa: F401  (PAMM, MDP-DIV REINFORCE objectives)
from srdiv.train import daletor_losses  # noqa: F401  (DALETOR smooth metric and softmax objectives)
