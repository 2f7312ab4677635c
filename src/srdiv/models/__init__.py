"""Diversification models, one per module; importing this package registers every one in
``srdiv.registry.MODELS`` (the names ``params.yaml`` rows give as ``model``). ``base`` holds what they
share, ``ranking`` the batched inference that ranks a bundle's candidates with any of them."""

from srdiv.models import initial, listmle, reference  # noqa: F401  (Initial; ListMLE; Random and Cosine orders)
from srdiv.models import mmr, pm2, xquad  # noqa: F401  (the unsupervised baselines, with HxQuAD and HPM2)
from srdiv.models import mdp_div, rltr  # noqa: F401  (R-LTR/PAMM, NTN, MDP-DIV)
from srdiv.models import daletor  # noqa: F401  (DALETOR DNN, DIN, GSF scorers)
from srdiv.models import desa, dssa  # noqa: F401
