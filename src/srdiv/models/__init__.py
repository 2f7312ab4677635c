"""Diversification models; importing a module registers it in ``srdiv.registry.MODELS``."""

from srdiv.models import desa, dssa  # noqa: F401
from srdiv.models import mmr, pm2, xquad  # noqa: F401  (registers the unsupervised baselines)
from srdiv.models import mdp_div, rltr  # noqa: F401  (R-LTR/PAMM, NTN, MDP-DIV)
from srdiv.models import daletor  # noqa: F401  (DALETOR DNN, DIN, GSF scorers)
from srdiv.models import reference  # noqa: F401  (Random and Cosine reference orders)
